"""Console script: ``molhit experiment=smoke|quick|paper|bench key=value ...`` and
``molhit sample model=FILE n=N`` (molecules from a saved model, no training data)."""

import sys

from molhit.run import run
from molhit.sample_cli import run_sample
from paperworks.hydra_glue import hydra_cli

_experiments = hydra_cli("molhit", run)
_verbs = {"sample": hydra_cli("molhit", run_sample, config_name="sample")}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in _verbs:
        verb = sys.argv.pop(1)
        _verbs[verb]()
        return
    _experiments()


if __name__ == "__main__":
    main()
