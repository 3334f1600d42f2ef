"""Raters: a model's 1-7 interestingness rating of each problem, as a distribution.

Two modes:

- ``logprob``: one forward pass; the next-token probabilities of the rating strings "1".."7" are
  renormalised (``p_k = P(k) / Σ_j P(j)``) and the captured mass ``Σ_j P(j)`` is kept, so a model
  that wanted to answer something else is visible. On an OpenAI-compatible endpoint the same comes
  from the reply's ``top_logprobs``.
- ``sample``: ``n_samples`` ratings at temperature ``T``; on a local model sampling is constrained to
  the rating tokens (each prompt is encoded ``n_samples`` times, like ``n`` independent completions);
  on an endpoint replies are parsed strictly (a lone digit 1-7, else counted as invalid).

``persona`` conditions the prompt ("You are {persona}."); :class:`JudgePanel` pools several raters'
distributions (the multi-LLM remedy). Prompts are versioned Jinja2 templates (:data:`PROMPTS`);
replies are cached per (prompt, settings).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
import torch

from mathinterest.data import RATING_LABELS, problems_frame, rating_frame
from paperworks import check_float, check_int
from paperworks.lm import ChatError, OpenAIChat
from paperworks.lm.generate import encode_prompts

PROMPTS = {
    "v1": {
        "rate": ("{% if persona %}You are {{ persona }}. {% endif %}How interesting is this math problem? "
                 "Rate it from 1 (not at all interesting) to 7 (extremely interesting).\n"
                 "Problem: {{ problem }}\nAnswer with a single digit."),
        "rationale": ("{% if persona %}You are {{ persona }}. {% endif %}Why would someone find this math problem "
                      "interesting? Options:\n{% for o in options %}{{ loop.index }}. {{ o }}\n{% endfor %}"
                      "Problem: {{ problem }}\nAnswer with the option number."),
    },
}
MODES = ("logprob", "sample")
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)


@functools.cache
def _template(version: str, kind: str):
    return _ENV.from_string(PROMPTS[version][kind])


def render(kind: str, version: str, **fields) -> str:
    """The prompt ``kind`` ("rate" or "rationale") of template ``version`` filled with ``fields``."""
    if version not in PROMPTS:
        raise ValueError(f"prompt_version must be one of {sorted(PROMPTS)}, got {version!r}")
    return _template(version, kind).render(**fields)


def _option_labels(options) -> list[str]:
    if isinstance(options, (str, bytes)) or not isinstance(options, Sequence) or not 2 <= len(options) <= 9:
        raise ValueError("options must be a list of 2 to 9 rationale strings")
    if not all(isinstance(o, str) and o.strip() for o in options) or len(set(options)) != len(options):
        raise ValueError("options must be distinct non-empty strings")
    return [str(i + 1) for i in range(len(options))]


class _Rater:
    """Shared plumbing: prompts, caching, the output frames."""

    def _setup(self, mode, n_samples, temperature, persona, labels, prompt_version, cache):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.n_samples = check_int(n_samples, "n_samples", minimum=1)
        self.temperature = check_float(temperature, "temperature", minimum=0.0, open_minimum=True)
        if persona is not None and (not isinstance(persona, str) or not persona.strip()):
            raise ValueError(f"persona must be a non-empty string or None, got {persona!r}")
        self.persona = persona
        if isinstance(labels, (str, bytes)) or len(labels) != 7 or not all(isinstance(x, str) and x for x in labels):
            raise ValueError("labels must be 7 non-empty strings")
        self.labels = tuple(labels)
        render("rate", prompt_version, persona=None, problem="")
        self.prompt_version = prompt_version
        self._cache = {} if cache else None
        self._cache_path = None

    def _open_disk_cache(self, path, identity) -> None:
        """Persist replies as JSON lines at ``path`` (keys: a hash of the prompt, settings and ``identity``)."""
        self._cache_path, self._identity = Path(path), identity
        self._cache = {}
        if self._cache_path.is_file():
            for line in self._cache_path.read_text(encoding="utf-8").splitlines():
                try:
                    d = json.loads(line)
                    self._cache[d["key"]] = (np.asarray(d["p"], float), float(d["mass"]), d.get("n"))
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line from an interrupted run
        self._cache_path.parent.mkdir(parents=True, exist_ok=True)

    def _cached(self, keys, compute):
        """``compute(missing_indices) -> list of rows``; rows are cached under ``keys``."""
        if self._cache is None:
            return compute(list(range(len(keys))))
        if self._cache_path is not None:
            keys = [hashlib.sha256(json.dumps([*k, *self._identity]).encode()).hexdigest() for k in keys]
        todo = [i for i, k in enumerate(keys) if k not in self._cache]
        if todo:
            rows = compute(todo)
            for i, row in zip(todo, rows):
                self._cache[keys[i]] = row
            if self._cache_path is not None:
                with self._cache_path.open("a", encoding="utf-8") as f:
                    for i, (p, m, n) in zip(todo, rows):
                        f.write(json.dumps({"key": keys[i], "p": [None if np.isnan(x) else float(x) for x in p],
                                            "mass": m, "n": n}) + "\n")
        return [self._cache[k] for k in keys]

    def _settings(self, labels):
        return (self.mode, self.n_samples, self.temperature, tuple(labels), self.prompt_version)

    def rate(self, problems) -> pd.DataFrame:
        """Rate problems (strings, dicts with ``problem_id``/``text``, or a DataFrame).

        Returns: DataFrame problem_id, p1..p7 (rows sum to 1), expected, mass (captured probability of
        the rating tokens; in ``sample`` mode the fraction of valid replies on an endpoint), and in
        ``sample`` mode ``n_valid``.
        """
        df = problems_frame(problems)
        prompts = [render("rate", self.prompt_version, persona=self.persona, problem=t) for t in df["text"]]
        rows = self._distributions(prompts, self.labels)
        probs = np.array([r[0] for r in rows])
        extra = {"n_valid": [r[2] for r in rows]} if self.mode == "sample" else None
        return rating_frame(df["problem_id"], probs, mass=[r[1] for r in rows], extra=extra)

    def choose_rationales(self, problems, options) -> pd.DataFrame:
        """Probability of each rationale in ``options`` per problem (columns named by the options), and mass."""
        labels = _option_labels(options)
        df = problems_frame(problems)
        prompts = [render("rationale", self.prompt_version, persona=self.persona, options=list(options), problem=t)
                   for t in df["text"]]
        rows = self._distributions(prompts, labels)
        out = pd.DataFrame(np.array([r[0] for r in rows]), columns=list(options))
        out.insert(0, "problem_id", df["problem_id"].tolist())
        out["mass"] = [r[1] for r in rows]
        return out


class HFRater(_Rater):
    """A local Hugging Face causal LM as a rater.

    Args:
        model: any ``transformers`` causal LM (``model(input_ids, attention_mask, position_ids).logits``).
        tokenizer: its tokenizer; each rating string in ``labels`` must be exactly one token.
        mode: ``"logprob"`` (one forward per prompt) or ``"sample"`` (``n_samples`` constrained draws at
            ``temperature``, from ``n_samples`` encodings of the prompt).
        persona: optional persona for the prompt.
        labels: the rating strings for 1..7 (default "1".."7"; e.g. " 1".." 7" for BPE vocabularies).
        batch_size: problems per forward pass.
        seed: the sampling generator's seed.

    Example::

        rater = HFRater(model, tok)                 # logprob mode
        rater.rate(["Prove there are infinitely many primes."])   # problem_id, p1..p7, expected, mass
    """

    def __init__(self, model, tokenizer, *, mode: str = "logprob", n_samples: int = 20, temperature: float = 1.0,
                 persona: str | None = None, labels: Sequence[str] = RATING_LABELS, batch_size: int = 16,
                 prompt_version: str = "v1", seed: int = 0, cache: bool = True):
        if not callable(model) or not hasattr(model, "get_input_embeddings"):
            raise TypeError(f"model must be a Hugging Face causal LM, got {type(model).__name__}")
        if tokenizer is None or not callable(tokenizer):
            raise TypeError("tokenizer must be the model's Hugging Face tokenizer")
        self._setup(mode, n_samples, temperature, persona, labels, prompt_version, cache)
        self.model, self.tokenizer = model, tokenizer
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.seed = check_int(seed, "seed", minimum=0)
        self._gen = torch.Generator().manual_seed(self.seed)
        self.label_ids = self.token_ids(self.labels)

    def token_ids(self, labels) -> list[int]:
        """The single token id of each label (a clear error for multi-token or unknown strings)."""
        ids = []
        unk = getattr(self.tokenizer, "unk_token_id", None)
        for s in labels:
            enc = self.tokenizer(s, add_special_tokens=False)["input_ids"]
            if len(enc) != 1:
                raise ValueError(f"labels: rating string {s!r} is {len(enc)} tokens for this tokenizer; each must be "
                                 "exactly one token (pass labels= that are, e.g. ' 1'..' 7')")
            if unk is not None and enc[0] == unk:
                raise ValueError(f"labels: rating string {s!r} is not in the tokenizer's vocabulary")
            ids.append(int(enc[0]))
        return ids

    def _text(self, prompt: str) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                                      tokenize=False)
        return prompt + "\nAnswer:"

    @torch.no_grad()
    def last_logits(self, texts: list[str], repeat: int = 1) -> torch.Tensor:
        """Next-token logits after each text (``repeat`` encodings of each, in order), ``(B·repeat, V)``."""
        ids, att = encode_prompts(self.tokenizer, texts)
        ctx = next((getattr(self.model.config, k) for k in ("n_positions", "max_position_embeddings")
                    if getattr(self.model.config, k, None)), None)
        if ctx is not None and ids.shape[1] > ctx:
            raise ValueError(f"problems: a prompt has {ids.shape[1]} tokens, over the model's context of {ctx}")
        if repeat > 1:
            ids, att = ids.repeat_interleave(repeat, 0), att.repeat_interleave(repeat, 0)
        dev = next(self.model.parameters()).device
        pos = (att.cumsum(-1) - 1).clamp_min(0)
        was = self.model.training
        self.model.eval()
        try:
            out = self.model(input_ids=ids.to(dev), attention_mask=att.to(dev), position_ids=pos.to(dev))
        finally:
            self.model.train(was)
        return out.logits[:, -1].float().cpu()

    def _distributions(self, prompts, labels):
        lab = self.label_ids if tuple(labels) == self.labels else self.token_ids(labels)
        texts = [self._text(p) for p in prompts]
        keys = [(t, *self._settings(labels)) for t in texts]

        def compute(idx):
            rows = []
            for s in range(0, len(idx), self.batch_size):
                chunk = [texts[i] for i in idx[s:s + self.batch_size]]
                if self.mode == "logprob":
                    logp = torch.log_softmax(self.last_logits(chunk), -1)[:, lab]
                    mass = logp.exp().sum(-1)
                    probs = torch.softmax(logp, -1)
                    rows += [(p.double().numpy(), float(m), None) for p, m in zip(probs, mass)]
                else:
                    n = self.n_samples
                    logits = self.last_logits(chunk, repeat=n) / self.temperature
                    mass = torch.softmax(logits, -1)[:, lab].sum(-1).view(-1, n).mean(1)
                    draw = torch.multinomial(torch.softmax(logits[:, lab], -1), 1, generator=self._gen)[:, 0]
                    counts = torch.nn.functional.one_hot(draw.view(-1, n), len(lab)).sum(1).double()
                    rows += [((c / n).numpy(), float(m), n) for c, m in zip(counts, mass)]
            return rows

        return self._cached(keys, compute)


class LogprobChat(OpenAIChat):
    """:class:`paperworks.lm.OpenAIChat` that returns the endpoint's whole ``choices`` list (logprobs, ``n``)."""

    def choices(self, messages, **params) -> list[dict]:
        from paperworks.lm.chat import check_messages

        reply = self._post({"model": self.model, "messages": check_messages(messages), **self.defaults, **params})
        ch = reply.get("choices") if isinstance(reply, dict) else None
        if not isinstance(ch, list) or not ch:
            raise ChatError(f"{self.base_url}: unexpected reply {str(reply)[:200]}")
        return ch


