"""Pipeline parallelism: the bubble, the micro-batches that hide it, and peak activations.

Domains: ``p`` (stages), ``m`` (micro-batches) and ``v`` (model chunks per rank) are
integers >= 1; ``stage`` an integer in [0, p); ``target`` a finite number in (0, 1)
(any finite number > 0 for the ratio); ``schedule`` one of PIPELINE_SCHEDULES.
"""

from __future__ import annotations

import math

from ..validate import check_choice, check_float, check_int

PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "dualpipe",
                      "dualpipev")


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
    p = check_int("p", p)
    m = check_int("m", m)
    v = check_int("v", v)
    return (p - 1) / (v * m + p - 1)


def bubble_ratio(p: int, m: int, v: int = 1) -> float:
    """Bubble time over ideal (bubble-free) time: (p-1) / (v m) -- the normalisation
    of Narayanan et al. 2021, §2.2.1 (v = 1) and §2.2.2 (interleaved, v chunks per
    rank). Relation: ratio = fraction / (1 - fraction)."""
    p = check_int("p", p)
    m = check_int("m", m)
    v = check_int("v", v)
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
    p = check_int("p", p)
    v = check_int("v", v)
    normalisation = check_choice("normalisation", normalisation, ("fraction", "ratio"))
    if normalisation == "fraction":
        target = check_float("target", target, 0.0, high=1.0)
        if target == 1.0:
            raise ValueError(f"target={target!r} must be < 1 (the bubble fraction is always < 1)")
        bubble = bubble_fraction
        bound = (p - 1) * (1 - target) / (v * target)
    else:
        target = check_float("target", target, 0.0)
        bubble = bubble_ratio
        bound = (p - 1) / (v * target)
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
    (Narayanan et al. 2021, §2.2.1). ZB-H1 holds every stage at 1F1B's first-stage
    peak, min(m, p); ZB-H2 at min(m, 2p - 1) (Qi et al. 2024, §2.1-2.2; the peak
    "(2p - 1) M_B" is in §2.3, Table 2).
    Interleaved, ZB-V, DualPipe and DualPipeV hold chunks of other sizes; simulate them
    (``pipeline_parallel.simulate``; ``interleaved_memory_factor``). DualPipeV (m >= 2p)
    holds 2p + 1 chunk activations on every rank, each chunk half a rank's layers: p + 1/2
    micro-batches' worth, half a micro-batch above ZB-V's p (the simulator's count, pinned
    by the tests)."""
    schedule = check_choice("schedule", schedule, PIPELINE_SCHEDULES)
    p = check_int("p", p)
    m = check_int("m", m)
    stage = check_int("stage", stage, 0)
    if stage >= p:
        raise ValueError(f"stage={stage} must be in [0, p={p})")
    if schedule == "gpipe":
        return m
    if schedule == "1f1b":
        return min(m, p - stage)
    if schedule in ("zb-h1", "zb-h2"):
        return min(m, p if schedule == "zb-h1" else 2 * p - 1)
    raise ValueError(f"schedule={schedule!r}: closed form only for 'gpipe', '1f1b', "
                     f"'zb-h1' and 'zb-h2'")


def split_backward_bubble(schedule: str, p: int, t_f: float = 1.0, t_b: float = 1.0,
                          t_w: float = 1.0) -> float:
    """Idle time per rank of one step when the backward is split into B (input gradient,
    ``t_b``) and W (weight gradients, ``t_w``), as Qi et al. count it ("Zero Bubble
    Pipeline Parallelism", ICLR 2024, §2, the table comparing their handcrafted
    schedules): each rank's idle time between its own first and last op, the stages not
    synchronised by the optimizer step.

        1f1b   (p - 1)(T_F + T_B + T_W)   B and W together, as one backward
        zb-h1  (p - 1)(T_F + T_B - T_W)   1F1B's memory (p micro-batches)
        zb-h2  (p - 1)(T_F + T_B - 2 T_W) (2p - 1) micro-batches; 0 at equal times

    No schedule idles less than nothing: max(0, ...) per slot. Valid when m >= 2p - 1
    for zb-h2 (its warm-up fits), m >= p for the others."""
    schedule = check_choice("schedule", schedule, ("1f1b", "zb-h1", "zb-h2"))
    p = check_int("p", p)
    t_f = check_float("t_f", t_f)
    t_b = check_float("t_b", t_b)
    t_w = check_float("t_w", t_w, strict=False)  # 0: nothing split off
    per_slot = {"1f1b": t_f + t_b + t_w, "zb-h1": t_f + t_b - t_w, "zb-h2": t_f + t_b - 2 * t_w}
    return (p - 1) * max(0.0, per_slot[schedule])


def dualpipe_bubble(p: int, t_fb: float, t_b: float, t_w: float) -> float:
    """DualPipe's bubble (DeepSeek-AI, "DeepSeek-V3 Technical Report", §3.2.1, Table 2):
    (p/2 - 1)(T_F&B + T_B - 3 T_W). Here ``t_b`` is a *full* backward chunk (input and
    weight gradients: Qi et al.'s T_B + T_W), ``t_w`` its weight part, and ``t_fb`` a
    forward of one direction overlapped with a full backward of the other (T_F + T_B if
    nothing overlaps). In the same terms the table gives ZB1P (p - 1)(T_F + T_B - 2 T_W)
    (= ``split_backward_bubble("zb-h1", ...)``), 2x parameters and p + 1 activations
    for DualPipe. ``p`` even: the micro-batches enter from both ends."""
    p = check_int("p", p)
    if p % 2:
        raise ValueError(f"p={p} must be even: DualPipe pairs rank r with rank p - 1 - r")
    t_fb = check_float("t_fb", t_fb)
    t_b = check_float("t_b", t_b)
    t_w = check_float("t_w", t_w, strict=False)
    return (p / 2 - 1) * max(0.0, t_fb + t_b - 3 * t_w)


def interleaved_memory_factor(p: int, v: int) -> float:
    """Activations rank 0 holds under interleaved 1F1B over 1F1B's p micro-batches:
    1 + (p - 1)/(p v). Its warm-up runs 2(p - 1) + (v - 1)p chunk forwards, plus the one
    in flight: (v + 1)p - 1 chunks of 1/v of the rank's layers (Megatron-LM's schedule
    as its code runs it; Narayanan et al. 2021a, §2.2.2, give only its bubble); the factor
    is as Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
    Models", §4.2.3: "L(1 + (p-1)/(pm)) layers", their m our v) write it for the first
    stage. It tends to 1 + 1/v for large p; enough micro-batches assumed (m v >= (v+1)p - 1)."""
    p = check_int("p", p)
    v = check_int("v", v)
    return 1 + (p - 1) / (p * v)
