import importlib.util

import pytest

from paperworks import Claim, Estimate, dispatch, triton_enabled, write_results
from paperworks import triton_dispatch as td
from paperworks.plotting import savefig, use_style
from paperworks.report import build_report, fmt_estimate, markdown_table


@pytest.fixture
def fake_triton(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(td.importlib.util, "find_spec", lambda n: object() if n == "triton" else real(n))
    monkeypatch.delenv("PAPERWORKS_FORCE_REFERENCE", raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    return monkeypatch


def test_dispatch_rules(fake_triton):
    fake_triton.setattr(td, "_cuda_available", lambda: False)

    @dispatch(reference=lambda x: ("ref", x))
    def op(x):
        return ("triton", x)

    assert op(1) == ("ref", 1) and op.backend() == "reference"
    fake_triton.setenv("TRITON_INTERPRET", "1")
    assert op(2) == ("triton", 2) and triton_enabled()
    fake_triton.setenv("PAPERWORKS_FORCE_REFERENCE", "1")
    assert op(3) == ("ref", 3)
    fake_triton.delenv("PAPERWORKS_FORCE_REFERENCE")
    fake_triton.delenv("TRITON_INTERPRET")
    fake_triton.setattr(td, "_cuda_available", lambda: True)
    assert op(4) == ("triton", 4)


def test_dispatch_without_triton_uses_reference(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(td.importlib.util, "find_spec", lambda n: None if n == "triton" else real(n))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert not triton_enabled()


def test_report_from_results(tmp_path):
    runs = tmp_path / "runs"
    for pkg_exp, val in (("a", 0.9), ("b", 0.2)):
        d = runs / pkg_exp
        c = Claim.compare("beats", "beats <baseline>", "acc", Estimate(val, val - 0.05, val + 0.05, 3),
                          baseline="base", baselines={"base": Estimate(0.5, 0.45, 0.55, 3)}, better="higher")
        write_results(d, package="paperworks", experiment="quick", config={}, claims=[c], seeds=[0],
                      timings={"total_s": 1.0})
        plt = use_style()
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, val])
        savefig(fig, d / "curve.png")
    index, summary = build_report(runs, tmp_path / "out")
    page = index.read_text()
    assert page.count("data:image/png;base64,") == 2
    assert "supported" in page and "not supported" in page
    assert "&lt;baseline&gt;" in page  # escaped
    md = summary.read_text()
    assert "| beats | acc | 0.9 [0.85, 0.95] | base: 0.5 [0.45, 0.55] | **supported** |" in md
    assert "**not supported**" in md
    assert "Claims: 1 supported, 1 not supported, 0 inconclusive." in md


def test_fmt_and_table():
    assert fmt_estimate({"value": 2.0}) == "2"
    assert fmt_estimate(None) == "n/a"
    doc = {"claims": [Claim.threshold("x|y", "s", "m", 1e-9, threshold=1e-7, better="lower").to_dict()]}
    assert "x\\|y" in markdown_table(doc) and "1e-09" in markdown_table(doc)
