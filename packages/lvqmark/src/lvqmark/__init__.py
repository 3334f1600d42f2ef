"""lvqmark — L-VQVAE and LVQMark: local-window VQ tokenization and robust watermarking for multivariate
time series (arXiv 2608.19727).

Public API: :class:`LVQVAE`, :class:`GlobalVQVAE` (the global-coupling baseline), :class:`TokenPrior`,
:class:`Watermark`, :class:`LVQMark`, :class:`RobustEncoder`, and :mod:`lvqmark.attacks`.
"""

from lvqmark import attacks
from lvqmark.baselines import GlobalVQVAE
from lvqmark.lvqmark import LVQMark, RobustEncoder, train_robust_encoder
from lvqmark.lvqvae import LVQVAE, train_vae
from lvqmark.prior import TokenPrior, train_prior
from lvqmark.watermark import Watermark

__all__ = ["LVQVAE", "GlobalVQVAE", "TokenPrior", "Watermark", "LVQMark", "RobustEncoder", "attacks",
           "train_vae", "train_prior", "train_robust_encoder"]
__version__ = "0.1.0"
