"""Console script: ``modellens experiment=smoke|quick|paper|bench key=value ...``."""

from modellens.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("modellens", run)

if __name__ == "__main__":
    main()
