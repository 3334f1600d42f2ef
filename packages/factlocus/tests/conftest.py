import pytest
import torch
from factlocus import FactWorld, build_model, plant_recall_circuit

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def world():
    return FactWorld(n_subjects=16, n_relations=4, n_answers=8, motif="independent", seed=0)


@pytest.fixture(scope="session", params=[0, 1], ids=["recall_in_mlp0", "recall_in_mlp1"])
def planted(request, world):
    """(layer, model, prompts): a GPT-2 with recall hand-set into mlp{layer}."""
    model, tok = plant_recall_circuit(world, layer=request.param)
    return request.param, model, world.prompt_set(tok)


@pytest.fixture(scope="session")
def llama_gqa(world):
    """A randomly initialised tiny Llama with grouped-query attention (4 query heads, 2 kv heads)."""
    tok = world.tokenizer()
    return build_model(len(tok), width=32, heads=4, kv_heads=2, arch="llama", seed=0), world.prompt_set(tok)
