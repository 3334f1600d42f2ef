import pytest
from factlocus import FactWorld, train_recall_model


def test_training_reaches_recall_and_reports_the_load():
    w = FactWorld(n_subjects=16, n_relations=2, n_answers=8, seed=3)
    model, tok, info = train_recall_model(w, width=16, heads=2, steps=300, lr=0.02, batch=32, check_every=25)
    assert info["recall"] >= 0.9
    assert info["lambda"] == pytest.approx(w.n_facts * 3 / info["params"])


def test_training_runs_on_llama_gqa():
    w = FactWorld(n_subjects=8, n_relations=2, n_answers=4, seed=0)
    model, _, info = train_recall_model(w, width=16, heads=4, kv_heads=2, arch="llama", steps=5)
    assert model.config.num_key_value_heads == 2 and info["steps"] == 5


def test_bad_arguments():
    w = FactWorld(n_subjects=8, n_relations=2, n_answers=4)
    with pytest.raises(TypeError, match="world"):
        train_recall_model("facts")
    with pytest.raises(ValueError, match="steps"):
        train_recall_model(w, steps=0)
    with pytest.raises(ValueError, match="arch"):
        train_recall_model(w, arch="rnn", steps=1)


def test_two_hop_training_reports_held_out_compositions():
    w = FactWorld(n_subjects=8, n_relations=2, n_answers=4, n_bridges=1, seed=0)
    _, _, info = train_recall_model(w, width=16, heads=2, steps=30, lr=0.02, batch=64, check_every=10)
    assert set(info["recall_sets"]) == {"one_hop", "bridge_first", "bridge_second", "two_hop"}
    assert 0.0 <= info["two_hop_heldout"] <= 1.0
