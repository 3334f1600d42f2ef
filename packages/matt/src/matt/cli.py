"""Console script: ``matt experiment=smoke|quick|paper|bench key=value ...``; verbs ``transfer`` and ``evaluate``."""

from matt.run import run
from matt.verbs import run_evaluate, run_transfer
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("matt", run, verbs={"transfer": run_transfer, "evaluate": run_evaluate})

if __name__ == "__main__":
    main()
