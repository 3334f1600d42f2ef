import json

import numpy as np
import pytest
from factlocus import (
    FactWorld,
    PromptSet,
    check_counterfactuals,
    counterfact_prompt_set,
    matched_counterfactuals,
    read_counterfact,
)
from factlocus.capacity import entropy_bits
from factlocus.data import word_tokenizer


def test_motifs_have_their_collision_structure():
    s = FactWorld(n_subjects=32, n_relations=4, n_answers=16, motif="subject", cluster=4, seed=1)
    assert len({tuple(r) for r in s.answers}) <= 32 // 4
    r = FactWorld(n_subjects=32, n_relations=4, n_answers=16, motif="relation", cluster=2, seed=1)
    cols = {tuple(c) for c in r.answers.T}
    assert len(cols) <= 2
    a = FactWorld(n_subjects=64, n_relations=4, n_answers=16, motif="answer", zipf=2.0, seed=1)
    i = FactWorld(n_subjects=64, n_relations=4, n_answers=16, motif="independent", seed=1)
    assert entropy_bits(a.answer_distribution()) < entropy_bits(i.answer_distribution()) - 1
    assert len({tuple(p) for p in i.subject_parts}) == 64  # every subject a distinct token pair


def test_prompts_are_two_token_subjects_then_relation(world):
    tok = world.tokenizer()
    ps = world.prompt_set(tok)
    assert ps.input_ids.shape == (world.n_facts, 3)
    assert len(ps) == world.n_facts and ps.answer_ids.max() < len(tok)


@pytest.mark.parametrize("motif", ["independent", "subject", "answer"])
def test_rank_matching_pairs_every_prompt_including_the_top_answer(motif):
    w = FactWorld(n_subjects=32, n_relations=4, n_answers=16, motif=motif, cluster=4, seed=2)
    f = w.facts()
    cf = matched_counterfactuals(f[:, 0], f[:, 1], f[:, 2], np.random.default_rng(0))
    check_counterfactuals(cf, f[:, 0], f[:, 1], f[:, 2])
    assert (cf >= 0).all()                     # every prompt has a candidate in these worlds, so every one is paired
    i, j = np.arange(len(f)), cf
    assert (f[i, 1] == f[j, 1]).all() and (f[i, 0] != f[j, 0]).all() and (f[i, 2] != f[j, 2]).all()
    counts = np.bincount(f[:, 2], minlength=16)
    top = counts.argmax()
    assert (f[:, 2] == top).any() and (cf[f[:, 2] == top] >= 0).all()
    # brute force: no candidate of any prompt is strictly nearer in answer-frequency rank
    distinct = sorted(set(counts[counts > 0].tolist()), reverse=True)
    rank = np.array([distinct.index(c) if c else -1 for c in counts])
    for a in range(len(f)):
        cand = (f[:, 1] == f[a, 1]) & (f[:, 0] != f[a, 0]) & (f[:, 2] != f[a, 2])
        assert abs(rank[f[cf[a], 2]] - rank[f[a, 2]]) == np.abs(rank[f[cand, 2]] - rank[f[a, 2]]).min()


@pytest.mark.parametrize("motif,coverage", [("independent", 0.9), ("subject", 0.9), ("answer", 0.2)])
def test_frequency_matching_satisfies_its_tolerance(motif, coverage):
    w = FactWorld(n_subjects=32, n_relations=4, n_answers=16, motif=motif, cluster=4, seed=2)
    f = w.facts()
    cf = matched_counterfactuals(f[:, 0], f[:, 1], f[:, 2], np.random.default_rng(0), match="frequency")
    check_counterfactuals(cf, f[:, 0], f[:, 1], f[:, 2], match="frequency")
    ok = cf >= 0
    assert ok.mean() > coverage  # a skewed answer set leaves the most frequent answers unmatched
    i, j = np.flatnonzero(ok), cf[ok]
    assert (f[i, 1] == f[j, 1]).all() and (f[i, 0] != f[j, 0]).all() and (f[i, 2] != f[j, 2]).all()
    counts = np.bincount(f[:, 2], minlength=16)
    assert (np.maximum(counts[f[i, 2]], counts[f[j, 2]]) / np.minimum(counts[f[i, 2]], counts[f[j, 2]]) <= 2).all()
    if motif == "answer":   # the 0.1 failure, kept reachable: the top answer finds no pair within 2x
        assert (cf[f[:, 2] == counts.argmax()] == -1).all()


