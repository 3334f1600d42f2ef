"""Console script: ``molhit experiment=smoke|quick|paper|bench key=value ...``."""

from molhit.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("molhit", run)

if __name__ == "__main__":
    main()
