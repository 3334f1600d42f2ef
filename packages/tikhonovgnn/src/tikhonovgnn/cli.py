"""Console script: ``tikhonovgnn experiment=smoke|quick|paper|bench key=value ...``."""

from paperworks.hydra_glue import hydra_cli
from tikhonovgnn.run import run

main = hydra_cli("tikhonovgnn", run)

if __name__ == "__main__":
    main()
