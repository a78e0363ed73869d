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

from parlab.data_parallel import experiments as demos
from parlab.model import GPTConfig
from parlab.zero import experiments as zero_timing


def test_bucketing_beats_naive_dp_under_load(cpu_hogs):
    sweep = demos.bucket_sweep(world_size=2, bucket_sizes=(16 << 10, 1 << 20), steps=5)
    naive = sweep["naive"]["median"]
    for label in ("bucketed 16 KiB", "bucketed 1 MiB"):
        assert sweep[label]["buckets"] < sweep["naive"]["buckets"]
        assert sweep[label]["median"] < naive, (
            f"{label}: {sweep[label]['median'] * 1e3:.1f} ms per step, naive {naive * 1e3:.1f} ms")


def test_naive_dp_falls_behind_on_four_ranks_under_load(cpu_hogs):
    res = demos.compare_step_times(4, {v: {"variant": v, "bucket_bytes": 256 << 10}
                                       for v in ("naive", "bucketed", "ddp")}, steps=6)
    ms = {v: round(r["median"] * 1e3, 1) for v, r in res.items()}
    assert ms["naive"] > ms["bucketed"] and ms["naive"] > ms["ddp"], ms


def test_our_zero3_is_faster_than_fsdp2_under_load(cpu_hogs):
    t = zero_timing.step_times([3, "fsdp2"], 2, GPTConfig(), rounds=6, batch_size=16)
    ratio = statistics.median(a / b for a, b in zip(t[3]["times"], t["fsdp2"]["times"]))
    assert ratio < 1, f"ZeRO-3 / FSDP2 = {ratio:.2f} (median of per-round ratios)"
