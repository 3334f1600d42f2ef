import math

import pytest
import torch
from matt import bits_per_byte, transfer


def test_bpb_hand_computation(world):
    teacher, ta = world["teacher"], world["ta"]
    texts = world["eval"][:3]
    nats = 0.0
    with torch.no_grad():
        for t in texts:
            ids = [ta.bos_token_id] + ta(t, add_special_tokens=False)["input_ids"]
            for i in range(1, len(ids)):
                logits = teacher(input_ids=torch.tensor([ids[:i]])).logits[0, -1]
                nats -= float(torch.log_softmax(logits.double(), -1)[ids[i]])
    ref = nats / math.log(2) / sum(len(t.encode()) for t in texts)
    assert abs(bits_per_byte(teacher, ta, texts) - ref) < 1e-4


def test_embeddings_training_keeps_body_bit_identical(world):
    teacher, ta, tb = world["teacher"], world["ta"], world["tb"]
    before = {n: p.detach().clone() for n, p in teacher.named_parameters()}
    student, _ = transfer(teacher, ta, tb, world["transfer"][:40], init="focus", aim_steps=3, lm_steps=3,
                          batch_size=8, freeze_overlap=True)
    for n, p in teacher.named_parameters():
        assert torch.equal(p, before[n])  # the teacher is untouched
    s = dict(student.named_parameters())
    body = [n for n in before if "wte" not in n]
    assert body and all(torch.equal(s[n], before[n]) for n in body)
    assert not torch.equal(s["transformer.wte.weight"][: len(ta)], before["transformer.wte.weight"][: len(tb)])


def test_lora_and_all_change_the_body(world):
    teacher, ta, tb = world["teacher"], world["ta"], world["tb"]
    w0 = teacher.transformer.h[0].attn.c_attn.weight.detach().clone()
    for mode in ("lora", "all"):
        student, _ = transfer(teacher, ta, tb, world["transfer"][:40], init="fvt", aim_steps=0, lm_steps=3,
                              batch_size=8, train=mode, lr=1e-2)
        assert type(student).__name__ == "GPT2LMHeadModel"
        assert not torch.equal(student.transformer.h[0].attn.c_attn.weight, w0)


def test_save_and_reload(world, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    student, tok = transfer(world["teacher"], world["ta"], world["tb"], world["transfer"][:40], init="fvt",
                            aim_steps=2, lm_steps=2, batch_size=8)
    student.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    m2 = AutoModelForCausalLM.from_pretrained(tmp_path, local_files_only=True, attn_implementation="eager")
    t2 = AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    texts = world["eval"][:4]
    assert abs(bits_per_byte(m2, t2, texts) - bits_per_byte(student, tok, texts)) < 1e-6


@pytest.mark.parametrize("kw,match", [
    (dict(init="wechsel"), "init must be"), (dict(train="head"), "train must be"),
    (dict(aim_steps=-1), "aim_steps"), (dict(lr=float("nan")), "lr must be"), (dict(aim_layers=9), "aim_layers"),
    (dict(batch_size=0), "batch_size"),
])
def test_bad_arguments(world, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        transfer(world["teacher"], world["ta"], world["tb"], world["transfer"][:10], **kw)


def test_bad_texts(world):
    with pytest.raises(TypeError, match="texts"):
        transfer(world["teacher"], world["ta"], world["tb"], "one string")


def test_heldout_disjoint_from_teacher(world):
    assert not set(world["eval"]) & set(world["teacher_lines"])
    assert not set(world["transfer"]) & set(world["teacher_lines"])


def test_read_lines_skips_bad_rows(tmp_path):
    from matt import read_lines

    p = tmp_path / "b.txt"
    p.write_bytes(b"kyrku wyla\n\n\xff\xfe bad\nzezoke tik\n")
    lines, rep = read_lines(p)
    assert lines == ["kyrku wyla", "zezoke tik"] and rep["skipped"] == 2 and rep["skipped_lines"] == [2, 3]


def test_tokenizer_corpus_and_budget_from_teacher():
    from matt import SyntheticLanguages
    from matt.data import split_corpora
    from matt.run import resolve_budget

    from paperworks.hydra_glue import compose

    c = split_corpora(SyntheticLanguages(seed=0), n_teacher=300, share_b=0.5, n_transfer=50, n_eval=20, seed=0,
                      tokenizer_share_b=0.1)
    seen = set(c["teacher"]) | set(c["tokenizer"])
    assert not (set(c["eval"]) | set(c["val"]) | set(c["transfer"])) & seen
    b_lines = set(SyntheticLanguages(seed=0).sample("B", 150, seed=1))
    assert sum(t in b_lines for t in c["teacher"]) == 150 and sum(t in b_lines for t in c["tokenizer"]) == 30
    assert resolve_budget(compose("matt", ["experiment=paper"])) == 150  # 5% of 1,500 x 32 teacher lines, 16 a step
    with pytest.raises(ValueError, match="budget= is required"):
        resolve_budget(compose("matt", ["experiment=paper", "model=/some/model"]))


def test_steps_to_target_rule_paired_or_censored():
    from matt.run import _to_target

    ok = _to_target("x", "s", "steps", [20, 30, 20], [50, 60, 70], 150, 750)
    assert ok.verdict == "supported"
    assert _to_target("x", "s", "steps", [80, 95, 85], [50, 60, 55], 150, 750).verdict == "not supported"
    assert _to_target("x", "s", "steps", [None, None, 20], [50, 60, 70], 150, 750).verdict == "inconclusive"


def test_grid_search_extends_past_the_edge():
    from matt.run import _grid_search

    best, scores = _grid_search(lambda x: (math.log10(x) + 4) ** 2, [1e-3, 1e-2], "x")  # optimum at 1e-4
    assert best == pytest.approx(1e-4) and len(scores) == 4  # extended twice: 1e-4, then 1e-5 (worse)
