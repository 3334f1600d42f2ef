"""Console script: ``occirl experiment=smoke|quick|paper|bench key=value ...``."""

from occirl.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("occirl", run)

if __name__ == "__main__":
    main()
