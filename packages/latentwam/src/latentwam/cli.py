"""Console script: ``latentwam experiment=smoke|quick|paper|bench key=value ...``."""

from latentwam.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("latentwam", run)

if __name__ == "__main__":
    main()
