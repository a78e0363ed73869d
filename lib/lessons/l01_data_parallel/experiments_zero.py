"""Notebook 01's ZeRO timings and bench/zero.py: an interleaved step timer that runs
ours and PyTorch's in the same processes."""

from __future__ import annotations

import statistics

import torch.distributed as dist

from parlab import trace
from parlab.cost import ZERO_STAGES
from parlab.data import local_batch
from parlab.data_parallel.ddp import DDP_BUCKET_BYTES
from parlab.model import GPTConfig
from parlab.validate import check_int
from parlab.zero.peers import PEERS
from parlab.runs import step_once
from parlab.zero.runner import ZeroRecipe, ZeroRun


def step_times_worker(runs: dict, rounds: int, warmup: int = 2, group=None) -> dict:
    """Rank side of :func:`step_times`: ``trace.interleaved`` over one training step of
    each run ({label: ZeroRun}) over ``group``; round k trains on batch k, made
    beforehand so it is not timed. Returns {label: [seconds per round]}."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    trainers = {v: ZeroRecipe(r, group) for v, r in runs.items()}
    batches = {v: [local_batch(k, r.batch_size, r.config.seq_len, r.config.vocab_size, rank,
                               world, r.data_seed) for k in range(warmup + rounds)]
               for v, r in runs.items()}
    steps = {v: (lambda k, t=t, b=batches[v]: step_once(t, k, b[k])) for v, t in trainers.items()}
    return trace.interleaved(steps, rounds, warmup, group=group)["times"]


def step_times(variants, world_size: int, config: GPTConfig | None = None, rounds: int = 10,
               batch_size: int = 8, warmup: int = 2, timeout: float = 300.0,
               bucket_bytes: int = DDP_BUCKET_BYTES) -> dict:
    """Interleaved A/B step times of ``variants`` on ``world_size`` ranks, in the same
    processes. ``variants``: ZeRO stages 0-3 and peers 'ddp', 'fsdp2' (each trained as
    ``ZeroRun(config, batch_size=batch_size, zero_stage=v, bucket_bytes=bucket_bytes,
    kernel="fused")``: every variant steps the same AdamW kernel, so the clock compares
    the sharding, not the optimizer), or a dict {label: ZeroRun}. A step's time is the slowest rank's. Returns {variant or
    label: {"median": s, "times": [s per round]}}."""
    from parlab.launch import launch
    config = GPTConfig() if config is None else config
    if isinstance(variants, dict):
        runs = dict(variants)
    else:
        runs = {v: ZeroRun(config, batch_size=batch_size, zero_stage=v,
                           bucket_bytes=bucket_bytes, kernel="fused") for v in variants}
    if not runs:
        raise ValueError(f"variants must name at least one of {ZERO_STAGES + PEERS}")
    for r in runs.values():
        if not isinstance(r, ZeroRun):
            raise ValueError(f"variants' values must be ZeroRun, got {type(r).__name__}")
        r.check(world_size)
    check_int("rounds", rounds)
    check_int("warmup", warmup, low=0)
    res = launch(step_times_worker, world_size, runs, rounds, warmup, timeout=timeout)
    out = {}
    for v in runs:
        times = [max(r[v][k] for r in res) for k in range(rounds)]
        out[v] = {"median": statistics.median(times), "times": times}
    return out


# --- FSDP vs ZeRO-3 side by side (notebook 01 §6): resharding, prefetch, HSDP -------------

FSDP_MODES = {  # label: (reshard_after_forward, prefetch)
    "reshard (ZeRO-3)": (True, False), "keep (no reshard)": (False, False),
    "reshard + prefetch": (True, True), "keep + prefetch": (False, True)}


def unit_bytes(config: GPTConfig, nbytes: int = 4) -> tuple[list[int], int]:
    """(each block's parameter bytes in forward order, the root unit's: embeddings,
    final norm, head) of the lab's GPT: FullyShard's default units."""
    from parlab.model import GPT
    gpt = GPT(config)
    blocks = [sum(p.numel() for p in b.parameters()) * nbytes for b in gpt.blocks]
    return blocks, gpt.num_params() * nbytes - sum(blocks)


def step_bytes(events, rank: int, step: int) -> dict:
    """{op or "inter_node": bytes rank sent in step}: "inter_node" counts the collectives
    tagged axis="replicate" (HSDP's all-reduce across nodes), the rest stay on the node."""
    out: dict = {}
    for e in events:
        if e["kind"] == "comm" and e["rank"] == rank and e["meta"].get("step") == step:
            key = "inter_node" if e["meta"].get("axis") == "replicate" else e["meta"]["op"]
            out[key] = out.get(key, 0) + e["bytes_sent"]
    return out


def fsdp_modes(config: GPTConfig | None = None, world_size: int = 2, steps: int = 2,
               batch_size: int = 8, lr: float = 1e-3, weight_decay: float = 0.1) -> dict:
    """ZeRO-3 in each of FSDP_MODES on ``world_size`` ranks, against one device and
    against ``cost.fsdp_gathered_peak`` / ``cost.fsdp_comm_volume`` (fp32). Returns
    {"rows": one per mode (measured and predicted peak and bytes of the last step, rank
    0; the largest difference from one device), "events": {mode: last step's events}}."""
    from parlab import cost
    from parlab.model import max_differences, reference_train
    from parlab.zero.runner import run
    config = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16) if config is None else config
    blocks, root = unit_bytes(config)
    n_params = (sum(blocks) + root) // 4
    ref = reference_train(config, steps, batch_size, lr=lr, weight_decay=weight_decay)
    rows, events = [], {}
    for label, (reshard, prefetch) in FSDP_MODES.items():
        res = run(ZeroRun(config, steps=steps, batch_size=batch_size, lr=lr,
                          weight_decay=weight_decay, zero_stage=3, reshard_after_forward=reshard,
                          prefetch=prefetch), world_size)
        sent = step_bytes(res.events, 0, steps - 1)
        volume = cost.fsdp_comm_volume(n_params, world_size, reshard, param_bytes=4)
        rows.append({"mode": label, "peak measured": res.memory[0]["gathered_peak"],
                     "peak formula": cost.fsdp_gathered_peak(blocks, root, reshard, prefetch),
                     "peaks equal on every rank":
                         len({m["gathered_peak"] for m in res.memory}) == 1,
                     "all-gather measured": sent.get("all_gather", 0),
                     "all-gather formula": volume["all_gather"],
                     "reduce-scatter measured": sent.get("reduce_scatter", 0),
                     "reduce-scatter formula": volume["reduce_scatter"],
                     "max diff": max(max_differences(res, ref).values())})
        events[label] = [e for e in res.events if e["meta"].get("step") == steps - 1]
    return {"rows": rows, "events": events, "psi": n_params * 4}


