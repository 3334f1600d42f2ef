"""Console script: ``meanfieldsteer experiment=smoke|quick|paper|bench key=value ...`` and
``meanfieldsteer steer data.path=FILE [model=GMM.npz]`` (steer a saved prior toward a user's sample set)."""

from meanfieldsteer.run import run
from meanfieldsteer.verbs import run_steer
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("meanfieldsteer", run, verbs={"steer": run_steer})

if __name__ == "__main__":
    main()
