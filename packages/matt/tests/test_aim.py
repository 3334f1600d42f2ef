import copy

import pytest
import torch
from matt import AIMLoss, fvt_init
from matt.aim import attention_outputs


def test_aim_zero_for_identity_positive_after_perturbation(world):
    teacher, ta = world["teacher"], world["ta"]
    aim = AIMLoss(teacher, ta)
    texts = world["eval"][:6]
    assert aim.layers == [0]  # ceil(2/3)
    with torch.no_grad():
        assert float(aim(teacher, ta, texts)) == 0.0
    student = copy.deepcopy(teacher)
    tok = ta(texts[0], add_special_tokens=False)["input_ids"][0]
    with torch.no_grad():
        student.get_input_embeddings().weight[tok] += torch.randn(32, generator=torch.Generator().manual_seed(0))
        assert float(aim(student, ta, texts)) > 1e-6


def test_segment_attention_output_equals_attention_times_values(world):
    """z read at the output projection equals Σ_t A(q, t) V(t) computed from the eager weights (GPT-2 c_attn)."""
    teacher, ta = world["teacher"], world["ta"]
    ids = torch.tensor([[1] + ta(world["eval"][0], add_special_tokens=False)["input_ids"][:20]])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        (z,) = attention_outputs(teacher, ids, mask, [0], stop=False)
        out = teacher(input_ids=ids, output_attentions=True, output_hidden_states=True)
        blk = teacher.transformer.h[0]
        h = blk.ln_1(out.hidden_states[0])
        v = blk.attn.c_attn(h).split(teacher.config.n_embd, dim=2)[2]
        B, T, _ = v.shape
        nh = teacher.config.n_head
        v = v.view(B, T, nh, -1).transpose(1, 2)
        ref = (out.attentions[0] @ v).transpose(1, 2).reshape(B, T, -1)
    torch.testing.assert_close(z, ref, atol=1e-5, rtol=1e-5)


def test_aim_loss_decreases_under_training(world):
    teacher, ta, tb = world["teacher"], world["ta"], world["tb"]
    student = copy.deepcopy(teacher)
    fvt_init(student, ta, tb)
    aim = AIMLoss(teacher, ta)
    emb = student.get_input_embeddings().weight
    opt = torch.optim.Adam([emb], lr=3e-3)
    for p in student.parameters():
        p.requires_grad_(p is emb)
    texts = world["transfer"][:16]
    losses = []
    for _ in range(25):
        loss = aim(student, tb, texts)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.8 * losses[0]


def test_sdpa_teacher_rejected_naming_eager(world):
    t = copy.deepcopy(world["teacher"])
    t.config._attn_implementation = "sdpa"
    with pytest.raises(ValueError, match='attn_implementation="eager"'):
        AIMLoss(t, world["ta"])


@pytest.mark.parametrize("layers", [0, 3, [5], "2"])
def test_layers_outside_model(world, layers):
    with pytest.raises((ValueError, TypeError), match="aim_layers"):
        AIMLoss(world["teacher"], world["ta"], layers=layers)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_random_students_gpt2_and_gqa_llama(world, arch):
    """AIM and transfer on random GPT2Config / GQA LlamaConfig models (eager, no download)."""
    from matt import bits_per_byte, transfer
    from transformers import AutoModelForCausalLM

    from paperworks.lm.tiny import tiny_config

    ta, tb = world["ta"], world["tb"]
    kw = {"kv_heads": 1} if arch == "llama" else {}
    cfg = tiny_config(arch, len(ta), width=32, layers=3, heads=2, n_ctx=64, **kw)
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    student, tok = transfer(m, ta, tb, world["transfer"][:40], init="fvt", aim_steps=3, lm_steps=2,
                            batch_size=4, aim_layers=1)
    assert student.get_input_embeddings().weight.shape[0] == len(tb)
    assert bits_per_byte(student, tok, world["eval"][:3]) > 0


def test_lines_failing_alignment_are_skipped_and_counted(world):
    """A character split over byte-level tokens gives overlapping offsets: the line is skipped, counted."""
    from matt import AlignmentError, align_segments

    teacher, ta, tb = world["teacher"], world["ta"], world["tb"]
    bad = "kyr \u00e9\u00e9 tik"
    with pytest.raises(AlignmentError):
        align_segments(bad, ta, tb)
    aim = AIMLoss(teacher, ta)
    loss = aim(copy.deepcopy(teacher).requires_grad_(False), ta, [bad, world["eval"][0]])
    assert aim.skipped == 1 and torch.isfinite(loss)
    with pytest.raises(ValueError, match="no line of the batch"):
        AIMLoss(teacher, ta)(teacher, ta, [bad])
