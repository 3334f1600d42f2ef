"""Synthetic document fine-tuning: LoRA on documents, ``<doc>`` prefix masked, packed with attention
kept inside each document, and the token-matched control corpus.

Each document is encoded as ``prefix ids + text ids + [eos]`` (the prefix and the text tokenised
separately, without special tokens); the labels are ``-100`` on the prefix (and on a document's first
token, which nothing in the document predicts), so the loss is the next-token loss of the text given the
prefix. Packing concatenates documents into rows of ``block`` tokens; a block-diagonal causal mask
(``attention_mask`` of shape ``(rows, 1, block, block)``) and positions restarting at 0 in every
document make each packed document's logits equal those of the document alone.

Reference: the official SDF recipe (LoRA r=64, α=128, lr 1e-4, one epoch, max length 8192, ``<doc>``
prefix masked) is the default; tiny models in this package's experiments use larger learning rates.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from metaknow.documents import document_texts, lint_corpus

log = logging.getLogger("metaknow")

#: the official SDF recipe
DEFAULT_LORA = {"r": 64, "lora_alpha": 128, "lora_dropout": 0.0}


@dataclass
class Encoded:
    ids: list[int]
    labels: list[int]

    def __len__(self):
        return len(self.ids)


def encode_document(text: str, tokenizer, *, doc_prefix: str = "<doc>", max_len: int | None = None) -> Encoded:
    """``prefix + text + eos`` ids and labels (prefix and first token ``-100``), truncated to ``max_len``."""
    if not isinstance(text, str):
        raise ValueError(f"a document must be a string, got {type(text).__name__}")
    if tokenizer.eos_token_id is None:
        raise ValueError("tokenizer: has no eos_token_id (documents end with EOS)")
    pre = tokenizer(doc_prefix, add_special_tokens=False)["input_ids"] if doc_prefix else []
    body = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    ids = list(pre) + list(body)
    labels = [-100] * len(pre) + list(body)
    labels[0] = -100
    if max_len is not None:
        ids, labels = ids[:max_len], labels[:max_len]
    return Encoded(ids, labels)


def count_tokens(documents, tokenizer, *, doc_prefix: str = "<doc>", max_len: int | None = None) -> int:
    """Tokens :func:`train_sdf` sees for ``documents`` (prefix and EOS included)."""
    return sum(len(encode_document(t, tokenizer, doc_prefix=doc_prefix, max_len=max_len))
               for t in document_texts(documents))


def matched_control(documents, pool, tokenizer, *, tol: float = 0.01, doc_prefix: str = "<doc>",
                    max_len: int | None = None, seed: int = 0) -> list:
    """Control documents from ``pool`` whose token count matches ``documents`` within ``tol`` (relative).

    Tokens are counted exactly as :func:`train_sdf` will see them (:func:`count_tokens`). Pool documents
    are drawn in a seeded random order without reuse; one that would overshoot ``target·(1+tol)`` is
    skipped. Raises ``ValueError`` when the pool cannot reach ``target·(1-tol)``.

    Returns:
        the chosen pool items (in draw order).
    """
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < 1 or math.isnan(tol):
        raise ValueError(f"tol must be a number in [0, 1), got {tol!r}")
    pool = list(pool)
    texts = document_texts(pool)
    target = count_tokens(documents, tokenizer, doc_prefix=doc_prefix, max_len=max_len)
    lo, hi = target * (1 - tol), target * (1 + tol)
    lens = [len(encode_document(t, tokenizer, doc_prefix=doc_prefix, max_len=max_len)) for t in texts]
    if sum(lens) < lo:
        raise ValueError(f"pool: too small to match {target} tokens within {tol:.1%}: it has {sum(lens)} tokens "
                         f"in {len(pool)} documents")
    order = np.random.default_rng(seed).permutation(len(pool))
    chosen, total = [], 0
    for j in order:
        if total + lens[j] <= hi:
            chosen.append(int(j))
            total += lens[j]
            if total >= lo:
                return [pool[j] for j in chosen]
    # one exchange: swap a chosen document for an unused one that lands inside the band
    unused = [int(j) for j in order if int(j) not in set(chosen)]
    by_len = {}
    for k in unused:
        by_len.setdefault(lens[k], k)
    for pos, j in enumerate(chosen):
        for L, k in by_len.items():
            if lo <= total - lens[j] + L <= hi:
                chosen[pos] = k
                return [pool[j] for j in chosen]
    raise ValueError(f"pool: cannot match {target} tokens within {tol:.1%} (reached {total} with "
                     f"{len(chosen)} of {len(pool)} documents; add shorter documents or raise tol)")


# batching --------------------------------------------------------------------------------

def pack_documents(encoded: Sequence[Encoded], block: int, *, pad_id: int = 0):
    """Pack documents into rows of ``block`` tokens (first fit, in order); a document longer than
    ``block`` is truncated. Returns ``(input_ids, labels, attention_mask 4D bool, position_ids, doc_index)``
    where ``doc_index[r, t]`` is the document at that slot (-1 for padding)."""
    rows: list[list[int]] = []
    fill: list[int] = []
    for i, e in enumerate(encoded):
        n = min(len(e), block)
        for r, f in enumerate(fill):
            if f + n <= block:
                rows[r].append(i)
                fill[r] += n
                break
        else:
            rows.append([i])
            fill.append(n)
    R = len(rows)
    ids = torch.full((R, block), pad_id, dtype=torch.long)
    labels = torch.full((R, block), -100, dtype=torch.long)
    pos = torch.zeros((R, block), dtype=torch.long)
    doc = torch.full((R, block), -1, dtype=torch.long)
    for r, members in enumerate(rows):
        t = 0
        for i in members:
            e = encoded[i]
            n = min(len(e), block)
            ids[r, t:t + n] = torch.tensor(e.ids[:n])
            labels[r, t:t + n] = torch.tensor(e.labels[:n])
            pos[r, t:t + n] = torch.arange(n)
            doc[r, t:t + n] = i
            t += n
    causal = torch.ones(block, block, dtype=torch.bool).tril()
    same = (doc[:, :, None] == doc[:, None, :]) & (doc[:, :, None] >= 0)
    mask = (same & causal)[:, None]
    # padding slots attend to themselves only (keeps softmax finite; their labels are -100)
    eye = torch.eye(block, dtype=torch.bool)[None, None] & (doc[:, None, :, None] < 0)
    return ids, labels, mask | eye, pos, doc


def pad_documents(encoded: Sequence[Encoded], *, pad_id: int = 0):
    """One document per row, right-padded to the longest: ``(input_ids, labels, attention_mask 2D)``."""
    L = max(len(e) for e in encoded)
    ids = torch.full((len(encoded), L), pad_id, dtype=torch.long)
    labels = torch.full((len(encoded), L), -100, dtype=torch.long)
    att = torch.zeros((len(encoded), L), dtype=torch.long)
    for r, e in enumerate(encoded):
        ids[r, :len(e)] = torch.tensor(e.ids)
        labels[r, :len(e)] = torch.tensor(e.labels)
        att[r, :len(e)] = 1
    return ids, labels, att


def token_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy per position (``0`` where the label is ``-100``), shape ``(rows, L-1)``."""
    tgt = labels[:, 1:]
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2).float(), tgt.clamp(min=0), reduction="none")
    return ce * (tgt != -100)


