import numpy as np
import pytest
from m2le import cl_metrics


def test_cl_metrics_by_hand():
    A = np.array([[0.9, 0, 0], [0.6, 0.8, 0], [0.5, 0.7, 1.0]])
    m = cl_metrics(A, anytime=[0.95, 0.9, 1.0])
    assert m["final_acc"] == pytest.approx((0.5 + 0.7 + 1.0) / 3)
    assert m["aaa"] == pytest.approx((0.9 + 0.7 + 2.2 / 3) / 3)
    assert m["bwt"] == pytest.approx(((0.5 - 0.9) + (0.7 - 0.8)) / 2)
    assert m["forgetting"] == pytest.approx(((0.9 - 0.5) + (0.8 - 0.7)) / 2)
    assert m["merge_drop"] == pytest.approx((0.05 + 0.1 + 0.0) / 3)


@pytest.mark.parametrize("bad", [np.ones((2, 3)), np.array([[1.5]]), np.array([[np.nan]])])
def test_cl_metrics_bad(bad):
    with pytest.raises(ValueError, match="acc_matrix"):
        cl_metrics(bad)
