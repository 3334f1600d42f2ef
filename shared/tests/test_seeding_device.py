import random
import subprocess
import sys

import numpy as np
import pytest

from paperworks import device as device_mod
from paperworks import resolve_device, seed_everything, seeds_of

torch = pytest.importorskip("torch")


def test_seed_everything_reproduces_all_generators():
    def draw():
        g = seed_everything(123)
        return random.random(), np.random.rand(), torch.rand(1).item(), g.random()

    assert draw() == draw()
    a = draw()
    seed_everything(124)
    assert np.random.rand() != a[1]


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "3", True])
def test_seed_rejects_bad_values(bad):
    with pytest.raises((TypeError, ValueError), match="seed"):
        seed_everything(bad)


def test_seeds_of_forms():
    assert seeds_of({"seed": 5}) == [5]
    assert seeds_of({"seed": 0, "seeds": 3}) == [0, 1, 2]
    assert seeds_of({"seed": 2, "seeds": 3}) == [6, 7, 8]  # seed indexes a block: sweeps get disjoint seeds
    assert not set(seeds_of({"seed": 0, "seeds": 4})) & set(seeds_of({"seed": 1, "seeds": 4}))
    assert seeds_of({"seeds": [7, 9]}) == [7, 9]
    with pytest.raises(ValueError, match="seeds"):
        seeds_of({"seeds": 0})
    with pytest.raises(ValueError, match="empty"):
        seeds_of({"seeds": []})


def test_resolve_device(monkeypatch):
    monkeypatch.setattr(device_mod, "_cuda_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    assert resolve_device("CPU") == "cpu"
    with pytest.raises(ValueError, match="no CUDA"):
        resolve_device("cuda")
    monkeypatch.setattr(device_mod, "_cuda_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cuda:1") == "cuda:1"
    for bad in ("gpu", "cpu:0", ""):
        with pytest.raises(ValueError, match="device"):
            resolve_device(bad)
    with pytest.raises(TypeError):
        resolve_device(0)


def test_import_touches_no_gpu_jax_triton_or_matplotlib():
    code = ("import sys, paperworks, paperworks.hydra_glue, paperworks.testing, paperworks.tables, paperworks.aggregate;"
            "bad = [m for m in ('torch', 'jax', 'triton', 'matplotlib', 'hydra') if m in sys.modules];"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_seeding_does_not_import_torch_but_seeds_it_when_imported():
    # a NumPy-only run never pays torch's import; a later import still draws the seeded stream
    lazy = _run("import sys; from paperworks import seed_everything; seed_everything(7); seed_everything(11);"
                "print('torch' in sys.modules); import torch; print(torch.rand(3).tolist());"
                "print(torch.__spec__.loader.__class__.__name__, [type(f).__name__ for f in sys.meta_path])")
    eager = _run("import torch; torch.manual_seed(11); print(torch.rand(3).tolist())")
    unseeded = _run("import torch; print(torch.rand(3).tolist())")
    imported, draws, tail = lazy.splitlines()
    assert imported == "False"
    assert draws == eager  # the latest seed wins
    assert draws != unseeded
    assert "SeedingLoader" not in tail and "SeedTorchOnImport" not in tail  # the hook is gone, torch's loader kept


def test_lazy_seeding_passes_deterministic():
    got = _run("from paperworks import seed_everything; seed_everything(3, deterministic=True); import torch;"
               "print(torch.are_deterministic_algorithms_enabled())")
    assert got == "True"


def test_auto_device_skips_the_torch_import_only_without_a_gpu_driver(monkeypatch):
    monkeypatch.setattr(device_mod, "_gpu_driver_present", lambda: False)
    monkeypatch.delitem(sys.modules, "torch")  # as in a NumPy-only process (restored after the test)
    assert device_mod._cuda_available() is False
    assert "torch" not in sys.modules
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(device_mod, "_gpu_driver_present", lambda: True)
    assert device_mod._cuda_available() == torch.cuda.is_available()  # with a driver torch is asked


def test_check_int_and_check_float_refuse_coercion_and_name_the_argument():
    from paperworks import check_float, check_int

    assert check_int(np.int64(3), "n") == 3 and type(check_int(np.int64(3), "n")) is int
    assert check_int(None, "n", optional=True) is None
    for bad, err in [(True, TypeError), (4.0, TypeError), ("4", TypeError), (None, TypeError), (0, ValueError)]:
        with pytest.raises(err, match="n_states"):
            check_int(bad, "n_states")
    with pytest.raises(ValueError, match="<= 5"):
        check_int(6, "k", maximum=5)
    assert check_float(np.float32(0.5), "alpha") == 0.5 and check_float(np.array(2.0), "x") == 2.0
    assert check_float(3, "x") == 3.0
    for bad, err in [(float("nan"), ValueError), (float("inf"), ValueError), ("0.5", TypeError), (False, TypeError),
                     (np.ones(2), TypeError)]:
        with pytest.raises(err, match="alpha"):
            check_float(bad, "alpha")
    with pytest.raises(ValueError, match="> 0"):
        check_float(0.0, "alpha", minimum=0, open_minimum=True)
    assert check_float(0.0, "alpha", minimum=0) == 0.0
    with pytest.raises(ValueError, match="< 1"):
        check_float(1.0, "alpha", maximum=1, open_maximum=True)
