"""Console script: ``mcr2opt experiment=smoke|quick|paper|bench key=value ...``."""

from mcr2opt.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("mcr2opt", run)

if __name__ == "__main__":
    main()
