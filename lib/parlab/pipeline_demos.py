"""Notebook 03's experiments: pure functions over ``pipeline_parallel`` and a peer.

The peer is ``torch.distributed.pipelining`` (``ScheduleGPipe``, ``Schedule1F1B``,
``ScheduleInterleaved1F1B``) driving the very same ``Stage`` modules, so its losses
and parameters can be compared with ours number for number, and its step time
measured beside ours.
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist

from . import cost
from . import pipeline_parallel as pp
from .model import GPTConfig, loss_fn

TORCH_SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
                   "interleaved": "ScheduleInterleaved1F1B"}


def torch_pipeline_worker(schedule, p, m, v, config, steps, batch_size, lr, seed,
                          data_seed) -> dict:
    """One rank training with torch.distributed.pipelining on our stages."""
    from torch.distributed import pipelining

    from .data import get_batch

    torch.set_num_threads(1)
    rank = dist.get_rank()
    chunks = pp.build_stages(config, p, rank, v, seed)
    stages = [pipelining.PipelineStage(c, k * p + rank, p * v, torch.device("cpu"))
              for k, c in enumerate(chunks)]
    cls = getattr(pipelining, TORCH_SCHEDULES[schedule])
    # scale_grads=True (default): gradients are divided by m, i.e. the mean loss.
    sched = cls(stages if schedule == "interleaved" else stages[0], m, loss_fn=loss_fn)
    params = [q for c in chunks for q in c.parameters()]
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    first, last = chunks[0].first, any(c.last for c in chunks)
    losses, times = [], []
    for step in range(steps):
        x, y = get_batch(step, batch_size, config.seq_len, config.vocab_size, seed=data_seed)
        mb_losses = []
        dist.barrier()
        t0 = time.perf_counter()
        sched.step(*([x] if first else []), target=y if last else None,
                   losses=mb_losses if last else None)
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append((t0, time.perf_counter()))
        if last:
            losses.append(sum(t.item() for t in mb_losses) / m)
    return dict(losses=losses if last else None, times=times,
                state_dict={n: t.detach().clone() for c in chunks
                            for n, t in c.state_dict().items()})


def torch_run(schedule: str, p: int, m: int, v: int = 1, *, config: GPTConfig | None = None,
              steps: int = 1, batch_size: int | None = None, lr: float = 1e-3, seed: int = 0,
              data_seed: int = 0, timeout: float = 120.0) -> dict:
    """The peer: same model split, data and optimizer, torch's schedule. Returns
    {"losses", "state_dict", "step_times"} like ``pp.run``."""
    from .launch import launch

    config = config or GPTConfig()
    batch_size = m if batch_size is None else batch_size
    if schedule not in TORCH_SCHEDULES:
        raise ValueError(f"schedule={schedule!r}: the peer has {sorted(TORCH_SCHEDULES)}")
    pp.validate(schedule, p, m, v, config.n_layers, batch_size)
    out = launch(torch_pipeline_worker, p, schedule, p, m, v, config, steps, batch_size, lr,
                 seed, data_seed, timeout=timeout, backend="gloo")
    return dict(losses=next(r["losses"] for r in out if r["losses"] is not None),
                state_dict={k: t for r in out for k, t in r["state_dict"].items()},
                step_times=[max(r["times"][s][1] for r in out) - min(r["times"][s][0] for r in out)
                            for s in range(steps)])


# ----------------------------------------------------------------------------- for notebook 03

def stage_table(config: GPTConfig, p: int, v: int = 1) -> list[dict]:
    """How the model is cut: per rank and chunk, its virtual stage, blocks, extras
    and parameter count."""
    pp.validate("interleaved" if v > 1 else "1f1b", p, p, v, config.n_layers)
    rows = []
    for rank in range(p):
        for chunk, st in enumerate(pp.build_stages(config, p, rank, v)):
            names = list(st.blocks)
            first, last = int(names[0]), int(names[-1])
            extras = [x for x, on in (("wte, wpe", st.first), ("ln_f, lm_head, loss", st.last)) if on]
            rows.append(dict(rank=rank, chunk=chunk, stage=chunk * p + rank,
                             blocks=f"{first}..{last}" if last > first else str(first),
                             extras=" + ".join(extras),
                             params=sum(q.numel() for q in st.parameters())))
    return rows


def schedule_text(schedule: str, p: int, m: int, v: int = 1) -> list[str]:
    """Each rank's action list as one line, e.g. 'rank 0: F0 F1 F2 F3 B0 ...'."""
    return [f"rank {r}: " + " ".join(map(repr, acts))
            for r, acts in enumerate(pp.make_schedule(schedule, p, m, v))]


