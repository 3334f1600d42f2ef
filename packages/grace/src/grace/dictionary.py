"""The concept dictionary: text embeddings of single-concept prompts, centred per modality (SpLiCE's bridge)."""

from __future__ import annotations

import numpy as np
import torch

from grace.world import CONCEPT_TEMPLATES


def _normalise(x, axis=-1):
    return x / np.maximum(np.linalg.norm(x, axis=axis, keepdims=True), 1e-12)


def check_embeddings(Z, name: str = "Z", *, width: int | None = None) -> np.ndarray:
    """``Z`` as a float64 ``(n, d)`` array of finite values, or a clear error naming ``name``."""
    if isinstance(Z, torch.Tensor):
        Z = Z.detach().cpu().numpy()
    try:
        Z = np.asarray(Z, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a numeric array, got {type(Z).__name__}") from None
    if Z.ndim != 2 or Z.shape[0] < 1:
        raise ValueError(f"{name} must have shape (n, d) with n >= 1, got {Z.shape}")
    if width is not None and Z.shape[1] != width:
        raise ValueError(f"{name} has width {Z.shape[1]} but the dictionary's embeddings have width {width}")
    if not np.all(np.isfinite(Z)):
        raise ValueError(f"{name} contains NaN or inf")
    return Z


class ConceptDictionary:
    """Concept atoms: ``atoms[j] = normalise(t_j − mean_k t_k)`` for template-averaged text embeddings ``t_j``.

    Images are centred by ``image_mean`` (the mean of the normalised image embeddings; a decomposer
    estimates it from its training data when it is ``None``). Every decomposer decodes through
    ``inverse_transform(C) = normalise(C · atoms + image_mean)``.

    Args:
        concepts: distinct non-empty concept names, ``C`` of them.
        text_embeddings: ``(C, d)`` text embeddings of the concepts (template-averaged, normalised or not).
        image_mean: optional ``(d,)`` image mean.
    """

    def __init__(self, concepts, text_embeddings, *, image_mean=None):
        concepts = [str(c) for c in concepts] if not isinstance(concepts, str) else None
        if not concepts:
            raise ValueError("concepts must be a non-empty list of names")
        if any(not c.strip() for c in concepts):
            raise ValueError("concepts must not contain empty names")
        dup = sorted({c for c in concepts if concepts.count(c) > 1})
        if dup:
            raise ValueError(f"duplicate concepts: {dup}")
        T = check_embeddings(text_embeddings, "text_embeddings")
        if T.shape[0] != len(concepts):
            raise ValueError(f"text_embeddings has {T.shape[0]} rows for {len(concepts)} concepts")
        T = _normalise(T)
        self.concepts = concepts
        self.text_mean = T.mean(0)
        self.atoms = _normalise(T - self.text_mean)
        self.image_mean = None
        if image_mean is not None:
            self.image_mean = check_embeddings(np.asarray(image_mean)[None], "image_mean", width=self.dim)[0]

    @property
    def dim(self) -> int:
        return self.atoms.shape[1]

    def __len__(self) -> int:
        return len(self.concepts)

    @classmethod
    def from_prompts(cls, model, tokenizer, concepts, *, templates=None, image_mean=None,
                     device: str = "cpu") -> ConceptDictionary:
        """Embed ``template.format(concept)`` for every template with ``model.encode_text`` and average.

        ``model`` is any object with open_clip's ``encode_text`` (a :class:`grace.TinyCLIP`, an open_clip
        model); ``tokenizer`` is open_clip's kind of callable, list of strings → token tensor.
        """
        for meth in ("encode_text", "encode_image"):
            if not callable(getattr(model, meth, None)):
                raise TypeError(f"model must have open_clip's {meth}(...) method; {type(model).__name__} lacks it")
        if not callable(tokenizer):
            raise TypeError("tokenizer must be callable: list[str] -> token tensor")
        concepts = list(concepts) if not isinstance(concepts, str) else []
        if not concepts:
            raise ValueError("concepts must be a non-empty list of names")
        templates = list(templates or CONCEPT_TEMPLATES)
        if any("{}" not in t for t in templates):
            raise ValueError("every template must contain '{}'")
        rows = []
        with torch.no_grad():
            for c in concepts:
                e = model.encode_text(tokenizer([t.format(c) for t in templates]).to(device)).float()
                rows.append(torch.nn.functional.normalize(e, dim=-1).mean(0).cpu().numpy())
        return cls(concepts, np.stack(rows), image_mean=image_mean)

    def state(self) -> dict:
        return {"concepts": list(self.concepts), "atoms": torch.from_numpy(self.atoms),
                "text_mean": torch.from_numpy(self.text_mean),
                "image_mean": None if self.image_mean is None else torch.from_numpy(self.image_mean)}

    @classmethod
    def from_state(cls, s: dict) -> ConceptDictionary:
        d = cls.__new__(cls)
        d.concepts = list(s["concepts"])
        d.atoms = s["atoms"].numpy()
        d.text_mean = s["text_mean"].numpy()
        d.image_mean = None if s["image_mean"] is None else s["image_mean"].numpy()
        return d
