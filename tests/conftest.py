import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import conformity  # noqa: E402


def pytest_generate_tests(metafunc):
    if "pkg" in metafunc.fixturenames:
        pkgs = conformity.package_dirs()
        metafunc.parametrize("pkg", pkgs, ids=[p.name for p in pkgs])
