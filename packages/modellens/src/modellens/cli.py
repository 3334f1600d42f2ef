"""Console script: ``modellens experiment=smoke|quick|paper|bench key=value ...`` and
``modellens rank model=lens.pt dataset=NAME k=5`` (a saved ModelLens, no training data)."""

from modellens.rank_cli import run_rank
from modellens.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("modellens", run, verbs={"rank": run_rank})

if __name__ == "__main__":
    main()
