"""LVQMark: watermarked generation with the token prior and attack-time detection by re-encoding.

- Generation: ``prior.generate(n, logits_processor=watermark)`` → tokens → ``vae.decode`` → ``(n, T, C)``.
- Detection: the series is re-encoded by the **RobustEncoder** (stage 4: a copy of the tokenizer's
  encoder fine-tuned so that attacked series map to the clean series' tokens), then
  ``z = 2(g − ½)√L'`` over the valid range (see :class:`lvqmark.Watermark`) and ``p = 1 − Φ(z)``.
- Calibration: one threshold, from clean non-watermarked series only (``calibrate(null_x, fpr)``):
  the empirical ``1 − fpr`` quantile ("higher"), so at most ``fpr`` of the calibration z exceed it.
- The detector is bound to the generator's watermark settings; a detector watermark with other
  settings (δ, alternation, warm-up, K, L) is refused; another key is allowed (wrong-key control).

The RobustEncoder's training draws (training windows, attacks, strengths, positions) come from their own
``torch.Generator`` and the training split; scoring uses generated series and another generator, so
the two never share a draw.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lvqmark.attacks import ATTACKS
from lvqmark.lvqvae import LVQVAE, _step
from lvqmark.prior import TokenPrior
from lvqmark.watermark import Watermark
from paperworks import check_float

__all__ = ["LVQMark", "RobustEncoder", "train_robust_encoder"]


class RobustEncoder(nn.Module):
    """A fine-tuned copy of a tokenizer's encoder, quantised against the tokenizer's (frozen) codebook.

    ``encode(x (B, T, C)) → tokens (B, L)``.
    """

    def __init__(self, vae: LVQVAE):
        super().__init__()
        self.encoder = copy.deepcopy(vae.encoder)
        self.register_buffer("codebook", vae.codebook.detach().clone())
        self.n_channels, self.window = vae.n_channels, vae.window

    def logits(self, x):
        z = self.encoder(x)
        return -torch.cdist(z.reshape(-1, z.shape[-1]), self.codebook).pow(2).reshape(*z.shape[:-1], -1)

    def encode(self, x) -> torch.Tensor:
        from lvqmark.lvqvae import check_series

        x = check_series(x, n_channels=self.n_channels, window=self.window).to(self.codebook.device)
        with torch.no_grad():
            return self.logits(x).argmax(-1)


def attack_batch(x, generator, *, grid=tuple(ATTACKS), max_strength=0.35, clean_fraction=0.25):
    """Each series gets one attack from ``grid`` at a strength drawn uniformly from (0, max_strength]
    (variable crop), or none with probability ``clean_fraction``. Returns ``(attacked, record)``."""
    B = x.shape[0]
    which = torch.randint(0, len(grid), (B,), generator=generator)
    strength = torch.rand(B, generator=generator) * max_strength
    clean = torch.rand(B, generator=generator) < clean_fraction
    out = x.clone()
    for a, name in enumerate(grid):
        for s_idx in torch.nonzero((which == a) & ~clean).flatten().tolist():
            out[s_idx:s_idx + 1] = ATTACKS[name](x[s_idx:s_idx + 1], float(strength[s_idx]), generator=generator)
    return out, {"attack": which, "strength": strength, "clean": clean}


def train_robust_encoder(vae: LVQVAE, x: torch.Tensor, *, steps: int, batch: int = 128, lr: float = 1e-3,
                         generator=None, temperature: float = 1.0, decoded_fraction: float = 0.5) -> RobustEncoder:
    """Stage 4: cross-entropy of the nearest-code logits (−‖z − e_k‖²/τ) of the attacked series against the
    tokens the frozen tokenizer gives the clean series. ``x`` is the training split only; a
    ``decoded_fraction`` of each batch is replaced by the decoder's output for the clean tokens (inferred:
    it makes re-encoding of generated series consistent)."""
    from lvqmark.io import batches

    robust = RobustEncoder(vae).to(vae.codebook.device)
    with torch.no_grad():
        target_all = vae.encode(x)
    opt = torch.optim.Adam(robust.encoder.parameters(), lr=lr)
    robust.train()
    robust.draws = []
    for i, (xb, tb) in enumerate(batches((x, target_all), batch, steps, generator)):
        # half the inputs are the tokenizer's own decodings of the clean tokens: detection re-encodes
        # *generated* (decoded) series, so the encoder must also be consistent on the decoder's outputs
        use_dec = torch.rand(xb.shape[0], generator=generator) < decoded_fraction
        if use_dec.any():
            with torch.no_grad():
                xb = xb.clone()
                xb[use_dec.to(xb.device)] = vae.decode(tb[use_dec.to(tb.device)])
        xa, rec = attack_batch(xb, generator)
        robust.draws.append(rec)
        loss = F.cross_entropy(robust.logits(xa).reshape(-1, vae.codebook_size) / temperature, tb.reshape(-1))
        _step(opt, loss, "RobustEncoder stage 4", i)
    robust.eval()
    return robust


class LVQMark:
    """Watermarked generator and detector.

    Args:
        vae: a trained :class:`LVQVAE` (or :class:`GlobalVQVAE`).
        prior: a trained :class:`TokenPrior` over the same codebook and length.
        robust_encoder: a :class:`RobustEncoder` for detection (``None``: re-encode with ``vae`` itself).
        watermark: a :class:`Watermark` with the codebook's size; its ``length`` is bound to ``vae.n_tokens``.

    ``generate(n, *, watermark=True, generator=None) → (n, T, C)``; ``detect(x) → {"z", "p_value",
    "n_valid", ["detected"]}``; ``calibrate(null_x, fpr=0.01) → threshold``.
    """

    def __init__(self, vae, prior, robust_encoder, watermark):
        if not isinstance(vae, LVQVAE):
            raise TypeError(f"vae must be an LVQVAE or GlobalVQVAE, got {type(vae).__name__}")
        if not isinstance(prior, TokenPrior):
            raise TypeError(f"prior must be a TokenPrior, got {type(prior).__name__}")
        if robust_encoder is not None and not isinstance(robust_encoder, RobustEncoder):
            raise TypeError(f"robust_encoder must be a RobustEncoder or None, got {type(robust_encoder).__name__}")
        if not isinstance(watermark, Watermark):
            raise TypeError(f"watermark must be a Watermark, got {type(watermark).__name__}")
        if prior.codebook_size != vae.codebook_size or watermark.codebook_size != vae.codebook_size:
            raise ValueError(f"codebook sizes differ: vae {vae.codebook_size}, prior {prior.codebook_size}, "
                             f"watermark {watermark.codebook_size}")
        if prior.length != vae.n_tokens:
            raise ValueError(f"prior.length ({prior.length}) must equal the tokenizer's L ({vae.n_tokens})")
        if watermark.length is None:
            watermark = watermark.with_length(vae.n_tokens)
        elif watermark.length != vae.n_tokens:
            raise ValueError(f"watermark.length ({watermark.length}) must equal the tokenizer's L ({vae.n_tokens})")
        self.vae, self.prior, self.robust_encoder, self.watermark = vae, prior, robust_encoder, watermark
        self.threshold: float | None = None
        self.norm: dict | None = None        # per-channel mean/std of the training data, if the pipeline set it

    def generate_tokens(self, n, *, watermark=True, generator=None):
        return self.prior.generate(n, logits_processor=self.watermark if watermark else None, generator=generator)

    @torch.no_grad()
    def generate(self, n, *, watermark=True, generator=None) -> torch.Tensor:
        """``n`` series ``(n, T, C)``, watermarked unless ``watermark=False``."""
        return self.vae.decode(self.generate_tokens(n, watermark=watermark, generator=generator))

    def tokens_for_detection(self, x):
        enc = self.robust_encoder if self.robust_encoder is not None else self.vae
        return enc.encode(x)

    def detect(self, x, *, watermark: Watermark | None = None) -> dict:
        """z-test on the re-encoded tokens; ``watermark`` (another key, same settings) for the wrong-key control."""
        wm = self.watermark
        if watermark is not None:
            self.watermark.check_matches(watermark)
            wm = watermark
        z, n_valid = wm.z_score(self.tokens_for_detection(x))
        out = {"z": z, "p_value": 0.5 * torch.erfc(z / math.sqrt(2.0)), "n_valid": n_valid}
        if self.threshold is not None:
            out["detected"] = z > self.threshold
        return out

    def calibrate(self, null_x, fpr=0.01) -> float:
        """The one threshold: the ``1 − fpr`` empirical quantile of clean non-watermarked z."""
        fpr = check_float(fpr, "fpr", minimum=0.0, maximum=1.0, open_minimum=True, open_maximum=True)
        z = self.detect(null_x)["z"].numpy()
        if len(z) < math.ceil(1 / fpr):
            raise ValueError(f"null_x needs at least {math.ceil(1 / fpr)} series to calibrate fpr={fpr}, "
                             f"got {len(z)}")
        self.threshold = float(np.quantile(z, 1.0 - fpr, method="higher"))
        return self.threshold

    # ---- save / load -------------------------------------------------------------------------------
    def save(self, path) -> Path:
        """One self-contained file: tokenizer, prior, RobustEncoder, watermark (key and settings),
        threshold and the data normalisation."""
        from lvqmark.io import save_doc

        doc = {"class": "LVQMark", "vae": self.vae.to_state(),
               "prior": {"config": dict(self.prior.config),
                         "state_dict": {k: v.detach().cpu() for k, v in self.prior.state_dict().items()}},
               "robust": None if self.robust_encoder is None else
               {k: v.detach().cpu() for k, v in self.robust_encoder.state_dict().items()},
               "watermark": {"key": self.watermark.key, **self.watermark.settings()},
               "threshold": self.threshold,
               "norm": None if self.norm is None else {k: torch.as_tensor(v) for k, v in self.norm.items()}}
        return save_doc(doc, path)

    @classmethod
    def load(cls, path) -> LVQMark:
        """An :class:`LVQMark` saved by :meth:`save` (``weights_only=True``)."""
        from lvqmark.baselines import GlobalVQVAE
        from lvqmark.io import load_doc

        doc = load_doc(path)
        if doc["class"] != "LVQMark":
            raise ValueError(f"{path} holds a {doc['class']!r}, not an LVQMark")
        vae_cls = {"LVQVAE": LVQVAE, "GlobalVQVAE": GlobalVQVAE}[doc["vae"]["class"]]
        vae = vae_cls.from_state(doc["vae"])
        prior = TokenPrior.from_state(doc["prior"])
        robust = None
        if doc["robust"] is not None:
            robust = RobustEncoder(vae)
            robust.load_state_dict(doc["robust"])
            robust.eval()
        w = doc["watermark"]
        mark = cls(vae, prior, robust, Watermark(w.pop("key"), **w))
        mark.threshold = doc["threshold"]
        mark.norm = None if doc["norm"] is None else {k: v.numpy() for k, v in doc["norm"].items()}
        return mark


