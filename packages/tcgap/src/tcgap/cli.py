"""Console script: ``tcgap experiment=smoke|quick|paper|bench key=value ...``,
``tcgap diagnose data.path=FILE.npz`` (γ̂_min and the TC gap on your features) and
``tcgap predict model=learner.pt data.path=X.npy`` (a saved learner, no training data)."""

from paperworks.hydra_glue import hydra_cli
from tcgap.diagnose import run_diagnose, run_predict
from tcgap.run import run

main = hydra_cli("tcgap", run, verbs={"diagnose": run_diagnose, "predict": run_predict})

if __name__ == "__main__":
    main()
