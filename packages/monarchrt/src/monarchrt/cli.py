"""Console script: ``monarchrt experiment=smoke|quick|paper|bench key=value ...``."""

from monarchrt.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("monarchrt", run)

if __name__ == "__main__":
    main()
