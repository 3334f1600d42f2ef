"""Sequences for training: the toy simulator's rasters, or a user's latents ``[N, T, C, H, W]`` with actions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from hierwm.env import RASTER, initial_state, random_actions, render, simulate


class SequenceDataset(Dataset):
    """Frames ``(N, T, C, H, W)`` (stored compactly), actions ``(N, T, A)`` and optional true states.

    ``dataset[i]`` is ``(frames, actions)`` of sequence i as float32; :meth:`get_batch` takes an index tensor.
    """

    def __init__(self, frames: torch.Tensor, actions: torch.Tensor, states: torch.Tensor | None = None,
                 *, scale: float = 1.0, shift: float = 0.0):
        if frames.dim() != 5:
            raise ValueError(f"frames must be (N, T, C, H, W), got shape {tuple(frames.shape)}")
        if actions.dim() != 3 or actions.shape[:2] != frames.shape[:2]:
            raise ValueError(f"actions must be (N, T, A) with (N, T) = {tuple(frames.shape[:2])}, "
                             f"got {tuple(actions.shape)}")
        self.frames, self.actions, self.states = frames, actions.float(), states
        self.scale, self.shift = scale, shift

    def __len__(self):
        return self.frames.shape[0]

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        return tuple(self.frames.shape[2:])

    def get_batch(self, idx):
        idx = torch.as_tensor(idx, dtype=torch.long)
        return self.frames[idx].float() * self.scale + self.shift, self.actions[idx]

    def __getitem__(self, i):
        f, a = self.get_batch(torch.tensor([i]))
        return f[0], a[0]

    def subset(self, idx) -> SequenceDataset:
        idx = torch.as_tensor(idx, dtype=torch.long)
        return SequenceDataset(self.frames[idx], self.actions[idx], None if self.states is None else self.states[idx],
                               scale=self.scale, shift=self.shift)


def make_dataset(n_sequences: int, seed: int | None = None, *, length: int = 28, size: int = RASTER,
                 n_cars: int = 3) -> SequenceDataset:
    """``n_sequences`` ToyDriving sequences of ``length`` frames under smooth random actions.

    Frames are the semantic rasters mapped to {−1, +1} (``size`` 16, or 8 by max-pooling), ``actions``
    ``(N, T, 2)`` (action t leads to frame t+1) and ``states`` ``(N, T, 2+3·n_cars)`` the true states.
    """
    for name, v, lo in (("n_sequences", n_sequences, 1), ("length", length, 2), ("size", size, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    rng = np.random.default_rng(seed)
    s0 = initial_state(rng, n_sequences, n_cars)
    actions = random_actions(rng, n_sequences, length)
    states = simulate(s0, actions, rng, n_cars)
    frames = render(states.reshape(-1, states.shape[-1]), size, n_cars)
    frames = torch.from_numpy(frames.reshape(n_sequences, length, 3, size, size))
    return SequenceDataset(frames, torch.from_numpy(actions).float(), torch.from_numpy(states).float(),
                           scale=2.0, shift=-1.0)


class LatentSequenceDataset(SequenceDataset):
    """A user's latent sequences from one file: ``latents`` ``[N, T, C, H, W]`` (from any VAE, e.g. a
    ``diffusers`` ``AutoencoderKL``) and ``actions`` ``[N, T, A]``; ``.npz`` (``allow_pickle=False``) or
    ``.pt`` (``weights_only=True``). Optional ``states`` ``[N, T, d]`` for probes.
    """

    def __init__(self, path):
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no latent file at {path}")
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                doc = {k: torch.from_numpy(z[k]) for k in z.files}
        elif path.suffix in (".pt", ".pth"):
            doc = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(doc, dict):
                raise ValueError(f"{path} must hold a dict with 'latents' and 'actions'")
        else:
            raise ValueError(f"latent file must be .npz or .pt, got {path.name}")
        for key in ("latents", "actions"):
            if key not in doc:
                raise ValueError(f"{path} has no {key!r} array (found {sorted(doc)}); "
                                 "a world model needs the actions beside the latents")
        lat, act = torch.as_tensor(doc["latents"]).float(), torch.as_tensor(doc["actions"]).float()
        if lat.dim() != 5:
            raise ValueError(f"latents must be [N, T, C, H, W], got shape {tuple(lat.shape)}")
        if not torch.isfinite(lat).all():
            bad = (~torch.isfinite(lat)).flatten(1).any(1).nonzero().flatten().tolist()
            raise ValueError(f"latents contain NaN or inf (sequences {bad[:10]})")
        if not torch.isfinite(act).all():
            raise ValueError("actions contain NaN or inf")
        states = torch.as_tensor(doc["states"]).float() if "states" in doc else None
        super().__init__(lat, act, states)
