"""The orders torch itself plays for the V schedules, read off and simulated beside ours.

Our ZB-V and DualPipe orders (schedules_zb.py) are played by a simple greedy rule.
PyTorch ships hand-written ones: ``ScheduleZBVZeroBubble`` (Qi et al.'s ZB-V) and
``ScheduleDualPipeV``, DualPipe (DeepSeek-AI, "DeepSeek-V3 Technical Report", §3.2.1)
cut in half: DeepSeek's bidirectional order folded onto one copy of the model in a V
(Sea AI Lab's "cut-in-half"; its bubble row is in the DualPipe repository's README,
github.com/deepseek-ai/DualPipe, not in the report's Table 2). Each builds a per-rank list of actions in ``pipeline_order`` when constructed; we
read it on p real ranks (``torch_v_order``) and translate it into our actions on ZB-V's
V placement (rank r holds stages r and 2p - 1 - r):

  torch F   -> F             torch I (input gradient) -> B
  torch W   -> W             torch B (full backward)  -> B, W
  OVERLAP_F_B (one chunk's F and another's full backward, issued together so that
  each one's communication hides behind the other's compute) -> F, B, W in a row

so our simulator (``schedules.replay``) can time it at T_F = T_B = T_W. The simulator
runs a rank's ops one after another: an overlapped F&B costs F + B + W here, which is
what it costs on compute; DeepSeek's gain from it is hidden communication, which a
zero-latency simulation has none of. ``replay`` starts each half of a pair as soon as
its own input is there; ``replay_whole`` keeps a pair whole (one unit, started once
both halves' inputs are there), as the bubble row that the DualPipe README gives
DualPipeV, (PP/2 - 1)(F&B + B - 3W), prices it.
"""

from __future__ import annotations

from .experiments_zb import EQUAL
from parlab import cost
from parlab.pipeline_parallel.placement import Action, Placement
from parlab.pipeline_parallel.schedules import Timeline, bubble, peak_in_flight, replay

TORCH_V = {"torch-zbv": "ScheduleZBVZeroBubble", "torch-dualpipev": "ScheduleDualPipeV"}


def order_worker(cls_name: str, p: int, m: int) -> list | None:
    """On each of p ranks: two tiny stages in the V, torch's schedule built on them, and
    (rank 0) its ``pipeline_order`` as plain tuples (stage, kind, micro-batch, subs)."""
    import torch
    import torch.distributed as dist
    from torch.distributed import pipelining
    from torch.distributed.pipelining import schedules

    r = dist.get_rank()
    stages = [pipelining.PipelineStage(torch.nn.Linear(2, 2), s, 2 * p, torch.device("cpu"))
              for s in (r, 2 * p - 1 - r)]
    sched = getattr(schedules, cls_name)(stages, m, loss_fn=lambda out, y: out.sum())
    if r != 0:
        return None

    def plain(a):
        subs = tuple(plain(s) for s in (a.sub_actions or ()))
        return (a.stage_index, a.computation_type.value, a.microbatch_index, subs)
    return [[plain(a) for a in sched.pipeline_order[k] if a is not None] for k in range(p)]


def to_units(order: list, p: int) -> list[list[tuple[Action, ...]]]:
    """torch's per-rank order -> our F/B/W actions on the V (see the module doc), grouped
    in units: an OVERLAP_F_B pair is one unit (its F, B, W), any other action its own."""
    out = []
    for rank, acts in enumerate(order):
        units = []

        def add(stage, kind, mb, subs):
            if kind == "OVERLAP_F_B":  # a pair, no stage of its own
                for sub in subs:
                    add(*sub)
                return
            if stage not in (rank, 2 * p - 1 - rank):
                raise ValueError(f"rank {rank} holds stages {rank} and {2 * p - 1 - rank}, "
                                 f"torch's order runs stage {stage}")
            chunk = 0 if stage == rank else 1
            if kind == "B":
                mine.extend([Action("B", mb, chunk), Action("W", mb, chunk)])
            elif kind in ("F", "W"):
                mine.append(Action(kind, mb, chunk))
            elif kind == "I":
                mine.append(Action("B", mb, chunk))
            else:
                raise ValueError(f"unexpected action {kind!r} in torch's order")
        for a in acts:
            mine = []
            add(*a)
            units.append(tuple(mine))
        out.append(units)
    return out


def to_actions(order: list, p: int) -> list[list[Action]]:
    """torch's per-rank order -> our F/B/W actions on the V, one after another."""
    return [[a for unit in units for a in unit] for units in to_units(order, p)]


