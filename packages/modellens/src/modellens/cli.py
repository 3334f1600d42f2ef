"""Console script: ``modellens experiment=smoke|quick|paper|bench key=value ...`` and
``modellens rank model=lens.pt dataset=NAME k=5`` (a saved ModelLens, no training data)."""

import sys

from modellens.rank_cli import run_rank
from modellens.run import run
from paperworks.hydra_glue import hydra_cli

_experiments = hydra_cli("modellens", run)
_verbs = {"rank": hydra_cli("modellens", run_rank, config_name="rank")}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in _verbs:
        verb = sys.argv.pop(1)
        _verbs[verb]()
        return
    _experiments()


if __name__ == "__main__":
    main()
