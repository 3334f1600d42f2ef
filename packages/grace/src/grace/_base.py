"""What every decomposer shares: validation, centring, the common decoder, save/load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from grace.dictionary import ConceptDictionary, _normalise, check_embeddings


def check_target_l0(target_l0, n_concepts: int):
    if target_l0 is None:
        return None
    if isinstance(target_l0, bool) or not isinstance(target_l0, int | np.integer):
        raise TypeError(f"target_l0 must be an int or None, got {type(target_l0).__name__}")
    if not 1 <= int(target_l0) <= n_concepts:
        raise ValueError(f"target_l0 must lie in [1, {n_concepts}] (the number of concepts), got {target_l0}")
    return int(target_l0)


def check_number(v, name: str, *, minimum: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.floating | np.integer):
        raise TypeError(f"{name} must be a number, got {type(v).__name__}")
    if not np.isfinite(v) or v < minimum:
        raise ValueError(f"{name} must be finite and >= {minimum}, got {v}")
    return float(v)


class Decomposer:
    """Base: ``fit(Z)``, ``transform(Z) -> (n, C) >= 0``, ``inverse_transform(C) -> (n, d)``."""

    def __init__(self, dictionary, target_l0=None):
        if not isinstance(dictionary, ConceptDictionary):
            raise TypeError(f"dictionary must be a grace.ConceptDictionary, got {type(dictionary).__name__}")
        self.dictionary = dictionary
        self.target_l0 = check_target_l0(target_l0, len(dictionary))
        self.image_mean_ = None

    # the data, normalised and centred -------------------------------------------------------------
    def _prepare(self, Z, *, fitting: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(z, y)``: normalised embeddings and their centred form ``y = z − image_mean``."""
        z = _normalise(check_embeddings(Z, "Z", width=self.dictionary.dim))
        if fitting:
            mu = self.dictionary.image_mean
            self.image_mean_ = z.mean(0) if mu is None else np.asarray(mu, float)
        elif self.image_mean_ is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit(Z) first")
        return z, z - self.image_mean_

    def fit_transform(self, Z):
        return self.fit(Z).transform(Z)

    def inverse_transform(self, C) -> np.ndarray:
        """``normalise(C · atoms + image_mean)``: the same decoder for every decomposer."""
        if self.image_mean_ is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit(Z) first")
        C = check_embeddings(C, "C", width=len(self.dictionary))
        if np.any(C < 0):
            raise ValueError("C must be non-negative")
        return _normalise(C @ self.dictionary.atoms + self.image_mean_).astype(np.float32)

    # save / load ----------------------------------------------------------------------------------
    def _extra_state(self) -> dict:
        return {}

    def _load_extra(self, s: dict) -> None:
        pass

    def get_params(self) -> dict:
        raise NotImplementedError

    def save(self, path) -> Path:
        """One self-contained file: the dictionary, the image mean, the parameters and the weights."""
        if self.image_mean_ is None:
            raise RuntimeError("fit before save")
        path = Path(path)
        torch.save({"class": type(self).__name__, "params": self.get_params(),
                    "dictionary": self.dictionary.state(), "image_mean": torch.from_numpy(self.image_mean_),
                    "extra": self._extra_state()}, path)
        return path

    @classmethod
    def load(cls, path):
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no saved decomposer at {path}")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        if blob.get("class") != cls.__name__:
            raise ValueError(f"{path} holds a {blob.get('class')}, not a {cls.__name__}")
        obj = cls(ConceptDictionary.from_state(blob["dictionary"]), **blob["params"])
        obj.image_mean_ = blob["image_mean"].numpy()
        obj._load_extra(blob["extra"])
        return obj


def topk_mask(c: torch.Tensor, k: int | None) -> torch.Tensor:
    """Keep the ``k`` largest entries of each row (the rest zero); ``k=None`` keeps all."""
    if k is None or k >= c.shape[-1]:
        return c
    idx = c.topk(k, dim=-1).indices
    return torch.zeros_like(c).scatter(-1, idx, c.gather(-1, idx))
