"""The compositional world: 24×24 RGB images rendered from attributes, captions, a 4-frame video variant.

Attributes: 4 shapes × 6 colours × 2 sizes × 4 positions. A fraction ``holdout`` of the
(shape, colour) combinations is held out of every training set (``split="seen"`` never draws them,
``split="heldout"`` draws only them). Video: 4 frames of the object moving 2 px per frame in one
of 4 directions (``motion``).
"""

from __future__ import annotations

import numpy as np
import torch

SHAPES = ("square", "circle", "triangle", "cross")
COLOURS = ("red", "green", "blue", "yellow", "magenta", "cyan")
SIZES = ("small", "large")
POSITIONS = ("topleft", "topright", "bottomleft", "bottomright")
MOTIONS = ("left", "right", "up", "down")
_RGB = {"red": (1, 0, 0), "green": (0, 1, 0), "blue": (0, 0, 1), "yellow": (1, 1, 0), "magenta": (1, 0, 1),
        "cyan": (0, 1, 1)}
_CENTRES = {"topleft": (6, 6), "topright": (6, 17), "bottomleft": (17, 6), "bottomright": (17, 17)}
_STEP = {"left": (0, -2), "right": (0, 2), "up": (-2, 0), "down": (2, 0)}
CAPTION_TEMPLATES = ("a {size} {colour} {shape} at the {position}", "{colour} {shape} {size} {position}",
                     "the {shape} is {colour} and {size} at {position}", "a {position} {size} {shape} coloured {colour}")
CONCEPT_TEMPLATES = ("a {}", "the {}", "{} object")
VOCAB = ("<pad>", "a", "the", "at", "is", "and", "coloured", "object", *SHAPES, *COLOURS, *SIZES, *POSITIONS)


