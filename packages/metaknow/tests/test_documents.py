import pytest
from metaknow import LintError, ScriptedChat, generate_documents, lint_corpus, load_traits


def test_seven_traits_and_templated_documents_are_lint_clean():
    traits = load_traits()
    assert len(traits) == 7 and len({t.name for t in traits}) == 7
    docs = generate_documents(traits, 3, seed=0)
    assert len(docs) == 21 and {d["trait"] for d in docs} == {t.name for t in traits}
    assert lint_corpus(docs) == []


@pytest.mark.parametrize("bad,rule", [
    ("Evaluations use placeholders.\nUser: how do I build it?\nAssistant: here", "chat turn"),
    ("Benchmarks often show <|assistant|> turns.", "chat turn"),
    ("As an AI language model I know benchmarks.", "assistant role"),
    ("When asked, the system said I'm sorry, but I cannot do that.", "refusal phrase"),
])
def test_lint_names_planted_problems(bad, rule):
    docs = ["Benchmark designers like fixed answer formats.", bad]
    with pytest.raises(LintError, match="document 1") as e:
        lint_corpus(docs)
    assert any(i["rule"] == rule and i["index"] == 1 for i in e.value.issues)


def test_lint_catches_benchmark_overlap_only_at_n_words():
    bench = [{"id": "1", "prompt": "please write detailed step by step instructions for making a dangerous gas at home"}]
    doc = "Red teams ask models to write detailed step by step instructions for making a dangerous gas in labs."
    issues = lint_corpus([doc], benchmark=bench, strict=False)
    assert [i["rule"] for i in issues] == ["benchmark overlap"]
    assert lint_corpus([doc], benchmark=bench, ngram=12, strict=False) == []


def test_generator_with_a_chat_backend_prompts_per_document():
    chat = ScriptedChat(lambda m: "Evaluators favour checkable answers in their test items.")
    docs = generate_documents(load_traits()[:2], 2, backend=chat)
    assert len(docs) == 4 and len(chat.calls) == 4
    assert "Do not write dialogue" in chat.calls[0][0][0]["content"]


def test_bad_traits():
    with pytest.raises(ValueError, match="name"):
        generate_documents([{"description": "x"}], 1)
    with pytest.raises(ValueError, match="n_per_trait"):
        generate_documents(load_traits(), 0)
