"""The autoregressive token prior (stage 3): a causal transformer over the L-VQVAE's tokens.

``p(t_0, …, t_{L−1}) = Π_i p(t_i | t_<i)``; a BOS symbol (index ``K``) starts every sequence. Sampling
goes left to right and hands each step's logits to an optional ``logits_processor(position, logits)``
(e.g. :class:`lvqmark.Watermark`), the ``transformers`` convention with the absolute position in place of
the prefix.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from paperworks import check_float, check_int

__all__ = ["TokenPrior", "train_prior"]


class TokenPrior(nn.Module):
    """Causal transformer prior over ``length`` tokens from a codebook of ``codebook_size``.

    Args:
        codebook_size: K.
        length: L (default 15).
        dim: width (default 128); layers (default 2); heads (default 4).

    ``forward(tokens (B, L)) → logits (B, L, K)`` (logits for position i see tokens < i);
    ``generate(n, *, logits_processor=None, generator=None, temperature=1.0) → (n, L)`` LongTensor.
    """

    def __init__(self, codebook_size, length=15, *, dim=128, layers=2, heads=4):
        super().__init__()
        check_int(codebook_size, "codebook_size", minimum=2)
        check_int(length, "length")
        check_int(dim, "dim", minimum=4)
        check_int(layers, "layers")
        check_int(heads, "heads")
        self.config = dict(codebook_size=codebook_size, length=length, dim=dim, layers=layers, heads=heads)
        self.codebook_size, self.length = codebook_size, length
        self.embed = nn.Embedding(codebook_size + 1, dim)
        self.pos = nn.Parameter(torch.randn(length, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, codebook_size)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(length), persistent=False)

    def _logits(self, inp):
        n = inp.shape[1]
        h = self.body(self.embed(inp) + self.pos[:n], mask=self.mask[:n, :n], is_causal=True)
        return self.head(self.norm(h))

    def forward(self, tokens):
        bos = torch.full((tokens.shape[0], 1), self.codebook_size, dtype=torch.long, device=tokens.device)
        return self._logits(torch.cat([bos, tokens[:, :-1].long()], 1))

    @torch.no_grad()
    def generate(self, n, *, logits_processor=None, generator=None, temperature=1.0) -> torch.Tensor:
        check_int(n, "n")
        temperature = check_float(temperature, "temperature", minimum=0.0, open_minimum=True)
        dev = self.head.weight.device
        seq = torch.full((n, 1), self.codebook_size, dtype=torch.long, device=dev)
        for i in range(self.length):
            logits = self._logits(seq)[:, -1].float() / temperature
            if logits_processor is not None:
                logits = logits_processor(i, logits)
            probs = torch.softmax(logits, -1)
            nxt = torch.multinomial(probs.cpu(), 1, generator=generator).to(dev)
            seq = torch.cat([seq, nxt], 1)
        return seq[:, 1:]

    def save(self, path) -> Path:
        from lvqmark.io import save_doc

        return save_doc({"class": "TokenPrior", "config": dict(self.config),
                         "state_dict": {k: v.detach().cpu() for k, v in self.state_dict().items()}}, path)

    @classmethod
    def from_state(cls, doc):
        m = cls(**doc["config"])
        m.load_state_dict(doc["state_dict"])
        return m.eval()

    @classmethod
    def load(cls, path):
        from lvqmark.io import load_doc

        return cls.from_state(load_doc(path))


def train_prior(prior: TokenPrior, tokens: torch.Tensor, *, steps: int, batch: int = 128, lr: float = 1e-3,
                generator=None) -> float:
    """Stage 3: next-token cross-entropy on the training set's tokens. Returns the last loss."""
    from lvqmark.io import batches
    from lvqmark.lvqvae import _step

    prior.train()
    opt = torch.optim.AdamW(prior.parameters(), lr=lr, weight_decay=0.01)
    loss = torch.tensor(float("nan"))
    for i, tb in enumerate(batches(tokens, batch, steps, generator)):
        loss = F.cross_entropy(prior(tb).reshape(-1, prior.codebook_size), tb.reshape(-1))
        _step(opt, loss, "token prior stage 3", i)
    prior.eval()
    return float(loss.detach())