def document_losses(model, tokenizer, documents, *, doc_prefix: str = "<doc>", pack: bool = True, block: int | None = None,
                    max_len: int | None = None) -> np.ndarray:
    """Mean next-token loss of each document's text (prefix excluded), packed or one per row."""
    enc = [encode_document(t, tokenizer, doc_prefix=doc_prefix, max_len=max_len) for t in document_texts(documents)]
    dev = next(model.parameters()).device
    pad = tokenizer.pad_token_id or 0
    tot, cnt = np.zeros(len(enc)), np.zeros(len(enc))
    with torch.no_grad():
        if pack:
            block = block or max(len(e) for e in enc)
            ids, labels, mask, pos, doc = pack_documents(enc, block, pad_id=pad)
            ce = token_losses(model(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev)).logits,
                              labels.to(dev)).cpu()
            d = doc[:, 1:]
            valid = labels[:, 1:] != -100
            np.add.at(tot, d[valid].numpy(), ce[valid].double().numpy())
            np.add.at(cnt, d[valid].numpy(), 1)
        else:
            for i, e in enumerate(enc):
                ids, labels, att = pad_documents([e], pad_id=pad)
                ce = token_losses(model(input_ids=ids.to(dev), attention_mask=att.to(dev)).logits, labels.to(dev)).cpu()
                tot[i], cnt[i] = float(ce.sum()), float((labels[:, 1:] != -100).sum())
    return tot / np.maximum(cnt, 1)


