"""The experiments of notebook 00 (collectives): rank workers and the pure functions
that turn their results into tables and figures.

Workers (``*_worker``) run on every rank via ``parlab.launch``; the functions
without that suffix run in the notebook, call ``launch`` themselves where needed,
and return plain data that ``lessons.common.viz`` draws. Tests call them directly.
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist

from parlab import comm, cost, trace
from parlab.launch import launch
from lessons.common import record


# --- 1. every collective once, on tiny tensors --------------------------------------

def collectives_worker() -> dict:
    """Before/after of each collective on this rank, as lists of numbers.

    Rank r starts from values 10r + 0, 10r + 1, ...: the tens digit says whose data
    a number was, the units digit which element, so each result can be read off.
    """
    r, n = dist.get_rank(), dist.get_world_size()
    mine = torch.arange(n, dtype=torch.float32) + 10 * r
    out = {}

    x = mine.clone()
    comm.all_reduce(x)
    out["all_reduce"] = (mine.tolist(), x.tolist())

    gathered = torch.empty(n, dtype=torch.float32)
    comm.all_gather(gathered, mine[r:r + 1].clone())
    out["all_gather"] = (mine[r:r + 1].tolist(), gathered.tolist())

    shard = torch.empty(1, dtype=torch.float32)
    comm.reduce_scatter(shard, mine.clone())
    out["reduce_scatter"] = (mine.tolist(), shard.tolist())

    received = torch.empty(n, dtype=torch.float32)
    comm.all_to_all(received, mine.clone())  # element j goes to rank j
    out["all_to_all"] = (mine.tolist(), received.tolist())

    x = mine.clone()
    comm.broadcast(x, src=0)
    out["broadcast"] = (mine.tolist(), x.tolist())

    x = mine.clone()
    if n > 1 and r == 0:
        comm.send(x, dst=1)
    elif n > 1 and r == 1:
        comm.recv(x, src=0)
    out["send_recv"] = (mine.tolist(), x.tolist())
    return out


def collectives_table(world_size: int = 4) -> list[dict]:
    """Run every collective on ``world_size`` ranks; one row per (op, rank)."""
    results = launch(collectives_worker, world_size)
    return [{"op": op, "rank": r, "before": res[op][0], "after": res[op][1]}
            for op in results[0] for r, res in enumerate(results)]


# --- 2. the ring all-reduce, step by step --------------------------------------------

def ring_steps_worker() -> tuple[list, list]:
    """Ring all-reduce of n one-element chunks where rank r contributes 2**r.

    A sum of distinct powers of two is a bitmask: the value of a chunk says exactly
    which ranks' contributions it holds. Returns this rank's chunk values after
    every step, and the traced exchanges (to know who sent which chunk when).
    """
    r, n = dist.get_rank(), dist.get_world_size()
    x = torch.full((n,), float(2 ** r), dtype=torch.float64)
    snapshots = [[int(v) for v in x.tolist()]]
    trace.start()
    comm.ring_all_reduce(x, on_step=lambda phase, step, flat: snapshots.append(
        [int(v) for v in flat.tolist()]))
    exchanges = [e for e in trace.stop() if e["kind"] == "comm"]
    return snapshots, exchanges


def ring_frames(world_size: int = 4) -> list[dict]:
    """Frames for ``viz.ring_animation``: per step, every rank's chunk bitmasks and
    the transfers that produced them (from the trace: rank r received chunk c from
    its left neighbour)."""
    results = launch(ring_steps_worker, world_size)
    n = world_size
    frames = [{"phase": "start", "step": 0, "state": [res[0][0] for res in results],
               "sends": []}]
    for k in range(1, len(results[0][0])):
        sends, phase, step = [], None, None
        for r, (_, exchanges) in enumerate(results):
            meta = exchanges[k - 1]["meta"]
            phase, step = meta["phase"], meta["step"]
            sends.append(((r - 1) % n, r, meta["chunk"]))
        frames.append({"phase": phase, "step": step, "sends": sorted(sends),
                       "state": [res[0][k] for res in results]})
    return frames


# --- 3. bytes per rank: measured (counted) vs formula --------------------------------

def bytes_worker(numel: int) -> dict:
    """Bytes this rank sent and received in one ring and one naive all-reduce."""
    out = {}
    for name, algo in (("ring", comm.ring_all_reduce), ("naive", comm.naive_all_reduce)):
        x = torch.ones(numel, dtype=torch.float32)
        trace.start()
        algo(x)
        events = trace.stop()
        out[name] = (sum(e["bytes_sent"] for e in events), sum(e["bytes_recv"] for e in events))
    return out


def bytes_table(world_sizes=(2, 4, 8), numel: int = 1 << 18) -> list[dict]:
    """One row per (n, algorithm, rank): bytes sent measured by the trace, and the
    formula of ``cost.collective_bytes`` (ring: 2(n-1)/n S; naive: (n-1) S at rank 0)."""
    S = 4 * numel
    rows = []
    for n in world_sizes:
        for r, res in enumerate(launch(bytes_worker, n, numel)):
            for algo in ("ring", "naive"):
                rows.append({"n": n, "algorithm": algo, "rank": r, "S": S,
                             "measured": res[algo][0], "received": res[algo][1],
                             "formula": cost.collective_bytes("all_reduce", S, n, algo, rank=r)})
    return rows


# --- 4. latency and bandwidth of this machine ----------------------------------------

def slower_than_larger(best: dict) -> list:
    """Sizes whose best time exceeds 1.5x the best of a larger size. A message never
    costs less for being larger, so such a size never had a quiet moment."""
    sizes = sorted(best)
    return [s for i, s in enumerate(sizes) if any(best[s] > 1.5 * best[t] for t in sizes[i + 1:])]


def pingpong_worker(sizes: list[int], repeats: int = 30, duplex: bool = False,
                    extra_rounds: int = 3) -> dict | None:
    """Message time between ranks 0 and 1, per size, with the traced send/recv the ring
    is built from.

    ``duplex=False``: ping-pong, one way at a time (half the round trip). ``duplex=True``:
    both send S at once (one ``comm.exchange``, a ring step). Returns size -> (best, median).

    The sizes take turns, one message of each per round: a busy moment on a shared
    machine then spoils one sample of every size instead of every sample of one size,
    and the best of each size comes from a quiet moment. While some size's best is
    still impossible (``slower_than_larger``), up to ``extra_rounds`` more batches of
    ``repeats`` rounds are measured.
    """
    r = dist.get_rank()
    if r > 1:
        return None
    peer = 1 - r
    bufs = {}
    for nbytes in sizes:
        buf = torch.zeros(max(nbytes // 4, 1), dtype=torch.float32)
        bufs[buf.numel() * 4] = (buf, torch.empty_like(buf))

    def once(buf, incoming):
        if duplex:
            comm.exchange(buf, peer, incoming, peer)
        elif r == 0:
            comm.send(buf, peer)
            comm.recv(buf, peer)
        else:
            comm.recv(buf, peer)
            comm.send(buf, peer)

    for pair in bufs.values():
        once(*pair)  # warm-up: the first message of a size sets up buffers
    times = {s: [] for s in bufs}
    order = list(bufs)
    flag = torch.zeros(1)
    for batch in range(1 + extra_rounds):
        for k in range(repeats):
            for s in order[k % len(order):] + order[:k % len(order)]:  # none always follows the largest
                t0 = time.perf_counter()
                once(*bufs[s])
                times[s].append((time.perf_counter() - t0) / (1 if duplex else 2))
        if r == 0:  # rank 0 decides whether to go on, and tells rank 1
            flag[0] = float(batch < extra_rounds and bool(slower_than_larger(
                {s: min(ts) for s, ts in times.items()})))
            comm.send(flag, peer)
        else:
            comm.recv(flag, peer)
        if not flag[0]:
            break
    return {s: (min(ts), statistics.median(ts)) for s, ts in times.items()} if r == 0 else None


def reduce_gamma_worker(nbytes: int = 4 << 20, repeats: int = 20) -> float:
    """Seconds per byte of a local element-wise add (one thread): the gamma term."""
    a, b = torch.ones(nbytes // 4), torch.ones(nbytes // 4)
    times = []
    for _ in range(repeats + 1):  # the first is a warm-up
        t0 = time.perf_counter()
        a.add_(b)
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:]) / nbytes


def all_reduce_timing_worker(sizes: list[int], repeats: int = 15) -> dict:
    """Median and best time of one all-reduce per size: our ring, our naive, torch's.

    The three are interleaved repetition by repetition, so that a noisy moment on
    a shared machine hits all of them alike. Each repetition starts after a barrier
    and counts as long as its slowest rank.
    """
    algos = {"ring (ours)": comm.ring_all_reduce, "naive (ours)": comm.naive_all_reduce,
             "torch": dist.all_reduce}
    times = {name: {} for name in algos}
    for nbytes in sizes:
        x = torch.ones(max(nbytes // 4, 1), dtype=torch.float32)
        for fn in algos.values():
            fn(x)  # warm-up
        for _ in range(repeats):
            for name, fn in algos.items():
                dist.barrier()
                t0 = time.perf_counter()
                fn(x)
                dt = torch.tensor([time.perf_counter() - t0])
                dist.all_reduce(dt, op=dist.ReduceOp.MAX)
                times[name].setdefault(x.numel() * 4, []).append(dt.item())
    return {name: {s: (statistics.median(ts), min(ts)) for s, ts in by_size.items()}
            for name, by_size in times.items()}


ALPHA_BETA_SIZES = [4 << k for k in range(0, 21, 2)]  # 4 B .. 4 MiB
TRUSTED_R2 = 0.9  # below this the points do not follow alpha + size / bandwidth


def measure_alpha_beta(sizes=None, repeats: int = 30, duplex: bool = False,
                       world_size: int = 2) -> dict:
    """Messages between ranks 0 and 1 (see ``pingpong_worker``), fitted to
    time = alpha + size / bandwidth.

    The fit uses the best time per size: the link's cost when nothing else gets in the
    way, as the model describes; the medians (``medians``) add the scheduler's delays. Largest default size 4 MiB: its transfer (~1 ms here) dwarfs
    alpha yet fits in a scheduler time slice. ``world_size`` > 2 only under torchrun.
    """
    sizes = sizes or ALPHA_BETA_SIZES
    times = launch(pingpong_worker, world_size, sizes, repeats, duplex)[0]
    xs = sorted(times)
    best = [times[s][0] for s in xs]
    fit = cost.fit_alpha_beta(xs, best)
    way = "exchange" if duplex else "one way"  # measured here: it goes in the learner's record
    way_zh = "双向同时" if duplex else "单向"
    record.measurement("l00_collectives", f"latency alpha, rank 0 <-> 1 ({way})", fit.alpha * 1e6, "us",
                       f"延迟 alpha，rank 0 <-> 1（{way_zh}）")
    record.measurement("l00_collectives", f"bandwidth, rank 0 <-> 1 ({way})", fit.bandwidth / 1e9, "GB/s",
                       f"带宽，rank 0 <-> 1（{way_zh}）")
    return {"sizes": xs, "times": best, "medians": [times[s][1] for s in xs],
            "alpha": fit.alpha, "beta": fit.beta, "bandwidth": fit.bandwidth, "r2": fit.r2,
            "duplex": duplex}


def fit_verdict(ab: dict, quiet: bool = True) -> str:
    """What to conclude from a ``measure_alpha_beta`` result, in one line: whether the
    best times follow the model (r2, and the point farthest from the fit) and whether
    the machine was quiet (``hardware.timing_note()[0]``)."""
    off = max(max(t / p, p / t) for t, p in
              ((t, ab["alpha"] + s / ab["bandwidth"]) for s, t in zip(ab["sizes"], ab["times"])))
    head = (f"alpha = {ab['alpha'] * 1e6:.0f} us, bandwidth = {ab['bandwidth'] / 1e9:.2f} GB/s "
            f"(r2 = {ab['r2']:.2f}; farthest point {off:.1f}x off the fit)")
    if ab["r2"] < TRUSTED_R2:
        return (f"{head}: do NOT read exact numbers off this fit. r2 < {TRUSTED_R2}: the best "
                "times scatter around alpha + size/B (some sizes never had a quiet moment); "
                "only the orders of magnitude hold. Rerun on a quiet machine.")
    if not quiet:
        return (f"{head}: the points follow the model, but the machine was busy, so alpha may "
                "be too high and B too low.")
    return f"{head}: the points follow the model; read latency and bandwidth off this fit."


def measure_gamma() -> float:
    """Seconds per byte of local reduction, on one rank with one thread."""
    return launch(reduce_gamma_worker, 1)[0]


def all_reduce_vs_model(world_size: int, duplex: dict, oneway: dict, gamma: float = 0.0,
                        sizes=None, repeats: int = 15) -> list[dict]:
    """Measured all-reduce times (median and best of ``repeats``) next to the
    alpha-beta(-gamma) prediction.

    Ring steps are exchanges (every rank sends and receives at once), so the ring
    is predicted with the ``duplex`` fit; the naive root's messages go one way at a
    time, so it is predicted with the ``oneway`` fit (both from measure_alpha_beta).
    torch's gloo all-reduce is measured for comparison and predicted as a ring.
    """
    sizes = sizes or [4 << k for k in range(0, 21, 4)]
    measured = launch(all_reduce_timing_worker, world_size, sizes, repeats)[0]
    model = {"ring (ours)": ("ring", duplex), "naive (ours)": ("naive", oneway),
             "torch": ("ring", duplex)}
    rows = []
    for name, by_size in measured.items():
        algo, fit = model[name]
        for s, (median, best) in sorted(by_size.items()):
            rows.append({"algorithm": name, "n": world_size, "bytes": s, "measured": median,
                         "best": best, "predicted": cost.collective_time("all_reduce", s, world_size,
                                                           fit["alpha"], fit["bandwidth"],
                                                           algo, gamma)})
    return rows


def model_agreement(rows: list[dict], algorithms=("ring (ours)", "naive (ours)")) -> dict:
    """How well the model held in ``all_reduce_vs_model`` rows: the spread of best /
    predicted, and how far the median strays from the best, over ``algorithms``
    (torch's gloo all-reduce is not one of the modelled algorithms)."""
    mine = [r for r in rows if r["algorithm"] in algorithms]
    ratios = sorted(r["best"] / r["predicted"] for r in mine)
    return {"best_over_predicted": (ratios[0], ratios[len(ratios) // 2], ratios[-1]),
            "median_over_best_max": max(r["measured"] / r["best"] for r in mine)}


# --- 5. a traced ring on a real buffer: the timeline ----------------------------------

def ring_timeline_worker(numel: int) -> list[dict]:
    """Trace one ring all-reduce of ``numel`` floats: its exchanges and reductions."""
    x = torch.randn(numel)
    dist.barrier()
    trace.start()
    comm.ring_all_reduce(x)
    return trace.stop()


# --- 6. how the lab runs ranks --------------------------------------------------------

def one_all_reduce_worker() -> float:
    t = torch.ones(1)
    dist.all_reduce(t)
    return t.item()


def time_launches(world_size: int = 4, repeats: int = 5, pause: float = 0.2) -> dict:
    """Seconds for a cold launch (ranks started from nothing) and for warm re-runs
    of a one-all-reduce job on the same ranks, with a short pause before each (as
    between two slider moves)."""
    from parlab.launch import shutdown
    shutdown()
    t0 = time.perf_counter()
    launch(one_all_reduce_worker, world_size)
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeats):
        time.sleep(pause)
        t0 = time.perf_counter()
        launch(one_all_reduce_worker, world_size)
        warm.append(time.perf_counter() - t0)
    return {"cold": cold, "warm": warm, "warm_median": statistics.median(warm)}


def buggy_worker(bug: str):
    """Two classic mistakes, on purpose: ``"raise"`` (rank 1 fails) and ``"hang"``
    (rank 0 skips a collective the others wait in)."""
    r = dist.get_rank()
    x = torch.ones(1)
    if bug == "raise" and r == 1:
        raise ValueError("rank 1 found a bug")
    if bug == "hang" and r == 0:
        return x.item()  # forgot the all-reduce: the other ranks wait for it forever
    comm.all_reduce(x)
    return x.item()


def ring_vs_torch_worker(numel: int) -> float:
    """Largest difference between our ring all-reduce and torch's on random data."""
    x = torch.randn(numel, generator=torch.Generator().manual_seed(dist.get_rank()))
    expected = x.clone()
    dist.all_reduce(expected)
    comm.ring_all_reduce(x)
    return (x - expected).abs().max().item()


def nccl_bus_bandwidth_worker(sizes: list[int], repeats: int = 20) -> dict:
    """On GPUs: nccl-tests style bus bandwidth (bytes/s) of torch's all-reduce per size."""
    n = dist.get_world_size()
    out = {}
    for nbytes in sizes:
        x = torch.ones(nbytes // 4, device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(repeats):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        out[nbytes] = cost.bus_bandwidth("all_reduce", nbytes, n,
                                         (time.perf_counter() - t0) / repeats)
    return out


# section 5, two levels: in experiments_hierarchical.py, re-exported here for the notebook
from .experiments_hierarchical import hierarchical_at_scale, hierarchical_rows, hierarchical_worker
