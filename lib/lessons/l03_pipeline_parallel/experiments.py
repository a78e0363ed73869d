"""Notebook 03's experiments: pure functions over the pipeline runner, the simulator
and the peer, returning plain data that ``figures`` draws."""

from __future__ import annotations

import statistics

from lessons.common.i18n import t
from parlab import cost
from parlab.model import GPT, GPTConfig
from parlab.pipeline_parallel.runner import PipelineResult, PPRun, run
from parlab.pipeline_parallel.schedules import (FIXED_V, Action, make_schedule, placement_of,
                                                simulate, validate)
from parlab.pipeline_parallel.stages import gpt_stages
from lessons.common import record
from .text import TEXT


# ----------------------------------------------------------------------------- for notebook 03

def stage_table(config: GPTConfig, p: int, v: int = 1) -> list[dict]:
    """How the model is cut: per rank and chunk, its virtual stage, blocks, extras
    and parameter count."""
    validate("interleaved" if v > 1 else "1f1b", p, p, v, config.n_layers)
    rows, model = [], GPT(config)
    for rank in range(p):
        for chunk, st in enumerate(gpt_stages(model, p, rank, v)):
            blocks = [int(n.split(".")[1]) for n in st.names if n.startswith("blocks.")]
            first, last = blocks[0], blocks[-1]
            extras = [x for x, on in (("wte, wpe", "embed" in st.names),
                                      ("ln_f, lm_head, loss", "head" in st.names)) if on]
            rows.append(dict(rank=rank, chunk=chunk, stage=chunk * p + rank,
                             blocks=f"{first}..{last}" if last > first else str(first),
                             extras=" + ".join(extras),
                             params=sum(q.numel() for q in st.parameters())))
    return rows


def schedule_tokens(schedule: str, p: int, m: int, v: int = 1) -> list[list[str]]:
    """Each rank's action list as tokens: 'F3' (forward of micro-batch 3), 'B3.1' (backward
    of micro-batch 3 on chunk 1), 'W3' (ZB-H1's weight gradients)."""
    return [list(map(repr, acts)) for acts in make_schedule(schedule, p, m, v)]


def schedule_text(schedule: str, p: int, m: int, v: int = 1) -> list[str]:
    """Each rank's action list as one line, e.g. 'rank 0: F0 F1 F2 F3 B0 ...'."""
    return [f"rank {r}: " + " ".join(tokens)
            for r, tokens in enumerate(schedule_tokens(schedule, p, m, v))]


def schedule_messages(schedule: str, p: int, m: int, v: int = 1) -> int:
    """Messages one step sends between ranks, read off the schedule: every F except the
    last stage's sends its output on, every B except the first stage's sends its input
    gradient back (a message to a chunk on the same rank -- p = 1, or ZB-V's turn -- is
    not sent)."""
    where = placement_of(schedule, p, v, m)
    n = where.n_stages
    return sum((a.op == "F" and s < n - 1 and where.holder(s + 1, a.mb)[0] != r) or
               (a.op == "B" and s > 0 and where.holder(s - 1, a.mb)[0] != r)
               for r, acts in enumerate(make_schedule(schedule, p, m, v))
               for a in acts for s in [where.stage(r, a.chunk, a.mb)])


def reference_check(cases, config: GPTConfig, steps: int = 3, batch_size: int = 8,
                    lr: float = 1e-3, weight_decay: float = 0.0) -> list[dict]:
    """Run each (schedule, p, m, v) for real and compare with model.reference_train:
    largest |difference| of the losses, the last step's gradients and the final
    parameters."""
    from parlab.model import max_differences, reference_train

    ref = reference_train(config, steps, batch_size, lr, weight_decay=weight_decay)
    rows = []
    for schedule, p, m, v in cases:
        r = run(PPRun(config=config, steps=steps, batch_size=batch_size, lr=lr,
                      weight_decay=weight_decay, schedule=schedule, p=p, micro_batches=m, v=v), p)
        d = max_differences(r, ref)
        rows.append(dict(schedule=schedule, p=p, m=m, v=v,
                         loss=d["loss"], grads=d["grad"], params=d["param"]))
    return rows


