"""Console script: ``munkey experiment=smoke|quick|paper|bench key=value ...``."""

from munkey.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("munkey", run)

if __name__ == "__main__":
    main()
