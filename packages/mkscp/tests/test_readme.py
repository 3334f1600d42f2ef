from pathlib import Path

from paperworks.testing import readme_python_blocks


def test_readme_quickstart_runs():
    blocks = readme_python_blocks(Path(__file__).parents[1] / "README.md")
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_readme_has_the_sections():
    text = (Path(__file__).parents[1] / "README.md").read_text()
    for h in ("## Paper", "## Method", "## Install", "## Quickstart", "## CLI", "## Results"):
        assert h in text
