"""Console script: ``munkey experiment=smoke|quick|paper|bench key=value ...`` and
``munkey forget model=PATH ids=[...]`` (delete rows from a saved model, no data needed)."""

from munkey.run import run
from munkey.verbs import run_forget
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("munkey", run, verbs={"forget": run_forget})

if __name__ == "__main__":
    main()
