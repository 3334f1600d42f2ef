"""Console script: ``tmevolve experiment=smoke|quick|paper|bench key=value ...`` and
``tmevolve predict model=model.pt data.path=BAGS`` (score bags with a saved model)."""

from paperworks.hydra_glue import hydra_cli
from tmevolve.run import run
from tmevolve.verbs import run_predict

main = hydra_cli("tmevolve", run, verbs={"predict": run_predict})

if __name__ == "__main__":
    main()
