from pathlib import Path

from paperworks.testing import readme_python_blocks


def test_readme_claims_example_runs():
    readme = Path(__file__).resolve().parents[1] / "README.md"
    for block in readme_python_blocks(readme, marker="## Claims, checks and verdicts"):
        exec(compile(block, str(readme), "exec"), {})
