"""Console script: ``cmcboot experiment=smoke|quick|paper|bench key=value ...`` and
``cmcboot fit data.path=traj.npz|traj.csv key=value ...`` (intervals on your own trajectories)."""

import sys

from cmcboot.fit import run_fit
from cmcboot.run import run
from paperworks.hydra_glue import hydra_cli

_experiments = hydra_cli("cmcboot", run)
_fit = hydra_cli("cmcboot", run_fit, config_name="fit")

FIT_HELP = """cmcboot fit — model-based bootstrap intervals on your trajectories

usage: cmcboot fit data.path=FILE [key=value ...]

  data.path=traj.csv|traj.npz   rows (state, action, next_state[, reward][, episode]); bad CSV rows are
                                skipped and counted with their line numbers
  data.columns.state=NAME ...   the file's names for state, action, next_state, reward, episode
  n_states=S n_actions=A        the sizes (inferred with a warning when left out)
  regime=chain|episodic  n_boot=1000  seed=0  unvisited=uniform|self
  policy=uniform|[a_0,...]|[[p,...],...]   rewards=data|[[r,...],...]   gamma=0.9  level=0.95
  method=percentile|basic|normal  targets=[V,Q,Qstar]

Writes intervals.csv (every target entry: estimate, lower, upper, visit counts) and results.json
(rows read and skipped, unvisited pairs, states never reached) into hydra.run.dir."""


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "fit":
        del sys.argv[1]
        if any(a in ("--help", "-h") for a in sys.argv[1:]):
            print(FIT_HELP)
            return
        _fit()
        return
    _experiments()


if __name__ == "__main__":
    main()
