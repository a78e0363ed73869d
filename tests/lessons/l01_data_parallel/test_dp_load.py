"""Notebook 01's lessons drawn from timings hold on a busy machine: each test runs the
notebook's measurement (fewer steps) beside two busy-looping processes (``cpu_hogs``)
and asserts the claim's direction.

  section 2  bucketing beats naive DP (53 small all-reduces per step, each paying the
             collective's fixed latency, against a few large ones)
  section 4  naive DP falls behind bucketed DP and torch DDP once there are ranks to
             talk to (4 ranks)
  section 6  our ZeRO-3 (one flat all-gather per unit) is faster than FSDP2 on CPU ranks

Claims the notebook does *not* make, because they did not survive load: naive DP being
slower than DDP on one rank (a few Python calls; the text calls it noise-sized), and
ZeRO-1/2 within 1.15x of DDP (the text now says "near 1, tens of percent either way").
"""

import statistics

from lessons.l01_data_parallel import experiments as demos
from parlab.model import GPTConfig
from lessons.l01_data_parallel import experiments_zero as zero_timing


def bucketed_vs_naive() -> dict:
    """Section 2's measurement: ms per step of naive DP and two bucket sizes, 2 ranks."""
    sweep = demos.bucket_sweep(world_size=2, bucket_sizes=(16 << 10, 1 << 20), steps=8)
    assert all(sweep[k]["buckets"] < sweep["naive"]["buckets"] for k in sweep if k != "naive")
    return {k: round(r["median"] * 1e3, 1) for k, r in sweep.items()}


def naive_bucketed_ddp_on_four_ranks() -> dict:
    """Section 4's measurement at 4 ranks: ms per step of each variant, interleaved."""
    res = demos.compare_step_times(4, {v: {"variant": v, "bucket_bytes": 256 << 10}
                                       for v in ("naive", "bucketed", "ddp")}, steps=6)
    return {v: round(r["median"] * 1e3, 1) for v, r in res.items()}


def zero3_over_fsdp2() -> float:
    """Section 6's measurement: median of the per-round ratios ZeRO-3 / FSDP2, 2 ranks."""
    t = zero_timing.step_times([3, "fsdp2"], 2, GPTConfig(), rounds=12, batch_size=16)
    return statistics.median(a / b for a, b in zip(t[3]["times"], t["fsdp2"]["times"]))


def test_bucketing_beats_naive_dp_under_load(cpu_hogs):
    ms = bucketed_vs_naive()
    print("ms per step beside two hogs:", ms)
    assert ms["bucketed 16 KiB"] < ms["naive"] and ms["bucketed 1 MiB"] < ms["naive"], ms


def test_naive_dp_falls_behind_on_four_ranks_under_load(cpu_hogs):
    ms = naive_bucketed_ddp_on_four_ranks()
    print("ms per step beside two hogs:", ms)
    assert ms["naive"] > ms["bucketed"] and ms["naive"] > ms["ddp"], ms


def test_our_zero3_is_faster_than_fsdp2_under_load(cpu_hogs):
    ratio = zero3_over_fsdp2()
    print(f"ZeRO-3 / FSDP2 beside two hogs: {ratio:.2f}")
    assert ratio < 1, f"ZeRO-3 / FSDP2 = {ratio:.2f} (median of per-round ratios)"
