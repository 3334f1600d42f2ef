"""Console script: ``toolgap experiment=smoke|quick|paper|bench key=value ...``."""

from toolgap.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("toolgap", run)

if __name__ == "__main__":
    main()
