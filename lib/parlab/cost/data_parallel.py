"""Data parallelism: the step time with and without overlap, and the speedup over one rank.

Domains: times in seconds, finite and >= 0 (forward + backward > 0 for the speedup);
``n`` an integer >= 1; ``overlap`` True or False.
"""

from __future__ import annotations

from ..validate import check_bool, check_float, check_int


def dp_step_time(forward_s: float, backward_s: float, comm_s: float,
                 overlap: bool = True) -> float:
    """One data-parallel step: forward, backward, and the gradient all-reduce (``comm_s``,
    e.g. from ``collective_time``). Without overlap the all-reduce follows backward:
    t_f + t_b + t_c. With DDP's bucketing (Li et al., "PyTorch Distributed: Experiences
    on Accelerating Data Parallel Training", VLDB 2020, §3.2.3) it runs during backward,
    so at best only the part that does not fit behind backward shows: t_f + max(t_b, t_c).
    That is a bound: the last bucket is launched when backward ends, so some
    communication is always exposed."""
    forward_s = check_float("forward_s", forward_s, 0.0, strict=False)
    backward_s = check_float("backward_s", backward_s, 0.0, strict=False)
    comm_s = check_float("comm_s", comm_s, 0.0, strict=False)
    overlap = check_bool("overlap", overlap)
    return forward_s + (max(backward_s, comm_s) if overlap else backward_s + comm_s)


def dp_speedup(n: int, forward_s: float, backward_s: float, comm_s: float,
               overlap: bool = True) -> float:
    """Throughput of ``n`` data-parallel ranks over one rank, each with the same per-rank
    batch (weak scaling): n (t_f + t_b) / dp_step_time(...), with ``comm_s`` the
    all-reduce time on n ranks. Equals n when communication is free or fully hidden."""
    n = check_int("n", n)
    step = dp_step_time(forward_s, backward_s, comm_s, overlap)
    if not forward_s + backward_s > 0:
        raise ValueError(f"forward_s={forward_s!r} + backward_s={backward_s!r} must be > 0 "
                         f"(a step with no compute has no speedup)")
    return n * (forward_s + backward_s) / step


def onebit_adam_volume_ratio(warmup_fraction: float, compression_ratio: float = 32.0) -> float:
    """How many times fewer bytes 1-bit Adam sends over a whole run than uncompressed Adam
    (Tang et al., "1-bit Adam", ICML 2021, Algorithm 1): the first ``warmup_fraction`` of
    the steps run plain Adam, whose variance must settle before it can be frozen; the rest
    send the momentum at 1 bit, ``compression_ratio`` times fewer bytes (32 from fp32, 16
    from fp16). 1 / (w + (1 - w) / r): the warm-up, not the 1 bit, sets the ceiling, which
    is why the paper reports "up to 5x" and not 32x."""
    w = check_float("warmup_fraction", warmup_fraction, 0.0, strict=False)
    if w > 1:
        raise ValueError(f"warmup_fraction={warmup_fraction!r} must be in [0, 1]")
    r = check_float("compression_ratio", compression_ratio, 1.0, strict=False)
    return 1.0 / (w + (1.0 - w) / r)
