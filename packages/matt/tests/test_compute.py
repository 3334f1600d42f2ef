"""Compute accounting: counted FLOPs from the batch shape equal FLOPs counted directly on real steps."""

import copy

import torch
from matt import AIMLoss, fvt_init
from matt.aim import _bos, _pad, attention_outputs
from matt.compute import ShapeFlops, count_flops
from matt.transfer import _encode, lm_loss


def _student(world):
    s = copy.deepcopy(world["teacher"])
    fvt_init(s, world["ta"], world["tb"])
    for p in s.parameters():
        p.requires_grad_(False)
    s.get_input_embeddings().weight.requires_grad_(True)
    return s


def test_lm_step_flops_from_shape_equal_direct_count(world):
    s, tb = _student(world), world["tb"]
    ids, mask = _pad(_encode(tb, world["transfer"][:7], 64), _bos(tb))
    direct = count_flops(lambda: lm_loss(s, ids, mask).backward())
    shape = ShapeFlops(lambda i, m: lm_loss(s, i, m).backward(), token_id=_bos(tb))
    assert direct > 0 and shape(*ids.shape) == direct
    assert shape.coef is not None  # the B·(aT + bT²) form held


def test_aim_step_flops_include_teacher_forward(world):
    """A real AIM step (teacher targets computed in it) counts exactly student + teacher shape FLOPs."""
    teacher, ta, tb = world["teacher"], world["ta"], world["tb"]
    s = _student(world)
    aim = AIMLoss(teacher, ta, layers=2)
    texts = world["transfer"][:6]
    direct = count_flops(lambda: aim(s, tb, texts).backward())
    sh = aim.last_shapes
    assert sh["student"][0] == 6 and len(sh["teacher"]) == 1

    def stud(i, m):
        sum((z ** 2).sum() for z in attention_outputs(s, i, m, aim.layers, stop=True)).backward()

    def teach(i, m):
        with torch.no_grad():
            attention_outputs(teacher, i, m, aim.layers, stop=True)

    est = ShapeFlops(stud, token_id=1)(*sh["student"]) + ShapeFlops(teach, token_id=1)(*sh["teacher"][0])
    assert est == direct
    # with the targets cached the next call on the same lines runs the student only
    cached = count_flops(lambda: aim(s, tb, texts).backward())
    assert aim.last_shapes["teacher"] == [] and 0 < cached < direct


def test_transfer_reports_flops(world):
    from matt import transfer

    seen = []
    student, _ = transfer(world["teacher"], world["ta"], world["tb"], world["transfer"][:40], init="fvt",
                          aim_steps=2, lm_steps=2, batch_size=8, callback=lambda i: seen.append(i["flops"]))
    assert seen == sorted(seen) and seen[0] > 0 and student.train_flops == seen[-1]