def message_costs(events: list[dict], p: int, v: int = 1, schedule: str = "1f1b",
                  m: int = 1) -> dict:
    """What this machine added to a measured step, in the simulator's two terms:
    ``t_comm``, a message's latency (from the producer's end to the start of the op
    that was waiting for it, over the ops whose message arrived last), and ``t_gap``,
    a rank's pause between two of its own ops when its input was already there.
    Means over the step's ops (0 when no op of that sort): the idle time adds up along
    the chain of dependencies, so a few slow messages count by what they cost.
    ``schedule``, ``m``: whose placement the stages follow (ZB-V, DualPipe)."""
    where = placement_of(schedule, p, v, m)
    end = {(e["name"], e["meta"]["mb"],
            where.stage(e["rank"], e["meta"]["chunk"], e["meta"]["mb"])): e["end"] for e in events}
    comm, gap = [], []
    for r in range(p):
        mine = sorted((e for e in events if e["rank"] == r), key=lambda e: e["start"])
        for prev, e in zip([None] + mine, mine):
            a = Action(e["name"], e["meta"]["mb"], e["meta"]["chunk"])
            dep = where.dependency(a, r)
            far = dep is not None and where.holder(dep[2], a.mb)[0] != r
            ready = end.get(dep) if far else None
            free = prev["end"] if prev is not None else None
            if ready is not None and (free is None or ready >= free):
                comm.append(e["start"] - ready)
            elif free is not None:
                gap.append(e["start"] - free)
    mean = lambda xs: max(statistics.fmean(xs), 0.0) if xs else 0.0  # noqa: E731
    return dict(t_comm=mean(comm), t_gap=mean(gap))


def measured_bubble(schedule: str, p: int, m: int, v: int = 1, t_fwd: float = 0.02,
                    t_bwd: float = 0.04, repeats: int = 3) -> dict:
    """Emulated-compute run of ``repeats`` + 1 steps; the first (cold) step is dropped.

    ``measured``: the smallest bubble of the other steps. Other processes on the
    machine can only add idle time (a rank that wants to run but has no core), so
    the best step is the closest to what the schedule itself costs; ``median``
    shows the typical step. Beside it: ``formula`` (``cost.bubble_fraction``, None
    for zb-h1), ``simulated`` (the simulator, messages free) and ``simulated_comm``
    (the simulator charged this run's own ``t_comm`` and ``t_gap``, from
    ``message_costs`` of the best step: what the machine adds per message and per op).
    ``*_ratio``: idle / busy instead."""
    # one sequence per micro-batch: the messages are what the default model would send
    r = run(PPRun(schedule=schedule, p=p, micro_batches=m, v=v, batch_size=m, compute="emulated",
                  t_fwd=t_fwd, t_bwd=t_bwd, steps=repeats + 1), p)
    steps = sorted((r.timeline(s) for s in range(1, repeats + 1)),
                   key=lambda t: t.bubble_fraction)
    sim = simulate(schedule, p, m, v, t_fwd, t_bwd)
    costs = message_costs(steps[0].events, p, v, schedule, m)
    with_comm = simulate(schedule, p, m, v, t_fwd, t_bwd, **costs)
    known = schedule in ("gpipe", "1f1b", "interleaved")
    shape = f"P={p} M={m}" + (f" v={v}" if v > 1 else "")
    record.measurement("l03_pipeline_parallel", f"{schedule} bubble, {shape}", 100 * steps[0].bubble_fraction, "%",
                       f"{schedule} 气泡，{shape}")
    return dict(schedule=schedule, p=p, m=m, v=v, measured=steps[0].bubble_fraction,
                median=statistics.median(t.bubble_fraction for t in steps),
                measured_ratio=steps[0].bubble_ratio, simulated=sim.bubble_fraction,
                simulated_comm=with_comm.bubble_fraction, **costs,
                formula=cost.bubble_fraction(p, m, v) if known else None,
                formula_ratio=cost.bubble_ratio(p, m, v) if known else None,
                timeline=steps[0], stash_peak=r.stash_peak)


