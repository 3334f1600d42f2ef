"""Console script: ``hierwm experiment=smoke|quick|paper|bench key=value ...``."""

from hierwm.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("hierwm", run)

if __name__ == "__main__":
    main()
