"""Console script: ``getolp experiment=smoke|quick|paper|bench key=value ...``."""

from getolp.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("getolp", run)

if __name__ == "__main__":
    main()