def test_check_counterfactuals_rejects_violations():
    s, r, a = np.array([0, 1, 2]), np.array([0, 0, 1]), np.array([5, 6, 5])
    with pytest.raises(ValueError, match="relation"):
        check_counterfactuals([2, -1, -1], s, r, a)  # different relation
    with pytest.raises(ValueError, match="answer"):
        check_counterfactuals([1, -1], [0, 1], [0, 0], [5, 5])  # same answer
    with pytest.raises(ValueError, match="rank"):   # answers 7 (x3), 6 (x2), 5 (x1): prompt 0 must pair with a 6
        check_counterfactuals([5, -1, -1, -1, -1, -1], [0, 1, 2, 3, 4, 5], [0] * 6, [7, 7, 7, 6, 6, 5])
    with pytest.raises(ValueError, match="match"):
        matched_counterfactuals([0], [0], [0], np.random.default_rng(0), match="closest")


def test_bad_world_and_prompt_arguments(world):
    with pytest.raises(ValueError, match="motif"):
        FactWorld(motif="verbs")
    with pytest.raises(ValueError, match="n_subjects"):
        FactWorld(n_subjects=0)
    with pytest.raises(ValueError, match="cluster"):
        FactWorld(n_subjects=10, motif="subject", cluster=3)
    tok = word_tokenizer(["x", "y", "z"])
    with pytest.raises(ValueError, match="single tokens"):
        PromptSet.from_strings(tok, ["x y"], ["y z"])
    with pytest.raises(ValueError, match="same number of tokens"):
        PromptSet.from_strings(tok, ["x y", "x"], ["y", "z"])


def test_counterfact_reader_skips_bad_rows(tmp_path):
    rows = [
        {"requested_rewrite": {"prompt": "{} lives in", "subject": "ann", "relation_id": "P1",
                               "target_true": {"str": "paris"}, "target_new": {"str": "rome"}}},
        {"requested_rewrite": {"prompt": "{} lives in", "subject": "bob", "relation_id": "P1",
                               "target_true": {"str": "rome"}}},
        {"requested_rewrite": {"prompt": "no slot", "subject": "cy"}},
        {"something": "else"},
    ]
    path = tmp_path / "cf.json"
    path.write_text(json.dumps(rows))
    recs, skipped = read_counterfact(path)
    assert len(skipped) == 2 and [r["prompt"] for r in recs] == ["ann lives in", "bob lives in"]
    tok = word_tokenizer(["ann", "bob", "lives", "in", "paris", "rome"])
    ps, dropped = counterfact_prompt_set(recs, tok, answer_prefix="")
    assert len(ps) == 2 and dropped == 0 and list(ps.relations) == [0, 0]
    with pytest.raises(ValueError, match="path"):
        read_counterfact(tmp_path / "missing.json")


def test_two_hop_answer_is_the_composition_of_the_one_hop_facts():
    w = FactWorld(n_subjects=24, n_relations=4, n_answers=8, motif="subject", cluster=4, n_bridges=2, seed=5)
    f = w.two_hop_facts()
    assert len(f) == 24 * 2 * 4
    s, j, k, t, a = f.T
    assert (t == w.bridge[s, j]).all() and (t != s).all()  # the bridge entity is another subject
    # independent recomputation from the one-hop fact table
    one = {(row[0], row[1]): row[2] for row in w.facts()}
    assert all(a_ == one[(t_, k_)] for t_, k_, a_ in zip(t, k, a))
    tok = w.tokenizer()
    ps = w.two_hop_prompt_set(tok)
    assert ps.input_ids.shape == (len(f), 4)
    ids = tok.convert_tokens_to_ids
    for i in (0, 17, len(f) - 1):
        s_, j_, k_, t_, a_ = f[i]
        pa, pb = w.subject_parts[s_]
        assert ps.input_ids[i].tolist() == ids([f"sa{pa}", f"sb{pb}", f"b{j_}", f"r{k_}"])
        assert ps.answer_ids[i] == ids(f"a{a_}") and ps.bridges[i] == t_
    # the one-hop bridge facts answer with the bridge entity's own two subject tokens
    first, second = w.bridge_prompt_sets(tok)
    ta, tb = w.subject_parts[first.bridges].T
    assert (first.answer_ids.numpy() == np.array(ids([f"sa{x}" for x in ta]))).all()
    assert (second.answer_ids.numpy() == np.array(ids([f"sb{x}" for x in tb]))).all()
    assert (second.input_ids[:, :3] == first.input_ids).all() and (second.input_ids[:, 3] == first.answer_ids).all()


