"""Console script: ``entropyshap experiment=smoke|quick|paper|bench key=value ...`` and
``entropyshap explain model.path=MLP.pt data.path=ROWS ...`` (a saved model on your own rows)."""

import sys

from entropyshap.explain_cli import run_explain
from entropyshap.run import run
from paperworks.hydra_glue import hydra_cli

_experiments = hydra_cli("entropyshap", run)
_explain = hydra_cli("entropyshap", run_explain, config_name="explain")

EXPLAIN_HELP = """entropyshap explain — entropy-game attributions of a saved GaussianMLP on your rows

usage: entropyshap explain model.path=FILE.pt data.path=FILE [key=value ...]

  model.path=full_mlp.pt          written by GaussianMLP.save (the paper run saves full_mlp.pt, diag_mlp.pt)
  data.path=background.csv|.npy   background rows (CSV: numbers, optional header; bad rows skipped and counted)
  data.points=points.csv|.npy     rows to explain (default: the first data.n_points=16 background rows)
  removal=interventional|conditional  n_components=128  n_mc=512  seed=0

Writes attributions.csv (joint, tc, marginal_Y*, ordered_Y* per point and feature) and results.json."""


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "explain":
        del sys.argv[1]
        if any(a in ("--help", "-h") for a in sys.argv[1:]):
            print(EXPLAIN_HELP)
            return
        _explain()
        return
    _experiments()


if __name__ == "__main__":
    main()
