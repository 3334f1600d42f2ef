"""Console script: ``m2le experiment=smoke|quick|paper|bench key=value ...``."""

from m2le.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("m2le", run)

if __name__ == "__main__":
    main()