def torch_v_order(name: str, p: int, m: int, timeout: float = 60.0,
                  units: bool = False) -> list[list[Action]]:
    """torch's order of ``name`` ("torch-zbv" or "torch-dualpipev") for p ranks and m
    micro-batches, as our actions on the V (p ranks are started to read it); ``units``:
    grouped as ``to_units`` groups them."""
    from parlab.launch import launch
    from parlab.validate import check_int
    if name not in TORCH_V:
        raise ValueError(f"name={name!r} must be one of {', '.join(TORCH_V)}")
    p, m = check_int("p", p, 2), check_int("m", m, 1)
    if name == "torch-dualpipev" and m < 2 * p:
        raise ValueError(f"m={m}: torch's ScheduleDualPipeV needs m >= 2p = {2 * p}")
    order = launch(order_worker, p, TORCH_V[name], p, m, timeout=timeout)[0]
    return to_units(order, p) if units else to_actions(order, p)


def simulate_order(actions: list[list[Action]], p: int, m: int) -> dict:
    """An order on the V, replayed at T_F = T_B = T_W = 1: the most idle time on a rank
    (between its own first and last op), the idle share of the step, the peak
    activations in micro-batches' worth (two half-size chunks make one) and the
    makespan."""
    events = replay(actions, p, 2, EQUAL, where=Placement("v", p, 2, m))
    t = Timeline(events, p, *bubble(events, p), [peak_in_flight(a) for a in actions])
    return dict(idle=max(t.rank_idle), step=t.bubble_fraction, makespan=t.makespan,
                peak=max(t.peak_activations) / 2)


def replay_whole(units: list[list[tuple[Action, ...]]], p: int, m: int) -> dict:
    """An order on the V in units (``to_units``), each unit run whole at T_F = T_B = T_W
    = 1: it starts once its rank is free and every input its ops wait for from outside
    the unit has arrived, and lasts the sum of its ops (an overlapped pair: F + B + W of
    compute, as DeepSeek's F&B). What ``simulate_order`` returns, and ``rank_idle``,
    each rank's idle time."""
    where = Placement("v", p, 2, m)
    done, pos, free = {}, [0] * p, [0.0] * p
    first, busy = [None] * p, [0.0] * p
    progress = True
    while progress:
        progress = False
        for r in range(p):
            while pos[r] < len(units[r]):
                unit = units[r][pos[r]]
                own = {(a.op, a.mb, where.stage(r, a.chunk, a.mb)) for a in unit}
                needs = {where.dependency(a, r) for a in unit} - own - {None}
                if any(d not in done for d in needs):
                    break  # another rank must get further first
                start = max([free[r], *(done[d] for d in needs)])
                length = sum(EQUAL[a.op] for a in unit)
                free[r] = start + length
                done.update((key, free[r]) for key in own)
                first[r] = start if first[r] is None else first[r]
                busy[r] += length
                pos[r] += 1
                progress = True
    if any(pos[r] < len(units[r]) for r in range(p)):
        raise RuntimeError(f"order deadlocks with its pairs whole: ranks stop at {pos}")
    idle = [free[r] - first[r] - busy[r] for r in range(p)]
    makespan = max(free)
    peak = max(peak_in_flight([a for unit in rank for a in unit]) for rank in units) / 2
    return dict(idle=max(idle), step=1 - sum(busy) / (p * makespan), makespan=makespan,
                peak=peak, rank_idle=idle)


def readme_row(p: int) -> float:
    """The DualPipe README's DualPipeV bubble, (PP/2 - 1)(F&B + B - 3W), for p ranks
    (PP = 2p stages) at T_F = T_B = T_W = 1 with nothing overlapped: F&B = F + B = 3,
    B (full backward) = 2, W = 1."""
    return cost.dualpipe_bubble(2 * p, 3.0, 2.0, 1.0)


def torch_v_rows(p: int = 4, m: int = 8) -> list[dict]:
    """Our ZB-V order beside torch's ZB-V and torch's DualPipeV, simulated alike, and
    DualPipeV once more with its overlapped pairs kept whole, beside the README's row."""
    from parlab.pipeline_parallel.schedules_zb import zb_v
    rows = [dict(order="ours: zb-v", **simulate_order(zb_v(p, m), p, m), readme=None)]
    for name in TORCH_V:
        if name == "torch-dualpipev" and m < 2 * p:
            continue
        rows.append(dict(order=name, **simulate_order(torch_v_order(name, p, m), p, m),
                         readme=readme_row(p) if name == "torch-dualpipev" else None))
    if m >= 2 * p:
        whole = replay_whole(torch_v_order("torch-dualpipev", p, m, units=True), p, m)
        rows.append(dict(order="torch-dualpipev, pairs whole",
                         **{k: whole[k] for k in ("idle", "step", "makespan", "peak")},
                         readme=readme_row(p)))
    return rows
