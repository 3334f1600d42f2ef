"""Console script: ``malora experiment=smoke|quick|paper|bench key=value ...``."""

from malora.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("malora", run)

if __name__ == "__main__":
    main()
