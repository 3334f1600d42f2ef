"""Console script: ``gfmuc experiment=smoke|quick|paper|bench key=value ...``."""

from gfmuc.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("gfmuc", run)

if __name__ == "__main__":
    main()
