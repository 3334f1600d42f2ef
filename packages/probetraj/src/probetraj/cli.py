"""Console script: ``probetraj experiment=smoke|quick|paper|bench key=value ...`` and
``probetraj score model=DIR probe_file=FILE data.path=ROLLOUTS.jsonl`` (a saved probe on a user's rollouts)."""

from paperworks.hydra_glue import hydra_cli
from probetraj.run import run
from probetraj.verbs import run_score

main = hydra_cli("probetraj", run, verbs={"score": run_score})

if __name__ == "__main__":
    main()
