import pytest
from shadowqng import ShotLedger
from shadowqng.vqe import VQEProblem


def test_ledger_sums_by_kind():
    led = ShotLedger()
    led.record("gradient", circuits=4, shots=400)
    led.record("shadow", circuits=50, shots=50)
    led.record("gradient", circuits=4, shots=400)
    assert led.shots == 850 and led.circuits == 58
    assert led.by_kind()["gradient"] == {"circuits": 8, "shots": 800}


@pytest.mark.parametrize("kw", [{"circuits": -1, "shots": 1}, {"circuits": 1, "shots": 1.5}])
def test_ledger_rejects_bad_counts(kw):
    with pytest.raises(ValueError, match="must be a non-negative int"):
        ShotLedger().record("x", **kw)


def test_gradient_and_shadow_are_charged(rng):
    pr = VQEProblem("xxz", 3, 1)  # three measurement groups (XX, YY, ZZ)
    led = ShotLedger()
    theta = rng.uniform(-1, 1, pr.n_params)
    pr.sampled_gradient(theta, 30, rng, led)
    assert led.by_kind()["gradient"] == {"circuits": 2 * pr.n_params * 3, "shots": 2 * pr.n_params * 30}
    pr.shadow(theta, 17, rng, led)
    assert led.by_kind()["shadow"] == {"circuits": 17, "shots": 17}
