import numpy as np
import pytest
import torch


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def tok():
    from probetraj.lm import world_tokenizer

    return world_tokenizer()


@pytest.fixture(scope="session")
def gpt2(tok):
    from paperworks.lm.tiny import tiny_gpt2

    return tiny_gpt2(len(tok), width=32, layers=2, heads=4, n_ctx=96, seed=0)


@pytest.fixture(scope="session")
def llama_gqa(tok):
    from paperworks.lm.tiny import tiny_llama

    return tiny_llama(len(tok), width=32, layers=2, heads=4, kv_heads=2, n_ctx=96, seed=0)


def _scripted_gpt2(tok, prompt_len: int, completion: str):
    """A GPT-2 whose blocks write nothing and whose tokens embed to zero: its next token depends on the
    position only, set so that after any ``prompt_len``-token prompt it writes ``completion``."""
    from paperworks.lm.tiny import tiny_gpt2

    ids = tok(completion, add_special_tokens=False)["input_ids"]
    d = 64
    model = tiny_gpt2(len(tok), width=d, layers=1, heads=4, n_ctx=64, seed=0, tie_word_embeddings=False)
    with torch.no_grad():
        model.transformer.wte.weight.zero_()
        model.transformer.wpe.weight.copy_(torch.eye(64)[:, :d] * 5)
        for blk in model.transformer.h:
            for lin in (blk.attn.c_proj, blk.mlp.c_proj):
                lin.weight.zero_()
                lin.bias.zero_()
        normed = torch.nn.functional.layer_norm(model.transformer.wpe.weight, (d,))
        W = torch.zeros(len(tok), d)
        for k, t in enumerate(ids):  # position prompt_len - 1 + k chooses completion token k
            W[t] += 50 * normed[prompt_len - 1 + k]
        model.lm_head.weight.copy_(W)
    return model.eval()


@pytest.fixture(scope="session")
def scripted_gpt2():
    return _scripted_gpt2
