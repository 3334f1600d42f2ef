"""Per-token, per-layer activations behind one small protocol, and live monitoring of generation.

:class:`ActivationSource` is what the probes need from a model: ``hidden_states(texts)`` → one
``(T_i, d)`` array per text at one layer. :class:`HFActivationSource` implements it for any Hugging Face
causal LM (checked by :class:`paperworks.lm.ModelAccess` at construction, so GQA models such as
Llama-3.2 work: nothing here assumes per-head shapes) and adds :meth:`HFActivationSource.monitor`,
which generates token by token with the KV cache and scores every chain-of-thought token with a probe
as it is produced, keeping the running trajectory features. ``paperworks.lm.generate_with_states``
generates a whole batch before returning, so the streaming loop with a per-token callback lives here.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from probetraj.features import OnlineFeatures
from probetraj.world import END_THINK


@runtime_checkable
class ActivationSource(Protocol):
    """Anything that maps texts to per-token activations of one layer."""

    def hidden_states(self, texts: list[str]) -> list[np.ndarray]:
        """One ``(T_i, d)`` array per text (no special tokens added)."""


@dataclass
class MonitorResult:
    """What :meth:`HFActivationSource.monitor` returns.

    Attributes:
        text: the generated text (chain of thought, ``</think>`` and answer; eos dropped).
        trajectory: ``(m,)`` probe scores of the ``m`` generated CoT tokens (before ``</think>``).
        features: the running :data:`~probetraj.features.FEATURES` at the end of the CoT (``None`` if empty).
        ended_think: whether ``</think>`` was generated.
        history: the running features after every CoT token, ``(m, 9)``.
    """

    text: str
    trajectory: np.ndarray
    features: np.ndarray | None
    ended_think: bool
    token_ids: list[int] = field(default_factory=list)
    history: np.ndarray | None = None


def _n_states(model) -> int:
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    return int(cfg.num_hidden_layers) + 1


class HFActivationSource:
    """Hidden states of one layer of a Hugging Face causal LM.

    Args:
        model: any ``transformers`` causal LM (refused with
            :class:`paperworks.lm.UnsupportedModelError` if its residual stream fails the self-check).
        tokenizer: its tokenizer.
        layer: ``output_hidden_states`` index (0 = embeddings, ``L`` = after the final norm; negative
            counts from the end).
        batch_size: texts per forward pass in :meth:`hidden_states`.
    """

    def __init__(self, model, tokenizer, *, layer: int = -1, batch_size: int = 64):
        from paperworks.lm import ModelAccess

        ModelAccess(model)  # the architecture self-check
        self.model, self.tokenizer = model, tokenizer
        n = _n_states(model)
        if isinstance(layer, bool) or not isinstance(layer, int | np.integer) or not -n <= int(layer) < n:
            raise ValueError(f"layer must be an int in [{-n}, {n - 1}] (the model has {n - 1} blocks), got {layer!r}")
        self.layer = int(layer) % n
        self.batch_size = int(batch_size)
        self._cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    @property
    def device(self):
        return next(self.model.parameters()).device

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    @torch.no_grad()
    def hidden_states_of_ids(self, seqs: list[list[int]]) -> list[np.ndarray]:
        """:meth:`hidden_states` of token-id lists (right-padded batches; the causal mask keeps the
        padding out of every real position)."""
        out = []
        was = self.model.training
        self.model.eval()
        try:
            for i in range(0, len(seqs), self.batch_size):
                chunk = seqs[i : i + self.batch_size]
                T = max(len(s) for s in chunk)
                pad = self.tokenizer.pad_token_id or 0
                ids = torch.full((len(chunk), T), pad, dtype=torch.long)
                att = torch.zeros((len(chunk), T), dtype=torch.long)
                for j, s in enumerate(chunk):
                    ids[j, : len(s)] = torch.tensor(s)
                    att[j, : len(s)] = 1
                hs = (
                    self.model(
                        input_ids=ids.to(self.device), attention_mask=att.to(self.device), output_hidden_states=True
                    )
                    .hidden_states[self.layer]
                    .float()
                    .cpu()
                    .numpy()
                )
                out += [hs[j, : len(s)] for j, s in enumerate(chunk)]
        finally:
            self.model.train(was)
        return out

    def hidden_states(self, texts) -> list[np.ndarray]:
        """One ``(T_i, d)`` float32 array per text at :attr:`layer` (no special tokens added)."""
        if isinstance(texts, str) or not len(texts):
            raise ValueError("texts must be a non-empty list of strings")
        seqs = [self.encode(t) for t in texts]
        for i, s in enumerate(seqs):
            if not s:
                raise ValueError(f"texts[{i}] encodes to no tokens")
        return self.hidden_states_of_ids(seqs)

    def cot_states(
        self, prompt: str, completion: str, *, end_think: str = END_THINK, stop: int | None = None
    ) -> np.ndarray:
        """States of the chain-of-thought tokens of ``prompt + completion``, stopping before ``end_think``.

        ``stop`` (optional) cuts the CoT after ``stop`` tokens; asking for positions at or past
        ``end_think`` raises (the answer would leak into the trajectory)."""
        p, c = self.encode(prompt), self.encode(completion)
        end_id = self.tokenizer.convert_tokens_to_ids(end_think)
        if end_id not in c:
            raise ValueError(f"completion has no {end_think!r}: its chain of thought has no end")
        m = c.index(end_id)
        if stop is not None:
            if stop > m:
                raise ValueError(
                    f"stop={stop} reaches past {end_think!r} (the CoT has {m} tokens): a trajectory "
                    "must stop before the answer"
                )
            m = stop
        if m == 0:
            raise ValueError("the chain of thought is empty")
        return self.hidden_states_of_ids([p + c])[0][len(p) : len(p) + m]

    @torch.no_grad()
    def monitor(
        self,
        prompt: str,
        probe,
        *,
        max_new_tokens: int = 64,
        end_think: str = END_THINK,
        do_sample: bool = False,
        temperature: float = 1.0,
        seed: int = 0,
        stop_at_eos: bool = True,
        band: float = 0.1,
    ) -> MonitorResult:
        """Generate from ``prompt`` and score every chain-of-thought token as it is produced.

        One cached forward per token; the state of each new CoT token (the same state a full forward
        of the finished text gives it) goes through ``probe.trajectory`` and the running features
        are updated. Scoring stops at ``end_think``; generation continues to the answer (eos or
        ``max_new_tokens``). ``stop_at_eos=False`` generates exactly ``max_new_tokens`` tokens.
        """
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature!r}")
        ids = self.encode(prompt)
        if not ids:
            raise ValueError("prompt encodes to no tokens")
        end_id = self.tokenizer.convert_tokens_to_ids(end_think)
        eos = self.tokenizer.eos_token_id
        gen = torch.Generator().manual_seed(seed)
        dev = self.device
        was = self.model.training
        self.model.eval()
        online = OnlineFeatures(band)
        traj, history, out_ids = [], [], []
        in_cot, ended = True, False
        try:
            x = torch.tensor([ids], device=dev)
            out = self.model(input_ids=x, use_cache=True)
            for _ in range(max_new_tokens):
                logits = out.logits[0, -1].float().cpu()
                if do_sample:
                    nxt = int(torch.multinomial((logits / temperature).softmax(-1), 1, generator=gen))
                else:
                    nxt = int(logits.argmax())
                out_ids.append(nxt)
                if in_cot and nxt == end_id:
                    in_cot, ended = False, True
                if stop_at_eos and nxt == eos:
                    break
                if len(out_ids) == max_new_tokens:
                    break
                past = out.get("cache", None) if "cache" in out else out.past_key_values
                out = self.model(
                    input_ids=torch.tensor([[nxt]], device=dev),
                    use_cache=True,
                    output_hidden_states=in_cot,
                    **{self._cache_arg: past},
                )
                if in_cot:
                    h = out.hidden_states[self.layer][0, -1].float().cpu().numpy()
                    p = float(probe.trajectory(h[None])[0])
                    traj.append(p)
                    online.update(p)
                    history.append(online.value())
        finally:
            self.model.train(was)
        keep = [t for t in out_ids if not (stop_at_eos and t == eos)]
        text = self.tokenizer.decode(keep, skip_special_tokens=False)
        return MonitorResult(
            text,
            np.asarray(traj),
            history[-1] if history else None,
            ended,
            out_ids,
            np.asarray(history) if history else None,
        )
