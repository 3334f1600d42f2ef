"""Console script: ``__slug__ experiment=smoke|quick|paper|bench key=value ...``."""

from __slug__.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("__slug__", run)

if __name__ == "__main__":
    main()