def bubble_sweep(ps=(2, 4), ms=(1, 2, 4, 8, 16), schedules=("gpipe", "1f1b"),
                 t_fwd: float = 0.02, t_bwd: float = 0.04, repeats: int = 3) -> list[dict]:
    """``measured_bubble`` for every (p, m, schedule); the timelines are dropped."""
    rows = []
    for p in ps:
        for m in ms:
            for schedule in schedules:
                row = measured_bubble(schedule, p, m, 1, t_fwd, t_bwd, repeats)
                row.pop("timeline")
                rows.append(row)
    return rows


def memory_rows(p: int, ms, config: GPTConfig, schedules=("gpipe", "1f1b"),
                checkpoint: bool = False) -> list[dict]:
    """Real runs: per rank, the most micro-batches whose activations were held at once
    and their bytes (measured), with ``cost.pipeline_peak_activations``."""
    rows = []
    for m in ms:
        for schedule in schedules:
            r = run(PPRun(config=config, steps=1, batch_size=m, schedule=schedule, p=p, micro_batches=m,
                          checkpoint=checkpoint), p)
            for rank in range(p):
                rows.append(dict(schedule=schedule, m=m, rank=rank, held=r.stash_peak[rank],
                                 bytes=r.stash_peak_bytes[rank],
                                 formula=cost.pipeline_peak_activations(schedule, p, m, rank)))
    return rows


def message_counts(result: PipelineResult, step: int = 0) -> list[dict]:
    """Per rank: messages sent in one step, their total bytes and the mean compute
    time between two messages (the work a message has to hide behind)."""
    rows = []
    for rank in range(result.p):
        mine = [e for e in result.events if e["rank"] == rank and e["meta"].get("step") == step]
        sends = [e for e in mine if e["name"].startswith("send")]
        busy = sum(e["end"] - e["start"] for e in mine if e["name"] in ("F", "B", "W"))
        rows.append(dict(rank=rank, messages=len(sends), bytes=sum(e["bytes_sent"] for e in sends),
                         compute_per_message=busy / max(len(sends), 1)))
    return rows


def op_times(result: PipelineResult) -> dict:
    """Median duration (s) of each op name over all ranks and steps but the first."""
    out = {}
    for op in ("F", "B", "W"):
        ds = [e["end"] - e["start"] for e in result.events
              if e["name"] == op and e["meta"]["step"] > 0]
        if ds:
            out[op] = statistics.median(ds)
    return out


def micro_batch_choices(schedule: str, p: int, v: int = 2, m_max: int = 16) -> list[int]:
    """The micro-batch counts 1..``m_max`` that ``validate`` accepts for this schedule,
    P and v (interleaved: the multiples of P), so a control can offer only those."""
    v = v if schedule == "interleaved" else FIXED_V.get(schedule, 1)
    ok = []
    for m in range(1, m_max + 1):
        try:
            validate(schedule, p, m, v)
        except ValueError:
            continue
        ok.append(m)
    return ok


