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
    with pytest.raises(ValueError, match="target"):
        train_recall_model(w, target=1.5, steps=1)            # unreachable: would train the whole budget


def test_two_hop_training_reports_held_out_compositions():
    w = FactWorld(n_subjects=8, n_relations=2, n_answers=4, n_bridges=1, seed=0)
    _, _, info = train_recall_model(w, width=16, heads=2, steps=30, lr=0.02, batch=64, check_every=10)
    assert set(info["recall_sets"]) == {"one_hop", "bridge_first", "bridge_second", "two_hop"}
    assert 0.0 <= info["two_hop_heldout"] <= 1.0


def test_warm_restarts_run_only_when_the_target_is_missed():
    import torch

    w = FactWorld(n_subjects=16, n_relations=2, n_answers=8, seed=3)
    # 5 steps cannot reach 99.9% recall: every cycle runs, and all of them are counted
    _, _, info = train_recall_model(w, width=16, heads=2, steps=5, lr=0.02, batch=32, restarts=2, check_every=5)
    assert info["steps"] == 15 and info["cycles"] == 3
    # reached in the first cycle: the restarts never start, and that cycle is the restarts=0 run exactly
    m0, _, i0 = train_recall_model(w, width=16, heads=2, steps=300, lr=0.02, batch=32, target=0.9, check_every=25)
    m1, _, i1 = train_recall_model(w, width=16, heads=2, steps=300, lr=0.02, batch=32, target=0.9, check_every=25,
                                   restarts=3)
    assert i1["cycles"] == 1 and i1["steps"] == i0["steps"] < 300
    assert all(torch.equal(a, b) for a, b in zip(m0.parameters(), m1.parameters()))
    with pytest.raises(ValueError, match="restart"):
        train_recall_model(w, steps=5, restarts=-1)
    with pytest.raises(ValueError, match="restart"):
        train_recall_model(w, steps=5, restart_lr=0.0)


def test_plateau_stops_a_saturated_model_and_reports_it():
    w = FactWorld(n_subjects=16, n_relations=2, n_answers=8, seed=3)
    # a gain below 1.0 is certain: the second cycle ends training and the model is saturated
    _, _, info = train_recall_model(w, width=16, heads=2, steps=5, lr=0.02, batch=32, restarts=3, check_every=5,
                                    plateau=1.0)
    assert info["cycles"] == 2 and info["steps"] == 10 and info["saturated"]
    assert len(info["cycle_recalls"]) == 2
    # a gain above the plateau is required to go on: with a tiny plateau the cycles that still learn keep going
    _, _, fresh = train_recall_model(w, width=16, heads=2, steps=40, lr=0.02, batch=32, restarts=1, check_every=40,
                                     plateau=1e-9)
    gain = fresh["cycle_recalls"][-1] - fresh["cycle_recalls"][-2]
    assert fresh["saturated"] == (gain < 1e-9)
    # one cycle cannot show a plateau; without `plateau` nothing is called saturated
    assert not train_recall_model(w, width=16, heads=2, steps=5, restarts=0, plateau=1.0)[2]["saturated"]
    assert not train_recall_model(w, width=16, heads=2, steps=5, restarts=1)[2]["saturated"]
    with pytest.raises(ValueError, match="plateau"):
        train_recall_model(w, steps=5, plateau=0.0)
