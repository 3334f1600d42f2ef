"""Console script: ``lvqmark experiment=smoke|quick|paper|bench key=value ...``."""

from lvqmark.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("lvqmark", run)

if __name__ == "__main__":
    main()
