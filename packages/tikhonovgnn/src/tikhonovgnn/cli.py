"""Console script: ``tikhonovgnn experiment=smoke|quick|paper|bench key=value ...``."""

from tikhonovgnn.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("tikhonovgnn", run)

if __name__ == "__main__":
    main()
