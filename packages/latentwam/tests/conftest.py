import io
import json

import numpy as np
import pytest
import torch
from latentwam import LatentWAM, collect_demos, train


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def demos():
    return collect_demos("latentwam/Intercept-v0", 200, seed=0)


@pytest.fixture(scope="session")
def trained(demos):
    """The issue's smoke: a latent WAM, 200 demos, 100 steps (shared by the tests that need a trained model)."""
    torch.manual_seed(0)
    model = LatentWAM(action_dim=2, proprio_dim=2)
    hist = train(model, demos, steps=100, batch_size=32, lr=3e-3, seed=0)
    return model, hist


@pytest.fixture
def batch():
    g = torch.Generator().manual_seed(1)
    return {"frames": torch.rand(5, 2, 3, 24, 24, generator=g), "proprio": torch.rand(5, 2, generator=g),
            "actions": torch.rand(5, 8, 2, generator=g) * 2 - 1, "future": torch.rand(5, 2, 3, 24, 24, generator=g)}


def _png(arr):
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _write_lerobot(root, kind, lengths=(12, 6), size=16):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    (root / "meta").mkdir(parents=True)
    (root / "data" / "chunk-000").mkdir(parents=True)
    key = "observation.images.top"
    feats = {key: {"dtype": kind, "shape": [3, size, size]}, "observation.state": {"dtype": "float32", "shape": [3]},
             "action": {"dtype": "float32", "shape": [2]}}
    fps = 10
    info = {"codebase_version": "v3.0", "fps": fps, "features": feats,
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"}
    (root / "meta" / "info.json").write_text(json.dumps(info))
    rows = {"episode_index": [], "frame_index": [], "observation.state": [], "action": [], "timestamp": []}
    imgs, frames = [], []
    for e, n in enumerate(lengths):
        for t in range(n):
            img = np.zeros((size, size, 3), np.uint8)
            img[:, :, 0] = 10 * (t + 1)  # frame identity in the red level
            img[:, :, 1] = 100 * e
            frames.append(img)
            imgs.append({"bytes": _png(img), "path": None})
            rows["episode_index"].append(e)
            rows["frame_index"].append(t)
            rows["timestamp"].append(t / fps)
            rows["observation.state"].append(rng.normal(size=3).astype(np.float32).tolist())
            rows["action"].append(rng.uniform(-1, 1, size=2).astype(np.float32).tolist())
    if kind == "image":
        rows[key] = imgs
    pq.write_table(pa.table(rows), root / "data" / "chunk-000" / "file-000.parquet")
    if kind == "video":
        import av

        vdir = root / "videos" / key / "chunk-000"
        vdir.mkdir(parents=True)
        with av.open(str(vdir / "file-000.mp4"), "w") as c:
            s = c.add_stream("mpeg4", rate=fps)
            s.width = s.height = size
            s.pix_fmt = "yuv420p"
            s.options = {"qscale": "1"}
            for img in frames:
                for p in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                    c.mux(p)
            for p in s.encode():
                c.mux(p)
        (root / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        meta = {"episode_index": list(range(len(lengths))), "length": list(lengths),
                f"videos/{key}/chunk_index": [0] * len(lengths), f"videos/{key}/file_index": [0] * len(lengths),
                f"videos/{key}/from_timestamp": [float(s) / fps for s in starts]}
        pq.write_table(pa.table(meta), root / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    return key


@pytest.fixture
def write_lerobot():
    """Writes a small LeRobot v3.0 dataset (image or video features) and returns its image key."""
    return _write_lerobot
