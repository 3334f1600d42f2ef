import pytest

from paperworks.lm.testing import LoopbackChatServer


@pytest.fixture(scope="session")
def briefs():
    from driftbench import load_briefs

    return load_briefs()


@pytest.fixture(scope="session")
def tiny_hf():
    """A random tiny GPT-2 and a word tokenizer over the prompts' words (built once per session)."""
    from driftbench import load_briefs
    from driftbench.prompts import probe_message, system_message, user_message

    from paperworks.lm import tiny_gpt2, word_tokenizer

    words = set((system_message() + " " + probe_message()).split())
    for b in load_briefs()[:2]:
        for kind in ("initial", "pressure", "checkpoint"):
            words.update(user_message(kind, b, 2).split())
    tok = word_tokenizer(sorted(words), model_max_length=1024)
    return tiny_gpt2(len(tok), n_ctx=1024, width=32, layers=2, heads=2, seed=0), tok


@pytest.fixture
def plan_server():
    servers = []

    def start(plan):
        servers.append(LoopbackChatServer(plan))
        return servers[-1]

    yield start
    for s in servers:
        s.close()
