"""Fact worlds with collision axes, prompt sets, matched counterfactuals and a CounterFact reader.

A fact is ``(subject, relation) -> answer``; a prompt is ``s1 s2 r`` (two subject tokens, so an
attention module must gather the subject at the relation position) and the answer is one token.
Motifs (the correlation axis; inferred from the paper's abstract -- its generator is not public):

- ``independent``: every answer drawn uniformly from the answer set;
- ``subject``: subjects fall into clusters of ``cluster`` that share their whole answer row;
- ``relation``: relations fall into clusters of ``cluster`` that share answers (per subject);
- ``answer``: answers drawn from a low-entropy (Zipf, exponent ``zipf``) answer distribution.

``subject_cluster`` and ``zipf`` can be combined (``motif="joint"``) for the compression sweep.

Two-hop compositions (``n_bridges > 0``): bridge relations ``b0, b1, ...`` map every subject to
another subject, the *bridge entity* ``t = bridge[s, j]``, whose answer is that subject itself, i.e.
its two part tokens (the one-hop bridge fact ``sa sb bj -> ta tb`` is trained as two next-token
targets). A two-hop prompt ``sa sb bj rk`` asks relation ``rk`` of the bridge entity:
``answer = answers[bridge[s, j], k]``. A fraction ``holdout`` of the compositions is held out of
training (every held-out composition's two one-hop facts *are* trained), so composition can be
tested. This extension is our construction; the paper's two-hop setup is not public.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

MOTIFS = ("independent", "subject", "relation", "answer", "joint")


@dataclass
class FactWorld:
    """A synthetic world of facts ``(subject, relation) -> answer``.

    Args:
        n_subjects, n_relations, n_answers: sizes (subjects are pairs of part tokens).
        motif: the collision axis, one of :data:`MOTIFS`.
        cluster: cluster size for the subject/relation motifs (and the subject axis of ``joint``).
        zipf: Zipf exponent of the answer distribution for ``answer`` (and ``joint``).
        seed: the world's seed.
    """

    n_subjects: int = 512
    n_relations: int = 8
    n_answers: int = 128
    motif: str = "independent"
    cluster: int = 8
    zipf: float = 1.5
    seed: int = 0
    n_bridges: int = 0
    holdout: float = 0.25
    answers: np.ndarray = field(init=False, repr=False)
    subject_parts: np.ndarray = field(init=False, repr=False)
    bridge: np.ndarray = field(init=False, repr=False)
    heldout_mask: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        for k in ("n_subjects", "n_relations", "n_answers", "cluster"):
            v = getattr(self, k)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{k} must be a positive integer, got {v!r}")
        if not isinstance(self.n_bridges, (int, np.integer)) or self.n_bridges < 0:
            raise ValueError(f"n_bridges must be a non-negative integer, got {self.n_bridges!r}")
        if not 0 <= self.holdout < 1:
            raise ValueError(f"holdout must be in [0, 1), got {self.holdout!r}")
        if self.n_bridges and self.n_subjects < 2:
            raise ValueError("two-hop worlds need n_subjects >= 2")
        if self.n_answers < 2:
            raise ValueError(f"n_answers must be >= 2, got {self.n_answers}")
        if self.motif not in MOTIFS:
            raise ValueError(f"motif must be one of {MOTIFS}, got {self.motif!r}")
        if self.motif in ("subject", "joint") and self.n_subjects % self.cluster:
            raise ValueError(f"cluster={self.cluster} must divide n_subjects={self.n_subjects}")
        if self.motif == "relation" and self.n_relations % self.cluster:
            raise ValueError(f"cluster={self.cluster} must divide n_relations={self.n_relations}")
        rng = np.random.default_rng(self.seed)
        S, R, A = self.n_subjects, self.n_relations, self.n_answers
        # subjects: distinct pairs of part tokens from two pools of size ~sqrt(S)
        pool = int(np.ceil(np.sqrt(S))) + 1
        pairs = rng.choice(pool * pool, size=S, replace=False)
        self.subject_parts = np.stack([pairs // pool, pairs % pool], axis=1)
        self._pool = pool
        p = self.answer_distribution()
        if self.motif == "subject" or self.motif == "joint":
            rows = rng.choice(A, size=(S // self.cluster, R), p=p)
            perm = rng.permutation(S)  # clusters are random sets of subjects, not adjacent ids
            self.answers = np.empty((S, R), dtype=np.int64)
            self.answers[perm] = np.repeat(rows, self.cluster, axis=0)
        elif self.motif == "relation":
            cols = rng.choice(A, size=(S, R // self.cluster), p=p)
            self.answers = cols[:, rng.permutation(np.repeat(np.arange(R // self.cluster), self.cluster))]
        else:
            self.answers = rng.choice(A, size=(S, R), p=p)
        self.answers = np.ascontiguousarray(self.answers, dtype=np.int64)
        # two-hop: bridge[s, j] is another subject; a held-out mask over compositions (s, j, k).
        # Drawn from a separate stream so adding bridges leaves the one-hop facts unchanged.
        hop = np.random.default_rng([self.seed, 2])
        shift = hop.integers(1, S, size=(S, self.n_bridges)) if S > 1 else np.zeros((S, 0), dtype=np.int64)
        self.bridge = (np.arange(S)[:, None] + shift) % S  # never the subject itself
        n_comp = S * self.n_bridges * R
        mask = np.zeros(n_comp, dtype=bool)
        mask[hop.permutation(n_comp)[:int(round(self.holdout * n_comp))]] = True
        self.heldout_mask = mask.reshape(S, self.n_bridges, R)

    def answer_distribution(self) -> np.ndarray:
        """The marginal answer distribution the generator draws from."""
        A = self.n_answers
        if self.motif in ("answer", "joint"):
            w = 1.0 / np.arange(1, A + 1) ** self.zipf
            return w / w.sum()
        return np.full(A, 1.0 / A)

    @property
    def n_facts(self) -> int:
        return self.n_subjects * self.n_relations

    def facts(self) -> np.ndarray:
        """``(n_facts, 3)`` rows ``(subject, relation, answer)``."""
        s, r = np.meshgrid(np.arange(self.n_subjects), np.arange(self.n_relations), indexing="ij")
        return np.stack([s.ravel(), r.ravel(), self.answers.ravel()], axis=1)

    def two_hop_facts(self, split: str = "all") -> np.ndarray:
        """``(N, 5)`` rows ``(subject, bridge relation j, relation k, bridge entity t, answer)`` with
        ``t = bridge[subject, j]`` and ``answer = answers[t, k]``; ``split``: all, train or heldout."""
        if split not in ("all", "train", "heldout"):
            raise ValueError(f"split must be 'all', 'train' or 'heldout', got {split!r}")
        if not self.n_bridges:
            raise ValueError("this world has no two-hop facts (n_bridges=0)")
        s, j, k = np.meshgrid(np.arange(self.n_subjects), np.arange(self.n_bridges), np.arange(self.n_relations),
                              indexing="ij")
        s, j, k = s.ravel(), j.ravel(), k.ravel()
        t = self.bridge[s, j]
        rows = np.stack([s, j, k, t, self.answers[t, k]], axis=1)
        held = self.heldout_mask.ravel()
        return rows if split == "all" else rows[held] if split == "heldout" else rows[~held]

    # tokens -------------------------------------------------------------------------------
    def vocab(self) -> list[str]:
        return (["<pad>", "<unk>"] + [f"sa{i}" for i in range(self._pool)] + [f"sb{i}" for i in range(self._pool)]
                + [f"r{i}" for i in range(self.n_relations)] + [f"a{i}" for i in range(self.n_answers)]
                + [f"b{j}" for j in range(self.n_bridges)])

    def subject_text(self, s: int) -> str:
        a, b = self.subject_parts[s]
        return f"sa{a} sb{b}"

    def prompt(self, s: int, r: int) -> str:
        return f"{self.subject_text(s)} r{r}"

    def tokenizer(self) -> PreTrainedTokenizerFast:
        """A word-level ``transformers`` tokenizer over this world's vocabulary (built locally)."""
        return word_tokenizer(self.vocab())

    def prompt_set(self, tokenizer, facts: np.ndarray | None = None) -> PromptSet:
        """The prompts of ``facts`` (default: all) with their answers and metadata."""
        facts = self.facts() if facts is None else np.asarray(facts)
        ps = PromptSet.from_strings(tokenizer, [self.prompt(s, r) for s, r, _ in facts],
                                    [f"a{a}" for a in facts[:, 2]])
        ps.subjects, ps.relations = facts[:, 0].copy(), facts[:, 1].copy()
        return ps

    def two_hop_prompt_set(self, tokenizer, split: str = "all") -> PromptSet:
        """Prompts ``sa sb bj rk`` -> ``a{answers[bridge[s, j], k]}``; ``relations`` holds the pair id
        ``j * n_relations + k`` (counterfactuals then share both relations), ``bridges`` the entity ``t``."""
        f = self.two_hop_facts(split)
        if not len(f):
            raise ValueError(f"split {split!r} has no two-hop facts")
        ps = PromptSet.from_strings(tokenizer, [f"{self.subject_text(s)} b{j} r{k}" for s, j, k, _, _ in f],
                                    [f"a{a}" for a in f[:, 4]])
        ps.subjects, ps.relations = f[:, 0].copy(), f[:, 1] * self.n_relations + f[:, 2]
        ps.bridges = f[:, 3].copy()
        return ps

    def bridge_prompt_sets(self, tokenizer) -> list[PromptSet]:
        """The one-hop bridge facts as two next-token sets: ``sa sb bj -> ta`` and ``sa sb bj ta -> tb``."""
        if not self.n_bridges:
            raise ValueError("this world has no bridge relations (n_bridges=0)")
        s, j = (x.ravel() for x in np.meshgrid(np.arange(self.n_subjects), np.arange(self.n_bridges), indexing="ij"))
        t = self.bridge[s, j]
        heads = [f"{self.subject_text(a)} b{b}" for a, b in zip(s, j)]
        ta, tb = self.subject_parts[t, 0], self.subject_parts[t, 1]
        first = PromptSet.from_strings(tokenizer, heads, [f"sa{x}" for x in ta])
        second = PromptSet.from_strings(tokenizer, [f"{h} sa{x}" for h, x in zip(heads, ta)], [f"sb{x}" for x in tb])
        for ps in (first, second):
            ps.subjects, ps.relations, ps.bridges = s.copy(), j.copy(), t.copy()
        return [first, second]

    def training_sets(self, tokenizer) -> dict[str, PromptSet]:
        """Everything a recall model is trained on: the one-hop facts, and with bridges the bridge facts
        (two next-token sets) and the *training* compositions -- never a held-out composition."""
        sets = {"one_hop": self.prompt_set(tokenizer)}
        if self.n_bridges:
            sets["bridge_first"], sets["bridge_second"] = self.bridge_prompt_sets(tokenizer)
            sets["two_hop"] = self.two_hop_prompt_set(tokenizer, "train")
        return sets


