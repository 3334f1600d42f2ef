"""Console script: ``gtp experiment=smoke|quick|paper|bench key=value ...``,
``gtp fit data.path=FILE.npz`` and ``gtp plan model=models.pt env=ENV planner=gtp n=16``."""

from gtp.run import run
from gtp.verbs import run_fit, run_plan
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("gtp", run, verbs={"fit": run_fit, "plan": run_plan})

if __name__ == "__main__":
    main()
