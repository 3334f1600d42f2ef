"""Console script: ``loopedlm experiment=smoke|quick|paper|bench key=value ...``."""

from loopedlm.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("loopedlm", run)

if __name__ == "__main__":
    main()
