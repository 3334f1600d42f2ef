"""Console script: ``rlqgrad experiment=smoke|quick|paper|bench key=value ...``."""

from rlqgrad.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("rlqgrad", run)

if __name__ == "__main__":
    main()
