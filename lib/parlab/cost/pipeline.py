"""Pipeline parallelism: the bubble, the micro-batches that hide it, and peak activations.

Domains: ``p`` (stages), ``m`` (micro-batches) and ``v`` (model chunks per rank) are
integers >= 1; ``stage`` an integer in [0, p); ``target`` a finite number in (0, 1)
(any finite number > 0 for the ratio); ``schedule`` one of PIPELINE_SCHEDULES.
"""

from __future__ import annotations

import math

from ..validate import check_choice, check_float, check_int

PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")


def bubble_fraction(p: int, m: int, v: int = 1) -> float:
    """Idle share of a pipeline step's total time, equal stages, no communication.

    Each of the ``p`` ranks is busy for ``m`` micro-batches x (t_f + t_b) of work;
    the step lasts ``(m + (p-1)/v) (t_f + t_b)``: the pipeline takes ``p-1`` stage
    slots to fill and ``p-1`` to drain, and with ``v`` model chunks per rank
    (interleaved 1F1B) each slot is ``v`` times shorter. So

        idle / total = ((p-1)/v) / (m + (p-1)/v) = (p-1) / (v m + p - 1).

    GPipe (Huang et al. 2019, §2.3, which finds the bubble negligible when m >= 4p)
    and 1F1B / PipeDream-Flush (Narayanan et al. 2021, "Efficient Large-Scale
    Language Model Training on GPU Clusters using Megatron-LM", §2.2.1) have the
    *same* bubble: 1F1B changes how many micro-batches' activations are held (p
    instead of m), not the idle time. Narayanan et al. quote the bubble relative to
    the ideal time instead, ``(p-1)/(v m)`` (see ``bubble_ratio``); it exceeds 1
    when m < p - 1.
    """
    p, m, v = check_int("p", p), check_int("m", m), check_int("v", v)
    return (p - 1) / (v * m + p - 1)


def bubble_ratio(p: int, m: int, v: int = 1) -> float:
    """Bubble time over ideal (bubble-free) time: (p-1) / (v m) -- the normalisation
    of Narayanan et al. 2021, §2.2.1 (v = 1) and §2.2.2 (interleaved, v chunks per
    rank). Relation: ratio = fraction / (1 - fraction)."""
    p, m, v = check_int("p", p), check_int("m", m), check_int("v", v)
    return (p - 1) / (v * m)


def min_micro_batches(p: int, target: float, v: int = 1, normalisation: str = "fraction") -> int:
    """Smallest number of micro-batches M with ``bubble_fraction(p, M, v) <= target``
    (``normalisation="ratio"``: ``bubble_ratio(p, M, v) <= target``).

    Solve the inequality for M (both sides positive, so it can be rearranged):

        fraction: (p-1) / (v M + p - 1) <= t   <=>   M >= (p-1)(1-t) / (v t)
        ratio:    (p-1) / (v M)         <= t   <=>   M >= (p-1) / (v t)

    so M = max(1, ceil(right-hand side)). The ceiling of a float quotient can land one
    off when the bound is a whole number (p=4, t=0.2: 2.4 / 0.2 = 12.000000000000002),
    so the answer is confirmed against the formula itself and moved by one if needed.
    ``target``: in (0, 1) for the fraction (which never reaches 1); any number > 0 for
    the ratio, which exceeds 1 when M < p - 1.
    """
    p, v = check_int("p", p), check_int("v", v)
    normalisation = check_choice("normalisation", normalisation, ("fraction", "ratio"))
    if normalisation == "fraction":
        target = check_float("target", target, 0.0, high=1.0)
        if target == 1.0:
            raise ValueError(f"target={target!r} must be < 1 (the bubble fraction is always < 1)")
        bubble, bound = bubble_fraction, (p - 1) * (1 - target) / (v * target)
    else:
        target = check_float("target", target, 0.0)
        bubble, bound = bubble_ratio, (p - 1) / (v * target)
    if bound > 2 ** 53:  # past float precision: the bubble could not tell M from M + 1
        raise ValueError(f"target={target!r} is too small for p={p}, v={v}: "
                         f"M would exceed 2**53")
    m = max(1, math.ceil(bound))
    while m > 1 and bubble(p, m - 1, v) <= target:
        m -= 1
    while bubble(p, m, v) > target:
        m += 1
    return m


def pipeline_peak_activations(schedule: str, p: int, m: int, stage: int = 0) -> int:
    """Micro-batches whose activations stage ``stage`` (0 = first) holds at its peak.

    GPipe runs all m forwards before any backward: m. 1F1B (PipeDream-Flush) lets
    stage s run at most p - s forwards ahead of its backwards: min(m, p - s)
    (Narayanan et al. 2021, §2.2.1). Interleaved and zero-bubble schedules depend
    on the exact schedule; simulate them (``pipeline_parallel.simulate``)."""
    schedule = check_choice("schedule", schedule, PIPELINE_SCHEDULES)
    p, m, stage = check_int("p", p), check_int("m", m), check_int("stage", stage, 0)
    if stage >= p:
        raise ValueError(f"stage={stage} must be in [0, p={p})")
    if schedule == "gpipe":
        return m
    if schedule == "1f1b":
        return min(m, p - stage)
    raise ValueError(f"schedule={schedule!r}: closed form only for 'gpipe' and '1f1b'")
