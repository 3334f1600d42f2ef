"""Console script: ``tcgap experiment=smoke|quick|paper|bench key=value ...``,
``tcgap diagnose data.path=FILE.npz`` (γ̂_min and the TC gap on your features) and
``tcgap predict model=learner.pt data.path=X.npy`` (a saved learner, no training data)."""

import sys

from paperworks.hydra_glue import hydra_cli
from tcgap.diagnose import run_diagnose, run_predict
from tcgap.run import run

_experiments = hydra_cli("tcgap", run)
_verbs = {"diagnose": hydra_cli("tcgap", run_diagnose, config_name="diagnose"),
          "predict": hydra_cli("tcgap", run_predict, config_name="predict")}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in _verbs:
        verb = sys.argv.pop(1)
        _verbs[verb]()
        return
    _experiments()


if __name__ == "__main__":
    main()
