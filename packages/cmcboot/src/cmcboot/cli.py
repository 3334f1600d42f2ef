"""Console script: ``cmcboot experiment=smoke|quick|paper|bench key=value ...``."""

from paperworks.hydra_glue import hydra_cli

from cmcboot.run import run

main = hydra_cli("cmcboot", run)

if __name__ == "__main__":
    main()
