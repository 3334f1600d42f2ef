"""Console script: ``mkscp experiment=smoke|quick|paper|bench key=value ...``."""

from mkscp.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("mkscp", run)

if __name__ == "__main__":
    main()