def explore(schedule: str, p: int, m: int, v: int = 2, live: bool = False,
            t_fwd: float = 0.03, t_bwd: float = 0.06, m_max: int = 16) -> dict:
    """What the pipeline explorer widget shows: the simulated step (and, if ``live``,
    a measured one in emulated mode, with the simulator charged that run's message
    costs), as ``lines`` of text (``text``: the same, joined). Op times of 30 / 60 ms per rank by default: long next to what a message
    costs on a busy CPU (~1-10 ms), so the schedule, not the machine, sets the shape.
    The lines and the note are in the session's language (``text.TEXT``).

    An ``m`` the schedule cannot take (interleaved needs M divisible by P) is never
    drawn as an error instead of a figure: the nearest M of ``micro_batch_choices``
    is drawn, ``m`` says which, and ``note`` gives the rule that moved it. Any other
    bad choice (an unknown schedule) gives ``error``, ValueError's message."""
    v = v if schedule == "interleaved" else FIXED_V.get(schedule, 1)
    note = ""
    try:
        validate(schedule, p, m, v)
    except ValueError as e:
        # M is what is wrong when other counts work at this schedule, P and v
        choices = micro_batch_choices(schedule, p, v, max(m_max, p))
        if not choices or not isinstance(m, int) or m in choices:
            return dict(error=str(e))
        wanted, m = m, min(choices, key=lambda c: (abs(c - m), c))
        note = t(TEXT, "explore.moved", wanted=wanted, error=e, m=m)
    sim = simulate(schedule, p, m, v, t_fwd, t_bwd)
    first = t(TEXT, "explore.sim", schedule=schedule, p=p, m=m, bubble=sim.bubble_fraction,
              v_part=t(TEXT, "explore.v", v=v) if v > 1 else "")
    if schedule in ("gpipe", "1f1b", "interleaved"):
        first += t(TEXT, "explore.formula", formula=cost.bubble_fraction(p, m, v))
    lines = [first, t(TEXT, "explore.peaks",
                      peaks=",\u00a0".join(map(str, sim.peak_activations)))]
    measured = None
    if live:
        res = measured_bubble(schedule, p, m, v, t_fwd, t_bwd, repeats=1)
        measured = res["timeline"]
        lines += [t(TEXT, "explore.measured", measured=res["measured"], t_fwd=t_fwd * 1e3,
                    t_bwd=t_bwd * 1e3),
                  t(TEXT, "explore.with_comm", t_comm=res["t_comm"] * 1e3,
                    t_gap=res["t_gap"] * 1e3, simulated=res["simulated_comm"])]
    return dict(sim=sim, run=measured, lines=lines, text="; ".join(lines), m=m, note=note)


def interview(sweep: list[dict] | None = None, p: int = 4, m: int = 8) -> dict:
    """The numbers that settle notebook 03's interview claims, keyed (a)..(d) and
    "advice", all from ``cost`` (the formulas the notebook's measurements agreed with);
    given the notebook's ``bubble_sweep`` rows, (b) adds the bubble measured at ``p``, ``m``."""
    out = {"a": dict(p=p, m50=cost.min_micro_batches(p, 0.5), m20=cost.min_micro_batches(p, 0.2)),
           "b": dict(p=p, m=m, ratio=cost.bubble_ratio(p, m), fraction=cost.bubble_fraction(p, m))}
    if sweep:
        out["b"]["measured"] = {r["schedule"]: r["measured"] for r in sweep
                                if (r["p"], r["m"]) == (p, m)}
    out["c"] = dict(rows=[(q, cost.bubble_fraction(q, 4 * q), cost.bubble_ratio(q, 4 * q))
                          for q in (2, 3, 4, 8, 16, 64, 1024)],
                    m_fraction=cost.min_micro_batches(p, 0.15),
                    m_ratio=cost.min_micro_batches(p, 0.15, normalisation="ratio"))
    out["d"] = {k: (cost.pipeline_peak_activations("gpipe", p, k),
                    cost.pipeline_peak_activations("1f1b", p, k)) for k in (4, 8, 16)}
    # the worst idle share at M = kP over P = 1 .. 4096: (P-1)/((k+1)P-1) grows with P
    # (towards 1/(k+1)), so the deepest pipeline is the worst
    out["advice"] = {k: (4096, cost.bubble_fraction(4096, k * 4096)) for k in (4, 8)}
    return out
