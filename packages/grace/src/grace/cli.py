"""Console script: ``grace experiment=smoke|quick|paper|bench key=value ...``."""

from grace.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("grace", run)

if __name__ == "__main__":
    main()
