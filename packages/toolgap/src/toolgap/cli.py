"""Console script: ``toolgap experiment=smoke|quick|paper|bench key=value ...``."""

from paperworks.hydra_glue import hydra_cli
from toolgap.run import run

main = hydra_cli("toolgap", run)

if __name__ == "__main__":
    main()
