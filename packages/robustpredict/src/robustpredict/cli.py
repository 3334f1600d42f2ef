"""Console script: ``robustpredict experiment=smoke|quick|paper|bench key=value ...``."""

from paperworks.hydra_glue import hydra_cli
from robustpredict.run import run

main = hydra_cli("robustpredict", run)

if __name__ == "__main__":
    main()
