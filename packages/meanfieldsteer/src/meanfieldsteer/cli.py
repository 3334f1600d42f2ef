"""Console script: ``meanfieldsteer experiment=smoke|quick|paper|bench key=value ...``."""

from meanfieldsteer.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("meanfieldsteer", run)

if __name__ == "__main__":
    main()
