"""Console script: ``metaknow experiment=smoke|quick|paper|bench key=value ...`` and
``metaknow evaluate model=DIR data.path=FILE [reference=DIR]`` (judge a saved model on your benchmark)."""

from metaknow.run import run
from metaknow.verbs import run_evaluate
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("metaknow", run, verbs={"evaluate": run_evaluate})

if __name__ == "__main__":
    main()
