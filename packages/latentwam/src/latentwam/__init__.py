"""latentwam — Being-H0.7: a latent world-action model (latent queries, future-informed dual branch).

Public API: :class:`LatentWAM`, the baselines :class:`VLAPolicy` and :class:`PixelWAM`, the
frame-tokenizer adapter :class:`HFBackbone`, the environments ``latentwam/Intercept-v0`` and
``latentwam/Reach-v0`` (registered on import), :func:`collect_demos`, :func:`load_lerobot`,
:func:`train`, :func:`evaluate` and :func:`probe`.
"""

from latentwam.baselines import PixelWAM
from latentwam.data import Demos, collect_demos, load_lerobot
from latentwam.envs import InterceptEnv, ReachEnv, register_envs
from latentwam.train import evaluate, probe, train
from latentwam.wam import HFBackbone, LatentWAM, VLAPolicy, anti_collapse, effective_rank

register_envs()

__all__ = [
    "Demos",
    "HFBackbone",
    "InterceptEnv",
    "LatentWAM",
    "PixelWAM",
    "ReachEnv",
    "VLAPolicy",
    "anti_collapse",
    "collect_demos",
    "effective_rank",
    "evaluate",
    "load_lerobot",
    "probe",
    "train",
]
__version__ = "0.1.0"
