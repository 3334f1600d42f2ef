import numpy as np
import pytest
import torch
from munkey.data import digits, fine_grained, load_image_folder, load_npz, medical_like
from PIL import Image


def test_digits_noise_is_exact_and_always_wrong(rng):
    s = digits(rng, noise=0.05)
    assert s.x_train.shape[1:] == (1, 8, 8) and float(s.x_train.max()) <= 1.0
    assert len(s.noisy) == round(0.05 * len(s.x_train))
    assert bool((s.y_train[s.noisy] != s.y_train_clean[s.noisy]).all())


def test_generated_sets(rng):
    fg, md = fine_grained(rng, n=200), medical_like(rng, n=400)
    assert fg.x_train.shape[1:] == (1, 8, 8) and fg.num_classes == 10
    counts = np.bincount(md.y_train.numpy(), minlength=4)
    assert counts[0] > 2 * counts[3]  # imbalanced


def test_image_folder_skips_unreadable_files(tmp_path):
    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for i in range(3):
            Image.fromarray((np.random.default_rng(i).random((12, 12)) * 255).astype(np.uint8)).save(
                tmp_path / c / f"{i}.png")
    (tmp_path / "a" / "broken.png").write_bytes(b"not an image")
    x, y, classes, skipped = load_image_folder(tmp_path, image_size=8)
    assert x.shape == (6, 1, 8, 8) and classes == ["a", "b"] and y.tolist() == [0, 0, 0, 1, 1, 1]
    assert len(skipped) == 1 and skipped[0].endswith("broken.png")


def test_npz_loader(tmp_path):
    p = tmp_path / "m.npz"
    np.savez(p, train_images=np.zeros((5, 8, 8), np.uint8) + 255, train_labels=np.arange(5)[:, None] % 2)
    x, y = load_npz(p)
    assert x.shape == (5, 1, 8, 8) and torch.all(x == 1) and y.tolist() == [0, 1, 0, 1, 0]
    with pytest.raises(ValueError, match="test_images"):
        load_npz(p, split="test")
    with pytest.raises(FileNotFoundError):
        load_npz(tmp_path / "missing.npz")
