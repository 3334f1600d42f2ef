"""Console script: ``molspecflow experiment=smoke|quick|paper|bench key=value ...``."""

from molspecflow.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("molspecflow", run)

if __name__ == "__main__":
    main()
