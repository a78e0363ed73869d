"""Step time of our ZeRO stages against torch's own: ZeRO-3 vs FSDP2, and ZeRO-0/1/2 vs DDP.

All variants are built in the same rank processes and timed interleaved: every round
runs one training step of each variant, in an order rotated every round, each step
started together on all ranks (barrier) and timed as the slowest rank's. We report
medians over rounds, and the median of the per-round ratios (ours / theirs within the
same round, so slow phases of a shared machine hit both sides).

    python -m bench.zero                    # 2 and 4 ranks, 20 rounds
    python -m bench.zero --quick            # a smoke run (seconds)
    python -m bench.zero --ranks 2 --rounds 50 --d-model 256

CPU ranks over gloo: with more ranks than cores, the timings include the operating
system's scheduling, and the table says how many cores there were.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from parlab.zero import experiments as zero_peers
from parlab.model import GPT, GPTConfig

PAIRS = [(3, "fsdp2"), (2, "ddp"), (1, "ddp"), (0, "ddp")]  # (ours, peer)
TARGET = 1.5  # ZeRO-3 within 1.5x of FSDP2


def name(v) -> str:
    return f"ZeRO-{v}" if isinstance(v, int) else {"fsdp2": "FSDP2", "ddp": "DDP"}[v]


def measure(ranks: int, config: GPTConfig, batch: int, rounds: int, variants) -> dict:
    return zero_peers.step_times(variants, ranks, config, rounds=rounds, batch_size=batch,
                                 warmup=2, timeout=600)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16, help="global batch (split over ranks)")
    ap.add_argument("--only-zero3", action="store_true", help="time ZeRO-3 and FSDP2 only")
    ap.add_argument("--quick", action="store_true", help="smoke run: 3 rounds, tiny model")
    ap.add_argument("--json", help="write the raw times here")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.d_model, a.seq_len, a.batch = 3, 32, 16, 8
    config = GPTConfig(d_model=a.d_model, n_layers=a.layers, n_heads=4, seq_len=a.seq_len)
    pairs = PAIRS[:1] if a.only_zero3 else PAIRS
    variants = list(dict.fromkeys(v for pair in pairs for v in pair))
    n_params = GPT(config).num_params()
    print(f"model: {n_params:,} parameters (d_model={a.d_model}, layers={a.layers}, "
          f"seq_len={a.seq_len}), global batch {a.batch}, fp32, AdamW; {a.rounds} rounds; "
          f"{os.cpu_count()} CPU cores\n")
    raw = {}
    print("| ranks | ours | ms/step (median) | peer | ms/step (median) | ratio of medians "
          "| median per-round ratio [p25, p75] |")
    print("|---|---|---|---|---|---|---|")
    for ranks in a.ranks:
        res = raw[ranks] = measure(ranks, config, a.batch, a.rounds, variants)
        for ours, peer in pairs:
            t_ours, t_peer = res[ours], res[peer]
            paired = sorted(o / p for o, p in zip(t_ours["times"], t_peer["times"]))
            q = statistics.quantiles(paired, n=4) if len(paired) > 1 else [paired[0]] * 3
            print(f"| {ranks} | {name(ours)} | {t_ours['median'] * 1e3:.1f} | {name(peer)} | "
                  f"{t_peer['median'] * 1e3:.1f} | {t_ours['median'] / t_peer['median']:.2f} | "
                  f"{statistics.median(paired):.2f} [{q[0]:.2f}, {q[2]:.2f}] |", flush=True)
    worst = max(raw[r][3]["median"] / raw[r]["fsdp2"]["median"] for r in a.ranks)
    print(f"\nZeRO-3 / FSDP2, worst over ranks {a.ranks}: {worst:.2f} "
          f"(target <= {TARGET}: {'met' if worst <= TARGET else 'NOT met'})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({str(r): {str(v): t for v, t in res.items()} for r, res in raw.items()}, f)


if __name__ == "__main__":
    main()
