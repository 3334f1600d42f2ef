import copy

import numpy as np
import pytest
import torch
from m2le import M2LE, merge_lora
from m2le.baselines import accuracy, make_learner


def test_learn_task_returns_the_plain_model(learned, base):
    cl, model, tasks = learned
    assert isinstance(model, type(base))
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in base.named_parameters()]
    assert cl.task == 3 and len(cl.fishers) == 3 and set(cl.fisher_prev) == {"fc1.weight", "fc2.weight"}
    assert not torch.equal(model.fc1.weight, base.fc1.weight)
    assert torch.equal(model.head.weight, base.head.weight)  # only the targets move
    for f in cl.fishers:
        assert all(bool((v >= 0).all()) for v in f.values())
    assert accuracy(model, tasks[-1].X_test, tasks[-1].y_test) > 0.2


def test_merge_with_m_one_equals_peft_merge_and_unload(base, lc):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    pm = get_peft_model(copy.deepcopy(base), LoraConfig(r=3, target_modules=["fc1", "fc2"], init_lora_weights=False))
    W = {k: dict(base.named_parameters())[k].detach() for k in ("fc1.weight", "fc2.weight")}
    D = {f"{n}.weight": pm.base_model.model.get_submodule(n).get_delta_weight("default").detach() for n in ("fc1", "fc2")}
    F = {k: torch.rand_like(v) for k, v in W.items()}
    merged, _ = merge_lora(W, D, F, F, merge="seq")
    ref = dict(pm.merge_and_unload().named_parameters())
    for k, v in merged.items():
        assert torch.allclose(v, ref[k], atol=1e-6), k
    him, _ = merge_lora(W, D, F, F, merge="him")  # a wrong m would not match
    assert not torch.allclose(him["fc1.weight"], ref["fc1.weight"], atol=1e-6)


def test_state_dict_round_trip_and_save_load(learned, base, tmp_path):
    cl, model, tasks = learned
    path = cl.save(tmp_path / "m2le.pt")
    state = torch.load(path, weights_only=True)
    assert "model" in state and "fishers" in state and "data" not in state
    other = M2LE.load(path, base)
    assert other.task == 3 and other.merge == "him" and other.tsp == "fisher"
    for (k, a), (_, b) in zip(model.state_dict().items(), other.model.state_dict().items()):
        assert torch.equal(a, b), k
    for k in cl.fisher_prev:
        assert torch.equal(cl.fisher_prev[k], other.fisher_prev[k])
    fresh = M2LE(base, cl.lora_config)
    fresh.load_state_dict(cl.state_dict())
    X = torch.as_tensor(tasks[0].X_test)
    assert torch.equal(fresh.model(X), model(X))
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        M2LE.load(tmp_path / "missing.pt", base)
    bad = cl.state_dict()
    bad["fisher_prev"]["fc1.weight"] = torch.zeros(2, 2)
    with pytest.raises(ValueError, match="fisher_prev"):
        fresh.load_state_dict(bad)


def test_class_incremental_predictions_span_all_classes(base, lc):
    from m2le.data import class_tasks

    tasks = class_tasks(0, T=5)
    cl = make_learner("m2le", base, lc, seed=0)
    for i, t in enumerate(tasks):
        cl.learn_task(t.loader(batch_size=128, seed=i), epochs=1, lr=1e-2)
    X = np.concatenate([t.X_test for t in tasks])
    with torch.no_grad():
        logits = cl.model(torch.as_tensor(X))
    assert logits.shape[1] == 10  # one shared head, no task-ID masking
    # the argmax ranges over every class of the head: each class is the top score for some input
    assert set(logits.argmax(1).tolist()) | set(logits.argsort(1, descending=True)[:, 1].tolist()) == set(range(10))


def test_tsp_is_one_forward_per_step_and_changes_training(base, lc):
    from m2le.data import domain_tasks

    t = domain_tasks(0, T=1)[0]
    calls = {"n": 0}
    m0 = copy.deepcopy(base)
    m0.fc1.register_forward_hook(lambda *a: calls.__setitem__("n", calls["n"] + 1))
    a = M2LE(m0, lc, tsp="pm", seed=0)
    a.learn_task(t.loader(batch_size=256, seed=0), epochs=1, lr=1e-2)
    steps = len(t.loader(batch_size=256))
    assert calls["n"] == steps + len(t.loader(batch_size=256))  # training + one Fisher pass
    b = M2LE(base, lc, tsp=False, seed=0)
    torch.manual_seed(1)
    b.learn_task(t.loader(batch_size=256, seed=0), epochs=1, lr=1e-2)
    assert not torch.allclose(a.last_deltas["fc1.weight"], b.last_deltas["fc1.weight"])


def test_bad_inputs(base, lc):
    from peft import LoraConfig

    with pytest.raises(ValueError, match="target_modules"):
        M2LE(base, LoraConfig(r=2, target_modules=["nope"]))
    with pytest.raises(ValueError, match="lora_config.r"):
        M2LE(base, LoraConfig(r=0, target_modules=["fc1"]))
    with pytest.raises(TypeError, match="lora_config must be a peft.LoraConfig"):
        M2LE(base, {"r": 2})
    with pytest.raises(ValueError, match="merge must be one of"):
        M2LE(base, lc, merge="ties")
    with pytest.raises(ValueError, match="tsp must be"):
        M2LE(base, lc, tsp="yes")
    with pytest.raises(ValueError, match="damping"):
        M2LE(base, lc, damping=float("nan"))
    cl = M2LE(base, lc)
    X, y = torch.randn(8, 64), torch.randint(0, 10, (8,))
    with pytest.raises(ValueError, match="train_loader labels outside the head's 10 classes"):
        cl.learn_task([(X, y + 10)], epochs=1, lr=1e-2)
    with pytest.raises(TypeError, match="epochs must be an integer"):
        cl.learn_task([(X, y)], epochs=1.5, lr=1e-2)
    with pytest.raises(ValueError, match="lr must be"):
        cl.learn_task([(X, y)], epochs=1, lr=-1.0)
    with pytest.raises(TypeError, match="train_loader must be an iterable"):
        cl.learn_task(X, epochs=1, lr=1e-2)
    assert cl.task == 0


def test_float64_model_takes_float32_batches(base, lc):
    from m2le import empirical_fisher
    from m2le.data import domain_tasks

    t = domain_tasks(0, T=1)[0]
    cl = M2LE(copy.deepcopy(base).double(), lc, seed=0)
    model = cl.learn_task(t.loader(batch_size=256, seed=0), epochs=1, lr=1e-2)  # float32 batches
    assert model.fc1.weight.dtype == torch.float64 and cl.fisher_prev["fc1.weight"].dtype == torch.float64
    assert accuracy(model, t.X_test, t.y_test) > 0.1
    F = empirical_fisher(model, [(torch.as_tensor(t.X[:16]), torch.as_tensor(t.y[:16]))], params=["fc2.weight"])
    assert F["fc2.weight"].dtype == torch.float64
