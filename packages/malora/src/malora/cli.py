"""Console script: ``malora experiment=smoke|quick|paper|bench key=value ...`` and
``malora merge model=DIR adapters=[DIR,...] calibration=CAL.npz out=DIR`` (MaLoRA-merge saved PEFT adapters)."""

import sys

from malora.merge_cli import run_merge
from malora.run import run
from paperworks.hydra_glue import hydra_cli

_experiments = hydra_cli("malora", run)
_verbs = {"merge": hydra_cli("malora", run_merge, config_name="merge")}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in _verbs:
        verb = sys.argv.pop(1)
        _verbs[verb]()
        return
    _experiments()


if __name__ == "__main__":
    main()