_DIGIT = re.compile(r"^\s*(\S+?)\s*\.?\s*$")


class OpenAIRater(_Rater):
    """An OpenAI-compatible chat endpoint as a rater (OpenAI, vLLM, llama.cpp, TGI ...).

    Args:
        model: the served model's name.
        base_url: the API root (default ``https://api.openai.com/v1``).
        api_key_env: environment variable holding the key (``None``: no key); missing → ``ValueError``.
        mode: ``"logprob"`` (one request per problem, ``max_tokens=1``, ``top_logprobs``) or ``"sample"``
            (``n_samples`` replies at ``temperature``, parsed strictly).
        concurrency: requests in flight at once.
        top_logprobs: alternatives requested per token (OpenAI allows ≤ 20).
        cache: ``True`` (in memory), ``False``, or a file path: replies persist there as JSON lines,
            keyed by a hash of the prompt, the settings, the model and the URL, so a rerun costs no calls.
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str | None = "OPENAI_API_KEY",
                 mode: str = "logprob", n_samples: int = 20, temperature: float = 1.0, persona: str | None = None,
                 concurrency: int = 8, top_logprobs: int = 20, labels: Sequence[str] = RATING_LABELS,
                 timeout: float = 60.0, max_retries: int = 4, backoff: float = 1.0, prompt_version: str = "v1",
                 cache: bool | str | Path = True):
        self._setup(mode, n_samples, temperature, persona, labels, prompt_version, bool(cache))
        self.top_logprobs = check_int(top_logprobs, "top_logprobs", minimum=1, maximum=20)
        self.chat = LogprobChat(model, base_url=base_url or "https://api.openai.com/v1", api_key_env=api_key_env,
                                concurrency=check_int(concurrency, "concurrency", minimum=1), timeout=timeout,
                                max_retries=max_retries, backoff=backoff)
        if isinstance(cache, (str, Path)):
            self._open_disk_cache(cache, (self.chat.model, self.chat.base_url, self.persona or ""))

    def _one(self, prompt, labels):
        msgs = [{"role": "user", "content": prompt}]
        want = [s.strip() for s in labels]
        if self.mode == "logprob":
            ch = self.chat.choices(msgs, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=self.top_logprobs)[0]
            content = (ch.get("logprobs") or {}).get("content") if isinstance(ch, dict) else None
            if not content or not isinstance(content[0], dict) or "top_logprobs" not in content[0]:
                raise ChatError(f"{self.chat.base_url}: the reply carries no logprobs; mode='logprob' needs an endpoint "
                                "that returns top_logprobs (use mode='sample' otherwise)")
            p = np.zeros(len(labels))
            for alt in content[0]["top_logprobs"]:
                tok = str(alt.get("token", "")).strip()
                if tok in want:
                    p[want.index(tok)] += math.exp(float(alt["logprob"]))
            mass = float(p.sum())
            return (p / mass if mass > 0 else np.full(len(labels), np.nan)), mass, None
        counts, total = np.zeros(len(labels)), 0
        for _ in range(self.n_samples):  # endpoints that ignore n= return one choice per request
            chs = self.chat.choices(msgs, temperature=self.temperature, max_tokens=4, n=self.n_samples - total)
            for ch in chs:
                m = _DIGIT.match((ch.get("message") or {}).get("content") or "")
                if m and m.group(1) in want:
                    counts[want.index(m.group(1))] += 1
            total += len(chs)
            if total >= self.n_samples:
                break
        n_valid = int(counts.sum())
        probs = counts / n_valid if n_valid else np.full(len(labels), np.nan)
        return probs, n_valid / max(total, 1), n_valid

    def _distributions(self, prompts, labels):
        keys = [(p, *self._settings(labels)) for p in prompts]

        def compute(idx):
            with ThreadPoolExecutor(max_workers=self.chat.concurrency) as pool:
                return list(pool.map(lambda i: self._one(prompts[i], labels), idx))

        return self._cached(keys, compute)


class JudgePanel:
    """Several raters as one judge: their rating (and rationale) distributions pooled with equal weight.

    ``rate`` and ``choose_rationales`` return the mixture of the members' outputs (mass: their mean).
    """

    def __init__(self, raters):
        raters = list(raters) if not isinstance(raters, (str, bytes)) else None
        if not raters or not all(hasattr(r, "rate") and hasattr(r, "choose_rationales") for r in raters):
            raise ValueError("raters must be a non-empty list of raters (HFRater, OpenAIRater, ...)")
        self.raters = raters

    @staticmethod
    def _pool(frames, cols):
        out = frames[0][["problem_id"]].copy()
        for c in cols:
            out[c] = np.mean([f[c].to_numpy(float) for f in frames], 0)
        return out

    def rate(self, problems) -> pd.DataFrame:
        frames = [r.rate(problems) for r in self.raters]
        probs = self._pool(frames, [f"p{k}" for k in range(1, 8)])
        mass = np.mean([f["mass"].to_numpy(float) for f in frames], 0)
        return rating_frame(probs["problem_id"], probs.iloc[:, 1:].to_numpy(), mass=mass)

    def choose_rationales(self, problems, options) -> pd.DataFrame:
        return self._pool([r.choose_rationales(problems, options) for r in self.raters], [*options, "mass"])
