"""The hierarchical rank-recall task (built from the abstract and the brief; the paper's task is not public).

One episode: ``n_items`` fresh random ±1 items (dimension ``item_dim``) shown one step each, in chunks
(e.g. 3 × 3); inside a chunk each item is followed by ``gap`` blank steps, at a chunk boundary by
``chunk_gap`` (> ``gap``) blank steps: the boundary is marked *only* by the longer blank. After the
last item, ``delay`` blank steps; then a recall phase: each cue (``n_cues`` per episode, one by default), a
one-hot global rank in ``cue_size`` extra input channels, is shown for ``cue_steps`` steps and the output is scored at
its last step against the item at that rank (``recall="backward"``: the item at rank ``n − 1 − k``). Two
steps per cue (the default) let a cue address the Hebbian trace, which the cell reads with ``h_{t−1}``. No rank or position is input during
encoding. Items are drawn fresh in every episode, so slow weights cannot memorise them.

Input per step: ``[item (item_dim) | cue (cue_size)]``. The model's output at a recall step is scored
by cosine against the presented items (:func:`recall_scores`).
"""

from __future__ import annotations

import torch

from paperworks import check_float, check_int


def _check_pattern(chunks, n_items: int) -> tuple[int, ...]:
    if isinstance(chunks, (str, bytes)) or not hasattr(chunks, "__iter__"):
        raise TypeError(f"chunks must be a sequence of chunk sizes, got {chunks!r}")
    out = tuple(check_int(c, "chunk size") for c in chunks)
    if not out:
        raise ValueError("chunks must not be empty")
    if sum(out) != n_items:
        raise ValueError(f"chunks {out} sum to {sum(out)}, not to n_items={n_items}")
    return out


