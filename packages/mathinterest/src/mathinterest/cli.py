"""Console script: ``mathinterest experiment=smoke|quick|paper|bench key=value ...``."""

from mathinterest.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("mathinterest", run)

if __name__ == "__main__":
    main()
