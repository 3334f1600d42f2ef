"""Console script: ``tcgap experiment=smoke|quick|paper|bench key=value ...``."""

from tcgap.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("tcgap", run)

if __name__ == "__main__":
    main()
