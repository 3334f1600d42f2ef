"""Console script: ``hebbrnn experiment=smoke|quick|paper|bench key=value ...`` and
``hebbrnn evaluate model=FILE`` (a saved model's recall accuracy on fresh lists, no training data)."""

import sys

from hebbrnn.run import run
from hebbrnn.verbs import run_evaluate
from paperworks.hydra_glue import hydra_cli

_experiments = hydra_cli("hebbrnn", run)
_verbs = {"evaluate": hydra_cli("hebbrnn", run_evaluate, config_name="evaluate")}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in _verbs:
        verb = sys.argv.pop(1)
        _verbs[verb]()
        return
    _experiments()


if __name__ == "__main__":
    main()
