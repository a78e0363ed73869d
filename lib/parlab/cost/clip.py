"""Clipping by the global gradient norm when the model is split over TP (and PP, DP): what a
wrong reduction of the squares does to the norm (notebook 06 §2; ``parallel_nd/clip.py``).

Domains: square sums finite and >= 0, not both 0; ``tp`` and ``dp_summed`` integers >= 1.
"""

from __future__ import annotations

import math

from ..validate import check_float, check_int


def clip_norm_overcount(sharded_sq: float, replicated_sq: float, tp: int,
                        dp_summed: int = 1) -> float:
    """The wrong global norm over the right one when the parameters every TP rank holds whole
    (layer norms, the row-parallel biases) are counted on all ``tp`` TP ranks instead of
    once: sqrt((S + tp R) / (S + R)), S = ``sharded_sq`` the squares of the TP-split
    gradients (every slice, added over TP), R = ``replicated_sq`` those of the replicated
    ones (one copy). 1 at tp = 1 or R = 0; it tends to sqrt(tp) as R dominates.
    ``dp_summed`` > 1: the squares were also added over that many data-parallel replicas,
    which hold the same averaged gradient: a further factor sqrt(dp_summed), whatever S and
    R are. The clip coefficient max_norm / ||g|| is then this many times too small."""
    s = check_float("sharded_sq", sharded_sq, 0.0, strict=False)
    r = check_float("replicated_sq", replicated_sq, 0.0, strict=False)
    tp = check_int("tp", tp)
    dp_summed = check_int("dp_summed", dp_summed)
    if s + r <= 0:
        raise ValueError(f"sharded_sq={sharded_sq!r} + replicated_sq={replicated_sq!r} must be "
                         f"> 0 (a zero gradient has no norm to get wrong)")
    return math.sqrt(dp_summed * (s + tp * r) / (s + r))
