"""hierwm — a two-level driving world model: diffusion-forcing pre-training, teacher-forcing fine-tuning."""

from hierwm.baselines import FlatWorldModel
from hierwm.data import LatentSequenceDataset, SequenceDataset, make_dataset
from hierwm.env import ToyDrivingEnv, register
from hierwm.metrics import FrechetDistance, linear_probe, rollout_metrics, steering_responsiveness, train_frame_encoder
from hierwm.model import HierarchicalWorldModel, count_parameters
from hierwm.noise import NoiseSchedule, sample_noise_levels
from hierwm.train import train

register()  # gymnasium.make("hierwm/ToyDriving-v0")

__all__ = [
    "FlatWorldModel",
    "FrechetDistance",
    "HierarchicalWorldModel",
    "LatentSequenceDataset",
    "NoiseSchedule",
    "SequenceDataset",
    "ToyDrivingEnv",
    "count_parameters",
    "linear_probe",
    "make_dataset",
    "rollout_metrics",
    "sample_noise_levels",
    "steering_responsiveness",
    "train",
    "train_frame_encoder",
]
__version__ = "0.1.0"
