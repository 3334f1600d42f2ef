"""Console script: ``factlocus experiment=smoke|quick|paper|bench key=value ...``."""

from factlocus.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("factlocus", run)

if __name__ == "__main__":
    main()
