"""Step time of our ZeRO stages against torch's own: ZeRO-3 vs FSDP2, and ZeRO-0/1/2 vs DDP.

All variants are built in the same rank processes and timed interleaved: every round
runs one training step of each variant, in an order rotated every round, each step
started together on all ranks (barrier) and timed as the slowest rank's. We report
medians over rounds, and the median of the per-round ratios (ours / theirs within the
same round, so slow phases of a shared machine hit both sides). Stages 0-2 and DDP use
the same gradient buckets (``--bucket-kib``, DDP's ``bucket_cap_mb``).

    python -m bench.zero                    # 2 and 4 ranks, 20 rounds
    python -m bench.zero --quick            # a smoke run (seconds)
    python -m bench.zero --ranks 2 --rounds 50 --d-model 256 --json zero.json

``--json PATH`` writes {"ratios": {"zero2/ddp@4": median per-round ratio, ...}, "times":
{ranks: {variant: {"median", "times"}}}, "load": [1-min load average before, after],
"cores": n, "config": {...}}.

CPU ranks over gloo: with more ranks than cores, the timings include the operating
system's scheduling, and the output says how many cores there were and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from parlab.model import GPT, GPTConfig
from lessons.l01_data_parallel import experiments_zero as zero_peers

PAIRS = [(3, "fsdp2"), (2, "ddp"), (1, "ddp"), (0, "ddp")]  # (ours, peer)
TARGETS = {3: 1.0, 2: 1.15, 1: 1.15}  # ours / peer, median per-round ratio, at most


def name(v) -> str:
    return f"ZeRO-{v}" if isinstance(v, int) else {"fsdp2": "FSDP2", "ddp": "DDP"}[v]


def key(ours, peer, ranks: int) -> str:
    return f"zero{ours}/{peer}@{ranks}"


def paired_ratios(res: dict, ours, peer) -> list[float]:
    return sorted(o / p for o, p in zip(res[ours]["times"], res[peer]["times"]))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16, help="global batch (split over ranks)")
    ap.add_argument("--bucket-kib", type=int, default=25 * 1024,
                    help="gradient bucket of stages 0-2 and DDP (default 25 MiB, DDP's)")
    ap.add_argument("--only-zero3", action="store_true", help="time ZeRO-3 and FSDP2 only")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 ranks, 3 rounds, tiny model")
    ap.add_argument("--json", help="write the ratios and the raw times here")
    a = ap.parse_args(argv)
    if a.quick:
        a.ranks, a.rounds, a.d_model, a.seq_len, a.batch = [2], 3, 32, 16, 8
    config = GPTConfig(d_model=a.d_model, n_layers=a.layers, n_heads=4, seq_len=a.seq_len)
    pairs = PAIRS[:1] if a.only_zero3 else PAIRS
    variants = list(dict.fromkeys(v for pair in pairs for v in pair))
    n_params = GPT(config).num_params()
    load = [os.getloadavg()[0]]
    print(f"model: {n_params:,} parameters (d_model={a.d_model}, layers={a.layers}, "
          f"seq_len={a.seq_len}), global batch {a.batch}, fp32, AdamW; {a.rounds} rounds; "
          f"buckets {a.bucket_kib} KiB; {os.cpu_count()} CPU cores, load average "
          f"{load[0]:.1f} before\n")
    raw, ratios = {}, {}
    print("| ranks | ours | ms/step (median) | peer | ms/step (median) | ratio of medians "
          "| median per-round ratio [p25, p75] |")
    print("|---|---|---|---|---|---|---|")
    for ranks in a.ranks:
        res = raw[ranks] = zero_peers.step_times(variants, ranks, config, rounds=a.rounds,
                                                 batch_size=a.batch, warmup=2, timeout=600,
                                                 bucket_bytes=a.bucket_kib * 1024)
        for ours, peer in pairs:
            paired = paired_ratios(res, ours, peer)
            q = statistics.quantiles(paired, n=4) if len(paired) > 1 else [paired[0]] * 3
            ratios[key(ours, peer, ranks)] = statistics.median(paired)
            print(f"| {ranks} | {name(ours)} | {res[ours]['median'] * 1e3:.1f} | {name(peer)} | "
                  f"{res[peer]['median'] * 1e3:.1f} | "
                  f"{res[ours]['median'] / res[peer]['median']:.2f} | "
                  f"{statistics.median(paired):.2f} [{q[0]:.2f}, {q[2]:.2f}] |", flush=True)
    load.append(os.getloadavg()[0])
    print(f"\nload average {load[0]:.1f} before, {load[1]:.1f} after "
          f"({os.cpu_count()} cores); targets, median per-round ratio:")
    for ours, peer in pairs:
        if ours in TARGETS:
            worst = max(ratios[key(ours, peer, r)] for r in a.ranks)
            print(f"  {name(ours)} / {name(peer)}, worst over ranks {a.ranks}: {worst:.2f} "
                  f"(target <= {TARGETS[ours]}: {'met' if worst <= TARGETS[ours] else 'NOT met'})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ratios": ratios, "load": load, "cores": os.cpu_count(),
                       "config": {"d_model": a.d_model, "layers": a.layers, "seq_len": a.seq_len,
                                  "batch": a.batch, "rounds": a.rounds,
                                  "bucket_bytes": a.bucket_kib * 1024},
                       "times": {str(r): {str(v): t for v, t in res.items()}
                                 for r, res in raw.items()}}, f, indent=1)
    return ratios


if __name__ == "__main__":
    main()
