"""Console script: ``__slug__ experiment=smoke|quick|paper|bench key=value ...``."""

from paperworks.hydra_glue import hydra_cli

from __slug__.run import run

main = hydra_cli("__slug__", run)

if __name__ == "__main__":
    main()