def test_held_out_compositions_are_never_trained():
    w = FactWorld(n_subjects=32, n_relations=4, n_answers=8, n_bridges=2, holdout=0.25, seed=1)
    tok = w.tokenizer()
    held, train = w.two_hop_facts("heldout"), w.two_hop_facts("train")
    assert len(held) == round(0.25 * 32 * 2 * 4) and len(held) + len(train) == 32 * 2 * 4
    sets = w.training_sets(tok)
    trained = {tuple(r) for ps in sets.values() for r in ps.input_ids.tolist()}
    held_ps = w.two_hop_prompt_set(tok, "heldout")
    assert not trained & {tuple(r) for r in held_ps.input_ids.tolist()}
    # ... but both one-hop facts a held-out composition is made of are trained
    one_hop = {tuple(r) for r in sets["one_hop"].input_ids.tolist()}
    bridge = {tuple(r) for r in sets["bridge_first"].input_ids.tolist()}
    for s, j, k, t, _ in held:
        assert tuple(tok.convert_tokens_to_ids(w.prompt(t, k).split())) in one_hop
        assert tuple(tok.convert_tokens_to_ids(f"{w.subject_text(s)} b{j}".split())) in bridge
    # bridges do not change the one-hop world
    plain = FactWorld(n_subjects=32, n_relations=4, n_answers=8, seed=1)
    assert (plain.answers == w.answers).all() and (plain.subject_parts == w.subject_parts).all()
    with pytest.raises(ValueError, match="n_bridges"):
        plain.two_hop_facts()
    with pytest.raises(ValueError, match="holdout"):
        FactWorld(n_subjects=4, n_bridges=1, holdout=1.0)
    with pytest.raises(ValueError, match="split"):
        w.two_hop_facts("test")


def test_counterfact_reader_skips_and_counts_every_malformed_row(tmp_path):
    good = {"requested_rewrite": {"prompt": "{} lives in", "subject": "ann", "relation_id": "P1",
                                  "target_true": {"str": "paris"}}}
    two_slots = {"requested_rewrite": {"prompt": "{} and {} live in", "subject": "bo", "target_true": {"str": "x"}}}
    null_answer = {"requested_rewrite": {"prompt": "{} lives in", "subject": "cy", "target_true": {"str": None}}}
    path = tmp_path / "cf.jsonl"                          # JSON Lines, with a broken line
    path.write_text("\n".join([json.dumps(good), json.dumps(two_slots), "{not json", json.dumps(null_answer),
                               json.dumps(good)]) + "\n")
    recs, skipped = read_counterfact(path)
    assert [r["prompt"] for r in recs] == ["ann lives in"] * 2
    assert [s["line"] for s in skipped] == [2, 3, 4]
    assert "exactly one" in skipped[0]["reason"] and "not JSON" in skipped[1]["reason"]
    assert "null" in skipped[2]["reason"] and not any(r["answer"] == "None" for r in recs)
    lst = tmp_path / "cf.json"                            # a JSON list: line numbers of the elements
    lst.write_text("[\n" + ",\n".join(json.dumps(r) for r in (good, null_answer, good)) + "\n]\n")
    recs, skipped = read_counterfact(lst)
    assert len(recs) == 2 and skipped == [{"line": 3, "reason": skipped[0]["reason"]}]
    bad = tmp_path / "latin1.json"
    bad.write_bytes('[{"requested_rewrite": {"subject": "Jos\xe9"}}]'.encode("latin-1"))
    with pytest.raises(ValueError, match="UTF-8"):
        read_counterfact(bad)
    pretty = tmp_path / "obj.json"
    pretty.write_text(json.dumps({"a": 1}, indent=2))
    with pytest.raises(ValueError, match="neither a JSON list nor JSON Lines"):
        read_counterfact(pretty)


def test_prompt_set_from_strings_with_labels():
    tok = word_tokenizer(["ann", "bob", "lives", "in", "works", "at", "paris", "rome", "acme"])
    ps = PromptSet.from_strings(tok, ["ann lives in", "bob lives in", "ann works at"], ["paris", "rome", "acme"],
                                subjects=["ann", "bob", "ann"], relations=["P1", "P1", "P2"])
    assert ps.subjects.tolist() == [0, 1, 0] and ps.relations.tolist() == [0, 0, 1]
    assert ps.answer_ids.tolist() == [tok(a, add_special_tokens=False)["input_ids"][0] for a in ("paris", "rome", "acme")]
    with pytest.raises(ValueError, match="one label per prompt"):
        PromptSet.from_strings(tok, ["ann lives in"], ["paris"], subjects=["ann", "bob"])
