"""MUNKEY: a ViT with a per-instance key/value memory; unlearning = deleting rows of the memory.

Laguna et al., "Rethinking Machine Unlearning: Models Designed to Forget via Key Deletion",
arXiv 2603.15033. No paper text or code is public: the design below is **inferred from the
abstract** and documented as such.

Memory (one row per stored training instance i, held in ``state_dict``):

* key   k_i = normalize(P · z(x_i)) ∈ R^key_dim, written once by :meth:`MUNKEY.memorize`; z standardises
  the image and P is a fixed random Gaussian projection (a data-independent key encoder with no
  trained weights, so nothing about an instance lives in the key encoder);
* value v_i ∈ R^dim, a learnable slot initialised to zero;
* id    the instance's integer id.

Read-out for an input x with query q = normalize(P · z(x)):
    S = top-k_i (q·k_i),   a_i = softmax_{i∈S}(q·k_i / τ),   r = Σ_{i∈S} a_i v_i,
    logits = head(LN(cls(x) + W_o r)),
with τ learnable. Training (:func:`fit`) puts weight decay on the backbone only (the values are free to
absorb instance-specific signal) and drops the whole read-out of a sample with probability
``memory_dropout`` (so the backbone stays predictive alone) — the "memorisation routing", inferred.

Unlearning (:meth:`MUNKEY.forget`) removes the rows of the given ids: keys, values and ids shrink, no
weight changes, no images or labels needed; an audit log records each deletion.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from munkey.vit import ViT

_KEY_SEED = 0x6D756E6B  # the key encoder's projection is a function of the config only


@dataclass(frozen=True)
class DeletionRecord:
    """One entry of the audit log: which ids were deleted, when, and the memory size before/after."""

    ids: tuple[int, ...]
    rows_before: int
    rows_after: int
    seconds: float
    utc: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ids"] = list(self.ids)
        return d


def _ids_tensor(ids, name: str = "ids") -> torch.Tensor:
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"{name} must be integers, got a string")
    t = torch.as_tensor(ids)
    if t.ndim == 0:
        t = t.reshape(1)
    if t.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of integer ids, got shape {tuple(t.shape)}")
    if t.numel() and (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool):
        raise TypeError(f"{name} must be integers, got dtype {t.dtype}")
    t = t.to(torch.long).cpu()
    if t.numel() != torch.unique(t).numel():
        u, c = torch.unique(t, return_counts=True)
        raise ValueError(f"{name} holds duplicate ids: {u[c > 1].tolist()[:10]}")
    return t


class MUNKEY(ViT):
    """A ViT whose CLS is joined by a read-out of a per-instance key/value memory.

    Args:
        image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, channels: as :class:`ViT`.
        key_dim: width of the keys (random projection of the standardised pixels).
        topk: keys each query attends over (fewer when the memory holds fewer rows).
        memory_dropout: probability, in training, of dropping a sample's whole read-out.

    Example:
        >>> m = MUNKEY(image_size=8, patch_size=2, num_classes=10, dim=64, depth=2, heads=4, mlp_dim=256)
        >>> x = torch.rand(20, 1, 8, 8)
        >>> m.memorize(x, torch.arange(20))
        >>> rec = m.forget([3, 7]); m.memory_ids().tolist()[:4]
        [0, 1, 2, 4]
    """

    def __init__(self, *, image_size: int, patch_size: int, num_classes: int, dim: int, depth: int, heads: int,
                 mlp_dim: int, channels: int = 1, key_dim: int = 32, topk: int = 16, memory_dropout: float = 0.1):
        super().__init__(image_size=image_size, patch_size=patch_size, num_classes=num_classes, dim=dim,
                         depth=depth, heads=heads, mlp_dim=mlp_dim, channels=channels)
        if isinstance(key_dim, bool) or not isinstance(key_dim, int) or key_dim < 1:
            raise ValueError(f"key_dim must be a positive int, got {key_dim!r}")
        if isinstance(topk, bool) or not isinstance(topk, int) or topk < 1:
            raise ValueError(f"topk must be a positive int, got {topk!r}")
        if isinstance(memory_dropout, bool) or not isinstance(memory_dropout, (int, float)) or not (
                0.0 <= float(memory_dropout) < 1.0):
            raise ValueError(f"memory_dropout must be a number in [0, 1), got {memory_dropout!r}")
        self.config.update(key_dim=key_dim, topk=topk, memory_dropout=float(memory_dropout))
        self.key_dim, self.topk, self.memory_dropout = key_dim, topk, float(memory_dropout)
        d_in = channels * image_size * image_size
        g = torch.Generator().manual_seed(_KEY_SEED)
        self.register_buffer("key_projection", torch.randn(d_in, key_dim, generator=g) / d_in ** 0.5)
        self.read_proj = nn.Linear(dim, dim)
        self.log_tau = nn.Parameter(torch.tensor(-2.3))  # τ ≈ 0.1 at the start
        # the memory: one row per stored instance, nothing preallocated
        self.register_buffer("mem_keys", torch.zeros(0, key_dim))
        self.register_buffer("mem_ids", torch.zeros(0, dtype=torch.long))
        self.mem_values = nn.Parameter(torch.zeros(0, dim))
        self.audit_log: list[DeletionRecord] = []
        self.chunk = 65536  # keys scored per block (bounds memory for 10⁶ keys)

    # keys --------------------------------------------------------------------------------------
    def encode_keys(self, img: torch.Tensor) -> torch.Tensor:
        """Key/query of each image: normalize(P · standardise(flatten(img))), (B, key_dim)."""
        z = img.flatten(1)
        z = (z - z.mean(1, keepdim=True)) / (z.std(1, keepdim=True) + 1e-6)
        return F.normalize(z @ self.key_projection, dim=-1)

    # memory management --------------------------------------------------------------------------
    def memory_ids(self) -> torch.Tensor:
        """The ids held in memory (a copy, in row order)."""
        return self.mem_ids.detach().cpu().clone()

    def __len__(self) -> int:
        return int(self.mem_ids.numel())

    @torch.no_grad()
    def memorize(self, images: torch.Tensor, ids) -> None:
        """Append one row (key, zero value, id) per image. Ids must be new and unique.

        Replaces the ``mem_values`` parameter: build optimizers after memorising.
        """
        images = self.check_images(images, "images")
        ids = _ids_tensor(ids)
        if ids.numel() != images.shape[0]:
            raise ValueError(f"ids has {ids.numel()} entries but images has {images.shape[0]}")
        if ids.numel() == 0:
            raise ValueError("memorize needs at least one image")
        clash = torch.isin(ids, self.mem_ids.cpu())
        if bool(clash.any()):
            raise ValueError(f"ids already in memory: {ids[clash].tolist()[:10]}")
        keys = torch.cat([self.encode_keys(images[i:i + 4096]) for i in range(0, len(images), 4096)])
        dev = self.mem_keys.device
        self.mem_keys = torch.cat([self.mem_keys, keys.to(dev)])
        self.mem_ids = torch.cat([self.mem_ids, ids.to(dev)])
        v = self.mem_values.detach()
        self.mem_values = nn.Parameter(torch.cat([v, v.new_zeros(len(ids), v.shape[1])]))

    @torch.no_grad()
    def forget(self, ids) -> DeletionRecord:
        """Delete the rows of ``ids`` (keys, values, ids): no weight update, no data, no labels.

        Raises ``ValueError`` for an empty request, duplicates, unknown ids or ids already deleted
        (named). Returns the :class:`DeletionRecord` appended to :attr:`audit_log`.
        """
        t0 = time.perf_counter()
        ids = _ids_tensor(ids)
        if ids.numel() == 0:
            raise ValueError("forget needs at least one id (got an empty forget set)")
        held = self.mem_ids.cpu()
        drop = torch.isin(held, ids)
        if int(drop.sum()) != ids.numel():  # ids and held ids are unique: a shortfall means missing ids
            missing = ids[~torch.isin(ids, held)].tolist()
            gone = {i for r in self.audit_log for i in r.ids}
            already = [i for i in missing if i in gone]
            unknown = [i for i in missing if i not in gone]
            parts = []
            if already:
                parts.append(f"already deleted: {already[:10]}")
            if unknown:
                parts.append(f"unknown (never memorised): {unknown[:10]}")
            raise ValueError("forget: ids not in memory — " + "; ".join(parts))
        keep = ~drop
        before = int(held.numel())
        k = keep.to(self.mem_keys.device)
        # boolean indexing copies: the old tables are dropped, not masked (direct dict writes skip
        # nn.Module's attribute bookkeeping, which costs more than the deletion itself)
        self._buffers["mem_keys"] = self.mem_keys[k]
        self._buffers["mem_ids"] = self.mem_ids[k]
        self._parameters["mem_values"] = nn.Parameter(self.mem_values.detach()[k],
                                                      requires_grad=self.mem_values.requires_grad)
        rec = DeletionRecord(tuple(ids.tolist()), before, before - ids.numel(),
                             time.perf_counter() - t0, _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))
        self.audit_log.append(rec)
        return rec

    # retrieval ----------------------------------------------------------------------------------
    def retrieve(self, img: torch.Tensor, k: int | None = None):
        """Top-k memory rows of each image: (positions (B, k), attention weights (B, k)), ordered by id.

        Ordering by id (not by score) makes the read-out a function of the retrieved *set*, so a
        deletion that does not touch a sample's top-k leaves its output bit-identical.
        """
        q = self.encode_keys(img)
        n = len(self)
        k = min(k or self.topk, n)
        if k == 0:
            return None, None, q
        with torch.no_grad():
            best_s, best_i = None, None
            for start in range(0, n, self.chunk):
                s = q @ self.mem_keys[start:start + self.chunk].T
                kk = min(k, s.shape[1])
                sv, si = s.topk(kk, dim=1)
                si = si + start
                if best_s is not None:
                    sv, j = torch.cat([best_s, sv], 1).topk(k, dim=1)
                    si = torch.cat([best_i, si], 1).gather(1, j)
                best_s, best_i = sv, si
            pos = best_i.gather(1, self.mem_ids[best_i].argsort(dim=1))
        scores = (q.unsqueeze(1) * self.mem_keys[pos]).sum(-1)
        return pos, torch.softmax(scores / self.log_tau.exp(), dim=-1), q

    def read(self, img: torch.Tensor) -> torch.Tensor:
        """The memory read-out r = Σ a_i v_i, (B, dim); zeros when the memory is empty."""
        pos, attn, _ = self.retrieve(img)
        if pos is None:
            return img.new_zeros(img.shape[0], self.mem_values.shape[1])
        return (attn.unsqueeze(-1) * self.mem_values[pos]).sum(1)

    def forward(self, img: torch.Tensor, *, use_memory: bool = True) -> torch.Tensor:
        """Logits (B, num_classes); ``use_memory=False`` cuts the memory pathway (backbone alone)."""
        img = self.check_images(img)
        h = self.features(img)
        if use_memory and len(self):
            r = self.read_proj(self.read(img))
            if self.training and self.memory_dropout > 0:
                r = r * (torch.rand(r.shape[0], 1, device=r.device) >= self.memory_dropout).to(r.dtype)
            h = h + r
        return self.head(self.norm(h))

    # persistence -------------------------------------------------------------------------------
    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # the memory's row count is data: resize to the incoming rows before the default copy
        for name in ("mem_keys", "mem_ids"):
            if prefix + name in state_dict:
                src = state_dict[prefix + name]
                setattr(self, name, torch.empty_like(src, device=getattr(self, name).device))
        if prefix + "mem_values" in state_dict:
            src = state_dict[prefix + "mem_values"]
            self.mem_values = nn.Parameter(torch.empty(src.shape, dtype=self.mem_values.dtype,
                                                       device=self.mem_values.device))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _payload(self) -> dict:
        p = super()._payload()
        p["audit_log"] = [r.to_dict() for r in self.audit_log]
        return p

    def _restore_extra(self, payload) -> None:
        self.audit_log = [DeletionRecord(tuple(r["ids"]), r["rows_before"], r["rows_after"], r["seconds"], r["utc"])
                          for r in payload.get("audit_log", [])]
