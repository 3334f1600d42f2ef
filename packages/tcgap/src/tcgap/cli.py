"""Console script: ``tcgap experiment=smoke|quick|paper|bench key=value ...``."""

from paperworks.hydra_glue import hydra_cli
from tcgap.run import run

main = hydra_cli("tcgap", run)

if __name__ == "__main__":
    main()
