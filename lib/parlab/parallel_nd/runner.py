"""One N-D parallel training run, composed from the strategies' parts:

    result = parallel_nd.run(NDRun(config=GPTConfig(...), steps=3, batch_size=16, dp=2,
                                   pp=2, tp=2, micro_batches=4), world_size=8)

Narayanan et al. 2021 (PTD-P, SC21) compose tensor, pipeline and data parallelism (§2,
§3); Llama 3 adds context parallelism (Dubey et al. 2024, §3.3.2: TP-CP-PP-DP) and
DeepSeek-V3 expert parallelism (DeepSeek-AI 2024, §3.2: PP-EP-ZeRO-1). The world is a
``Mesh(dp, pp, cp, tp, ep)``; each rank builds the whole GPT from the seed and then:

  TP  ``tensor_parallel.apply_tensor_parallel`` of ``gpt_plan`` over its TP group (whole
      heads)
  CP  ``context_parallel.apply_context_parallel``: ring or Ulysses attention over the
      CP group; the rank embeds its tokens at their global positions
  EP  ``expert_parallel.apply_expert_parallel`` over the EP group (folded over dp x cp)
  PP  ``pipeline_parallel.gpt_stages``: its chunk(s) of the (now parallel) layers, run
      by the pipeline executor over the PP group
  DP  ``zero.apply_zero``, stage 0-3, over dp x cp for dense parameters and over the
      expert-data-parallel group for experts: BucketedDP, ShardedOptimizer or FullyShard
      (dp_sync.py)

No strategy is re-implemented here; what every pipeline rank does is the pipeline run's
own (``pipeline_parallel.runner.StagesRecipe``). Gradient accumulation over the m
micro-batches meets ZeRO as in torchtitan's FSDP + PP: nothing is exchanged during the
pipeline (the parts' ``no_sync``), gradients add up in full, and after the flush each part
sends them once (``finish_grad_sync``) -- an all-reduce (stage 0), a reduce-scatter
(stages 1-2) or one per unit (stage 3). ZeRO-2/3 thus save
their gradient memory between steps but not during one; reduce-scattering every
micro-batch instead would keep it saved at m times the traffic (DeepSpeed's choice).

``collect`` reassembles the full parameters and gradients (ZeRO shards gathered, TP
slices joined, stages and experts merged), so ``model.max_differences(result,
reference_train(...))`` compares directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch.distributed as dist

from .. import comm, trace
from ..context_parallel.layout import shard_positions, shard_sequence
from ..context_parallel.apply import apply_context_parallel
from ..context_parallel.runner import check_cp
from ..data import get_batch
from ..expert_parallel.layers import apply_expert_parallel, expert_parameters, set_counts_group
from ..mesh import Mesh
from ..model import GPT
from ..pipeline_parallel.compute import RealCompute
from ..pipeline_parallel.executor import PipelineExecutor
from ..pipeline_parallel.schedules import make_schedule, op_durations, placement_of, validate
from ..pipeline_parallel.stages import gpt_stages
from ..pipeline_parallel.runner import StagesRecipe
from ..runs import RunResult, TrainRun, make_run, train
from ..tensor_parallel.parallelize import (apply_tensor_parallel, check_tp, gpt_plan,
                                           sync_sequence_parallel_grads)
from ..validate import check_bool, check_choice, check_float, check_int
from .clip import clip_grad_norm_
from .dp_sync import DataParallel, full_state
from .emulated import EmulatedTPCompute

SCHEDULES = ("gpipe", "1f1b", "interleaved")  # ZB-H1's split backward would re-run TP's f
COMPUTE = ("real", "emulated")


@dataclass(frozen=True)
class NDRun(TrainRun):
    """dp x pp x cp x tp ranks (== world_size), ``ep`` folded over dp x cp.
    ``micro_batches``: per replica, per step; ``schedule``: "gpipe", "1f1b" or
    "interleaved" (``v`` >= 2 chunks per rank); ``zero_stage``: 0 (all-reduce), 1, 2
    (ShardedOptimizer) or 3 (FullyShard) over the data-parallel ranks;
    ``sequence_parallel``: Korthikanti's SP inside each TP group; ``layout`` and
    ``attention``: context parallelism's (``context_parallel.CPRun``).

    ``compute="emulated"``: every F/B sleeps instead of computing, then issues the TP
    collectives its layers would (real sizes); messages between stages and the DP
    gradient collectives are real. ``t_fwd`` / ``t_bwd`` are the seconds the forward /
    backward of the *whole global batch through the whole model* would take on one
    device; an op lasts its share, t / (dp * micro_batches * pp * tp) (a micro-batch of
    batch_size / (dp * micro_batches) sequences through 1/pp of the layers, 1/tp of
    each), so factorizations of one world compare fairly."""
    batch_size: int = 8
    dp: int = 2
    pp: int = 2
    cp: int = 1
    tp: int = 2
    ep: int = 1
    micro_batches: int = 4
    v: int = 1
    schedule: str = "1f1b"
    zero_stage: int = 0
    sequence_parallel: bool = False
    layout: str = "zigzag"
    attention: str = "ring"
    compute: str = "real"
    t_fwd: float = 0.4
    t_bwd: float = 0.8
    max_grad_norm: float | None = None  # clip by the global norm before each step (clip.py)
    trains_moe: ClassVar[bool] = True

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken field, before any process starts."""
        super().check(world_size)
        dp, pp, cp, tp, ep = (check_int(n, getattr(self, n)) for n in ("dp", "pp", "cp", "tp", "ep"))
        m = check_int("micro_batches", self.micro_batches)
        c = self.config
        check_choice("schedule", self.schedule, SCHEDULES)
        check_choice("zero_stage", self.zero_stage, (0, 1, 2, 3))
        check_bool("sequence_parallel", self.sequence_parallel)
        check_choice("compute", self.compute, COMPUTE)
        check_float("t_fwd", self.t_fwd)
        check_float("t_bwd", self.t_bwd)
        if self.max_grad_norm is not None:
            check_float("max_grad_norm", self.max_grad_norm)
            if self.compute != "real":
                raise ValueError(f"max_grad_norm={self.max_grad_norm} needs compute='real' "
                                 f"(emulated runs have no gradients to clip); got "
                                 f"compute={self.compute!r}")
        if dp * pp * cp * tp != world_size:
            raise ValueError(f"dp*pp*cp*tp = {dp}*{pp}*{cp}*{tp} = {dp * pp * cp * tp} must "
                             f"equal world_size={world_size}")
        Mesh(dp=dp, pp=pp, cp=cp, tp=tp, ep=ep)  # ep must divide dp*cp
        check_cp(c, cp, self.layout, self.attention)
        check_tp(c, tp, self.sequence_parallel, c.seq_len // cp)
        real = self.compute == "real"
        v = check_int("v", self.v)
        if real and pp * v > c.n_layers:
            raise ValueError(f"pp={pp} (x v={v}) stages need at least one layer each, but "
                             f"n_layers={c.n_layers}")
        validate(self.schedule, pp, m, v)
        if self.batch_size % (dp * m):
            raise ValueError(f"batch_size={self.batch_size} must be divisible by "
                             f"dp*micro_batches = {dp}*{m} = {dp * m}")
        if self.sequence_parallel and self.zero_stage == 3:
            raise ValueError("sequence_parallel with zero_stage=3: the sequence-parallel "
                             "gradient sum would need FullyShard's unsharded gradients "
                             "(not composed here)")
        if c.n_experts:
            if c.n_experts % ep:
                raise ValueError(f"ep={ep} must divide n_experts={c.n_experts}")
            if not real:
                raise ValueError("a MoE config needs compute='real'")
            if self.zero_stage == 3:
                raise ValueError("zero_stage=3 with MoE layers: sharding experts over the "
                                 "expert-data-parallel group is not composed here; use 0-2")
            if cp > 1 and c.capacity_factor is not None:
                raise ValueError("capacity_factor with cp > 1: which tokens an expert drops "
                                 "depends on their order, which the sequence shards change")
        elif ep != 1:
            raise ValueError(f"ep={ep} needs a MoE config (n_experts > 0)")


class NDRecipe(StagesRecipe):
    """This rank's share of the composed model, and the loop's step for it."""

    def __init__(self, run: NDRun):
        super().__init__(run, None)
        self.mesh = Mesh(dp=run.dp, pp=run.pp, cp=run.cp, tp=run.tp, ep=run.ep).init()
        me = self.mesh.my_coords()
        fold = self.mesh.folded(dist.get_rank())
        self.me = me
        self.fold = fold
        self.grad_norms: list[float] = []  # ||g|| before clipping, per step (max_grad_norm)
        g = {a: self.mesh.group(a) for a in ("tp", "pp", "cp", "dp_cp", "ep", "edp")}
        self.groups = g
        c = run.config
        m = run.micro_batches
        real = run.compute == "real"
        # one loss per replica of the whole model: every stage's TP rank 0 reports its part
        self.replica = fold["dp_cp"] if me["tp"] == 0 and real else None
        device = comm.device(g["tp"])
        seq = c.seq_len // run.cp // (run.tp if run.sequence_parallel else 1)
        shape = (run.batch_size // (run.dp * m), seq, c.d_model)  # what a stage sends on
        gpt = GPT(c, run.seed).to(device)
        if run.tp > 1:
            apply_tensor_parallel(gpt, gpt_plan(c), g["tp"], run.sequence_parallel)
        self.positions = None
        if run.cp > 1:
            apply_context_parallel(gpt, g["cp"], run.layout, run.attention)
            self.positions = shard_positions(c.seq_len, run.cp, me["cp"], run.layout).to(device)
        if c.n_experts:  # capacity and the balancing loss count over the whole batch
            if run.ep > 1:
                apply_expert_parallel(gpt, g["dp_cp"], g["ep"])
            else:
                set_counts_group(gpt, g["dp_cp"])
        trace.label_modules(gpt, {mod: n for n, mod in gpt.named_modules() if n})
        self.hold_stages(gpt, gpt_stages(gpt, run.pp, me["pp"], run.v, positions=self.positions), m)
        experts = expert_parameters(gpt)  # summed over their expert-data-parallel group
        del gpt  # what this rank does not hold is freed: the stages keep their own layers
        if real:
            compute = RealCompute(self.stages, m, False)
            self.dp = DataParallel(self.stages, run, g, experts)
            self.optimizer = self.dp.optimizers
        else:
            share = run.dp * m * run.pp * run.tp
            compute = EmulatedTPCompute(
                op_durations(run.schedule, run.v, run.t_fwd * run.v / share,
                             run.t_bwd * run.v / share),
                shape, run.pp * run.v, g["tp"],
                [sum(n.startswith("blocks") for n in st.names) for st in self.stages],
                run.sequence_parallel)
            self.dp = DataParallel(self.stages, run, g, emulated=True)
        self.executor = PipelineExecutor(make_schedule(run.schedule, run.pp, m, run.v),
                                         placement_of(run.schedule, run.pp, run.v, m),
                                         compute, shape, g["pp"])

    def batch(self, step: int):
        r = self.run
        c = self.run.config
        x, y = get_batch(step, r.batch_size, c.seq_len, c.vocab_size, seed=r.data_seed)
        x = x.chunk(r.dp)[self.me["dp"]]  # this replica's rows
        y = y.chunk(r.dp)[self.me["dp"]]
        if r.cp > 1:  # ... and this rank's positions of them
            x, y = (shard_sequence(t, 1, r.cp, self.me["cp"], r.layout) for t in (x, y))
        return self.micro_batches(x, y, r.micro_batches, comm.device(self.groups["tp"]))

    def zero_grad(self) -> None:
        self.dp.zero_grad()

    def train_step(self, xs, ys):
        with trace.span("pipeline"), self.dp.no_sync():
            loss = self.run_pipeline(xs, ys)
        with trace.span("grad sync"):
            if self.run.sequence_parallel and self.run.compute == "real":
                for st in self.stages:  # partial sums over the TP ranks' positions first
                    sync_sequence_parallel_grads(st, self.groups["tp"])
            self.dp.finish_grad_sync()
        return loss + self.after_pipeline()

    def step(self) -> None:
        if self.run.max_grad_norm is not None:  # after the DP average, before the update
            groups, ep_rank = self.clip_groups()
            self.grad_norms.append(clip_grad_norm_(self.dp.held_gradients(),
                                                   self.run.max_grad_norm, groups,
                                                   self.me["tp"], ep_rank))
        self.dp.step()

    def clip_groups(self) -> tuple:
        """Where the global norm's partial sums are added (clip.py): TP and PP, then DP x CP
        under ZeRO (disjoint shards) or, with experts under plain DP, the EP group (whose
        first rank alone counts the dense gradients)."""
        g = self.groups
        r = self.run
        if r.zero_stage:
            return (g["tp"], g["pp"], g["dp_cp"]), 0
        if r.ep > 1:
            return (g["tp"], g["pp"], g["ep"]), self.fold["ep"]
        return (g["tp"], g["pp"]), 0

    def parameters(self) -> list:
        return self.dp.parameters()

    def memory(self) -> dict:
        return self.dp.memory()

    def full_state(self):
        if self.run.compute != "real":
            return None, None
        return full_state(self.dp, self.stages, self.names, self.groups, self.fold,
                          self.me, self.run.ep)

    def report(self, events, windows) -> dict:
        spans = {(e["name"], e["meta"].get("step")): e for e in events if e["kind"] == "compute"}
        phases = []
        bubble = []
        for s, (t0, t1) in enumerate(windows):
            pipe = spans[("pipeline", s)]
            sync = spans[("grad sync", s)]
            phases.append({"pipeline": pipe["end"] - t0, "grad_sync": sync["end"] - sync["start"],
                           "optimizer": t1 - sync["end"]})
            ops = [e for e in events if e["name"] in ("F", "B") and e["meta"].get("step") == s]
            busy = sum(e["end"] - e["start"] for e in ops)
            bubble.append(max(0.0, 1.0 - busy / (pipe["end"] - t0)) if ops else 0.0)
        return {"coords": self.me, "phases": phases, "bubble": bubble,
                "stash_peak": self.executor.peak, "grad_norms": self.grad_norms}


def train_worker(run: NDRun) -> dict:
    """Rank worker: the mesh, this rank's composed share of the model, ``run.steps``
    steps of the shared training loop."""
    return train(NDRecipe(run))


def collect(run: NDRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of the world's ``train_worker`` returns (world-rank order): the
    mean over replicas of their loss, parameters and gradients merged over the stages
    of replica 0 (experts from the first EP group); ``ranks[i]``: coords, step_times,
    phases (pipeline / grad sync / optimizer seconds per step), bubble per step,
    stash_peak (and events if ``run.trace``)."""
    result = RunResult.gather(run, ranks, ("coords", "phases", "bubble", "stash_peak",
                                           "grad_norms"))
    if run.trace:
        for row, r in zip(result.ranks, ranks):
            row["events"] = r["events"]
    result.step_times = [max(r["windows"][s][1] for r in ranks) -
                         min(r["windows"][s][0] for r in ranks) for s in range(run.steps)]
    return result


run = make_run(NDRun, train_worker, collect, backend="gloo", timeout=300.0)