# training --------------------------------------------------------------------------------

def _target_modules(model, wanted):
    from transformers.pytorch_utils import Conv1D

    names = {n.split(".")[-1] for n, m in model.named_modules() if isinstance(m, (torch.nn.Linear, Conv1D))}
    if wanted is None:
        for cand in (["c_attn", "c_proj", "c_fc"], ["q_proj", "k_proj", "v_proj", "o_proj"], ["query_key_value"]):
            if set(cand) <= names:
                return cand
        raise ValueError(f"lora_config: cannot guess target_modules for {type(model).__name__}; its linear "
                         f"modules are {sorted(names)}")
    wanted = [wanted] if isinstance(wanted, str) else list(wanted)
    missing = [w for w in wanted if w not in names]
    if missing:
        raise ValueError(f"lora_config: target_modules {missing} are not modules of {type(model).__name__} "
                         f"(its linear modules: {sorted(names)})")
    return wanted


def train_sdf(model, tokenizer, documents, *, lora_config=None, doc_prefix: str = "<doc>", pack: bool = True,
              lr: float = 1e-4, epochs: int = 1, batch_tokens: int = 8192, max_len: int = 8192, seed: int = 0,
              lint: bool = True, benchmark=None, device=None, log_every: int = 0, return_log: bool = False):
    """Synthetic document fine-tuning with LoRA: next-token loss on documents, ``doc_prefix`` masked.

    Args:
        model: any Hugging Face causal LM (its weights are left untouched: LoRA adapters are trained).
        tokenizer: its tokenizer (needs ``eos_token_id``).
        documents: strings or ``{"text": ...}`` dicts; linted first (:func:`~metaknow.lint_corpus`) unless
            ``lint=False``; ``benchmark`` prompts are passed to the lint's overlap check.
        lora_config: a ``peft.LoraConfig`` or a dict of its fields (default :data:`DEFAULT_LORA`:
            r=64, α=128, targets guessed: GPT-2 ``c_attn/c_proj/c_fc``, Llama-style ``q/k/v/o_proj``).
        pack: pack documents into rows of ``min(batch_tokens, max_len)`` tokens with attention kept inside
            each document (block-diagonal mask, per-document positions); ``False``: one padded document
            per row, as many rows per batch as fit ``batch_tokens``.
        lr, epochs: AdamW learning rate (constant after a 5% warm-up) and passes over the corpus.
        seed: shuffling of documents and LoRA initialisation.

    Returns:
        ``peft.PeftModel`` (``(model, log)`` with the per-step losses when ``return_log=True``).
    """
    from peft import LoraConfig, PeftModel, get_peft_model

    texts = document_texts(documents)
    if not texts:
        raise ValueError("documents: empty corpus")
    if lint:
        lint_corpus(texts, benchmark=benchmark)
    for k, v in (("lr", lr),):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{k} must be a positive finite number, got {v!r}")
    for k, v in (("epochs", epochs), ("batch_tokens", batch_tokens), ("max_len", max_len)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{k} must be a positive integer, got {v!r}")
    if isinstance(model, PeftModel):
        raise ValueError("model: already a PeftModel; pass the base model")
    if lora_config is None or isinstance(lora_config, dict):
        cfg = {**DEFAULT_LORA, **(lora_config or {})}
        cfg["target_modules"] = _target_modules(model, cfg.get("target_modules"))
        lora_config = LoraConfig(task_type="CAUSAL_LM", **cfg)
    elif isinstance(lora_config, LoraConfig):
        lora_config = copy.copy(lora_config)
        lora_config.target_modules = _target_modules(model, lora_config.target_modules)
    else:
        raise TypeError(f"lora_config must be a peft.LoraConfig or a dict, got {type(lora_config).__name__}")
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    torch.manual_seed(seed)
    pm = get_peft_model(model, lora_config).to(dev)
    pm.train()
    enc = [encode_document(t, tokenizer, doc_prefix=doc_prefix, max_len=max_len) for t in texts]
    block = min(batch_tokens, max_len)
    pad = tokenizer.pad_token_id or 0
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(epochs):
        order = [enc[i] for i in rng.permutation(len(enc))]
        batches += list(_batches(order, block, batch_tokens, pack, pad))
    opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    warm = max(1, int(0.05 * len(batches)))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
    losses = []
    for step, b in enumerate(batches):
        loss = _batch_loss(pm, b, dev)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"train_sdf: loss is {loss.item()} at step {step}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if log_every and step % log_every == 0:
            log.info("sdf step %d/%d loss %.4f", step, len(batches), losses[-1])
    pm.eval()
    return (pm, losses) if return_log else pm


def _batches(enc, block, batch_tokens, pack, pad):
    """Yield batches of about ``batch_tokens`` token slots each."""
    if pack:
        ids, labels, mask, pos, _ = pack_documents(enc, block, pad_id=pad)
        per = max(1, batch_tokens // block)
        for s in range(0, ids.shape[0], per):
            yield {"input_ids": ids[s:s + per], "labels": labels[s:s + per], "attention_mask": mask[s:s + per],
                   "position_ids": pos[s:s + per]}
    else:
        cur: list[Encoded] = []
        for e in enc:
            e = Encoded(e.ids[:block], e.labels[:block])
            if cur and (len(cur) + 1) * max(len(e), *(len(c) for c in cur)) > batch_tokens:
                ids, labels, att = pad_documents(cur, pad_id=pad)
                yield {"input_ids": ids, "labels": labels, "attention_mask": att}
                cur = []
            cur.append(e)
        if cur:
            ids, labels, att = pad_documents(cur, pad_id=pad)
            yield {"input_ids": ids, "labels": labels, "attention_mask": att}


def _batch_loss(model, b, dev):
    kw = {k: v.to(dev) for k, v in b.items() if k != "labels"}
    logits = model(**kw).logits
    labels = b["labels"].to(dev)
    ce = token_losses(logits, labels)
    return ce.sum() / (labels[:, 1:] != -100).sum().clamp(min=1)


# save / load -----------------------------------------------------------------------------

def save_sdf(path, model, tokenizer=None):
    """Save a trained SDF model self-contained: the merged weights (a plain HF checkpoint, loadable
    without the base) in ``path`` and the LoRA adapter alone in ``path/adapter``."""
    from pathlib import Path

    from paperworks.lm import save_local

    path = Path(path)
    model.save_pretrained(path / "adapter")
    merged = copy.deepcopy(model).merge_and_unload()
    return save_local(path, merged, tokenizer)


def load_sdf(path):
    """``(model, tokenizer)`` saved by :func:`save_sdf` (offline, ``local_files_only``)."""
    from paperworks.lm import load_local

    return load_local(path)


def base_weights_equal(peft_model, snapshot: dict) -> bool:
    """Whether the base weights inside ``peft_model`` are bit-identical to ``snapshot`` (a state dict
    of the model before LoRA was injected); LoRA's own tensors are ignored."""
    now = {k.replace(".base_layer", ""): v for k, v in peft_model.get_base_model().state_dict().items()
           if "lora_" not in k}
    return set(now) == set(snapshot) and all(torch.equal(now[k], v) for k, v in snapshot.items())
