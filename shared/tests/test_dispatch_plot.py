import importlib.util
import subprocess
import sys

import pytest

from paperworks import dispatch, triton_enabled
from paperworks import triton_dispatch as td
from paperworks.plotting import savefig, use_style

torch = pytest.importorskip("torch")


@pytest.fixture
def fake_triton(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(td.importlib.util, "find_spec", lambda n: object() if n == "triton" else real(n))
    monkeypatch.delenv("PAPERWORKS_FORCE_REFERENCE", raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    return monkeypatch


@pytest.fixture
def op():
    @dispatch(reference=lambda x, *a: "ref")
    def _op(x, *a):
        return "triton"

    return _op


class _FakeCuda(torch.Tensor):
    """A CPU tensor that says it lives on CUDA (to simulate a GPU machine's inputs)."""

    @property
    def is_cuda(self):
        return True


def test_cpu_tensors_take_the_reference_even_when_cuda_is_available(fake_triton, op):
    # the 0.1 dispatcher launched Triton on CPU tensors whenever CUDA was available
    fake_triton.setattr(torch.cuda, "is_available", lambda: True)
    x = torch.ones(3)
    assert op(x) == "ref" and op.backend(x) == "reference"


def test_cuda_tensors_take_triton(fake_triton, op):
    x = torch.ones(3).as_subclass(_FakeCuda)
    assert x.is_cuda
    assert op(x) == "triton"
    assert op(x, torch.ones(2)) == "ref", "mixed devices go to the reference"
    assert op(1) == "ref", "no tensor at all: nothing for a GPU kernel"


def test_declared_dtypes_are_honoured(fake_triton):
    @dispatch(reference=lambda x: "ref", dtypes=(torch.float16, torch.float32))
    def op(x):
        return "triton"

    fake_triton.setenv("TRITON_INTERPRET", "1")
    assert op(torch.ones(2)) == "triton"
    assert op(torch.ones(2, dtype=torch.float64)) == "ref"


def test_interpret_and_force_reference(fake_triton, op):
    fake_triton.setenv("TRITON_INTERPRET", "1")
    assert op(torch.ones(2)) == "triton" and triton_enabled()
    fake_triton.setenv("PAPERWORKS_FORCE_REFERENCE", "1")
    assert op(torch.ones(2)) == "ref" and not triton_enabled()


def test_dispatch_without_triton_uses_reference(monkeypatch, op):
    real = importlib.util.find_spec
    monkeypatch.setattr(td.importlib.util, "find_spec", lambda n: None if n == "triton" else real(n))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert not triton_enabled() and op(torch.ones(1)) == "ref"


def test_savefig_is_atomic(tmp_path):
    plt = use_style()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    p = savefig(fig, tmp_path / "a" / "x.png")
    assert p.read_bytes()[:4] == b"\x89PNG" and not list(p.parent.glob(".*tmp"))


def test_import_touches_no_heavy_library():
    code = ("import sys, paperworks, paperworks.results, paperworks.stats, paperworks.metrics, paperworks.bench, "
            "paperworks.tables, paperworks.hydra_glue;"
            "bad = [m for m in ('torch', 'jax', 'triton', 'matplotlib', 'sklearn') if m in sys.modules];"
            "print(bad); raise SystemExit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
