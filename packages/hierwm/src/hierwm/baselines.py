"""The flat (single-level) world model: the low-level denoiser alone, widened to equal parameters."""

from __future__ import annotations

from hierwm.model import HierarchicalWorldModel, LowLevelDenoiser, _check_pos_int, _WorldModel, count_parameters


def matched_width(target: int, *, frame_shape, action_dim: int, dim: int) -> int:
    """The low-level width whose parameter count is closest to ``target``."""
    best, best_gap = 8, None
    for w in range(8, 513, 2):
        n = count_parameters(LowLevelDenoiser(frame_shape=frame_shape, action_dim=action_dim, dim=dim, width=w))
        gap = abs(n - target)
        if best_gap is None or gap < best_gap:
            best, best_gap = w, gap
        if n > target:
            break
    return best


class FlatWorldModel(_WorldModel):
    """The single-level baseline: the per-frame conv denoiser without the high level, its width chosen so
    its parameter count matches :class:`HierarchicalWorldModel` with the same arguments (``width=None``).

    Takes the same keyword arguments; ``coarse_shape`` is ignored and ``coarse_stride`` only sets which
    horizons a rollout accepts (multiples of it, as for the hierarchical model).
    """

    hierarchical = False

    def __init__(self, *, frame_shape=(3, 16, 16), coarse_shape=(3, 8, 8), coarse_stride: int = 4,
                 action_dim: int = 2, dim: int = 64, width: int | None = None, num_levels: int = 1000,
                 max_tokens: int = 8, match_width: int = 48):
        super().__init__()
        self._setup(frame_shape, coarse_shape, coarse_stride, action_dim, dim, num_levels)
        if width is None:
            ref = HierarchicalWorldModel(frame_shape=self.frame_shape, coarse_shape=self.coarse_shape,
                                         coarse_stride=coarse_stride, action_dim=action_dim, dim=dim,
                                         width=match_width, num_levels=num_levels, max_tokens=max_tokens)
            width = matched_width(count_parameters(ref), frame_shape=self.frame_shape, action_dim=action_dim, dim=dim)
        _check_pos_int("width", width, 8)
        self.low_level = LowLevelDenoiser(frame_shape=self.frame_shape, action_dim=action_dim, dim=dim, width=width)
        self.config = {"frame_shape": list(self.frame_shape), "coarse_shape": list(self.coarse_shape),
                       "coarse_stride": coarse_stride, "action_dim": action_dim, "dim": dim, "width": width,
                       "num_levels": num_levels, "max_tokens": max_tokens}