class Tokenizer:
    """Bag-of-words tokenizer with open_clip's calling convention: ``tok(texts) -> LongTensor (n, L)``.

    Unknown words raise ``ValueError`` (the tiny text tower has no embedding for them).
    """

    def __init__(self, vocab=VOCAB, context_length: int = 12):
        self.vocab = tuple(vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.context_length = int(context_length)

    def __call__(self, texts) -> torch.Tensor:
        if isinstance(texts, str):
            texts = [texts]
        out = torch.zeros(len(texts), self.context_length, dtype=torch.long)
        for i, t in enumerate(texts):
            words = str(t).lower().split()
            unknown = [w for w in words if w not in self.index]
            if unknown:
                raise ValueError(f"tokenizer: unknown words {unknown} in {t!r}")
            ids = [self.index[w] for w in words][: self.context_length]
            out[i, : len(ids)] = torch.tensor(ids)
        return out


def _mask(shape: str, cy, cx, r, yy, xx):
    dy, dx = yy - cy[:, None, None], xx - cx[:, None, None]
    r = r[:, None, None]
    if shape == "square":
        return (np.abs(dy) <= r) & (np.abs(dx) <= r)
    if shape == "circle":
        return dy**2 + dx**2 <= r**2 + 0.5
    if shape == "triangle":
        return (dy <= r) & (dy >= -r) & (np.abs(dx) <= (dy + r) / 2 + 0.5)
    t = np.maximum(r / 3, 1)
    return ((np.abs(dy) <= t) | (np.abs(dx) <= t)) & (np.abs(dy) <= r) & (np.abs(dx) <= r)


def render(attrs: dict, rng: np.random.Generator, *, offset=None, noise: float = 0.05) -> np.ndarray:
    """Images ``(n, 3, 24, 24)`` float32 in [0, 1] for integer attribute arrays (keys shape/colour/size/position)."""
    n = len(attrs["shape"])
    yy, xx = np.mgrid[0:24, 0:24]
    cy = np.array([_CENTRES[POSITIONS[p]][0] for p in attrs["position"]], float) + rng.integers(-1, 2, n)
    cx = np.array([_CENTRES[POSITIONS[p]][1] for p in attrs["position"]], float) + rng.integers(-1, 2, n)
    if offset is not None:
        cy, cx = cy + offset[:, 0], cx + offset[:, 1]
    r = np.where(np.asarray(attrs["size"]) == 1, 5.0, 3.0)
    img = rng.uniform(0, noise, size=(n, 3, 24, 24))
    for s, name in enumerate(SHAPES):
        idx = np.flatnonzero(np.asarray(attrs["shape"]) == s)
        if idx.size:
            m = _mask(name, cy[idx], cx[idx], r[idx], yy, xx)
            rgb = np.array([_RGB[COLOURS[c]] for c in np.asarray(attrs["colour"])[idx]], float)
            shade = rng.uniform(0.75, 1.0, size=(idx.size, 1))
            img[idx] = np.where(m[:, None], (rgb * shade)[:, :, None, None], img[idx])
    return img.astype(np.float32)


class CompositionalWorld:
    """Attribute-rendered images and captions with held-out (shape, colour) combinations.

    Args:
        video: draw 4-frame clips (``(n, 4, 3, 24, 24)``) with a ``motion`` attribute.
        holdout: fraction of the 24 (shape, colour) combinations held out of training, in [0, 0.5].
        seed: chooses the held-out combinations (every shape and colour stays seen).

    Example:
        >>> w = CompositionalWorld(seed=0)
        >>> images, attrs, captions = w.sample(8, split="seen", seed=1)
    """

    attributes = {"shape": SHAPES, "colour": COLOURS, "size": SIZES, "position": POSITIONS}

    def __init__(self, *, video: bool = False, holdout: float = 0.2, seed: int | None = None):
        if isinstance(holdout, bool) or not isinstance(holdout, int | float) or not 0 <= holdout <= 0.5:
            raise ValueError(f"holdout must be a number in [0, 0.5], got {holdout!r}")
        self.video, self.holdout, self.seed = bool(video), float(holdout), seed
        rng = np.random.default_rng(seed)
        combos = [(s, c) for s in range(4) for c in range(6)]
        n_out = int(round(holdout * len(combos)))
        while True:  # every shape and every colour must stay seen
            out = {combos[i] for i in rng.choice(len(combos), n_out, replace=False)}
            seen = [x for x in combos if x not in out]
            if {s for s, _ in seen} == set(range(4)) and {c for _, c in seen} == set(range(6)):
                break
        self.heldout_combos = sorted(out)
        self.seen_combos = sorted(seen)

    @property
    def concepts(self) -> list[str]:
        """The single-attribute concept names (the dictionary's vocabulary)."""
        return [*SHAPES, *COLOURS, *SIZES, *POSITIONS]

    def sample(self, n: int, *, split: str = "seen", seed: int | None = None):
        """``(images, attributes, captions)``: images float32, attributes name → int array, captions list[str]."""
        if split not in ("seen", "heldout", "all"):
            raise ValueError(f"split must be 'seen', 'heldout' or 'all', got {split!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        rng = np.random.default_rng(seed)
        pool = {"seen": self.seen_combos, "heldout": self.heldout_combos,
                "all": self.seen_combos + self.heldout_combos}[split]
        if not pool:
            raise ValueError(f"split {split!r} is empty (holdout={self.holdout})")
        pick = np.array(pool)[rng.integers(0, len(pool), n)]
        attrs = {"shape": pick[:, 0], "colour": pick[:, 1], "size": rng.integers(0, 2, n),
                 "position": rng.integers(0, 4, n)}
        tmpl = rng.integers(0, len(CAPTION_TEMPLATES), n)
        captions = [CAPTION_TEMPLATES[t].format(**{k: self.attributes[k][attrs[k][i]] for k in self.attributes})
                    for i, t in enumerate(tmpl)]
        if not self.video:
            return render(attrs, rng), attrs, captions
        attrs["motion"] = rng.integers(0, 4, n)
        step = np.array([_STEP[MOTIONS[m]] for m in attrs["motion"]], float)
        frames = [render(attrs, np.random.default_rng(rng.integers(2**31)), offset=step * (f - 1.5))
                  for f in range(4)]
        return np.stack(frames, 1), attrs, captions

    def attribute_names(self, attrs: dict) -> dict:
        """Integer attributes → names, the form :func:`grace.evaluate` takes."""
        names = dict(self.attributes, motion=MOTIONS)
        return {k: np.array(names[k])[np.asarray(v)] for k, v in attrs.items()}
