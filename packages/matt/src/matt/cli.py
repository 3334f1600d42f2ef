"""Console script: ``matt experiment=smoke|quick|paper|bench key=value ...``."""

from matt.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("matt", run)

if __name__ == "__main__":
    main()
