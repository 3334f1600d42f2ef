from pathlib import Path

from paperworks.testing import readme_python_blocks


def test_readme_quickstart_runs():
    for block in readme_python_blocks(Path(__file__).parents[1] / "README.md"):
        exec(compile(block, "README.md", "exec"), {})