def reference_check(cases, config: GPTConfig, steps: int = 3, batch_size: int = 8,
                    lr: float = 1e-3) -> list[dict]:
    """Run each (schedule, p, m, v) for real and compare with model.reference_train:
    largest |difference| of the losses, the last step's gradients and the final
    parameters."""
    from .model import max_differences, reference_train

    ref = reference_train(config, steps, batch_size, lr)
    rows = []
    for schedule, p, m, v in cases:
        r = pp.run(schedule, p, m, v, config=config, steps=steps, batch_size=batch_size, lr=lr)
        d = max_differences({"losses": r.losses, "grads": r.grads, "state_dict": r.state_dict}, ref)
        rows.append(dict(schedule=schedule, p=p, m=m, v=v,
                         loss=d["loss"], grads=d["grad"], params=d["param"]))
    return rows


def measured_bubble(schedule: str, p: int, m: int, v: int = 1, t_fwd: float = 0.02,
                    t_bwd: float = 0.04, repeats: int = 3) -> dict:
    """Emulated-compute run of ``repeats`` + 1 steps; the first (cold) step is dropped.

    ``measured``: the smallest bubble of the other steps. Other processes on the
    machine can only add idle time (a rank that wants to run but has no core), so
    the best step is the closest to what the schedule itself costs; ``median``
    shows the typical step. Both next to ``cost.bubble_fraction`` (``formula``,
    None for zb-h1) and to the simulator. ``*_ratio``: idle / busy instead."""
    r = pp.run(schedule, p, m, v, compute="emulated", t_fwd=t_fwd, t_bwd=t_bwd,
               steps=repeats + 1)
    steps = sorted((r.timeline(s) for s in range(1, repeats + 1)),
                   key=lambda t: t.bubble_fraction)
    sim = pp.simulate(schedule, p, m, v, t_fwd, t_bwd)
    known = schedule != "zb-h1"
    return dict(schedule=schedule, p=p, m=m, v=v, measured=steps[0].bubble_fraction,
                median=statistics.median(t.bubble_fraction for t in steps),
                measured_ratio=steps[0].bubble_ratio, simulated=sim.bubble_fraction,
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
            r = pp.run(schedule, p, m, config=config, batch_size=m, checkpoint=checkpoint)
            for rank in range(p):
                rows.append(dict(schedule=schedule, m=m, rank=rank, held=r.stash_peak[rank],
                                 bytes=r.stash_peak_bytes[rank],
                                 formula=cost.pipeline_peak_activations(schedule, p, m, rank)))
    return rows


def message_counts(result: pp.RunResult, step: int = 0) -> list[dict]:
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


def op_times(result: pp.RunResult) -> dict:
    """Median duration (s) of each op name over all ranks and steps but the first."""
    out = {}
    for op in ("F", "B", "W"):
        ds = [e["end"] - e["start"] for e in result.events
              if e["name"] == op and e["meta"]["step"] > 0]
        if ds:
            out[op] = statistics.median(ds)
    return out


def explore(schedule: str, p: int, m: int, v: int = 2, live: bool = False,
            t_fwd: float = 0.01, t_bwd: float = 0.02) -> dict:
    """What the pipeline explorer widget shows: the simulated step (and, if ``live``,
    a measured one in emulated mode) or the ValueError's message for a bad choice."""
    v = v if schedule == "interleaved" else 1
    try:
        pp.validate(schedule, p, m, v)
    except ValueError as e:
        return dict(error=str(e))
    sim = pp.simulate(schedule, p, m, v, t_fwd, t_bwd)
    text = (f"{schedule}, P={p}, M={m}" + (f", v={v}" if v > 1 else "") +
            f": simulated bubble {sim.bubble_fraction:.1%} of the step")
    if schedule != "zb-h1":
        text += f" (formula {cost.bubble_fraction(p, m, v):.1%})"
    text += "; peak micro-batches held per rank [" + ",\u00a0".join(map(str, sim.peak_activations)) + "]"
    run = None
    if live:
        res = measured_bubble(schedule, p, m, v, t_fwd, t_bwd, repeats=1)
        run = res["timeline"]
        text += (f"; measured bubble {res['measured']:.1%} "
                 f"(emulated, {t_fwd * 1e3:g}/{t_bwd * 1e3:g} ms)")
    return dict(sim=sim, run=run, text=text)

