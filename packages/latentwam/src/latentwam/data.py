"""Demonstrations: the scripted expert's episodes and a reader for local LeRobot v3.0 datasets.

A :class:`Demos` holds whole episodes (frames, proprioception, actions, optional true states) and
the index of the valid samples: step ``t`` of an episode is a sample when its action chunk
``a[t : t + chunk]`` and its future frames ``t + offset`` all lie inside the episode. Samples that
would run past an episode's end are dropped and counted (``Demos.dropped``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

log = logging.getLogger("latentwam")


def _check_offsets(future_offsets) -> tuple[int, ...]:
    if isinstance(future_offsets, (str, bytes)) or not isinstance(future_offsets, Sequence):
        raise TypeError(f"future_offsets must be a sequence of positive ints, got {future_offsets!r}")
    offs = tuple(future_offsets)
    if not offs or any(isinstance(o, bool) or not isinstance(o, (int, np.integer)) or o < 1 for o in offs):
        raise ValueError(f"future_offsets must be positive ints, got {future_offsets!r}")
    return tuple(int(o) for o in offs)


class Demos:
    """Episodes of (frame, proprio, action) steps with valid-sample bookkeeping.

    Args:
        frames: per episode a (T, C, H, W) uint8 array (the frame observed at step t).
        proprio: per episode a (T, P) float array.
        actions: per episode a (T, A) float array (the action taken at step t).
        chunk: action-chunk length; context: number of past frames per sample (the first frame of
            an episode is repeated before it); future_offsets: offsets of the future frames.
        states: optional true states, ``name -> per episode (T, k)`` (e.g. ``"ball"`` for probes).
    """

    def __init__(self, frames, proprio, actions, *, chunk: int = 8, context: int = 2,
                 future_offsets=(4, 8), states: dict | None = None):
        if not (len(frames) == len(proprio) == len(actions)) or len(frames) == 0:
            raise ValueError("frames, proprio and actions must be non-empty lists of the same length (episodes)")
        self.chunk, self.context = int(chunk), int(context)
        self.future_offsets = _check_offsets(future_offsets)
        lengths = []
        for i, (f, p, a) in enumerate(zip(frames, proprio, actions, strict=True)):
            if f.ndim != 4 or f.dtype != np.uint8:
                raise ValueError(f"episode {i}: frames must be a (T, C, H, W) uint8 array, got {f.dtype} {f.shape}")
            if not (len(f) == len(p) == len(a)):
                raise ValueError(f"episode {i}: frames, proprio and actions differ in length "
                                 f"({len(f)}, {len(p)}, {len(a)})")
            lengths.append(len(f))
        self.frames = np.concatenate(frames)
        self.proprio = np.concatenate(proprio).astype(np.float32)
        self.actions = np.concatenate(actions).astype(np.float32)
        for name, arr in (("proprio", self.proprio), ("actions", self.actions)):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} contain NaN or inf")
        self.states = {k: np.concatenate(v).astype(np.float32) for k, v in (states or {}).items()}
        self.lengths = np.asarray(lengths)
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]])
        reach = max(self.chunk - 1, max(self.future_offsets))
        idx, ep = [], []
        for e, (s, n) in enumerate(zip(self.starts, self.lengths, strict=True)):
            valid = np.arange(max(n - reach, 0))
            idx.append(s + valid)
            ep.append(np.full(len(valid), e))
        self.index = np.concatenate(idx).astype(np.int64)
        self.episode = np.concatenate(ep).astype(np.int64)
        self.dropped = int(self.lengths.sum() - len(self.index))
        if len(self.index) == 0:
            raise ValueError(f"no valid samples: every episode is shorter than chunk/future reach {reach + 1}")

    def __len__(self) -> int:
        return len(self.index)

    @property
    def n_episodes(self) -> int:
        return len(self.lengths)

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        return tuple(self.frames.shape[1:])

    @property
    def action_dim(self) -> int:
        return self.actions.shape[1]

    @property
    def proprio_dim(self) -> int:
        return self.proprio.shape[1]

    def _context_rows(self, g, e):
        start = self.starts[e]
        return np.stack([np.maximum(g - (self.context - 1 - j), start) for j in range(self.context)], 1)

    def batch(self, which) -> dict:
        """The samples ``which`` (positions in ``0..len-1``) as a dict of torch tensors.

        ``frames`` (B, context, C, H, W) uint8, ``proprio`` (B, P), ``actions`` (B, chunk, A),
        ``future`` (B, F, C, H, W) uint8.
        """
        which = np.asarray(which, dtype=np.int64)
        g, e = self.index[which], self.episode[which]
        ctx = self._context_rows(g, e)
        fut = g[:, None] + np.asarray(self.future_offsets)[None]
        chunk = g[:, None] + np.arange(self.chunk)[None]
        return {
            "frames": torch.from_numpy(self.frames[ctx]),
            "proprio": torch.from_numpy(self.proprio[g]),
            "actions": torch.from_numpy(self.actions[chunk]),
            "future": torch.from_numpy(self.frames[fut]),
        }

    def targets(self, name: str, offsets=(0,)) -> np.ndarray:
        """True state ``name`` at ``t + offset`` for every sample, shape (N, len(offsets) * k)."""
        if name not in self.states:
            raise KeyError(f"no state {name!r} in this dataset; have {sorted(self.states)}")
        rows = self.index[:, None] + np.asarray(offsets)[None]
        return self.states[name][rows].reshape(len(self.index), -1)

    def subset_episodes(self, episodes) -> Demos:
        """A new :class:`Demos` with only the given episodes."""
        def take(arr):
            return [arr[s:s + n] for s, n in zip(self.starts[episodes], self.lengths[episodes], strict=True)]
        return Demos(take(self.frames), take(self.proprio), take(self.actions), chunk=self.chunk,
                     context=self.context, future_offsets=self.future_offsets,
                     states={k: take(v) for k, v in self.states.items()})

    def split(self, frac: float, seed: int = 0) -> tuple[Demos, Demos]:
        """Split by episodes: (the first ``frac`` of a random permutation, the rest)."""
        if not 0.0 < frac < 1.0:
            raise ValueError(f"frac must be in (0, 1), got {frac}")
        perm = np.random.default_rng(seed).permutation(self.n_episodes)
        k = min(max(int(round(frac * self.n_episodes)), 1), self.n_episodes - 1)
        return self.subset_episodes(np.sort(perm[:k])), self.subset_episodes(np.sort(perm[k:]))


# the scripted expert ------------------------------------------------------------------------------

def collect_demos(env_id: str = "latentwam/Intercept-v0", n_episodes: int = 2000, seed: int | None = None, *,
                  steps: int = 30, chunk: int = 8, future_offsets=(4, 8), policy: str = "expert") -> Demos:
    """Roll the scripted expert (true state) for ``n_episodes`` × ``steps`` steps.

    Episodes run their full length (the expert keeps tracking the ball after a catch), so every
    episode gives ``steps - max(chunk - 1, max offset)`` samples. ``seed`` seeds episode ``i`` with
    ``seed + i`` (``None``: 0). States ``ball``/``target``/``effector`` are kept for probes.
    """
    from latentwam.envs import make

    if isinstance(n_episodes, bool) or not isinstance(n_episodes, (int, np.integer)) or n_episodes < 1:
        raise ValueError(f"n_episodes must be an int >= 1, got {n_episodes!r}")
    if policy not in ("expert", "chase"):
        raise ValueError(f"policy must be 'expert' or 'chase', got {policy!r}")
    base = 0 if seed is None else int(seed)
    env = make(env_id, max_steps=steps, terminate_on_success=False)
    F, P, A, S = [], [], [], {"ball": [], "target": [], "effector": []}
    for i in range(int(n_episodes)):
        obs, _ = env.reset(seed=base + i)
        fr, pr, ac, st = [], [], [], {k: [] for k in S}
        for _ in range(steps):
            state = env.state()
            a = env.expert_action() if policy == "expert" else env.chase_action()
            fr.append(obs["frames"][-1])
            pr.append(obs["proprio"])
            ac.append(a)
            for k in S:
                st[k].append(np.zeros(2) if state[k] is None else state[k])
            obs, *_ = env.step(a)
        F.append(np.stack(fr))
        P.append(np.stack(pr))
        A.append(np.stack(ac))
        for k in S:
            S[k].append(np.stack(st[k]))
    return Demos(F, P, A, chunk=chunk, future_offsets=future_offsets, states=S)


# LeRobot v3.0 -------------------------------------------------------------------------------------

def _decode_image(cell) -> np.ndarray:
    from io import BytesIO

    from PIL import Image

    data = cell.get("bytes") if isinstance(cell, dict) else cell
    if data is None:
        raise ValueError("an image cell holds no bytes")
    img = np.asarray(Image.open(BytesIO(data)).convert("RGB"))
    return np.transpose(img, (2, 0, 1))


def _decode_video(path: Path) -> np.ndarray:
    import av

    with av.open(str(path)) as c:
        frames = [np.transpose(f.to_ndarray(format="rgb24"), (2, 0, 1)) for f in c.decode(video=0)]
    if not frames:
        raise ValueError(f"{path}: no video frames")
    return np.stack(frames)


def load_lerobot(root, *, image_key: str, future_offsets=(4, 8), chunk: int = 8, context: int = 2,
                 state_key: str = "observation.state", action_key: str = "action",
                 image_size: int | None = None) -> Demos:
    """Read a local LeRobot v3.0 dataset (``meta/info.json``, ``data/**.parquet``, images or mp4).

    Frames come from the ``image_key`` feature: ``dtype: image`` (PNG/JPEG bytes in the parquet)
    or ``dtype: video`` (mp4 files under ``video_path``, decoded with PyAV and located through
    ``meta/episodes/**.parquet``'s ``videos/<key>/{chunk_index,file_index,from_timestamp}``).
    Future frames are taken by offset inside each episode; samples whose offset or action chunk
    passes the episode's end are dropped and counted (``Demos.dropped``). ``image_size`` resizes.
    """
    import pyarrow.parquet as pq

    root = Path(root)
    info_path = root / "meta" / "info.json"
    if not info_path.is_file():
        raise FileNotFoundError(f"{root} is not a LeRobot dataset: no meta/info.json")
    info = json.loads(info_path.read_text())
    feats = info.get("features", {})
    for key in (image_key, state_key, action_key):
        if key not in feats:
            raise KeyError(f"{root}: no feature {key!r} in meta/info.json; features are {sorted(feats)}")
    kind = feats[image_key].get("dtype")
    if kind not in ("image", "video"):
        raise ValueError(f"feature {image_key!r} has dtype {kind!r}; expected 'image' or 'video'")
    files = sorted((root / "data").glob("**/*.parquet"))
    if not files:
        raise FileNotFoundError(f"{root}: no parquet files under data/")
    cols = ["episode_index", "frame_index", state_key, action_key] + ([image_key] if kind == "image" else [])
    tables = [pq.read_table(f, columns=cols) for f in files]
    rows = {c: [x for t in tables for x in t.column(c).to_pylist()] for c in cols}
    ep = np.asarray(rows["episode_index"])
    fi = np.asarray(rows["frame_index"])
    state = np.asarray(rows[state_key], dtype=np.float32).reshape(len(ep), -1)
    action = np.asarray(rows[action_key], dtype=np.float32).reshape(len(ep), -1)
    videos = {}
    if kind == "video":
        videos = _video_frames(root, info, image_key, np.unique(ep))
    F, P, A = [], [], []
    for e in np.unique(ep):
        sel = np.flatnonzero(ep == e)
        sel = sel[np.argsort(fi[sel])]
        if kind == "image":
            frames = np.stack([_decode_image(rows[image_key][i]) for i in sel])
        else:
            frames = videos[int(e)][fi[sel]]
        if image_size is not None:
            frames = _resize(frames, int(image_size))
        F.append(frames.astype(np.uint8))
        P.append(state[sel])
        A.append(action[sel])
    demos = Demos(F, P, A, chunk=chunk, context=context, future_offsets=future_offsets)
    if demos.dropped:
        log.info("load_lerobot: %d samples dropped (their chunk or future offsets pass an episode's end)",
                 demos.dropped)
    return demos


def _video_frames(root: Path, info: dict, key: str, episodes) -> dict[int, np.ndarray]:
    import pyarrow.parquet as pq

    fps = float(info.get("fps", 0)) or float(info["features"][key].get("info", {}).get("video.fps", 0))
    if fps <= 0:
        raise ValueError("meta/info.json gives no fps")
    metas = sorted((root / "meta" / "episodes").glob("**/*.parquet"))
    if not metas:
        raise FileNotFoundError(f"{root}: no meta/episodes/**.parquet (needed to locate the video frames)")
    meta = {}
    for m in metas:
        t = pq.read_table(m).to_pydict()
        for i, e in enumerate(t["episode_index"]):
            meta[int(e)] = {k: t[k][i] for k in t}
    template = info.get("video_path", "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4")
    cache, out = {}, {}
    for e in episodes:
        m = meta.get(int(e))
        if m is None:
            raise KeyError(f"episode {int(e)} is missing from meta/episodes")
        c, f = int(m[f"videos/{key}/chunk_index"]), int(m[f"videos/{key}/file_index"])
        path = root / template.format(video_key=key, chunk_index=c, file_index=f)
        if path not in cache:
            if not path.is_file():
                raise FileNotFoundError(f"video file {path} is missing")
            cache[path] = _decode_video(path)
        first = int(round(float(m[f"videos/{key}/from_timestamp"]) * fps))
        out[int(e)] = cache[path][first:]
    return out


def _resize(frames: np.ndarray, size: int) -> np.ndarray:
    x = torch.from_numpy(frames).float()
    x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.round().clamp(0, 255).to(torch.uint8).numpy()
