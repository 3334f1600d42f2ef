"""Console script: ``consensusgame experiment=smoke|quick|paper|bench key=value ...``."""

from consensusgame.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("consensusgame", run)

if __name__ == "__main__":
    main()
