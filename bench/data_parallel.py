"""Our data-parallel variants against torch's DistributedDataParallel, step time.

For each number of ranks and each repeat, ONE launch trains identical model copies with
DDP and with our BucketedDP at each bucket size (DDP given the same ``bucket_cap_mb``),
plus NaiveDP once, and DDP with torch's Python all-reduce hook (``--python-hook``, on by
default: ``TorchDDP(python_comm_hook=True)``, one Python call per bucket as all of ours are,
so ours / that peer separates our design from Python's cost); the variants take turns one step at a time, the order rotating every
round, with a barrier before each step (``dp_demos.ab_step_times_worker``). A step's
time is its slowest rank's; each variant's figure is the median over steps; a ratio is
ours / DDP at the same bucket size (naive: / DDP at the first bucket size) per round,
and we report its median over the rounds of every launch. Repeats are separate
launches: the table shows the range of their medians.

    python -m bench.data_parallel                   # 2 and 4 ranks, 3 bucket sizes, 3 repeats
    python -m bench.data_parallel --quick           # smoke run, a few seconds
    python -m bench.data_parallel --ranks 2 --steps 100 --json dp.json
    python -m bench.data_parallel --cpu --ranks 1 --steps 300   # main-thread CPU time

``--cpu`` times each step by the rank's main-thread CPU time (``time.thread_time``) instead
of the wall clock: the Python and C++ a step runs, which other processes' load does not
stretch as it stretches wall time (on one rank the all-reduce is a local copy). Its keys
start with "cpu:".

``--json PATH`` writes {"ratios": {"bucketed-64KiB/ddp@2": median per-round ratio,
"bucketed-64KiB/ddp-python@2": ..., "ddp-python-64KiB/ddp@2": ..., "naive/ddp@2": ...}, "rows": [...], "load": [before, after], "cores": n}.

Model: the lab's default GPT (4 layers, d=64, 0.2 M parameters, 0.8 MiB of fp32
gradients), 8 sequences x 64 tokens per rank, AdamW, one intra-op thread per rank.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from parlab import hardware
from lessons.l01_data_parallel import experiments as dp_demos
from parlab.model import GPTConfig

# ours / DDP, median per-round ratio over every launch, at most: for BucketedDP at every
# bucket size and rank count (NaiveDP is the lesson's slow baseline: no target).
TARGET = 1.0


def _kib(n: int) -> str:
    return f"{n / 2 ** 20:g} MiB" if n >= 2 ** 20 else f"{n / 1024:g} KiB"


def key(ours: str, bucket_bytes: int | None, ranks: int, peer: str = "ddp") -> str:
    """The --json key: "bucketed-64KiB/ddp@2", "bucketed-64KiB/ddp-python@2", "naive/ddp@4"."""
    size = "" if bucket_bytes is None else "-" + _kib(bucket_bytes).replace(" ", "")
    return f"{ours}{size}/{peer}@{ranks}"


def measure(ranks: int, buckets: list[int], steps: int, warmup: int, repeats: int,
            per_rank_batch: int, naive: bool, python_hook: bool = True,
            cpu: bool = False) -> list[dict]:
    specs = {}
    for b in buckets:
        specs[f"ddp {b}"] = {"variant": "ddp", "bucket_bytes": b}
        specs[f"bucketed {b}"] = {"variant": "bucketed", "bucket_bytes": b}
        if python_hook:
            specs[f"ddp-python {b}"] = {"variant": "ddp-python", "bucket_bytes": b}
    if naive:
        specs["naive"] = {"variant": "naive"}
    runs = [dp_demos.compare_step_times(ranks, specs, GPTConfig(), per_rank_batch, steps, warmup,
                                        cpu=cpu) for _ in range(repeats)]
    rows = []
    for b in buckets:
        rows.append(_row(ranks, f"bucketed (ours), {_kib(b)}", key("bucketed", b, ranks), runs,
                         f"bucketed {b}", f"ddp {b}"))
        if python_hook:
            rows.append(_row(ranks, f"bucketed (ours), {_kib(b)}",
                             key("bucketed", b, ranks, "ddp-python"), runs, f"bucketed {b}",
                             f"ddp-python {b}", "DDP, Python hook"))
            rows.append(_row(ranks, f"DDP, Python hook, {_kib(b)}",
                             key("ddp-python", b, ranks), runs, f"ddp-python {b}", f"ddp {b}"))
    if naive:
        rows.append(_row(ranks, f"naive (ours) vs DDP {_kib(buckets[0])}",
                         key("naive", None, ranks), runs, "naive", f"ddp {buckets[0]}"))
    return rows


def _row(ranks, name, json_key, runs, ours, theirs, peer="DDP") -> dict:
    """Per round (one step of each, interleaved): ours / DDP; "ratio" is the median over
    every round of every launch, its range the per-launch medians."""
    per_launch = [[o / t for o, t in zip(r[ours]["steps"], r[theirs]["steps"])] for r in runs]
    medians = [statistics.median(x) for x in per_launch]
    return {"ranks": ranks, "variant": name, "peer": peer, "key": json_key,
            "ours_ms": statistics.median(r[ours]["median"] for r in runs) * 1e3,
            "peer_ms": statistics.median(r[theirs]["median"] for r in runs) * 1e3,
            "ratio": statistics.median(x for launch in per_launch for x in launch),
            "ratio_min": min(medians), "ratio_max": max(medians),
            "repeats": len(runs), "steps": len(runs[0][ours]["steps"])}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("--buckets", type=int, nargs="+", default=[64 << 10, 256 << 10, 25 << 20],
                   help="bucket sizes in bytes (default 64 KiB, 256 KiB, 25 MiB = DDP's default)")
    p.add_argument("--steps", type=int, default=40, help="timed steps per variant per launch")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3, help="separate launches")
    p.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    p.add_argument("--no-naive", action="store_true", help="leave NaiveDP out (it is slow)")
    p.add_argument("--no-python-hook", action="store_true",
                   help="leave out DDP with torch's Python all-reduce hook")
    p.add_argument("--cpu", action="store_true",
                   help="time steps by main-thread CPU time, not wall time (keys 'cpu:...')")
    p.add_argument("--quick", action="store_true", help="smoke run: 2 ranks, 1 bucket size, 5 steps")
    p.add_argument("--json", help='write {"ratios": {"bucketed-64KiB/ddp@2": ...}, "rows": ...}')
    a = p.parse_args(argv)
    if a.quick:
        a.ranks, a.buckets, a.steps, a.warmup, a.repeats = [2], [256 << 10], 5, 1, 1
    hw, load = hardware.detect(), [os.getloadavg()[0]]
    print(f"# data parallel step {'main-thread CPU ' if a.cpu else ''}time, ours vs torch DDP\n\n{hardware.describe()}\n"
          f"{a.steps} timed steps per variant per launch (+{a.warmup} warm-up), interleaved; "
          f"{a.repeats} launch(es) per rank count; {a.batch} x 64 tokens per rank; "
          f"load average {load[0]:.1f} before\n")
    rows, t0 = [], time.perf_counter()
    for n in a.ranks:
        if hw.usable_cpus and n > hw.usable_cpus:
            print(f"note: {n} ranks on {hw.usable_cpus} cores (oversubscribed)")
        rows += measure(n, a.buckets, a.steps, a.warmup, a.repeats, a.batch, not a.no_naive,
                        not a.no_python_hook, a.cpu)
    if a.cpu:
        for r in rows:
            r["key"] = "cpu:" + r["key"]
    load.append(os.getloadavg()[0])
    print("\n| ranks | ours | peer | ours step (ms) | peer step (ms) | ours / peer (median "
          "per round) | range over launches |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['ranks']} | {r['variant']} | {r['peer']} | {r['ours_ms']:.1f} | "
              f"{r['peer_ms']:.1f} | {r['ratio']:.3f} | {r['ratio_min']:.3f} - {r['ratio_max']:.3f} |")
    print(f"\n({time.perf_counter() - t0:.0f} s; load average {load[0]:.1f} before, "
          f"{load[1]:.1f} after)")
    bucketed = [r for r in rows if r["key"].startswith("bucketed") and r["peer"] == "DDP"]
    if bucketed:
        worst = max(bucketed, key=lambda r: r["ratio"])
        print(f"bucketed / DDP, worst median per-round ratio: {worst['ratio']:.3f} "
              f"({worst['key']}; target <= {TARGET}: "
              f"{'met' if worst['ratio'] <= TARGET else 'NOT met'})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ratios": {r["key"]: r["ratio"] for r in rows}, "rows": rows,
                       "load": load, "cores": os.cpu_count()}, f, indent=1)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
