"""Console script: ``hebbrnn experiment=smoke|quick|paper|bench key=value ...``."""

from hebbrnn.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("hebbrnn", run)

if __name__ == "__main__":
    main()
