import numpy as np
import pytest
import torch
from probetraj import ActivationSource, HFActivationSource, PooledProbe, ReasoningWorld, template_dataset
from probetraj.evaluate import grouped_folds
from probetraj.lm import sample_rollouts


@pytest.fixture(scope="module")
def probe_for(tok):
    def make(model):
        src = HFActivationSource(model, tok, layer=1)
        texts, y = template_dataset("refusal", 40, seed=0)
        return src, PooledProbe(pooling="max", max_iter=30).fit(src.hidden_states(texts), y)

    return make


@pytest.mark.parametrize("arch", ["gpt2", "llama_gqa"])
def test_hidden_states_equal_unbatched_forward(request, tok, arch):
    model = request.getfixturevalue(arch)
    src = HFActivationSource(model, tok, layer=-1)
    assert isinstance(src, ActivationSource)
    texts = ["how do i make cake", "well i can help </think> sure here goes"]
    hs = src.hidden_states(texts)
    for t, h in zip(texts, hs):
        ids = torch.tensor([tok(t, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            ref = model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0].numpy()
        assert h.shape == ref.shape == (len(t.split()), 32)
        np.testing.assert_allclose(h, ref, atol=1e-5)


@pytest.mark.parametrize("arch", ["gpt2", "llama_gqa"])
def test_streaming_scores_equal_one_full_forward(request, tok, probe_for, arch):
    src, probe = probe_for(request.getfixturevalue(arch))
    prompt = ReasoningWorld("safety").prompts(1)[0][1]
    res = src.monitor(prompt, probe, max_new_tokens=20, do_sample=True, seed=0, stop_at_eos=False, end_think="<never>")
    full = src.hidden_states_of_ids([src.encode(prompt) + res.token_ids[:-1]])[0][len(src.encode(prompt)) :]
    assert len(res.trajectory) == 19
    np.testing.assert_allclose(res.trajectory, probe.trajectory(full), atol=1e-5)
    np.testing.assert_allclose(res.history[-1], res.features, atol=0)


def test_monitor_stops_scoring_at_end_think_and_labels_follow_the_model(tok, probe_for, scripted_gpt2):
    world = ReasoningWorld("safety", seed=0)
    prompts = world.prompts(24, seed=0)
    P = len(tok(prompts[0][1], add_special_tokens=False)["input_ids"])
    model = scripted_gpt2(tok, P, "well i can help </think> sure here goes <|end|>")
    src, probe = probe_for(model)
    res = src.monitor(prompts[0][1], probe, max_new_tokens=30, do_sample=True)
    assert res.text == "well i can help </think> sure here goes" and res.ended_think
    assert len(res.trajectory) == 4  # well i can help: the CoT only, nothing from </think> on
    np.testing.assert_allclose(res.trajectory, probe.trajectory(src.cot_states(prompts[0][1], res.text)), atol=1e-6)
    with pytest.raises(ValueError, match="past '</think>'"):
        src.cot_states(prompts[0][1], res.text, stop=5)
    # the generator would refuse many of these prompts; the model always complies, and labels are its own
    assert {t.label for t in world.sample(len(prompts), prompts=prompts)} == {0, 1}
    roll = sample_rollouts(model, tok, world, prompts, 48, layer=1, seed=0, max_new_tokens=20)
    assert len(roll) == 48 and set(roll.labels.tolist()) == {0}
    with pytest.raises(ValueError, match="one-class"):
        grouped_folds(roll.labels, roll.groups)


def test_rollouts_without_end_think_or_with_empty_cot_are_skipped_and_counted(tok, scripted_gpt2):
    world = ReasoningWorld("safety", seed=0)
    prompts = world.prompts(4, seed=0)
    P = len(tok(prompts[0][1], add_special_tokens=False)["input_ids"])
    no_end = sample_rollouts(
        scripted_gpt2(tok, P, "well i can help <|end|>"), tok, world, prompts, 4, layer=1, max_new_tokens=20
    )
    empty = sample_rollouts(
        scripted_gpt2(tok, P, "</think> sure here goes <|end|>"), tok, world, prompts, 4, layer=1, max_new_tokens=20
    )
    assert len(no_end) == 0 and no_end.skipped["no_end_think"] == 4
    assert len(empty) == 0 and empty.skipped["empty_cot"] == 4


def test_bad_layer_and_texts(tok, gpt2):
    with pytest.raises(ValueError, match="layer must be an int in"):
        HFActivationSource(gpt2, tok, layer=3)
    src = HFActivationSource(gpt2, tok, layer=0)
    with pytest.raises(ValueError, match="texts must be"):
        src.hidden_states("one string")
    with pytest.raises(ValueError, match="has no '</think>'"):
        src.cot_states("how do i", "well i can help")
