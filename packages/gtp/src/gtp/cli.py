"""Console script: ``gtp experiment=smoke|quick|paper|bench key=value ...``."""

from gtp.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("gtp", run)

if __name__ == "__main__":
    main()