class HierarchicalRecall:
    """Episodes of the hierarchical rank-recall task.

    Args:
        n_items: items per list.
        chunks: chunk sizes summing to ``n_items`` (e.g. ``(3, 3, 3)``), or a list of such patterns,
            one drawn per episode (all with the same number of chunks unless ``boundary="none"``).
        item_dim: item dimension (≥ 2).
        gap, chunk_gap: blank steps after an item inside a chunk / at a chunk boundary.
        delay: blank steps after the last item.
        n_cues: rank cues per episode (distinct ranks in random order; ``None``: every cueable rank).
        cue_steps: steps each recall cue is shown (scored at the last).
        cue_size: rank-cue channels (default ``n_items``); only ranks ``< cue_size`` are cued.
        recall: ``"forward"`` (cue k → item k) or ``"backward"`` (cue k → item n−1−k).
        boundary: ``"gap"`` (longer blank at chunk boundaries) or ``"none"`` (every gap is ``gap``: no
            boundary signal in the timing).
        chunk_similarity: s ∈ [0, 1): each item agrees with its chunk's random prototype on each
            coordinate with probability (1 + s)/2 (items of a chunk share content; 0: independent).

    ``sample(batch, generator)`` → ``(inputs (B, T, item_dim + cue_size), targets (B, T) long, meta)``;
    ``targets`` is the index of the recalled item at recall steps and −1 elsewhere. ``meta`` holds
    ``items (B, n, d)``, ``item_times (B, n)``, ``global_rank``/``local_rank (B, n)`` (chunk index and
    position in the chunk), ``recall_times (R,)``, ``cue_rank (B, R)`` and ``encoding_end``.
    """

    def __init__(self, n_items: int = 9, chunks=(3, 3, 3), item_dim: int = 16, *, gap: int = 1, chunk_gap: int = 3,
                 delay: int = 2, n_cues: int | None = 1, cue_steps: int = 2, cue_size: int | None = None, recall: str = "forward", boundary: str = "gap",
                 chunk_similarity: float = 0.0):
        self.n_items = check_int(n_items, "n_items", minimum=2)
        self.item_dim = check_int(item_dim, "item_dim", minimum=2)
        self.gap = check_int(gap, "gap", minimum=1)
        self.chunk_gap = check_int(chunk_gap, "chunk_gap", minimum=1)
        self.delay = check_int(delay, "delay", minimum=1)
        self.cue_steps = check_int(cue_steps, "cue_steps")
        self.cue_size = self.n_items if cue_size is None else check_int(cue_size, "cue_size")
        if recall not in ("forward", "backward"):
            raise ValueError(f"recall must be 'forward' or 'backward', got {recall!r}")
        if boundary not in ("gap", "none"):
            raise ValueError(f"boundary must be 'gap' or 'none', got {boundary!r}")
        self.recall, self.boundary = recall, boundary
        self.chunk_similarity = check_float(chunk_similarity, "chunk_similarity", minimum=0, maximum=1,
                                            open_maximum=True)
        nested = hasattr(chunks, "__iter__") and not isinstance(chunks, (str, bytes)) and any(
            hasattr(c, "__iter__") for c in chunks)
        pats = [_check_pattern(c, self.n_items) for c in chunks] if nested else [_check_pattern(chunks, self.n_items)]
        if boundary == "gap" and len({len(p) for p in pats}) > 1:
            raise ValueError("with boundary='gap' every chunk pattern needs the same number of chunks "
                             "(episodes of one batch share a timeline)")
        self.patterns = pats
        n_rankable = min(self.n_items, self.cue_size)
        self.n_recall = n_rankable if n_cues is None else check_int(n_cues, "n_cues", maximum=n_rankable)
        self.n_rankable = n_rankable
        self.input_size = self.item_dim + self.cue_size
        lengths = {self._timeline(p)[1] for p in pats}
        if len(lengths) != 1:  # pragma: no cover - equal chunk counts give equal lengths
            raise ValueError("chunk patterns give timelines of different lengths")
        self.length = lengths.pop()

    @property
    def chunks(self) -> tuple[int, ...]:
        return self.patterns[0]

    def _timeline(self, pattern):
        """Item times, global and local ranks, and the episode length for one chunk pattern."""
        times, g, loc, t = [], [], [], 0
        cg = self.gap if self.boundary == "none" else self.chunk_gap
        for ci, size in enumerate(pattern):
            for j in range(size):
                times.append(t)
                g.append(ci)
                loc.append(j)
                last_item = ci == len(pattern) - 1 and j == size - 1
                t += 1 + (self.delay if last_item else (cg if j == size - 1 else self.gap))
        return (times, g, loc), t + self.n_recall * self.cue_steps

    def sample(self, batch: int, generator: torch.Generator | None = None, *, dtype=torch.float32):
        """One batch of episodes (see the class docstring)."""
        batch = check_int(batch, "batch")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        n, d, R = self.n_items, self.item_dim, self.n_recall
        T = self.length
        pidx = torch.randint(len(self.patterns), (batch,), generator=generator)
        tl = [self._timeline(p)[0] for p in self.patterns]
        item_times = torch.tensor([tl[i][0] for i in pidx.tolist()])
        g_rank = torch.tensor([tl[i][1] for i in pidx.tolist()])
        l_rank = torch.tensor([tl[i][2] for i in pidx.tolist()])
        # items: fresh ±1 every episode (optionally sharing content within a chunk)
        items = torch.randint(0, 2, (batch, n, d), generator=generator).to(dtype) * 2 - 1
        if self.chunk_similarity > 0:
            n_chunks = int(g_rank.max()) + 1
            proto = torch.randint(0, 2, (batch, n_chunks, d), generator=generator).to(dtype) * 2 - 1
            keep = torch.rand(batch, n, d, generator=generator) < (1 + self.chunk_similarity) / 2
            items = torch.where(keep, torch.gather(proto, 1, g_rank.unsqueeze(-1).expand(batch, n, d)), items)
        cue_rank = torch.argsort(torch.rand(batch, self.n_rankable, generator=generator), 1)[:, :R]
        inputs = torch.zeros(batch, T, self.input_size, dtype=dtype)
        targets = torch.full((batch, T), -1, dtype=torch.long)
        bi = torch.arange(batch).unsqueeze(1)
        inputs[bi, item_times, :d] = items
        start = T - R * self.cue_steps
        for j in range(self.cue_steps):
            inputs[bi, torch.arange(start + j, T, self.cue_steps).unsqueeze(0), d + cue_rank] = 1.0
        recall_times = torch.arange(start + self.cue_steps - 1, T, self.cue_steps)
        targets[:, recall_times] = cue_rank if self.recall == "forward" else n - 1 - cue_rank
        meta = {"items": items, "item_times": item_times, "global_rank": g_rank, "local_rank": l_rank,
                "recall_times": recall_times, "cue_rank": cue_rank, "encoding_end": start, "pattern": pidx}
        return inputs, targets, meta

    def __repr__(self) -> str:
        pats = self.patterns[0] if len(self.patterns) == 1 else self.patterns
        return (f"HierarchicalRecall(n_items={self.n_items}, chunks={pats}, item_dim={self.item_dim}, "
                f"recall={self.recall!r}, boundary={self.boundary!r}, T={self.length})")


def recall_scores(outputs: torch.Tensor, targets: torch.Tensor, items: torch.Tensor, *, scale: float = 10.0):
    """Cosine scores of the outputs at recall steps against the presented items.

    Returns ``(loss, accuracy)``: cross-entropy of ``scale · cos(output, item_j)`` over the presented
    items ``j`` (a classification among them), and the fraction of recall steps whose most similar
    item is the target.
    """
    mask = targets >= 0
    out = outputs[mask.nonzero(as_tuple=True)].view(outputs.shape[0], -1, outputs.shape[-1])
    tgt = targets[mask].view(outputs.shape[0], -1)
    cos = torch.nn.functional.cosine_similarity(out.unsqueeze(2), items.to(out.dtype).unsqueeze(1), dim=-1)
    logits = scale * cos
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten())
    acc = (logits.argmax(-1) == tgt).to(out.dtype).mean()
    return loss, acc
