import numpy as np
import pytest
import torch
from diffusers import DDPMScheduler
from hierwm import NoiseSchedule, sample_noise_levels
from scipy.stats import chi2_contingency


def _chi2_p(a, b, bins=4, n=1000):
    table = np.zeros((bins, bins))
    np.add.at(table, (((a - 1) * bins // n).numpy(), ((b - 1) * bins // n).numpy()), 1)
    return chi2_contingency(table)[1]


def test_df_levels_are_independent_per_token_not_per_sequence():
    g = torch.Generator().manual_seed(0)
    lv = sample_noise_levels(5000, 6, objective="df", generator=g)
    assert lv.shape == (5000, 6) and lv.dtype == torch.long
    assert lv.min() >= 1 and lv.max() <= 1000
    for i, j in ((0, 1), (2, 5)):
        assert _chi2_p(lv[:, i], lv[:, j]) > 1e-3
    # the trap: one level per sequence is detected by the same test
    per_seq = lv[:, :1].expand(-1, 6)
    assert _chi2_p(per_seq[:, 0], per_seq[:, 1]) < 1e-6
    # and the marginal is uniform on {1..1000}
    counts = np.bincount(((lv.flatten() - 1) // 100).numpy(), minlength=10)
    from scipy.stats import chisquare

    assert chisquare(counts).pvalue > 1e-3


def test_tf_is_clean_context_and_a_noised_next_frame():
    lv = sample_noise_levels(64, 5, objective="tf", generator=torch.Generator().manual_seed(1))
    assert (lv[:, :-1] == 0).all() and (lv[:, -1] >= 1).all()


def test_df_tf_switches_at_70_percent():
    g = torch.Generator().manual_seed(2)
    early = sample_noise_levels(64, 5, objective="df_tf", progress=0.69, generator=g)
    late = sample_noise_levels(64, 5, objective="df_tf", progress=0.7, generator=g)
    assert (early[:, :-1] > 0).all()
    assert (late[:, :-1] == 0).all()


def test_noise_path_equals_ddpm_add_noise_per_token():
    ns = NoiseSchedule()
    ref = DDPMScheduler(num_train_timesteps=1000, beta_schedule="squaredcos_cap_v2")
    g = torch.Generator().manual_seed(3)
    x, eps = torch.randn(3, 5, 2, 4, 4, generator=g), torch.randn(3, 5, 2, 4, 4, generator=g)
    lv = sample_noise_levels(3, 5, objective="df", generator=g)
    lv[1, 2] = 0
    lv[2, 0] = 1
    out = ns.add_noise(x, lv, eps)
    for i in range(3):
        for j in range(5):
            k = int(lv[i, j])
            if k == 0:  # clean is its own level: timestep 0 still adds noise
                assert torch.equal(out[i, j], x[i, j])
                continue
            want = ref.add_noise(x[i, j][None], eps[i, j][None], torch.tensor([k - 1]))[0]
            torch.testing.assert_close(out[i, j], want)
            ab = ref.alphas_cumprod[k - 1]
            torch.testing.assert_close(out[i, j], ab.sqrt() * x[i, j] + (1 - ab).sqrt() * eps[i, j])
    assert ns.sigma(torch.tensor([0]))[0] == 0
    assert ns.level_of(0.02) == 20


@pytest.mark.parametrize("kw", [{"objective": "ar"}, {"objective": "df", "num_levels": 0}])
def test_bad_arguments(kw):
    with pytest.raises(ValueError):
        sample_noise_levels(2, 3, **kw)
    with pytest.raises(ValueError, match="batch"):
        sample_noise_levels(0, 3, objective="df")
