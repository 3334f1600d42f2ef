"""Console script: ``hebbrnn experiment=smoke|quick|paper|bench key=value ...`` and
``hebbrnn evaluate model=FILE`` (a saved model's recall accuracy on fresh lists, no training data)."""

from hebbrnn.run import run
from hebbrnn.verbs import run_evaluate
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("hebbrnn", run, verbs={"evaluate": run_evaluate})

if __name__ == "__main__":
    main()
