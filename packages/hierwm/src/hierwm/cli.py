"""Console script: ``hierwm experiment=smoke|quick|paper|bench key=value ...``, ``hierwm fit data.path=FILE``
(train and save a model on a user's latents) and ``hierwm rollout model=MODEL.pt data.path=FILE``."""

from hierwm.run import run
from hierwm.verbs import run_fit, run_rollout
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("hierwm", run, verbs={"fit": run_fit, "rollout": run_rollout})

if __name__ == "__main__":
    main()
