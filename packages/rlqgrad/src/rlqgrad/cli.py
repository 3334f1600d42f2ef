"""Console script: ``rlqgrad experiment=smoke|quick|paper|bench key=value ...``."""

from paperworks.hydra_glue import hydra_cli
from rlqgrad.run import run

main = hydra_cli("rlqgrad", run)

if __name__ == "__main__":
    main()
