"""Console script: ``cmcboot experiment=smoke|quick|paper|bench key=value ...``."""

from cmcboot.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("cmcboot", run)

if __name__ == "__main__":
    main()
