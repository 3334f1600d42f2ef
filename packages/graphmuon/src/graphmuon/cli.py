"""Console script: ``graphmuon experiment=smoke|quick|paper|bench key=value ...``."""

from graphmuon.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("graphmuon", run)

if __name__ == "__main__":
    main()
