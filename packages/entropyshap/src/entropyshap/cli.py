"""Console script: ``entropyshap experiment=smoke|quick|paper|bench key=value ...``."""

from entropyshap.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("entropyshap", run)

if __name__ == "__main__":
    main()
