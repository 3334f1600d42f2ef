"""Console script: ``rlqgrad experiment=smoke|quick|paper|bench key=value ...`` and ``rlqgrad optimize policy=FILE``."""

from paperworks.hydra_glue import hydra_cli
from rlqgrad.run import run
from rlqgrad.verbs import run_optimize

main = hydra_cli("rlqgrad", run, verbs={"optimize": run_optimize})

if __name__ == "__main__":
    main()
