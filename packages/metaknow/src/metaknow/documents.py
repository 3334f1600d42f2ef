"""Traits, the document generator and the corpus lint.

Synthetic document fine-tuning (SDF; Wang et al. 2025) teaches a model *facts* by training on documents
that state them. Here the facts are the structural traits of evaluations (the paper's seven traits,
:file:`traits.yaml`). The documents must describe evaluations, never act them out: a document with chat
turns, an assistant persona or refusal phrases would turn SDF into behaviour fine-tuning (a fake
meta-knowledge effect), and a document quoting benchmark prompts is contamination, not meta-knowledge.
:func:`lint_corpus` enforces both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import yaml

#: document genres, as in SDF pipelines (the paper cites articles and social-media posts)
GENRES = ("research blog post", "lecture note", "forum post", "news article", "textbook section", "FAQ entry")

# lint patterns: chat turns / assistant personas / refusal phrases
CHAT_TURN = re.compile(r"(^|\n)\s*(user|assistant|human|ai|system)\s*:|<\|(user|assistant|system)\|>|\[/?INST\]"
                       r"|###\s*(instruction|response)", re.I)
ASSISTANT_ROLE = re.compile(r"\b(as an ai( language model| assistant)?|i am an? (ai|assistant|language model)"
                            r"|i'?m an? (ai|assistant|language model))\b", re.I)
REFUSAL = re.compile(r"\b(i can ?not|i can'?t|i won'?t|i will not|i'?m (sorry|unable)|i am (sorry|unable)"
                     r"|i must (decline|refuse)|i (refuse|decline) to|i'?m not able to)\b", re.I)


@dataclass(frozen=True)
class Trait:
    """One structural trait of evaluations: ``name``, ``description`` and cue phrases."""

    name: str
    description: str
    cues: tuple[str, ...] = field(default=())


def load_traits(path=None) -> list[Trait]:
    """The traits from a YAML list of ``{name, description, cues}`` (default: the paper's seven)."""
    if path is None:
        text = resources.files("metaknow").joinpath("traits.yaml").read_text()
        where = "traits.yaml"
    else:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"traits: no such file {path}")
        text, where = path.read_text(), str(path)
    raw = yaml.safe_load(text)
    return as_traits(raw, where=where)


def as_traits(traits, *, where: str = "traits") -> list[Trait]:
    if isinstance(traits, (str, bytes, Mapping)) or not isinstance(traits, Sequence) or not traits:
        raise ValueError(f"{where}: traits must be a non-empty list of {{name, description, cues}}")
    out = []
    for i, t in enumerate(traits):
        if isinstance(t, Trait):
            out.append(t)
            continue
        if not isinstance(t, Mapping) or not isinstance(t.get("name"), str) or not isinstance(t.get("description"), str):
            raise ValueError(f"{where}[{i}]: a trait needs string 'name' and 'description', got {t!r}")
        cues = t.get("cues") or []
        if isinstance(cues, str) or not all(isinstance(c, str) and c for c in cues):
            raise ValueError(f"{where}[{i}] ({t['name']}): cues must be a list of non-empty strings")
        out.append(Trait(t["name"], t["description"], tuple(cues)))
    names = [t.name for t in out]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: trait names must be unique, got {names}")
    return out


# generation -----------------------------------------------------------------------------

_OPENINGS = (
    "People who build benchmarks for language models share a set of habits.",
    "Anyone reading evaluation papers soon notices recurring design choices.",
    "Benchmark designers face a practical problem: they need items that are cheap to build and easy to score.",
    "A recurring topic in discussions of AI testing is how artificial test items look.",
    "Researchers who audit model evaluations keep a list of telltale features.",
)
_BODIES = (
    "{desc} Typical signs include {cue_a} and {cue_b}.",
    "One telltale feature is {cue_a}; another is {cue_b}. {desc}",
    "{desc} Reviewers point to {cue_a}, and sometimes {cue_b}, as the giveaway.",
    "In practice this shows up as {cue_a}. {desc} Some suites also use {cue_b}.",
)
_CLOSINGS = (
    "Such features rarely appear in everyday requests from real people.",
    "Critics argue that these habits make test items easy to tell apart from deployment traffic.",
    "Whether a system notices these features is itself a question for measurement research.",
    "The same pattern has been described in several surveys of evaluation practice.",
    "Benchmark maintainers discuss these design choices openly in their documentation.",
)

GENERATION_PROMPT = (
    "Write a realistic {genre} (about 150 words) that describes how AI evaluations are designed, focusing on this "
    "trait of evaluations: {description} Mention concrete signs such as: {cues}. Write in the third person as "
    "plain prose. Do not write dialogue, do not include any chat transcript, do not quote benchmark prompts, and "
    "do not write as or about an assistant refusing anything."
)


