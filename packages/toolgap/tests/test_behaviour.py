import numpy as np
import pytest
import torch
from toolgap import TOOLS, Question, actions, hidden_states, is_correct, necessity
from toolgap.model import render

from paperworks.lm import ScriptedChat
from paperworks.lm.tiny import word_tokenizer


def _qs(n=6):
    return [Question(f"q{i}", f"{i} + {i}", " ".join(str(2 * i)), "arithmetic", i % 2 == 0) for i in range(n)]


def test_labeller_on_a_scripted_model_with_known_correctness():
    """Question i is answered correctly by sample j iff j < i: correct counts 0..k, necessary iff count < r."""
    seen = {}

    def answer(messages):
        q = messages[-1]["content"]
        j = seen[q] = seen.get(q, -1) + 1
        i = int(q.split()[0])
        return f"the answer is {2 * i}" if j < i else "I think 99"

    qs = _qs(6)
    df = necessity(ScriptedChat(answer), None, qs, k=4, temperature=0.7)
    assert df["correct"].tolist() == [0, 1, 2, 3, 4, 4]
    assert df["necessary"].tolist() == [True, True, True, True, False, False]
    seen.clear()
    df2 = necessity(ScriptedChat(answer), None, qs, k=4, min_correct=2)
    assert df2["necessary"].tolist() == [True, True, False, False, False, False]


def test_scripted_actions_with_tools_and_unparsable_tally():
    replies = ['<tool_call>{"name": "calc", "arguments": {"expression": "1+1"}}</tool_call>', "4",
               '<tool_call>{"name": oops</tool_call>', '{"name": "kb", "parameters": {"entity": "e"}}']
    chat = ScriptedChat(replies)
    df = actions(chat, None, _qs(4))
    assert df["called"].tolist() == [True, False, False, True]
    assert df.attrs["unparsable"] == 1 and df["tool"].tolist()[3] == "kb"
    assert chat.calls[0][1]["tools"] == TOOLS and chat.calls[0][1]["temperature"] == 0.0


def test_is_correct():
    assert is_correct("= 3 5 7", "3 5 7") and is_correct("so 1,234", "1234") and not is_correct("12", "123")
    assert is_correct("It is Paris.", "paris") and not is_correct("Rome", "Paris")


def test_bad_inputs(gpt2, tok):
    qs = _qs(2)
    with pytest.raises(ValueError, match="k must"):
        necessity(gpt2, tok, qs, k=0)
    with pytest.raises(ValueError, match="min_correct"):
        necessity(gpt2, tok, qs, k=3, min_correct=4)
    with pytest.raises(ValueError, match="temperature"):
        necessity(gpt2, tok, qs, temperature=float("nan"))
    bare = word_tokenizer(["1", "2"], chat_template=None)
    with pytest.raises(ValueError, match="chat_template"):
        actions(gpt2, bare, qs)
    with pytest.raises(ValueError, match="JSON schema"):
        actions(gpt2, tok, qs, tools=[{"type": "function", "function": {"name": "calc", "parameters": "str"}}])
    with pytest.raises(ValueError, match="name"):
        actions(gpt2, tok, qs, tools=[{"description": "no name"}])
    with pytest.raises(ValueError, match="pattern is missing"):
        hidden_states(gpt2, tok, qs, position="kb ( ent1")
    with pytest.raises(TypeError, match="Question"):
        necessity(gpt2, tok, ["1 + 1"])


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_captured_states_equal_output_hidden_states(arch, request, tok):
    model = request.getfixturevalue(arch)
    qs = [Question("a", "1 2 + 3", "1 5"), Question("b", "color of ent1 ?", "red"), Question("c", "7", "7")]
    H = hidden_states(model, tok, qs)
    L = model.config.num_hidden_layers
    assert H.shape == (3, L + 1, model.config.hidden_size)
    for i, q in enumerate(qs):
        ids = tok(render(tok, q.question, tools=TOOLS), add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            ref = model(input_ids=ids, output_hidden_states=True).hidden_states
        np.testing.assert_allclose(H[i], torch.stack(ref, 0)[:, 0, -1].numpy(), atol=1e-5)
    # a pattern position: the last token of ':' in the tools turn
    Hp = hidden_states(model, tok, qs[:1], position="tools :")
    ids = tok(render(tok, qs[0].question, tools=TOOLS), add_special_tokens=False)["input_ids"]
    at = ids.index(tok.convert_tokens_to_ids(":"))
    with torch.no_grad():
        ref = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
    np.testing.assert_allclose(Hp[0], torch.stack(ref, 0)[:, 0, at].numpy(), atol=1e-5)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_local_actions_and_necessity_run_with_the_tool_template(arch, request, tok):
    model = request.getfixturevalue(arch)
    qs = _qs(5)
    df = necessity(model, tok, qs, k=3, max_new_tokens=4, batch_size=4)
    assert (df["k"] == 3).all() and df["samples"].map(len).eq(3).all() and df["necessary"].all()
    a = actions(model, tok, qs, max_new_tokens=4)
    assert len(a) == 5 and a["called"].dtype == bool
    # greedy: batched equals one at a time
    g1 = necessity(model, tok, qs, k=1, temperature=0.0, max_new_tokens=5, batch_size=64)
    g2 = necessity(model, tok, qs, k=1, temperature=0.0, max_new_tokens=5, batch_size=1)
    assert g1["samples"].tolist() == g2["samples"].tolist()
