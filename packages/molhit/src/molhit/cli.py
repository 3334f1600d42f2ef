"""Console script: ``molhit experiment=smoke|quick|paper|bench key=value ...`` and
``molhit sample model=FILE n=N`` (molecules from a saved model, no training data)."""

from molhit.run import run
from molhit.sample_cli import run_sample
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("molhit", run, verbs={"sample": run_sample})

if __name__ == "__main__":
    main()