def word_tokenizer(vocab: Sequence[str]) -> PreTrainedTokenizerFast:
    """A whitespace word-level tokenizer (``tokenizers`` WordLevel) wrapped for ``transformers``."""
    vocab = list(dict.fromkeys(["<pad>", "<unk>", *vocab]))
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>")


@dataclass
class PromptSet:
    """Equal-length prompts with single-token answers: the data every analysis takes.

    Attributes:
        input_ids: ``(N, T)`` LongTensor.
        answer_ids: ``(N,)`` LongTensor, the token each prompt should be followed by.
        subjects, relations: optional ``(N,)`` integer labels (used by controls and counterfactuals).
        bridges: optional ``(N,)`` bridge-entity labels of two-hop prompts (what a bridge probe decodes).
    """

    input_ids: torch.Tensor
    answer_ids: torch.Tensor
    subjects: np.ndarray | None = None
    relations: np.ndarray | None = None
    bridges: np.ndarray | None = None

    def __post_init__(self):
        if not isinstance(self.input_ids, torch.Tensor) or self.input_ids.dim() != 2:
            raise TypeError("input_ids must be a 2-d tensor (prompts, positions)")
        self.input_ids = self.input_ids.long()
        self.answer_ids = torch.as_tensor(self.answer_ids, dtype=torch.long)
        if self.answer_ids.shape != (self.input_ids.shape[0],):
            raise ValueError(f"answer_ids must have shape ({self.input_ids.shape[0]},), "
                             f"got {tuple(self.answer_ids.shape)}")

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def subset(self, idx) -> PromptSet:
        idx = np.asarray(idx)
        pick = (lambda x: None if x is None else x[idx])  # noqa: E731
        return PromptSet(self.input_ids[torch.as_tensor(idx)], self.answer_ids[torch.as_tensor(idx)],
                         pick(self.subjects), pick(self.relations), pick(self.bridges))

    @classmethod
    def from_strings(cls, tokenizer, prompts: Sequence[str], answers: Sequence[str], *,
                     subjects: Sequence | None = None, relations: Sequence | None = None) -> PromptSet:
        """Tokenise prompts and answers; every answer must be one token, every prompt the same length.

        ``subjects``/``relations``: optional labels (strings or integers) per prompt, coded as integers in
        order of first appearance; with both, :func:`~factlocus.analysis.patch_modules` matches
        counterfactuals itself (same relation, another subject and answer).
        """
        if len(prompts) != len(answers) or not len(prompts):
            raise ValueError(f"prompts and answers must be non-empty and of equal length, "
                             f"got {len(prompts)} and {len(answers)}")
        codes = {}
        for name, labels in (("subjects", subjects), ("relations", relations)):
            if labels is None:
                codes[name] = None
                continue
            labels = list(labels)
            if len(labels) != len(prompts):
                raise ValueError(f"{name} must give one label per prompt ({len(prompts)}), got {len(labels)}")
            index = {v: i for i, v in enumerate(dict.fromkeys(labels))}
            codes[name] = np.array([index[v] for v in labels], dtype=np.int64)
        ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        lens = {len(i) for i in ids}
        if len(lens) != 1:
            raise ValueError(f"prompts must all have the same number of tokens, got lengths {sorted(lens)}")
        ans = []
        for a in answers:
            t = tokenizer(a, add_special_tokens=False)["input_ids"]
            if len(t) != 1:
                raise ValueError(f"answers must be single tokens: {a!r} is {len(t)} tokens")
            ans.append(t[0])
        return cls(torch.tensor(ids, dtype=torch.long), torch.tensor(ans, dtype=torch.long), codes["subjects"],
                   codes["relations"])


