"""Console script: ``groupfdr experiment=smoke|quick|paper|bench key=value ...`` and
``groupfdr select data.path=FILE ...`` (block GM on your own data)."""

import sys

from groupfdr.run import run
from groupfdr.select import run_select
from paperworks.hydra_glue import hydra_cli

_experiments = hydra_cli("groupfdr", run)
_select = hydra_cli("groupfdr", run_select, config_name="select")

SELECT_HELP = """groupfdr select — group-level FDR-controlled selection on your data

usage: groupfdr select data.path=FILE [key=value ...]

  data.path=data.csv|X.npy|data.npz   CSV with a header (bad rows skipped and counted with line numbers),
                                      .npy with y as column data.target, or .npz with arrays X, y[, groups]
  data.target=NAME|INDEX              y's column (default: the last)
  data.groups_path=FILE               one group label per feature (.npy/.csv/.txt)
  data.groups=prefix                  CSV columns named <series>_lag<k> are grouped by <series>
  q=0.1  estimator=ols|lasso  offset=1|0  norm=euclidean|whitened  seed=0

Writes selection.csv, selector.json (BlockGaussianMirror.load) and results.json into hydra.run.dir."""


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "select":
        del sys.argv[1]
        if any(a in ("--help", "-h") for a in sys.argv[1:]):
            print(SELECT_HELP)
            return
        _select()
        return
    _experiments()


if __name__ == "__main__":
    main()
