"""Console script: ``shadowqng experiment=smoke|quick|paper|bench key=value ...``."""

from paperworks.hydra_glue import hydra_cli
from shadowqng.run import run

main = hydra_cli("shadowqng", run)

if __name__ == "__main__":
    main()
