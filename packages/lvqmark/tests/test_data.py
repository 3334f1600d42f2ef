import numpy as np
import pytest
from lvqmark.data import load_csv, macrodata_series, synthetic_series, windows


def test_synthetic_shape_and_correlation():
    x = synthetic_series(200, rng=0)
    assert x.shape == (200, 32, 5) and np.isfinite(x).all()
    c = np.corrcoef(x.reshape(-1, 5), rowvar=False)
    assert np.abs(c[np.triu_indices(5, 1)]).max() > 0.2             # channels are correlated
    assert np.array_equal(x, synthetic_series(200, rng=0))


def test_macrodata():
    m = macrodata_series()
    assert m.shape == (202, 12) and np.isfinite(m).all()
    assert windows(m, 24).shape == (179, 24, 12)


def test_csv_skips_bad_rows_with_line_numbers(tmp_path):
    p = tmp_path / "s.csv"
    lines = ["date,a,b"] + [f"d{i},{i},{2 * i}" for i in range(30)]
    lines[5] = "d4,nan,8"
    lines[9] = "d8,x,16"
    lines[12] = "d11,,22"
    p.write_text("\n".join(lines) + "\n")
    s, rep = load_csv(p)
    assert rep["columns"] == ["a", "b"] and s.shape == (27, 2)
    assert rep["n_skipped"] == 3 and rep["skipped_lines"] == [6, 10, 13]
    with pytest.raises(ValueError, match="shorter than one window"):
        windows(s, 32)
    with pytest.raises(ValueError, match="not in"):
        load_csv(p, columns=["zz"])
    with pytest.raises(FileNotFoundError):
        load_csv(tmp_path / "none.csv")
