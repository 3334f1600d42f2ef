from pathlib import Path

from paperworks.testing import readme_python_blocks


def test_readme_quickstart_runs(tmp_path, monkeypatch):
    readme = Path(__file__).parents[1] / "README.md"
    monkeypatch.chdir(tmp_path)                         # the quickstart saves a model file
    for block in readme_python_blocks(readme):
        exec(compile(block, "README.md", "exec"), {})
    assert (tmp_path / "molhit_model.pt").exists()
