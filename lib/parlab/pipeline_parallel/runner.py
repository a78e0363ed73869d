"""One pipeline-parallel run, in the lab's run convention:

    result = pipeline_parallel.run(PPRun(config=GPTConfig(...), steps=3, batch_size=8,
                                         schedule="1f1b", p=2, micro_batches=4), world_size=2)

``PPRun.check`` refuses bad input before any process starts; ``train_worker`` is what
each rank executes (on any process group: a pipeline can be one axis of a bigger job);
``collect`` turns the ranks' returns into a ``PipelineResult``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.distributed as dist
import torch.nn as nn

from .. import comm, mesh
from ..data import get_batch
from ..memory import held_bytes, optimizer_states
from ..model import GPT
from ..moe import moe_layers
from ..runs import Recipe, RunResult, TrainRun, make_run, module_state, train
from ..validate import check_bool, check_choice, check_float
from .compute import EmulatedCompute, RealCompute
from .executor import PipelineExecutor
from .peers import TorchPipelineRecipe, check_peer
from .schedules import (SPLIT_BACKWARD, Timeline, bubble, make_schedule, op_durations,
                        placement_of, validate)
from .stages import check_uneven, gpt_stages

COMPUTE = ("real", "emulated")


@dataclass(frozen=True)
class PPRun(TrainRun):
    """A pipeline run: ``schedule`` (one of ``PIPELINE_SCHEDULES``) over ``p`` stages (one per
    rank; ``v`` model chunks per rank for "interleaved"), the global batch of
    ``batch_size`` sequences cut into ``micro_batches`` equal ones (the papers' m).

    ``compute="real"`` trains the model exactly as ``model.reference_train`` does
    (AdamW(lr, betas=ADAMW_BETAS, weight_decay)); ``"emulated"`` replaces each F / B / W
    by a sleep of its ``op_durations`` (``t_fwd``, ``t_bwd``: seconds for one
    micro-batch through all of a rank's layers) while real activation-sized messages
    still flow, so the timeline shows the schedule's shape even with more ranks than
    cores. ``checkpoint``: recompute each block in backward (real compute only).
    ``first_stage_layers`` / ``last_stage_layers``: blocks on the first / last stage,
    the others balanced over the stages between (``stages.split_layers``). "zb-v",
    "dualpipev" and "dualpipe" take v=2 (``schedules.FIXED_V``); DualPipe holds every stage
    twice, on ranks r and p - 1 - r, and sums the two copies' gradients (``sum_twin_grads``).
    ``peer``: torch's own pipelining on the same stages instead of ours (``peers.py``:
    "pipelining", or "dualpipev" on ZB-V's V)."""
    schedule: str = "1f1b"
    p: int = 2
    micro_batches: int = 4
    v: int = 1
    compute: str = "real"
    t_fwd: float = 0.02
    t_bwd: float = 0.04
    checkpoint: bool = False
    first_stage_layers: int | None = None  # blocks on the first / last stage (None: balanced)
    last_stage_layers: int | None = None
    peer: str | None = None  # torch's own pipelining instead of ours (peers.PEERS)
    trace: bool = True  # the timeline and the bubble are read off the events
    trains_moe: ClassVar[bool] = True

    def check(self, world_size: int) -> None:
        super().check(world_size)
        check_choice("compute", self.compute, COMPUTE)
        real = self.compute == "real"
        # emulated ops have no layers, so only real compute needs p * v <= n_layers
        validate(self.schedule, self.p, self.micro_batches, self.v,
                 self.config.n_layers if real else None, self.batch_size)
        if world_size != self.p:
            raise ValueError(f"world_size={world_size} must equal p={self.p}: "
                             f"one pipeline stage per rank")
        check_float("t_fwd", self.t_fwd)
        check_float("t_bwd", self.t_bwd)
        if check_bool("checkpoint", self.checkpoint) and not real:
            raise ValueError("checkpoint=True needs compute='real' (emulated ops keep nothing)")
        if self.config.n_experts and not real:
            raise ValueError("a MoE config needs compute='real'")
        if self.first_stage_layers is not None or self.last_stage_layers is not None:
            if not real:
                raise ValueError("first_stage_layers / last_stage_layers need compute='real' "
                                 "(emulated ops have no layers)")
            check_uneven(self.config.n_layers,
                         placement_of(self.schedule, self.p, self.v, self.micro_batches).n_stages,
                         self.first_stage_layers, self.last_stage_layers)
        if self.peer is not None:
            check_peer(self)


@dataclass(kw_only=True)
class PipelineResult(RunResult):
    """``RunResult`` of a pipeline run (``memory[r]["activations"]``: rank r's most
    stashed bytes at once); ``timeline(step)`` gives one step's ops and its bubble."""
    schedule: str
    p: int
    micro_batches: int
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


class StagesRecipe(Recipe):
    """What every rank of a pipeline does, in a pipeline run and in a composed one: it
    holds ``stages`` (cut from ``model``, whose names are the reference's), runs them
    with ``executor``, takes each micro-batch's share of its MoE layers' auxiliary
    losses, and starts each step with the other ranks of ``group``."""

    def __init__(self, run: TrainRun, group=None):
        super().__init__(run, group)
        self.stages = []
        self.names = {}
        self.aux = []
        self.executor: PipelineExecutor | None = None

    def hold_stages(self, model, stages: list, m: int) -> None:
        """Keep ``stages`` of ``model`` and their tensors' reference names; weigh each
        MoE layer's auxiliary loss by 1/m (one micro-batch of m) and note it."""
        self.stages = stages
        mine = {id(t) for st in stages for t in [*st.parameters(), *st.buffers()]}
        self.names = {id(t): n for n, t in model.state_dict(keep_vars=True).items()
                      if id(t) in mine}
        self.aux = []
        for moe in moe_layers(model):
            moe.aux_scale = 1.0 / m
        for moe in [x for st in stages for x in moe_layers(st)]:
            moe.register_forward_hook(lambda mod, a, out: self.aux.append(
                mod.aux_loss.item() / m) if mod.aux_loss is not None else None)

    @staticmethod
    def micro_batches(x, y, m: int, device):
        """Micro-batch i = rows [i B/m, (i+1) B/m) of the batch, each its own tensor."""
        return ([t.clone().to(device) for t in x.chunk(m)],
                [t.clone().to(device) for t in y.chunk(m)])

    def before_step(self) -> None:
        dist.barrier(group=self.group)  # the ranks start each step together

    def run_pipeline(self, xs, ys) -> float:
        """This rank's actions once over the micro-batches; its summed loss."""
        self.aux = []
        return self.executor.step(xs, ys)

    def after_pipeline(self) -> float:
        """Each stage's own MoE layers balance themselves (DeepSeek-V3's bias); the
        auxiliary losses of the step, to add to the loss reported."""
        for st in self.stages:
            for moe in moe_layers(st):
                moe.update_bias_()
        return sum(self.aux)

    def full_state(self):  # each stage's own layers, under the reference's names
        return module_state(nn.ModuleList(self.stages), self.names)


class PPRecipe(StagesRecipe):
    """This rank's stages of the lab's GPT (or emulated ops) and the pipeline executor."""

    def __init__(self, run: PPRun, group=None):
        super().__init__(run, group)
        self.replica = 0  # one model: the loss is the sum of what every stage reports
        c = run.config
        m = run.micro_batches
        device = comm.device(group)
        shape = (run.batch_size // m, c.seq_len, c.d_model)  # one micro-batch's activation
        where = placement_of(run.schedule, run.p, run.v, m)
        self.twins = None
        if run.compute == "real":
            gpt = GPT(c, run.seed).to(device)
            self.hold_stages(gpt, gpt_stages(gpt, run.p, self.rank, run.v, run.checkpoint,
                                             where=where, first=run.first_stage_layers,
                                             last=run.last_stage_layers), m)
            compute = RealCompute(self.stages, m, run.schedule in SPLIT_BACKWARD)
            self.optimizer = self.make_optimizer(compute.params)
            if run.schedule == "dualpipe":
                self.twins = twin_groups(run.p, group)
        else:
            self.replica = None  # emulated ops compute no loss
            compute = EmulatedCompute(op_durations(run.schedule, run.v, run.t_fwd, run.t_bwd),
                                      shape, where.n_stages, device)
        self.executor = PipelineExecutor(make_schedule(run.schedule, run.p, m, run.v), where,
                                         compute, shape, group)

    def batch(self, step: int):
        r = self.run
        c = self.run.config
        x, y = get_batch(step, r.batch_size, c.seq_len, c.vocab_size, seed=r.data_seed)
        return self.micro_batches(x, y, r.micro_batches, comm.device(self.group))

    def zero_grad(self) -> None:
        if self.optimizer is not None:
            super().zero_grad()

    def train_step(self, xs, ys):
        loss = self.run_pipeline(xs, ys)
        if self.twins is not None:
            sum_twin_grads(self.stages, self.names, self.twins)
        return loss + self.after_pipeline()

    def step(self) -> None:
        if self.optimizer is not None:
            super().step()

    def memory(self) -> dict:
        params = [q for st in self.stages for q in st.parameters()]
        return {**held_bytes(params=params, grads=[q.grad for q in params],
                             optimizer=optimizer_states(self.optimizer) if self.optimizer else []),
                "activations": self.executor.peak_bytes}

    def report(self, events, windows) -> dict:
        return {"stash_peak": self.executor.peak, "times": windows}


def twin_groups(p: int, group=None):
    """DualPipe (DeepSeek-V3 report §3.2.1): rank r and rank p - 1 - r hold the same two
    stages (r and p - 1 - r), one per direction. Every rank creates every pair's group
    (torch asks all ranks to); this rank's pair comes back."""
    mine = None
    for r in range(p // 2):
        g = dist.new_group([mesh.global_rank(group, r), mesh.global_rank(group, p - 1 - r)])
        if dist.get_rank(group) in (r, p - 1 - r):
            mine = g
    return mine


def sum_twin_grads(stages, names: dict, twins) -> None:
    """Each stage's gradient is the sum of its two copies' (one per direction): summed
    over the pair, in the reference's parameter names, so both copies take the same
    optimizer step and stay equal."""
    params = sorted((q for st in stages for q in st.parameters()), key=lambda q: names[id(q)])
    flat = torch.cat([q.grad.reshape(-1) for q in params])
    dist.all_reduce(flat, group=twins)
    for q, g in zip(params, flat.split([q.numel() for q in params])):
        q.grad.copy_(g.view_as(q))


def train_worker(run: PPRun, group=None) -> dict:
    """One rank of a pipeline over ``group`` (default: the world): ``run.steps`` steps of
    this rank's action list (or of torch's schedule, ``run.peer``). Events carry the stage
    rank (the group's), not the world's."""
    return train((TorchPipelineRecipe if run.peer else PPRecipe)(run, group))


def collect(run: PPRun, ranks: list[dict]) -> PipelineResult:
    """The ``PipelineResult`` of the ``p`` ranks' ``train_worker`` returns, in stage
    order: state_dict and grads merged over the stages; ``memory[r]["activations"]``:
    rank r's most stashed bytes (a peer's run: a plain ``RunResult``)."""
    if run.peer:
        return RunResult.gather(run, ranks)
    return PipelineResult.gather(run, ranks, ("times",), schedule=run.schedule, p=run.p,
                                 micro_batches=run.micro_batches, v=run.v,
                                 stash_peak=[r["stash_peak"] for r in ranks])


run = make_run(PPRun, train_worker, collect)
