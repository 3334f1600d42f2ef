"""Baselines: the global tokenizer (SDformer-like) and the wrong-key detector.

``GlobalVQVAE`` is :class:`lvqmark.LVQVAE` with the encoder swapped for :class:`GlobalEncoder`: ``L``
learned queries each attend over the whole window, so every token depends on every time step. The
codebook, the decoders, the prior, the watermark, the RobustEncoder stage and the training budget are
the same. It takes the same constructor arguments: ``receptive_field`` and ``stride`` only fix the
number of tokens ``L`` and the decoder's patch layout (the encoder ignores them).

TimeWak and Tree-Ring (diffusion models with inversion) are beyond the CPU budget and not reproduced.
"""

from __future__ import annotations

from lvqmark.lvqvae import LVQVAE, GlobalEncoder

__all__ = ["GlobalVQVAE", "wrong_key"]


class GlobalVQVAE(LVQVAE):
    """The global-coupling tokenizer: same API and arguments as :class:`LVQVAE`, global encoder."""

    encoder_class = GlobalEncoder


def wrong_key(watermark, offset: int = 1):
    """The wrong-key control: the generator's settings under key ``key + offset``."""
    return watermark.with_key(watermark.key + offset)
