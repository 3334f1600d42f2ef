"""Console script: ``metaknow experiment=smoke|quick|paper|bench key=value ...``."""

from metaknow.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("metaknow", run)

if __name__ == "__main__":
    main()
