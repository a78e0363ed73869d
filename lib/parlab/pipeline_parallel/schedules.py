"""Pipeline schedules as data, and a simulator that replays them instantly.

A *schedule* says, for every rank, the order of the compute ops it runs:
``Action(op, mb, chunk)`` with op "F" (forward), "B" (backward) and, for the
zero-bubble schedules, "W" (weight gradients; "B" then computes the input gradient
only). ``chunk`` is the rank's local model chunk: with ``v`` chunks per rank,
chunk c of rank r is *virtual stage* c * p + r (Narayanan et al. 2021a, §2.2.2);
ZB-V, DualPipeV and DualPipe place their stages otherwise (``placement.py``). GPipe, 1F1B,
interleaved and ZB-H1 are built here; ZB-H2, ZB-V, DualPipeV and DualPipe in
``schedules_zb.py``.

References: Huang et al., "GPipe", NeurIPS 2019; Narayanan et al. 2021a,
"Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", SC 2021; Narayanan et al. 2021b, "Memory-Efficient Pipeline-Parallel
DNN Training" (PipeDream-Flush), ICML 2021; Qi et al., "Zero Bubble Pipeline
Parallelism", ICLR 2024.

The data dependencies are the same for every schedule (``dependency``): F of a
micro-batch on stage s needs F on stage s - 1; B on stage s needs B on stage s + 1
(the last stage: its own F, through the loss); W needs its own B. ``replay``
starts every op as soon as its rank is free and its input has arrived, so it
gives the timeline a schedule implies for given op durations, or reports that it
deadlocks. ``parlab.pipeline_parallel`` runs the same lists on real ranks.

Pure Python: no torch needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..cost import PIPELINE_SCHEDULES  # one list, defined with the formulas
from ..validate import check_int
from .placement import Action, Placement, check_actions
from .schedules_zb import dualpipe, dualpipev, zb_h2, zb_v


SPLIT_BACKWARD = ("zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev")  # B, W apart (Qi §2)
FIXED_V = {"zb-v": 2, "dualpipe": 2, "dualpipev": 2}  # chunks per rank these placements have


def placement_of(schedule: str, p: int, v: int = 1, m: int = 1) -> Placement:
    """Where ``schedule``'s stages live (``placement.py``): a V for ZB-V and DualPipeV, two
    directions for DualPipe, round-robin (chunk c of rank r = stage c p + r) for the others."""
    kind = {"zb-v": "v", "dualpipev": "v", "dualpipe": "dual"}.get(schedule, "round-robin")
    return Placement(kind, p, v, m)


# ----------------------------------------------------------------------------- checks

def validate(schedule: str, p: int, m: int, v: int = 1, n_layers: int | None = None,
             batch_size: int | None = None) -> None:
    """Raise ValueError naming the broken constraint, before any process starts."""
    if schedule not in PIPELINE_SCHEDULES:
        raise ValueError(f"schedule={schedule!r} must be one of {PIPELINE_SCHEDULES}")
    p = check_int("p", p)
    m = check_int("micro_batches", m)
    v = check_int("v", v)
    if schedule == "interleaved":
        if v < 2:
            raise ValueError(f"interleaved needs v >= 2 model chunks per rank, got v={v}")
        if m % p:  # Megatron-LM's requirement: micro-batches go round in groups of p
            raise ValueError(f"interleaved 1F1B needs micro_batches divisible by p: "
                             f"micro_batches={m}, p={p}")
    elif schedule in FIXED_V:
        if v != FIXED_V[schedule]:
            raise ValueError(f"{schedule} places exactly v={FIXED_V[schedule]} chunks per "
                             f"rank, got v={v}")
        if schedule == "dualpipe" and (m % 2 or p % 2):
            raise ValueError(f"dualpipe feeds half the micro-batches from each end and pairs "
                             f"rank r with rank p - 1 - r: micro_batches={m} and p={p} must be even")
        if schedule == "dualpipev" and m < 2 * p:  # torch's ScheduleDualPipeV's rule too
            raise ValueError(f"dualpipev runs at least one steady pair on every rank: "
                             f"micro_batches={m} must be >= 2p = {2 * p}")
    elif v != 1:
        raise ValueError(f"v={v} model chunks per rank only exist for 'interleaved', "
                         f"'zb-v', 'dualpipe' and 'dualpipev', not {schedule!r} (use v=1)")
    n = p if schedule == "dualpipe" else p * v
    if n_layers is not None and n > n_layers:
        raise ValueError(f"{n} stages (p={p}, v={v}) need at least one layer each, "
                         f"but n_layers={n_layers}")
    if batch_size is not None and (check_int("batch_size", batch_size) < m or batch_size % m):
        raise ValueError(f"batch_size={batch_size} must be divisible by micro_batches={m} "
                         f"(at least one sequence each)")


# ----------------------------------------------------------------------------- schedules

def _gpipe(p, m):
    """All forwards, then all backwards (Huang et al. 2019, §2.2; its bubble, §2.3).
    Each rank holds the activations of all m micro-batches at its peak."""
    return [[Action("F", i, 0) for i in range(m)] + [Action("B", i, 0) for i in range(m)]
            for _ in range(p)]


def _1f1b(p, m):
    """1F1B, i.e. PipeDream-Flush (Narayanan et al. 2021b; 2021a §2.2.1): rank r runs p - r - 1
    warm-up forwards, then alternates one forward and one backward, then drains.
    Same bubble as GPipe; at most p - r micro-batches in flight instead of m."""
    out = []
    for r in range(p):
        warmup = min(p - r - 1, m)
        acts = [Action("F", i, 0) for i in range(warmup)]
        for i in range(m - warmup):                     # steady state: 1F, 1B
            acts += [Action("F", warmup + i, 0), Action("B", i, 0)]
        acts += [Action("B", i, 0) for i in range(m - warmup, m)]  # cool-down
        out.append(acts)
    return out


def _interleaved(p, m, v):
    """Interleaved 1F1B (Narayanan et al. 2021a, §2.2.2), in Megatron-LM's order:
    micro-batches go through the v chunks in groups of p. The k-th forward of a
    rank is micro-batch (k // (p v)) p + k % p on chunk (k // p) % v; backwards
    visit the chunks in reverse. Warm-up: 2 (p - r - 1) + (v - 1) p forwards.
    (Megatron runs all forwards first when m == p; it posts blocking send/recv
    pairs. Our sends never block, so the general rule is safe there too.)"""
    total = m * v

    def nth(k, backward):
        chunk = (k // p) % v
        return (k // (p * v)) * p + k % p, (v - 1 - chunk if backward else chunk)

    out = []
    for r in range(p):
        warmup = min(2 * (p - r - 1) + (v - 1) * p, total)
        acts = [Action("F", *nth(k, False)) for k in range(warmup)]
        for k in range(total - warmup):
            acts += [Action("F", *nth(warmup + k, False)), Action("B", *nth(k, True))]
        acts += [Action("B", *nth(k, True)) for k in range(total - warmup, total)]
        out.append(acts)
    return out


def _zb_h1(p, m):
    """ZB-H1 (Qi et al. 2024, §2.1). Backward is split: B computes the input
    gradient (the previous stage is waiting for it), W the weight gradients
    (nobody waits). The F/B order is 1F1B's; rank r
    starts its W passes r slots late, so every rank holds at most p micro-batches
    (1F1B's peak, on rank 0) and the late W's fill the cool-down. With equal
    T_F = T_B = T_W the bubble is (p-1)(T_F + T_B - T_W): a third of 1F1B's."""
    out = []
    for r in range(p):
        warmup = min(p - r - 1, m)
        acts = [Action("F", i, 0) for i in range(warmup)]
        n_w = 0
        for i in range(m - warmup):
            acts += [Action("F", warmup + i, 0), Action("B", i, 0)]
            if i >= r:
                acts.append(Action("W", n_w, 0))
                n_w += 1
        for i in range(m - warmup, m):
            acts.append(Action("B", i, 0))
            if n_w <= i:  # a W to run while the next gradient is on its way
                acts.append(Action("W", n_w, 0))
                n_w += 1
        acts += [Action("W", i, 0) for i in range(n_w, m)]
        out.append(acts)
    return out


def make_schedule(schedule: str, p: int, m: int, v: int = 1) -> list[list[Action]]:
    """Per-rank ordered action lists for ``schedule`` in PIPELINE_SCHEDULES, checked by
    ``placement.check_actions``."""
    validate(schedule, p, m, v)
    build = {"gpipe": _gpipe, "1f1b": _1f1b, "zb-h1": _zb_h1, "zb-h2": zb_h2, "zb-v": zb_v,
             "dualpipe": dualpipe, "dualpipev": dualpipev}
    actions = _interleaved(p, m, v) if schedule == "interleaved" else build[schedule](p, m)
    check_actions(actions, placement_of(schedule, p, v, m))  # each op once, in an order that runs
    return actions


def dependency(a: Action, rank: int, p: int, n_stages: int, where: Placement | None = None):
    """(op, micro-batch, virtual stage) whose result ``a`` on ``rank`` must wait for,
    or None. F waits for the previous stage's F; B for the next stage's B (the last
    stage for its own F: the loss); W for its own B. ``where``: the placement
    (default round-robin, n_stages / p chunks per rank)."""
    where = where or Placement("round-robin", p, n_stages // p)
    return where.dependency(a, rank)


# ----------------------------------------------------------------------------- simulator

@dataclass
class Timeline:
    """A pipeline step as events (simulated or measured) and what they imply."""
    events: list[dict]            # trace-style dicts: rank, kind, name (F/B/W), start, end, meta
    p: int
    bubble_fraction: float        # idle / (p x makespan), all ranks together
    bubble_ratio: float           # idle / busy: the bubble over the ideal (bubble-free) time
    makespan: float
    peak_activations: list[int] = field(default_factory=list)  # per rank, see simulate()

    @property
    def rank_idle(self) -> list[float]:
        """Per rank: idle time between its own first op's start and last op's end --
        what Qi et al. (2024, §2.3, Table 2) call a schedule's bubble: with the optimizer
        step not synchronising the stages, the next step's ops fill the rest."""
        out = []
        for r in range(self.p):
            mine = [e for e in self.events if e["rank"] == r and e["name"] in ("F", "B", "W")]
            out.append(max(e["end"] for e in mine) - min(e["start"] for e in mine)
                       - sum(e["end"] - e["start"] for e in mine) if mine else 0.0)
        return out


def bubble(events: list[dict], p: int) -> tuple[float, float, float]:
    """(idle / total, idle / busy, makespan) of one step's compute events.

    makespan = last op end - first op start over all ranks; busy = the summed
    duration of the F/B/W ops; idle = p x makespan - busy. The same definition
    serves the simulator and the measured runs."""
    ops = [e for e in events if e["name"] in ("F", "B", "W")]
    makespan = max(e["end"] for e in ops) - min(e["start"] for e in ops)
    busy = sum(e["end"] - e["start"] for e in ops)
    idle = p * makespan - busy
    return idle / (p * makespan), idle / busy, makespan


def peak_in_flight(actions: list[Action]) -> int:
    """Most (micro-batch, chunk) pairs whose activations a rank holds at once: from
    the start of their F to the end of their last backward op (W if any, else B)."""
    frees = "W" if any(a.op == "W" for a in actions) else "B"
    held = 0
    peak = 0
    for a in actions:
        held += 1 if a.op == "F" else -1 if a.op == frees else 0
        peak = max(peak, held)
    return peak


def replay(actions: list[list[Action]], p: int, v: int, durations: dict,
           t_comm: float = 0.0, t_gap: float = 0.0, where: Placement | None = None) -> list[dict]:
    """Start every op as soon as its rank is free and its input has arrived
    (``t_comm`` after the producer ended, when that is on another rank: a message's
    latency). ``t_gap``: what a rank spends between two of its own ops even when the
    input is there (posting messages, bookkeeping); it counts as idle, like t_comm.
    ``where``: the stages' placement (default round-robin)."""
    where = where or Placement("round-robin", p, v)
    done = {}
    events = []
    pos = [0] * p
    free = [0.0] * p
    progress = True
    while progress:
        progress = False
        for r in range(p):
            while pos[r] < len(actions[r]):
                a = actions[r][pos[r]]
                dep = where.dependency(a, r)
                s = where.stage(r, a.chunk, a.mb)
                if dep is not None and dep not in done:
                    break  # another rank must get further first
                far = dep is not None and where.holder(dep[2], a.mb)[0] != r
                ready = 0.0 if dep is None else done[dep] + (t_comm if far else 0)
                start = max(free[r] + (t_gap if pos[r] else 0.0), ready)
                free[r] = done[(a.op, a.mb, s)] = start + durations[a.op]
                events.append(dict(rank=r, kind="compute", name=a.op, start=start, end=free[r],
                                   bytes_sent=0, bytes_recv=0, bytes_modelled=False,
                                   meta=dict(mb=a.mb, chunk=a.chunk, stage=s)))
                pos[r] += 1
                progress = True
    if any(pos[r] < len(actions[r]) for r in range(p)):
        stuck = {r: actions[r][pos[r]] for r in range(p) if pos[r] < len(actions[r])}
        raise RuntimeError(f"schedule deadlocks: ranks wait forever at {stuck}")
    return events


def op_durations(schedule: str, v: int, t_fwd: float, t_bwd: float) -> dict:
    """Per-op durations: t_fwd / t_bwd are one micro-batch through all of a rank's
    layers, so a chunk takes 1/v of them; ZB-H1 splits t_bwd equally into B and W
    (the paper's T_B = T_W), as do the other zero-bubble schedules."""
    v = 1 if schedule == "dualpipe" else v  # a micro-batch meets one chunk per rank
    if schedule in SPLIT_BACKWARD:
        return {"F": t_fwd / v, "B": t_bwd / 2 / v, "W": t_bwd / 2 / v}
    return {"F": t_fwd / v, "B": t_bwd / v}


def simulate(schedule: str, p: int, m: int, v: int = 1, t_fwd: float = 1.0,
             t_bwd: float = 2.0, t_comm: float = 0.0, t_gap: float = 0.0,
             durations: dict | None = None) -> Timeline:
    """Replay ``schedule`` instantly (see ``op_durations`` for what t_fwd, t_bwd mean;
    ``durations``, e.g. {"F": 1, "B": 1, "W": 0.5}, replaces them).

    ``.bubble_fraction``: idle share of p x makespan (``bubble``); for GPipe, 1F1B
    and interleaved it equals ``cost.bubble_fraction(p, m, v)`` when t_comm = t_gap = 0.
    ``t_comm``: each message's latency; ``t_gap``: a rank's pause between two ops (see
    ``replay``). Interleaving sends v times more messages along a v times longer
    chain of dependencies, so it pays t_comm v times more often than 1F1B.
    ``.peak_activations[r]``: the most micro-batches (for interleaved: micro-batch x
    chunk pairs, each 1/v of the rank's layers) whose activations rank r holds at
    once. ``.events``: the timeline, in the units of t_fwd."""
    actions = make_schedule(schedule, p, m, v)
    durations = durations or op_durations(schedule, v, t_fwd, t_bwd)
    events = replay(actions, p, v, durations, t_comm, t_gap,
                    placement_of(schedule, p, v, m))
    fraction, ratio, makespan = bubble(events, p)
    return Timeline(events, p, fraction, ratio, makespan, [peak_in_flight(a) for a in actions])
