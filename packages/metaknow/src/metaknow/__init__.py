"""metaknow — Models That Know How Evaluations Are Designed Score Safer (Deckenbach et al., 2026).

Evaluation meta-knowledge: synthetic document fine-tuning (SDF) on documents *about* how evaluations are
built, a token-matched control corpus, a safety/over-refusal harness with rule or LLM judges, and paired
statistics of the behavioural shift with and without verbalised evaluation awareness.
"""

from metaknow.documents import LintError, Trait, generate_documents, lint_corpus, load_traits, neutral_documents
from metaknow.evaluate import evaluate, load_jsonl, multiple_choice_accuracy
from metaknow.judges import AwarenessJudge, HarmJudge, RefusalJudge
from metaknow.sdf import count_tokens, document_losses, load_sdf, matched_control, save_sdf, train_sdf
from metaknow.stats import Shift, paired_shift
from metaknow.stub import StubPolicy
from paperworks.lm import HFChat, OpenAIChat, ScriptedChat

__all__ = [
    "AwarenessJudge",
    "HFChat",
    "HarmJudge",
    "LintError",
    "OpenAIChat",
    "RefusalJudge",
    "ScriptedChat",
    "Shift",
    "StubPolicy",
    "Trait",
    "count_tokens",
    "document_losses",
    "evaluate",
    "generate_documents",
    "lint_corpus",
    "load_jsonl",
    "load_sdf",
    "load_traits",
    "matched_control",
    "multiple_choice_accuracy",
    "neutral_documents",
    "paired_shift",
    "save_sdf",
    "train_sdf",
]
__version__ = "0.1.0"
