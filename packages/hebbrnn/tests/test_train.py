import pytest
import torch
from hebbrnn import ControlRNN, HebbRNN, HierarchicalRecall, evaluate, meta_train
from hebbrnn.baselines import count_parameters
from scipy.stats import binomtest


def test_smoke_four_item_list_rises_above_chance(trained_small, small_task):
    model, hist = trained_small
    acc = evaluate(model, small_task, batches=4, batch_size=64, seed=99)  # novel items, unseen lists
    k = round(acc * 4 * 64 * 4)
    assert binomtest(k, 4 * 64 * 4, 0.25, alternative="greater").pvalue < 1e-3
    assert len(hist["loss"]) == 200


@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("hidden", [32, 64, 128])
def test_parameter_matching_within_five_percent(kind, hidden):
    ref = HebbRNN(25, hidden, 16)
    n = count_parameters(ref)
    ctrl = ControlRNN(kind, 25, 16, n_params=n)
    assert abs(count_parameters(ctrl) - n) <= 0.05 * n
    y, _ = ctrl(torch.zeros(2, 4, 25))
    assert y.shape == (2, 4, 16)


def test_control_bad_input():
    with pytest.raises(ValueError, match="kind"):
        ControlRNN("transformer", 25, 16, n_params=1000)
    with pytest.raises(ValueError, match="5%"):
        ControlRNN("lstm", 25, 16, n_params=50)
    c = ControlRNN("gru", 25, 16, n_params=5000)
    _, s = c(torch.zeros(3, 2, 25))
    with pytest.raises(ValueError, match="batch size 3"):
        c(torch.zeros(2, 2, 25), s)


def test_checkpoint_and_resume_continue_to_the_same_result(tmp_path):
    task = HierarchicalRecall(n_items=4, chunks=(2, 2), item_dim=8)

    def fresh():
        torch.manual_seed(3)
        return HebbRNN(task.input_size, 12, 8)

    straight = fresh()
    h_full = meta_train(straight, task, episodes=6, batch_size=8, lr=0.01, seed=1)
    part = fresh()
    ck = tmp_path / "ck.pt"
    meta_train(part, task, episodes=3, batch_size=8, lr=0.01, seed=1, checkpoint=ck)
    resumed = fresh()  # a new process would start from a fresh model: resume restores everything
    h_res = meta_train(resumed, task, episodes=6, batch_size=8, lr=0.01, seed=1, checkpoint=ck, resume=True)
    assert h_res["loss"] == pytest.approx(h_full["loss"], rel=1e-6, abs=1e-7)
    for a, b in zip(straight.parameters(), resumed.parameters()):
        torch.testing.assert_close(a, b)
    with pytest.raises(FileNotFoundError):
        meta_train(fresh(), task, episodes=2, batch_size=4, checkpoint=tmp_path / "none.pt", resume=True)


@pytest.mark.parametrize("cls_kw", [(HebbRNN, {"plastic": True, "predictive": True}), (HebbRNN, {"factored": False}),
                                    (ControlRNN, None)])
def test_save_and_load_self_contained(tmp_path, cls_kw):
    cls, kw = cls_kw
    torch.manual_seed(0)
    m = cls(25, 16, 8, **kw) if cls is HebbRNN else cls("lstm", 25, 8, n_params=3000)
    m = m.double()
    path = m.save(tmp_path / "m.pt")
    loaded = cls.load(path)
    x = torch.randn(2, 5, 25, dtype=torch.float64)
    torch.testing.assert_close(loaded(x)[0], m(x)[0])
    assert torch.load(path, weights_only=True)["class"] == cls.__name__
    with pytest.raises(FileNotFoundError):
        cls.load(tmp_path / "missing.pt")
    other = HebbRNN if cls is ControlRNN else ControlRNN
    with pytest.raises(ValueError, match="does not hold"):
        other.load(path)


def test_nan_loss_stops_training_naming_the_episode():
    task = HierarchicalRecall(n_items=4, chunks=(2, 2), item_dim=8)
    m = HebbRNN(task.input_size, 8, 8)
    with torch.no_grad():
        m.readout.weight.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="episode 0"):
        meta_train(m, task, episodes=3, batch_size=4)


def test_meta_train_bad_arguments():
    task = HierarchicalRecall(n_items=4, chunks=(2, 2), item_dim=8)
    m = HebbRNN(task.input_size, 8, 8)
    with pytest.raises(ValueError, match="lr"):
        meta_train(m, task, episodes=2, lr=-1.0)
    with pytest.raises(TypeError, match="episodes"):
        meta_train(m, task, episodes=2.5)
    with pytest.raises(ValueError, match="channels"):
        meta_train(HebbRNN(7, 8, 8), task, episodes=1)
    with pytest.raises(ValueError, match="eval_every"):
        meta_train(m, task, episodes=1, criterion=0.5)
    with pytest.raises(TypeError, match="task"):
        meta_train(m, "task", episodes=1)


def test_predictive_module_learns_next_input():
    task = HierarchicalRecall(n_items=4, chunks=(2, 2), item_dim=8, boundary="none", chunk_similarity=0.9)
    torch.manual_seed(0)
    m = HebbRNN(task.input_size, 16, 8, predictive=True)
    h = meta_train(m, task, episodes=60, batch_size=16, lr=0.01, seed=0)
    assert len(h["prediction_loss"]) == 60
    assert sum(h["prediction_loss"][-10:]) < sum(h["prediction_loss"][:10])
    with pytest.raises(RuntimeError, match="predictive"):
        HebbRNN(5, 4, 3).predict_next(torch.zeros(1, 4))
