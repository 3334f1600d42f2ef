import pytest

pytest.importorskip("transformers")


def test_save_and_load_offline_roundtrip(torch, tok, tiny, tmp_path):
    from paperworks.lm import load_local, save_local, tiny_gpt2, tiny_llama

    for model in (tiny_gpt2(len(tok)), tiny_llama(len(tok), kv_heads=2)):
        path = save_local(tmp_path / model.config.model_type, model, tok)
        loaded, tok2 = load_local(path)
        ids = torch.tensor([tok("the cat sat on a mat")["input_ids"]])
        with torch.no_grad():
            torch.testing.assert_close(loaded(input_ids=ids).logits, model(input_ids=ids).logits)
        assert tok2("the cat")["input_ids"] == tok("the cat")["input_ids"]
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_local(tmp_path / "nothing")


def test_word_tokenizer_and_chat_template_with_tool_calls(torch, tok):
    from paperworks.lm import word_tokenizer

    ids = tok("the cat sat")["input_ids"]
    assert len(ids) == 3 and tok.unk_token_id not in ids
    assert tok("the dog")["input_ids"][1] == tok.unk_token_id
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    msgs = [{"role": "user", "content": "weather paris"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"type": "function", "function": {"name": "search", "arguments": {"query": "paris"}}}]},
            {"role": "tool", "content": "sunny"}]
    text = tok.apply_chat_template(msgs, tools=tools, add_generation_prompt=True, tokenize=False)
    assert text.startswith("<|system|> tools :") and text.endswith("<|assistant|>")
    assert '<tool_call> {"name": "search", "arguments": {"query": "paris"}} </tool_call> <|end|>' in text
    assert "<|tool|> sunny <|end|>" in text
    enc = tok(text)["input_ids"]
    for special in ("<|user|>", "<tool_call>", "</tool_call>", "<|end|>"):
        assert tok.convert_tokens_to_ids(special) in enc
    with pytest.raises(ValueError, match="words"):
        word_tokenizer(["two words"])
    assert word_tokenizer(["a"], chat_template=None).chat_template is None


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_generate_with_states_equals_rerunning_each_sequence(torch, tok, tiny, arch):
    from paperworks.lm import generate_with_states

    model = tiny(arch)
    prompts = ["the cat sat on a", "w1 w2", "a mat w3 w4 w5 w6 w7"]  # different lengths: left padding
    g = generate_with_states(model, tok, prompts, max_new_tokens=5, layers=[0, 1, -1], stop_ids=[])
    assert g.tokens.shape == (3, 5) and g.mask.all() and set(g.states) == {0, 1, 2}
    for i, p in enumerate(prompts):
        ids = tok(p)["input_ids"]
        full = torch.tensor([ids + g.tokens[i, :-1].tolist()])
        with torch.no_grad():
            out = model(input_ids=full, output_hidden_states=True)
        # greedy: each token is the argmax of the unpadded full-sequence logits
        assert out.logits[0, len(ids) - 1:].argmax(-1).tolist() == g.tokens[i].tolist()
        for layer, s in g.states.items():
            torch.testing.assert_close(s[i], out.hidden_states[layer][0, len(ids) - 1:], atol=1e-5, rtol=1e-5)


def test_generate_stops_and_rejects_bad_input(torch, tok, tiny):
    from paperworks.lm import generate_with_states

    model = tiny("gpt2")
    cands = ["the cat"] + [f"w{i} w{i + 1}" for i in range(20)]
    free = generate_with_states(model, tok, cands, max_new_tokens=4, layers=[], stop_ids=[])
    stop = int(free.tokens[0, 0])
    other = next(i for i in range(1, len(cands)) if stop not in free.tokens[i].tolist())
    g = generate_with_states(model, tok, [cands[0], cands[other]], max_new_tokens=4, layers=[], stop_ids=[stop])
    assert g.mask.tolist() == [[True, False, False, False], [True] * 4]
    assert (g.tokens[0, 1:] == tok.pad_token_id).all() and g.tokens[1].tolist() == free.tokens[other].tolist()
    assert g.lengths.tolist() == [1, 4] and g.texts[0] == ""
    s1 = generate_with_states(model, tok, ["the cat"] * 4, max_new_tokens=4, layers=[], do_sample=True, seed=3)
    s2 = generate_with_states(model, tok, ["the cat"] * 4, max_new_tokens=4, layers=[], do_sample=True, seed=3)
    assert torch.equal(s1.tokens, s2.tokens)
    with pytest.raises(ValueError, match="context"):
        generate_with_states(model, tok, ["w1 " * 60], max_new_tokens=8)
    with pytest.raises(ValueError, match="layers"):
        generate_with_states(model, tok, ["the cat"], layers=[7])
    with pytest.raises(ValueError, match="prompts: token ids"):
        generate_with_states(model, None, [[1, 2, 9999]])
    with pytest.raises(ValueError, match="prompts"):
        generate_with_states(model, tok, "the cat")
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate_with_states(model, tok, ["the cat"], max_new_tokens=0)