# matched counterfactuals -------------------------------------------------------------------

def _answer_ranks(answers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt: its answer's frequency in the set, and the answer's frequency rank (0 = most frequent;
    equal counts share a rank, so the rank distance between two answers is 0 exactly when their counts tie)."""
    values, inverse, counts = np.unique(answers, return_inverse=True, return_counts=True)
    distinct = np.unique(counts)[::-1]                       # distinct counts, most frequent first
    rank_of_count = {int(c): k for k, c in enumerate(distinct)}
    rank = np.array([rank_of_count[int(c)] for c in counts])
    return counts[inverse], rank[inverse]


MATCHES = ("rank", "frequency")


def matched_counterfactuals(subjects, relations, answers, rng: np.random.Generator,
                            freq_tolerance: float = 2.0, *, match: str = "rank") -> np.ndarray:
    """For each prompt ``i`` the index ``j`` of a matched counterfactual, or ``-1`` if none exists.

    The counterfactual has the same relation, a different subject and a different answer, and its answer
    is matched to the clean answer's frequency in this set, so that the logit difference compares answers
    the model has seen about equally often (what separates the measurement from random-token corruption,
    which measures a different quantity):

    - ``match="rank"`` (default): the candidate whose answer is nearest in frequency rank (equal counts share
      a rank; ties broken by the log-frequency gap, then at random). Every prompt with a candidate gets a pair,
      the most frequent answer included: with a skewed answer set (the answer-collision motif) the top
      answer is paired with the next most frequent one, so the collision the motif represents is measured.
    - ``match="frequency"``: only candidates within a factor ``freq_tolerance`` in frequency, the closest in
      log-frequency preferred. With a skewed answer set this leaves every prompt with the top answer
      unpaired (0.1's behaviour; 39-44 % of the answer motif's prompts).
    """
    subjects, relations, answers = (np.asarray(x) for x in (subjects, relations, answers))
    if not (len(subjects) == len(relations) == len(answers)):
        raise ValueError("subjects, relations and answers must have equal lengths")
    if match not in MATCHES:
        raise ValueError(f"match must be one of {MATCHES}, got {match!r}")
    if freq_tolerance < 1:
        raise ValueError(f"freq_tolerance must be >= 1, got {freq_tolerance}")
    counts, rank = _answer_ranks(answers)
    logf = np.log(counts.astype(float))
    out = np.full(len(answers), -1, dtype=np.int64)
    for r in np.unique(relations):
        idx = np.flatnonzero(relations == r)
        for i in idx:
            ok = idx[(subjects[idx] != subjects[i]) & (answers[idx] != answers[i])]
            gap = np.abs(logf[ok] - logf[i])
            if match == "frequency":
                keep = gap <= np.log(freq_tolerance) + 1e-12
                ok, gap = ok[keep], gap[keep]
            else:
                rgap = np.abs(rank[ok] - rank[i])
                keep = rgap == rgap.min() if len(ok) else np.zeros(0, bool)
                ok, gap = ok[keep], gap[keep]
            if not len(ok):
                continue
            best = ok[gap <= gap.min() + 1e-12]
            out[i] = rng.choice(best)
    return out


def check_counterfactuals(cf, subjects, relations, answers, freq_tolerance: float = 2.0, *,
                          match: str = "rank") -> None:
    """Raise ``ValueError`` unless every pair ``(i, cf[i])`` with ``cf[i] >= 0`` satisfies the matching
    (same relation, different subject and answer; ``match="frequency"``: frequencies within
    ``freq_tolerance``; ``match="rank"``: no candidate nearer in frequency rank)."""
    cf, subjects, relations, answers = (np.asarray(x) for x in (cf, subjects, relations, answers))
    if match not in MATCHES:
        raise ValueError(f"match must be one of {MATCHES}, got {match!r}")
    counts, rank = _answer_ranks(answers)
    for i, j in enumerate(cf):
        if j < 0:
            continue
        if relations[i] != relations[j] or subjects[i] == subjects[j] or answers[i] == answers[j]:
            raise ValueError(f"counterfactual {j} of prompt {i} breaks same-relation/different-subject/answer")
        if match == "frequency":
            ratio = counts[i] / counts[j]
            if max(ratio, 1 / ratio) > freq_tolerance + 1e-9:
                raise ValueError(f"counterfactual {j} of prompt {i}: answer frequencies differ by {ratio:.2f}x")
        else:
            cand = (relations == relations[i]) & (subjects != subjects[i]) & (answers != answers[i])
            if abs(rank[j] - rank[i]) > np.abs(rank[cand] - rank[i]).min():
                raise ValueError(f"counterfactual {j} of prompt {i}: a candidate is nearer in answer-frequency rank")


# CounterFact --------------------------------------------------------------------------------

def _json_rows(text: str):
    """``(line, row)`` for every element of a JSON list, or every line of JSON Lines; a row that is not
    valid JSON (JSON Lines only) comes as ``(line, JSONDecodeError)``."""
    dec = json.JSONDecoder()
    i = len(text) - len(text.lstrip())
    if text[i:i + 1] == "[":
        i += 1
        while True:
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            if i >= len(text):
                raise json.JSONDecodeError("unterminated list", text, i)
            if text[i] == "]":
                return
            line = text.count("\n", 0, i) + 1
            obj, i = dec.raw_decode(text, i)
            yield line, obj
    for line, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            try:
                yield line, json.loads(raw)
            except json.JSONDecodeError as e:
                yield line, e


def _counterfact_row(row) -> dict:
    if isinstance(row, json.JSONDecodeError):
        raise ValueError(f"not JSON ({row.msg})")
    if not isinstance(row, dict) or not isinstance(row.get("requested_rewrite"), dict):
        raise ValueError("no requested_rewrite object")
    rw = row["requested_rewrite"]
    subject, prompt = rw.get("subject"), rw.get("prompt")
    target = rw.get("target_true")
    answer = target.get("str") if isinstance(target, dict) else None
    for name, v in (("subject", subject), ("prompt", prompt), ("target_true.str", answer)):
        if not isinstance(v, str) or not v.strip():
            raise ValueError(f"{name} is missing, null or not a non-empty string")
    if prompt.count("{}") != 1 or prompt.replace("{}", "").count("{") or prompt.replace("{}", "").count("}"):
        raise ValueError(f"prompt must hold exactly one '{{}}' slot for the subject: {prompt!r}")
    relation = rw.get("relation_id")
    return {"prompt": prompt.replace("{}", subject), "subject": subject,
            "relation": str(relation) if relation is not None else prompt, "answer": answer}


def read_counterfact(path) -> tuple[list[dict], list[dict]]:
    """Read a CounterFact-format file: a JSON list of records with ``requested_rewrite``, or JSON Lines.

    Returns ``(records, skipped)``: each record is ``{"prompt", "subject", "relation", "answer"}`` with
    the prompt filled with its subject; every malformed row (not JSON, no ``requested_rewrite``, a
    missing or null subject/prompt/answer, a prompt without exactly one ``{}``) is skipped and listed
    in ``skipped`` as ``{"line", "reason"}`` (``len(skipped)`` rows), never fatal.

    Raises:
        ValueError: no such file, not UTF-8, or a JSON list that does not parse (naming the line).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"path {str(path)!r} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    out, skipped = [], []
    try:
        for line, row in _json_rows(text):
            try:
                out.append(_counterfact_row(row))
            except ValueError as e:
                skipped.append({"line": line, "reason": str(e)})
    except json.JSONDecodeError as e:
        raise ValueError(f"path {str(path)!r} is not a JSON list or JSON Lines: {e.msg} at line {e.lineno}") from None
    if not out and skipped and all(s["reason"].startswith("not JSON") for s in skipped):
        raise ValueError(f"path {str(path)!r} is neither a JSON list nor JSON Lines (line {skipped[0]['line']}: "
                         f"{skipped[0]['reason']})")
    return out, skipped


def counterfact_prompt_set(records: Sequence[dict], tokenizer, *, answer_prefix: str = " ") -> tuple[PromptSet, int]:
    """A :class:`PromptSet` from CounterFact records: keeps single-token answers and the most common
    prompt length (patching needs equal-length pairs); returns ``(prompts, dropped)``."""
    keep = []
    for r in records:
        ids = tokenizer(r["prompt"], add_special_tokens=False)["input_ids"]
        ans = tokenizer(answer_prefix + r["answer"], add_special_tokens=False)["input_ids"]
        if len(ans) == 1:
            keep.append((ids, ans[0], r["subject"], r["relation"]))
    if not keep:
        raise ValueError("records: no record has a single-token answer under this tokenizer")
    length = Counter(len(k[0]) for k in keep).most_common(1)[0][0]
    keep = [k for k in keep if len(k[0]) == length]
    subj = {s: i for i, s in enumerate(dict.fromkeys(k[2] for k in keep))}
    rel = {s: i for i, s in enumerate(dict.fromkeys(k[3] for k in keep))}
    ps = PromptSet(torch.tensor([k[0] for k in keep]), torch.tensor([k[1] for k in keep]),
                   np.array([subj[k[2]] for k in keep]), np.array([rel[k[3]] for k in keep]))
    return ps, len(records) - len(keep)
