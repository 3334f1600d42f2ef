"""Console script: ``tmevolve experiment=smoke|quick|paper|bench key=value ...``."""

from tmevolve.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("tmevolve", run)

if __name__ == "__main__":
    main()