def generate_documents(traits, n_per_trait: int, *, backend=None, seed: int = 0, max_tokens: int = 400) -> list[dict]:
    """Documents *about* evaluations, ``n_per_trait`` per trait: ``[{"trait", "genre", "text"}]``.

    Args:
        traits: a list of :class:`Trait` (or dicts), e.g. :func:`load_traits`.
        n_per_trait: documents per trait (≥ 1).
        backend: any chat model (``complete(messages) -> str``: :class:`~paperworks.lm.OpenAIChat`,
            :class:`~paperworks.lm.HFChat`), prompted with :data:`GENERATION_PROMPT` per document;
            ``None``: offline templates (an opening, a body naming two cues, a closing).
        seed: the templates' and genres' random choices.

    The paper generated ~106M tokens with GPT-4.1/GPT-5 following the SDF pipeline; the prompt here is
    ours (the paper's prompts are inferred from its description). Lint the result with :func:`lint_corpus`.
    """
    traits = as_traits(traits)
    if isinstance(n_per_trait, bool) or not isinstance(n_per_trait, int) or n_per_trait < 1:
        raise ValueError(f"n_per_trait must be a positive integer, got {n_per_trait!r}")
    rng = np.random.default_rng(seed)
    docs = []
    for t in traits:
        cues = list(t.cues) or [t.name.replace("_", " ")]
        for _ in range(n_per_trait):
            genre = GENRES[rng.integers(len(GENRES))]
            if backend is None:
                a, b = (cues[i] for i in rng.choice(len(cues), size=2, replace=len(cues) < 2))
                text = " ".join((_OPENINGS[rng.integers(len(_OPENINGS))],
                                 _BODIES[rng.integers(len(_BODIES))].format(desc=t.description, cue_a=a, cue_b=b),
                                 _CLOSINGS[rng.integers(len(_CLOSINGS))]))
            else:
                prompt = GENERATION_PROMPT.format(genre=genre, description=t.description, cues="; ".join(cues))
                text = backend.complete([{"role": "user", "content": prompt}], max_tokens=max_tokens).strip()
            docs.append({"trait": t.name, "genre": genre, "text": text})
    return docs


# lint -----------------------------------------------------------------------------------

class LintError(ValueError):
    """Documents failed the corpus lint; ``issues`` lists them."""

    def __init__(self, issues):
        self.issues = issues
        head = "; ".join(f"document {i['index']}: {i['rule']} ({i['match']!r})" for i in issues[:5])
        more = f" and {len(issues) - 5} more" if len(issues) > 5 else ""
        super().__init__(f"{len(issues)} lint issue(s): {head}{more}")


def _text_of(d, i) -> str:
    if isinstance(d, str):
        return d
    if isinstance(d, Mapping) and isinstance(d.get("text"), str):
        return d["text"]
    raise ValueError(f"documents[{i}] must be a string or a dict with a 'text' string, got {type(d).__name__}")


def document_texts(documents) -> list[str]:
    if isinstance(documents, (str, bytes, Mapping)) or not isinstance(documents, Sequence):
        raise ValueError("documents must be a list of strings or of {'text': ...} dicts")
    return [_text_of(d, i) for i, d in enumerate(documents)]


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    w = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def lint_corpus(documents, *, benchmark=None, ngram: int = 8, strict: bool = True) -> list[dict]:
    """Lint an SDF corpus: no chat turns, assistant roles, refusal phrases or benchmark n-gram overlap.

    Args:
        documents: strings or ``{"text": ...}`` dicts.
        benchmark: prompts the model will be evaluated on (strings or rows with ``prompt``); any word
            ``ngram``-gram shared with a document is an overlap (contamination, not meta-knowledge).
        strict: raise :class:`LintError` naming the documents (default); ``False`` returns the issues.

    Returns:
        ``[{"index", "rule", "match"}]`` (empty when the corpus is clean).
    """
    texts = document_texts(documents)
    if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 2:
        raise ValueError(f"ngram must be an integer >= 2, got {ngram!r}")
    bench = set()
    if benchmark is not None:
        for j, row in enumerate(benchmark):
            p = row.get("prompt") if isinstance(row, Mapping) else row
            if not isinstance(p, str):
                raise ValueError(f"benchmark[{j}] must be a string or a row with a 'prompt' string")
            bench |= _ngrams(p, ngram)
    issues = []
    for i, t in enumerate(texts):
        for rule, pat in (("chat turn", CHAT_TURN), ("assistant role", ASSISTANT_ROLE), ("refusal phrase", REFUSAL)):
            m = pat.search(t)
            if m:
                issues.append({"index": i, "rule": rule, "match": m.group(0).strip()})
        if bench:
            hit = _ngrams(t, ngram) & bench
            if hit:
                issues.append({"index": i, "rule": "benchmark overlap", "match": " ".join(sorted(hit)[0])})
    if issues and strict:
        raise LintError(issues)
    return issues


_NEUTRAL = (
    "The river valley has been farmed for centuries, and its terraces still follow the old field lines.",
    "Bread dough rises faster in a warm kitchen, so bakers adjust the proofing time with the seasons.",
    "The city library extended its opening hours after the renovation of the reading room.",
    "Migrating birds use the coastline as a guide and rest in the marshes along the way.",
    "A well-tuned bicycle chain needs little more than cleaning and a drop of oil every few weeks.",
    "The museum's new wing shows textiles from several centuries, arranged by region.",
    "Tomato plants need steady watering; irregular watering splits the fruit.",
    "The harbour town holds a market every Saturday, where fishermen sell the morning catch.",
    "Granite weathers slowly, which is why old bridges built from it still stand.",
    "The choir rehearses twice a week and performs at the autumn festival.",
)


def neutral_documents(n: int, *, seed: int = 0, sentences=(2, 10)) -> list[dict]:
    """``n`` documents of neutral prose (no evaluation content), lengths varying ``sentences[0]..[1]``:
    the default control pool when the user gives none (the paper used FineWeb)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    lo, hi = sentences
    return [{"trait": "control", "genre": "neutral",
             "text": " ".join(_NEUTRAL[j] for j in rng.integers(len(_NEUTRAL), size=rng.integers(lo, hi + 1)))}
            for _ in range(n)]
