"""Console script: ``probetraj experiment=smoke|quick|paper|bench key=value ...``."""

from probetraj.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("probetraj", run)

if __name__ == "__main__":
    main()
