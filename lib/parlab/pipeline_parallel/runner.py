"""One pipeline-parallel run, in the lab's run convention:

    result = pipeline_parallel.run(PPRun(config=GPTConfig(...), steps=3, batch_size=8,
                                         schedule="1f1b", p=2, m=4), world_size=2)

``PPRun.check`` refuses bad input before any process starts; ``pipeline_worker`` is
what each rank executes (on any process group: a pipeline can be one axis of a
bigger job); ``collect`` turns the ranks' returns into a ``PipelineResult``."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from .. import trace
from ..runs import RunResult, TrainRun
from ..validate import check_bool, check_choice, check_float
from .compute import ActivationProbe, EmulatedCompute, RealCompute
from .executor import PipelineExecutor
from .schedules import Timeline, bubble, op_durations, validate
from .stages import build_stages

COMPUTE = ("real", "emulated")


@dataclass(frozen=True)
class PPRun(TrainRun):
    """A pipeline run: ``schedule`` (one of ``SCHEDULES``) over ``p`` stages (one per
    rank; ``v`` model chunks per rank for "interleaved"), the global batch of
    ``batch_size`` sequences cut into ``m`` equal micro-batches.

    ``compute="real"`` trains the model exactly as ``model.reference_train`` does
    (AdamW(lr, betas=(0.9, 0.95), weight_decay)); ``"emulated"`` replaces each F / B / W
    by a sleep of its ``op_durations`` (``t_fwd``, ``t_bwd``: seconds for one
    micro-batch through all of a rank's layers) while real activation-sized messages
    still flow, so the timeline shows the schedule's shape even with more ranks than
    cores. ``checkpoint``: recompute each block in backward (real compute only)."""
    schedule: str = "1f1b"
    p: int = 2
    m: int = 4
    v: int = 1
    compute: str = "real"
    t_fwd: float = 0.02
    t_bwd: float = 0.04
    checkpoint: bool = False

    def check(self, world_size: int) -> None:
        super().check(world_size)
        check_choice("compute", self.compute, COMPUTE)
        real = self.compute == "real"
        # emulated ops have no layers, so only real compute needs p * v <= n_layers
        validate(self.schedule, self.p, self.m, self.v,
                 self.config.n_layers if real else None, self.batch_size)
        if world_size != self.p:
            raise ValueError(f"world_size={world_size} must equal p={self.p}: "
                             f"one pipeline stage per rank")
        check_float("t_fwd", self.t_fwd)
        check_float("t_bwd", self.t_bwd)
        if check_bool("checkpoint", self.checkpoint) and not real:
            raise ValueError("checkpoint=True needs compute='real' (emulated ops keep nothing)")


@dataclass(kw_only=True)
class PipelineResult(RunResult):
    """``RunResult`` of a pipeline run (``memory[r]["activations"]``: rank r's most
    stashed bytes at once); ``timeline(step)`` gives one step's ops and its bubble."""
    schedule: str
    p: int
    m: int
    v: int
    stash_peak: list[int]        # per rank: most (micro-batch, chunk) activations held

    @property
    def stash_peak_bytes(self) -> list[int]:
        """Per rank: most bytes of stashed activations held at once (real compute)."""
        return [m["activations"] for m in self.memory]

    def timeline(self, step: int = -1) -> Timeline:
        """The F/B/W ops of one step (default: the last) and its measured bubble."""
        step = step % len(self.step_times)
        ops = [e for e in self.events if e["name"] in ("F", "B", "W")
               and e["meta"].get("step") == step]
        fraction, ratio, makespan = bubble(ops, self.p)
        return Timeline(ops, self.p, fraction, ratio, makespan, list(self.stash_peak))

    @property
    def bubble_fraction(self) -> float:
        return self.timeline().bubble_fraction


def pipeline_worker(run: PPRun, group=None) -> dict:
    """One rank of a pipeline over ``group`` (default: the world): ``run.steps`` steps of
    this rank's action list. Events carry the stage rank (the group's), not the world's."""
    from ..data import get_batch

    torch.set_num_threads(1)
    rank, c = dist.get_rank(group), run.config
    shape = (run.batch_size // run.m, c.seq_len, c.d_model)  # one micro-batch's activation
    if run.compute == "real":
        stages = build_stages(c, run.p, rank, run.v, run.seed, run.checkpoint)
        compute = RealCompute(stages, run.m, run.schedule == "zb-h1", ActivationProbe(stages))
        opt = torch.optim.AdamW(compute.params, lr=run.lr, betas=(0.9, 0.95),
                                weight_decay=run.weight_decay)
    else:
        stages, opt = [], None
        compute = EmulatedCompute(op_durations(run.schedule, run.v, run.t_fwd, run.t_bwd),
                                  shape, run.p * run.v)
    me = PipelineExecutor(run.schedule, run.p, run.m, run.v, compute, shape, group)
    losses, times, grads = [], [], {}
    trace.start()
    for step in range(run.steps):
        x, y = get_batch(step, run.batch_size, c.seq_len, c.vocab_size, seed=run.data_seed)
        # micro-batch i = rows [i B/m, (i+1) B/m), copied so it owns its memory
        x, y = [t.clone() for t in x.chunk(run.m)], [t.clone() for t in y.chunk(run.m)]
        dist.barrier(group=group)  # the ranks start each step together, as in the simulator
        t0 = trace.now()
        losses.append(me.step(step, x, y))
        if opt is not None:
            if step == run.steps - 1:
                grads = {n: q.grad.clone() for st in stages for n, q in st.named_parameters()}
            with trace.span("AdamW", step=step):
                opt.step()
                opt.zero_grad(set_to_none=True)
        times.append((t0, trace.now()))
    owns_loss = opt is not None and any(st.last for st in stages)
    return dict(losses=losses if owns_loss else None,
                events=[dict(e, rank=rank) for e in trace.stop()], times=times,
                state_dict={n: t.detach().clone() for st in stages
                            for n, t in st.state_dict().items()},
                grads=grads, stash_peak=me.peak, stash_peak_bytes=me.peak_bytes)


def collect(run: PPRun, ranks: list[dict]) -> PipelineResult:
    """The ``PipelineResult`` of the ``p`` ranks' ``pipeline_worker`` returns, in stage
    order: state_dict and grads merged over the stages, step times from the first
    rank's start to the last rank's end."""
    def merged(key):
        return {k: t for r in ranks for k, t in r[key].items()}
    return PipelineResult(
        losses=next((r["losses"] for r in ranks if r["losses"]), []),
        state_dict=merged("state_dict"), grads=merged("grads"),
        events=[e for r in ranks for e in r["events"]],
        memory=[{"activations": r["stash_peak_bytes"]} for r in ranks],
        step_times=[max(r["times"][s][1] for r in ranks) - min(r["times"][s][0] for r in ranks)
                    for s in range(run.steps)],
        ranks=[{"times": r["times"]} for r in ranks],
        schedule=run.schedule, p=run.p, m=run.m, v=run.v,
        stash_peak=[r["stash_peak"] for r in ranks])


def run(run: PPRun, world_size: int, timeout: float = 120.0) -> PipelineResult:
    """Check ``run``, train on ``world_size`` (= p) CPU ranks, and gather the result."""
    from ..launch import launch
    if not isinstance(run, PPRun):
        raise ValueError(f"run must be a PPRun, got {type(run).__name__}")
    run.check(world_size)
    return collect(run, launch(pipeline_worker, world_size, run, timeout=timeout,
                               backend="gloo"))
