import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matt import align_segments, identical_share
from matt.align import token_spans

ALPHABET = "abcdefghijklmnopqrstuvwxyz  "


def _bounds(text, tok):
    sp = token_spans(text, tok)
    return {s for s, _ in sp} | {e for _, e in sp} | {0, len(text)}


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=ALPHABET, min_size=1, max_size=60))
def test_segments_partition_whole_tokens_minimal(world, text):
    ta, tb = world["ta"], world["tb"]
    segs = align_segments(text, ta, tb)
    # a partition of [0, len)
    assert segs[0][0] == 0 and segs[-1][1] == len(text)
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(segs, segs[1:]))
    ba, bb = _bounds(text, ta), _bounds(text, tb)
    for s, e in segs:
        # covered exactly by whole tokens of both tokenisations
        for sp in (token_spans(text, ta), token_spans(text, tb)):
            inside = [(x, y) for x, y in sp if x < e and y > s]
            assert all(s <= x and y <= e for x, y in inside)
            assert "".join(text[x:y] for x, y in inside) == text[s:e]
        # minimal: no shared boundary strictly inside
        assert not any(p in ba and p in bb for p in range(s + 1, e))


def test_identity_alignment_is_the_tokenisation(world):
    ta = world["ta"]
    t = world["eval"][0]
    assert align_segments(t, ta, ta) == token_spans(t, ta)
    assert identical_share(world["eval"][:5], ta, ta) == 1.0
    assert 0.0 <= identical_share(world["eval"][:5], ta, world["tb"]) < 1.0


def test_slow_tokenizer_rejected(world):
    class Slow:
        is_fast = False

    with pytest.raises(TypeError, match="fast tokenizer"):
        align_segments("abc", Slow(), world["tb"])


def test_normalising_tokenizer_rejected(world):
    from tokenizers import normalizers
    from transformers import PreTrainedTokenizerFast

    tk = world["tb"].backend_tokenizer.__class__.from_str(world["tb"].backend_tokenizer.to_str())
    tk.normalizer = normalizers.Lowercase()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
    with pytest.raises(ValueError, match="normalisation changes the text"):
        align_segments("Abc def", world["ta"], tok)
