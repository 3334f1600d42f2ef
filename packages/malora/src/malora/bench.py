"""The bench: MaLoRA's α + merge against PEFT's own merges on a tiny random transformer.

T LoRA adapters (random factors) on every linear layer of a tiny random BERT classifier built from a
config (nothing downloaded); each task's calibration set is random token ids labelled by that task's
own adapter. Candidates, each adding one merged adapter that is deleted again: ``malora``
(:func:`malora.merge_peft`: α by linearised margins, then ``cat``), and ``add_weighted_adapter`` with
``cat``, ``svd``, ``ties_svd`` and ``dare_ties_svd`` (uniform weights 1/T; density 0.5).
"""

from __future__ import annotations

import torch

PEFT_MERGES = ("cat", "svd", "ties_svd", "dare_ties_svd")


def tiny_classifier(*, seed: int = 0, vocab: int = 64, hidden: int = 32, layers: int = 2, n_classes: int = 4):
    """A tiny random ``BertForSequenceClassification`` (eager attention) from a config."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                     intermediate_size=2 * hidden, max_position_embeddings=32, num_labels=n_classes,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    cfg._attn_implementation = "eager"
    return BertForSequenceClassification(cfg).eval()


def adapters_model(T: int, *, seed: int = 0, rank: int = 4, n_calib: int = 32, seq: int = 8):
    """(PeftModel with adapters a0..a{T-1} on every linear layer, adapter names, calibration dict)."""
    from peft import LoraConfig, get_peft_model

    model = tiny_classifier(seed=seed)
    lc = LoraConfig(r=rank, lora_alpha=rank, target_modules="all-linear", init_lora_weights=False, lora_dropout=0.0)
    names = [f"a{t}" for t in range(T)]
    torch.manual_seed(seed + 1)
    pm = get_peft_model(model, lc, adapter_name=names[0])
    for n in names[1:]:
        pm.add_adapter(n, lc)
    pm.eval()
    gen = torch.Generator().manual_seed(seed + 2)
    cal = {}
    for n in names:
        X = torch.randint(0, model.config.vocab_size, (n_calib, seq), generator=gen)
        pm.set_adapter(n)
        with torch.no_grad():
            cal[n] = (X, pm(X).logits.argmax(1))
    return pm, names, cal


def merge_with(pm, names, cal, how: str, out: str = "merged", max_iter: int = 10):
    """One candidate: add the merged adapter ``out`` (MaLoRA or a PEFT combination type)."""
    from malora.peft_merge import merge_peft

    if how == "malora":
        merge_peft(pm, names, cal, adapter_name=out, max_iter=max_iter)
    else:
        kw = {"density": 0.5} if "ties" in how else {}
        pm.add_weighted_adapter(names, [1.0 / len(names)] * len(names), out, combination_type=how, **kw)


def timed_candidate(pm, names, cal, how: str, max_iter: int = 10):
    """A zero-argument callable for :func:`paperworks.bench.compare` (deletes its adapter after)."""

    def call():
        merge_with(pm, names, cal, how, max_iter=max_iter)
        pm.set_adapter(names[0])
        pm.delete_adapter("merged")

    return call


def _setup_memory(T: int):  # runs inside the child process of paperworks.bench.peak_memory
    return adapters_model(T)


def memory_call(pm, names, cal, how: str):
    merge_with(pm, names, cal, how)
