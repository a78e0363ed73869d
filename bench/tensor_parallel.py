"""Step time of our tensor parallelism against PyTorch's own (DTensor), with and without
sequence parallelism.

For each tp degree one launch builds four trainers in the same rank processes -- ours
(``tensor_parallel.TPRecipe``) and the peer (``tensor_parallel.peers.TorchTPRecipe``:
``parallelize_module`` + ``loss_parallel``), each without and with sequence parallelism
-- on the same weights and batches, and times them with ``trace.interleaved``: every
round runs one AdamW step of each, in an order rotated every round, each step started
together on all ranks (barrier) and timed as the slowest rank's. We report medians over
rounds and the median of the per-round ratios (ours / theirs within the same round, so
the slow phases of a shared machine hit both sides).

    python -m bench.tensor_parallel                 # tp 2 and 4, 10 rounds
    python -m bench.tensor_parallel --quick         # a smoke run (seconds)
    python -m bench.tensor_parallel --tp 2 --rounds 30 --json tp.json

``--json PATH`` writes {"ratios": {"tp/torch@2": median per-round ratio, "tp_sp/torch_sp@2":
..., "@4": ...}, "times": {tp: {variant: {"median", "times"}}}, "load": [1-min load average
before, after], "cores": n, "config": {...}}.

CPU ranks over gloo: with more ranks than cores the timings include the operating
system's scheduling; the output says how many cores there were and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import torch
import torch.distributed as dist

from parlab import comm, trace
from parlab.data import get_batch
from parlab.model import GPT, GPTConfig
from parlab.runs import step_once
from parlab.tensor_parallel import TPRecipe, TPRun
from parlab.tensor_parallel.peers import TorchTPRecipe

PAIRS = [("tp", "torch"), ("tp_sp", "torch_sp")]   # (ours, peer)
NAMES = {"tp": "ours", "torch": "DTensor", "tp_sp": "ours + SP", "torch_sp": "DTensor + SP"}
TARGET = 1.2  # ours / peer, median per-round ratio, at most


def step_times_worker(runs: dict, rounds: int, warmup: int = 2, group=None) -> dict:
    """Rank side: {label: TPRun}, labels starting with "torch" run the peer. Round k
    trains every variant on batch k (made beforehand). Returns {label: [s per round]}."""
    torch.set_num_threads(1)
    trainers = {v: (TorchTPRecipe if v.startswith("torch") else TPRecipe)(r, group)
                for v, r in runs.items()}
    c, seed = next(iter(runs.values())).config, next(iter(runs.values())).data_seed
    bs = next(iter(runs.values())).batch_size
    batches = [[t.to(comm.device(group)) for t in get_batch(k, bs, c.seq_len, c.vocab_size,
                                                             seed=seed)]
               for k in range(warmup + rounds)]
    steps = {v: (lambda k, t=t: step_once(t, k, batches[k])) for v, t in trainers.items()}
    out = trace.interleaved(steps, rounds, warmup, group=group)["times"]
    dist.barrier(group=group)
    return out


def step_times(tp: int, config: GPTConfig, batch_size: int, rounds: int, warmup: int,
               overlap: bool, timeout: float = 600.0) -> dict:
    """{label: {"median": s, "times": [slowest rank's s per round]}} on ``tp`` ranks."""
    from parlab.launch import launch

    import bench.tensor_parallel as me  # by module name: the ranks import it so
    runs = {v: TPRun(config=config, batch_size=batch_size, sequence_parallel=v.endswith("_sp"),
                     overlap=overlap and not v.startswith("torch"))
            for v in ("tp", "torch", "tp_sp", "torch_sp")}
    for r in runs.values():
        r.check(tp)
    res = launch(me.step_times_worker, tp, runs, rounds, warmup, timeout=timeout)
    out = {}
    for v in runs:
        times = [max(r[v][k] for r in res) for k in range(rounds)]
        out[v] = {"median": statistics.median(times), "times": times}
    return out


def key(ours: str, peer: str, tp: int) -> str:
    return f"{ours}/{peer}@{tp}"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tp", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8, help="every rank sees the whole batch")
    ap.add_argument("--overlap", action="store_true",
                    help="ours with TPRun(overlap=True) (default: TPRun's default, False)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 ranks, 3 rounds, tiny model")
    ap.add_argument("--json", help="write the ratios and the raw times here")
    a = ap.parse_args(argv)
    if a.quick:
        a.tp, a.rounds, a.warmup, a.d_model, a.heads, a.layers = [2], 3, 1, 32, 4, 2
        a.seq_len, a.vocab, a.batch = 16, 64, 4
    config = GPTConfig(vocab_size=a.vocab, seq_len=a.seq_len, d_model=a.d_model,
                       n_heads=a.heads, n_layers=a.layers)
    load = [os.getloadavg()[0]]
    print(f"model: {GPT(config).num_params():,} parameters (d_model={a.d_model}, "
          f"heads={a.heads}, layers={a.layers}, seq_len={a.seq_len}, vocab={a.vocab}), batch "
          f"{a.batch}, fp32, AdamW; ours overlap={a.overlap}; {a.rounds} rounds after "
          f"{a.warmup} warm-up; {os.cpu_count()} CPU cores, load average {load[0]:.1f} before\n")
    raw, ratios = {}, {}
    print("| tp | ours | ms/step (median) | peer | ms/step (median) | ratio of medians "
          "| median per-round ratio [p25, p75] |")
    print("|---|---|---|---|---|---|---|")
    for tp in a.tp:
        res = raw[tp] = step_times(tp, config, a.batch, a.rounds, a.warmup, a.overlap)
        for ours, peer in PAIRS:
            paired = sorted(o / p for o, p in zip(res[ours]["times"], res[peer]["times"]))
            q = statistics.quantiles(paired, n=4) if len(paired) > 1 else [paired[0]] * 3
            ratios[key(ours, peer, tp)] = statistics.median(paired)
            print(f"| {tp} | {NAMES[ours]} | {res[ours]['median'] * 1e3:.1f} | {NAMES[peer]} | "
                  f"{res[peer]['median'] * 1e3:.1f} | "
                  f"{res[ours]['median'] / res[peer]['median']:.2f} | "
                  f"{statistics.median(paired):.2f} [{q[0]:.2f}, {q[2]:.2f}] |", flush=True)
    load.append(os.getloadavg()[0])
    worst = max(ratios.values())
    print(f"\nload average {load[0]:.1f} before, {load[1]:.1f} after ({os.cpu_count()} cores); "
          f"ours / DTensor, worst median per-round ratio: {worst:.2f} "
          f"(target <= {TARGET}: {'met' if worst <= TARGET else 'NOT met'})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ratios": ratios, "load": load, "cores": os.cpu_count(),
                       "config": {"d_model": a.d_model, "heads": a.heads, "layers": a.layers,
                                  "seq_len": a.seq_len, "vocab": a.vocab, "batch": a.batch,
                                  "rounds": a.rounds, "warmup": a.warmup, "overlap": a.overlap},
                       "times": {str(t): res for t, res in raw.items()}}, f, indent=1)
    return ratios


if __name__ == "__main__":
    main()
