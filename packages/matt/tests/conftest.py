import os

import pytest
import torch

os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def world():
    """A 2-layer d = 32 teacher trained briefly on 200 lines, T_A and T_B (shared by the suite)."""
    from matt.data import SyntheticLanguages, split_corpora, train_bpe
    from matt.teacher import gpt2, train_lm

    langs = SyntheticLanguages(seed=0)
    corp = split_corpora(langs, n_teacher=200, share_b=0.1, n_transfer=120, n_eval=20, seed=0)
    ta, tb = train_bpe(corp["teacher"], 400), train_bpe(corp["transfer"], 400)
    teacher = gpt2(len(ta), layers=2, width=32, heads=2, n_ctx=64, seed=0)
    train_lm(teacher, ta, corp["teacher"], steps=30, batch_size=16, warmup=5)
    return {"langs": langs, **corp, "teacher_lines": corp["teacher"], "ta": ta, "tb": tb, "teacher": teacher}
