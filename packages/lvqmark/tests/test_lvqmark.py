import numpy as np
import pytest
import torch
from lvqmark import LVQMark, Watermark
from lvqmark.experiments import STREAM, _gen, _n_equal
from lvqmark.lvqmark import attack_batch


def test_generate_detect_calibrate(tiny_mark):
    mark, _ = tiny_mark
    g = torch.Generator().manual_seed(0)
    x = mark.generate(20, generator=g)
    assert x.shape == (20, 32, 5) and torch.isfinite(x).all()
    null = mark.generate(200, watermark=False, generator=g)
    thr = mark.calibrate(null, fpr=0.05)
    out = mark.detect(null)
    assert set(out) >= {"z", "p_value", "n_valid", "detected"}
    assert out["n_valid"] == 15 - 4
    assert float(out["detected"].float().mean()) <= 0.05          # in-sample: at most fpr by construction
    assert thr == pytest.approx(float(np.quantile(out["z"].numpy(), 0.95, method="higher")))
    assert torch.allclose(out["p_value"], torch.special.ndtr(-out["z"]), atol=1e-12)


def test_watermark_raises_green_fraction(tiny_mark):
    mark, _ = tiny_mark
    g = torch.Generator().manual_seed(1)
    tok_wm, tok_no = mark.generate_tokens(200, generator=g), mark.generate_tokens(200, watermark=False, generator=g)
    z_wm, z_no = mark.watermark.z_score(tok_wm)[0], mark.watermark.z_score(tok_no)[0]
    assert z_wm.mean() > z_no.mean() + 1.0


def test_detector_settings_bound_to_generator(tiny_mark):
    mark, x = tiny_mark
    with pytest.raises(ValueError, match="delta"):
        mark.detect(x[:4], watermark=Watermark(3, codebook_size=16, delta=2.0, length=15))
    with pytest.raises(ValueError, match="alternate"):
        mark.detect(x[:4], watermark=Watermark(3, codebook_size=16, delta=4.0, alternate=False, length=15))
    assert mark.detect(x[:4], watermark=mark.watermark.with_key(99))["z"].shape == (4,)
    for bad in (0.0, 1.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="fpr"):
            mark.calibrate(x[:200], fpr=bad)
    with pytest.raises(ValueError, match="codebook"):
        LVQMark(mark.vae, mark.prior, None, Watermark(1, codebook_size=64))
    with pytest.raises(ValueError, match="channels"):
        mark.detect(torch.randn(3, 32, 4))


def test_robust_training_and_scoring_draws_are_disjoint(tiny_mark):
    mark, x = tiny_mark
    streams = {k: _gen(0, v).initial_seed() for k, v in STREAM.items()}
    assert len(set(streams.values())) == len(streams)
    assert len(mark.robust_encoder.draws) == 4                        # one record per training step
    scored = mark.generate(100, generator=_gen(0, STREAM["score"]))
    assert _n_equal(scored, x) == 0
    xa, rec = attack_batch(x[:64], torch.Generator().manual_seed(0))
    clean = rec["clean"]
    assert torch.equal(xa[clean], x[:64][clean]) and not torch.equal(xa[~clean], x[:64][~clean])


def test_save_load_round_trip(tiny_mark, tmp_path):
    mark, x = tiny_mark
    mark.norm = {"mean": np.zeros(5, np.float32), "std": np.ones(5, np.float32)}
    mark.save(tmp_path / "m.pt")
    back = LVQMark.load(tmp_path / "m.pt")
    assert torch.equal(back.detect(x[:30])["z"], mark.detect(x[:30])["z"])
    assert back.threshold == mark.threshold and back.watermark.settings() == mark.watermark.settings()
    g1, g2 = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    assert torch.allclose(back.generate(5, generator=g1), mark.generate(5, generator=g2))
