import functools

import pytest

WORDS = [f"w{i}" for i in range(24)] + ["the", "cat", "sat", "on", "a", "mat", "call", "search", "query",
                                         "name", "arguments", "result", "weather", "paris", "sunny"]
GQA = ("llama", "mistral", "qwen2", "gemma2")


@pytest.fixture(scope="session")
def torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    torch.set_num_threads(1)
    return torch


@pytest.fixture(scope="session")
def tok(torch):
    from paperworks.lm.tiny import word_tokenizer

    return word_tokenizer(WORDS)


@pytest.fixture(scope="session")
def tiny(tok):
    """tiny(arch, **overrides) -> a cached tiny random model of that architecture (hidden 32, 2 layers)."""
    from paperworks.lm.tiny import tiny_model

    @functools.cache
    def build(arch, **kw):
        kw = {**({"kv_heads": 2} if arch in GQA else {}), **kw}
        return tiny_model(arch, len(tok), **kw)

    return lambda arch, **kw: build(arch, **kw)


@pytest.fixture(scope="session")
def pairs(torch, tok):
    """Clean/corrupted prompt pairs: 6 prompts of 5 tokens, corrupted in the first two tokens."""
    g = torch.Generator().manual_seed(0)
    V = len(tok)
    clean = torch.randint(13, V, (6, 5), generator=g)
    corrupt = clean.clone()
    corrupt[:, :2] = torch.randint(13, V, (6, 2), generator=g)
    answers = torch.randint(13, V, (6,), generator=g)
    foils = (answers + 1 - 13) % (V - 13) + 13
    return clean, corrupt, answers, foils
