"""Console script: ``driftbench experiment=smoke|quick|paper|bench key=value ...``."""

from driftbench.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("driftbench", run)

if __name__ == "__main__":
    main()