def _spans(events, rank: int, name: str) -> tuple[float, float] | None:
    got = [e for e in events if e["rank"] == rank and e["kind"] == "compute" and e["name"] == name]
    return (min(e["start"] for e in got), max(e["end"] for e in got)) if got else None


def gather_issue(events, n_blocks: int, rank: int = 0) -> list[dict]:
    """When each block's all-gather was issued relative to the compute of the unit that
    runs before it (forward: block i-1; backward: block i+1): "lead" = that compute's
    start minus the gather's start (> 0: issued before it computed: prefetched), "after"
    = the gather's start minus that compute's end (>= 0: issued only once it was done)."""
    at = {e["name"]: e for e in events if e["rank"] == rank and e["kind"] == "comm"}
    out = []
    for why, pairs in (("forward", [(i, i - 1) for i in range(1, n_blocks)]),
                       ("backward", [(i, i + 1) for i in range(n_blocks - 2, -1, -1)])):
        for i, before in pairs:
            gather = at.get(f"all_gather blocks.{i} params ({why})")
            span = _spans(events, rank, f"{why} block{before}")
            if gather is None or span is None:
                continue
            out.append({"unit": f"block{i}", "pass": why,
                        "async": bool(gather["meta"].get("async_op")),
                        "lead": span[0] - gather["start"], "after": gather["start"] - span[1]})
    return out


def hsdp_traffic(config: GPTConfig | None = None, steps: int = 2, batch_size: int = 8,
                 lr: float = 1e-3, weight_decay: float = 0.1) -> dict:
    """HSDP on a 2 x 2 mesh (2 replicas of a 2-rank shard group) and flat ZeRO-3 on the
    same 4 ranks (ranks 0-1 one node, 2-3 the other), each against one device; bytes
    per rank and step in the shard group and in the replicate group, measured (rank 0,
    last step) and from ``cost.hsdp_comm_volume``. HSDP's shard group is one node, so
    only the replicate all-reduce crosses nodes; flat ZeRO-3's group spans both."""
    from parlab import cost
    from parlab.model import max_differences, reference_train
    from parlab.zero.runner import run
    config = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16) if config is None else config
    blocks, root = unit_bytes(config)
    n_params = (sum(blocks) + root) // 4
    ref = reference_train(config, steps, batch_size, lr=lr, weight_decay=weight_decay)
    rows = []
    for label, replicate in (("HSDP 2 x 2", 2), ("ZeRO-3 over 4", 1)):
        res = run(ZeroRun(config, steps=steps, batch_size=batch_size, lr=lr,
                          weight_decay=weight_decay, zero_stage=3, replicate=replicate), 4)
        sent = step_bytes(res.events, 0, steps - 1)
        f = cost.hsdp_comm_volume(n_params, 4 // replicate, replicate, param_bytes=4)
        rows.append({"run": label, "shard group": 4 // replicate, "replicas": replicate,
                     "shard group spans nodes": replicate == 1,
                     "shard-group measured": sum(v for k, v in sent.items() if k != "inter_node"),
                     "shard-group formula": f["intra_node"],
                     "replicate measured": sent.get("inter_node", 0),
                     "replicate formula": f["inter_node"],
                     "params per rank": res.memory[0]["params"],
                     "max diff": max(max_differences(res, ref).values())})
    return {"rows": rows, "psi": n_params * 4}
