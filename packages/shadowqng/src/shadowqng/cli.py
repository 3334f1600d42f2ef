"""Console script: ``shadowqng experiment=smoke|quick|paper|bench key=value ...``."""

from shadowqng.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("shadowqng", run)

if __name__ == "__main__":
    main()
