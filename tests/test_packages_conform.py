"""Every package follows the house conventions (CONTRIBUTING.md): layout, declared dependencies, LICENSE.

The console scripts are not run here: each package's own tests/test_cli.py runs its installed script
(check_layout requires that), and its suite is run by tools/run_tests.py anyway.
"""

import conformity


def test_layout(pkg):
    assert conformity.check_layout(pkg) == []


def test_declares_what_it_imports(pkg):
    """deptry: src/ imports only runtime dependencies, tests/ only runtime + [test]."""
    assert conformity.check_dependencies(pkg) == []
