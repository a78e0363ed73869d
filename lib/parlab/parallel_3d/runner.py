"""One 3D-parallel training run (PTD-P), in the lab's run convention:

    result = parallel_3d.run(Run3D(config=GPTConfig(...), steps=3, batch_size=16,
                                   dp=2, pp=2, tp=2, micro_batches=4), world_size=8)

Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM" (SC21), §2-§3: the world is a ``Mesh(dp, pp, tp)``; each rank
holds one TP slice (``tensor_parallel``) of one pipeline stage (``pipeline_parallel``'s
executor and schedules, over the PP group), and the dp replicas each train on 1/dp of
the global batch, cut into ``micro_batches``; after the pipeline flush the gradients
are averaged over the DP group (or reduce-scattered, ZeRO-1) -- ``replicas.py``.

``collect`` reassembles the full parameters and gradients (TP slices gathered, stages
merged) so ``model.max_differences(result, reference_train(...))`` compares directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from .. import trace
from ..data import get_batch
from ..memory import held_bytes, optimizer_states
from ..mesh import Mesh
from ..pipeline_parallel.compute import ActivationProbe, RealCompute
from ..pipeline_parallel.executor import PipelineExecutor
from ..pipeline_parallel.schedules import op_durations
from ..pipeline_parallel.stages import split_layers
from ..runs import RunResult, TrainRun
from ..tensor_parallel.model import full_tensors, sync_sequence_parallel_grads
from ..validate import check_bool, check_choice, check_float, check_int
from .replicas import ReplicaAllReduce, ReplicaZero1
from .stages import EmulatedTPCompute, TPStage

SCHEDULES = ("gpipe", "1f1b", "interleaved")  # ZB-H1's split backward would re-run TP's f
COMPUTE = ("real", "emulated")
ZERO_STAGES = (0, 1)


@dataclass(frozen=True)
class Run3D(TrainRun):
    """dp x pp x tp ranks (== world_size). ``micro_batches``: per replica, per step;
    ``schedule``: "gpipe", "1f1b" or "interleaved" (``v`` >= 2 chunks per rank);
    ``zero_stage``: 0 (all-reduce) or 1 (ZeRO-1 over the DP group);
    ``sequence_parallel``: Korthikanti's SP inside each TP group (stages then exchange
    sequence shards).

    ``compute="emulated"``: every F/B sleeps instead of computing, then issues the TP
    collectives its layers would (real sizes); messages between stages and the DP
    gradient collectives are real. ``t_fwd`` / ``t_bwd`` are the seconds the forward /
    backward of the *whole global batch through the whole model* would take on one
    device; an op lasts its share, t / (dp * micro_batches * pp * tp) (a micro-batch of
    batch_size / (dp * micro_batches) sequences through 1/pp of the layers, 1/tp of
    each), so factorizations of one world compare fairly. ``trace``: keep every rank's
    events on the result."""
    batch_size: int = 8
    dp: int = 2
    pp: int = 2
    tp: int = 2
    micro_batches: int = 4
    v: int = 1
    schedule: str = "1f1b"
    zero_stage: int = 0
    sequence_parallel: bool = False
    compute: str = "real"
    t_fwd: float = 0.4
    t_bwd: float = 0.8
    trace: bool = False

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken field, before any process starts."""
        super().check(world_size)
        dp, pp, tp = (check_int(n, getattr(self, n)) for n in ("dp", "pp", "tp"))
        m, v = check_int("micro_batches", self.micro_batches), check_int("v", self.v)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_choice("zero_stage", self.zero_stage, ZERO_STAGES)
        check_bool("sequence_parallel", self.sequence_parallel)
        check_choice("compute", self.compute, COMPUTE)
        check_float("t_fwd", self.t_fwd)
        check_float("t_bwd", self.t_bwd)
        check_bool("trace", self.trace)
        if dp * pp * tp != world_size:
            raise ValueError(f"dp*pp*tp = {dp}*{pp}*{tp} = {dp * pp * tp} must equal "
                             f"world_size={world_size}")
        c = self.config
        for name in ("n_heads", "d_ff", "vocab_size"):  # whole heads, equal slices
            if getattr(c, name) % tp:
                raise ValueError(f"tp={tp} must divide {name}={getattr(c, name)}")
        if self.sequence_parallel and c.seq_len % tp:
            raise ValueError(f"sequence_parallel needs tp={tp} to divide seq_len={c.seq_len}")
        if self.schedule == "interleaved":
            if v < 2:
                raise ValueError(f"v={v}: the interleaved schedule needs v >= 2 chunks per rank")
            if m % pp:
                raise ValueError(f"micro_batches={m} must be divisible by pp={pp} for the "
                                 "interleaved schedule (Megatron's requirement)")
        elif v != 1:
            raise ValueError(f"v={v} chunks per rank only exist for schedule='interleaved'")
        if pp * v > c.n_layers:
            raise ValueError(f"pp={pp} (x v={v}) stages need at least one layer each, but "
                             f"n_layers={c.n_layers}")
        if self.batch_size % (dp * m):
            raise ValueError(f"batch_size={self.batch_size} must be divisible by "
                             f"dp*micro_batches = {dp}*{m} = {dp * m}")


def train_worker(run: Run3D) -> dict:
    """Rank worker: build the mesh, this rank's TP slice of its stage chunk(s), the
    pipeline executor over the PP group and the replica sync over the DP group; train
    ``run.steps`` steps. Returns its losses (last stage), per-step phase times, bubble,
    and (dp = 0 ranks) the full reassembled parameters and gradients of its stage."""
    torch.set_num_threads(1)
    mesh = Mesh(dp=run.dp, pp=run.pp, tp=run.tp).init()
    me, c, real = mesh.my_coords(), run.config, run.compute == "real"
    tp_g, pp_g, dp_g = mesh.group("tp"), mesh.group("pp"), mesh.group("dp")
    m, n_stages = run.micro_batches, run.pp * run.v
    rows = run.batch_size // (run.dp * m)        # sequences per micro-batch
    seq = c.seq_len // run.tp if run.sequence_parallel else c.seq_len
    shape = (rows, seq, c.d_model)               # what one stage sends the next
    layers = split_layers(c.n_layers, n_stages)
    stages = [TPStage(c, layers[k * run.pp + me["pp"]], k * run.pp + me["pp"] == 0,
                      k * run.pp + me["pp"] == n_stages - 1, run.seed, tp_g,
                      run.sequence_parallel) for k in range(run.v)]
    if real:
        compute = RealCompute(stages, m, False, ActivationProbe(stages))
    else:
        share = run.dp * m * run.pp * run.tp
        compute = EmulatedTPCompute(
            op_durations(run.schedule, run.v, run.t_fwd * run.v / share,
                         run.t_bwd * run.v / share),
            shape, n_stages, tp_g, [len(st.blocks) for st in stages], run.sequence_parallel)
    replica = (ReplicaZero1 if run.zero_stage == 1 else ReplicaAllReduce)(
        [q for st in stages for q in st.parameters()], dp_g, run.lr, run.weight_decay)
    executor = PipelineExecutor(run.schedule, run.pp, m, run.v, compute, shape, pp_g)
    losses, phases = [], []
    trace.start()
    for step in range(run.steps):
        x, y = get_batch(step, run.batch_size, c.seq_len, c.vocab_size, seed=run.data_seed)
        x, y = x.chunk(run.dp)[me["dp"]], y.chunk(run.dp)[me["dp"]]  # this replica's rows
        xs, ys = [t.clone() for t in x.chunk(m)], [t.clone() for t in y.chunk(m)]
        dist.barrier()  # every rank starts the step together: step times are comparable
        t0 = trace.now()
        replica.zero_grad()
        with trace.span("pipeline", step=step):
            loss = executor.step(step, xs, ys)
        t1 = trace.now()
        with trace.span("grad sync", step=step):
            if real and run.sequence_parallel:
                for st in stages:
                    sync_sequence_parallel_grads(st)
            replica.sync()
        t2 = trace.now()
        with trace.span("optimizer", step=step):
            replica.step()
        phases.append((t0, t1, t2, trace.now()))
        losses.append(loss)
    events = [dict(e, rank=dist.get_rank(), coords=me) for e in trace.stop()]
    keeps = me["dp"] == 0
    state = grads = None
    if real:
        replica.gather_grads()
        state = {k: t for st in stages for k, t in full_tensors(st).items()}  # TP collective
        grads = {k: t for st in stages for k, t in full_tensors(st, grads=True).items()}
    return dict(rank=dist.get_rank(), coords=me, phases=phases,
                losses=losses if real and me["pp"] == run.pp - 1 and me["tp"] == 0 else None,
                bubble=[_bubble(events, s, ph) for s, ph in enumerate(phases)],
                stash_peak=executor.peak, events=events,
                memory=held_bytes(params=list(replica.params),
                                  grads=[q.grad for q in replica.params],
                                  optimizer=optimizer_states(replica.optimizer)),
                state_dict=state if keeps else None, grads=grads if keeps else None)


def _bubble(events, step, phase) -> float:
    """Idle share of this rank's pipeline phase in ``step``: 1 - F/B time / phase time."""
    ops = [e for e in events if e["name"] in ("F", "B") and e["meta"].get("step") == step]
    if not ops:
        return 0.0
    busy = sum(e["end"] - e["start"] for e in ops)
    return max(0.0, 1.0 - busy / (phase[1] - phase[0]))


def collect(run: Run3D, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of the world's ``train_worker`` returns (world-rank order): the
    mean over replicas of their last stage's loss, parameters and gradients merged over
    the stages of replica 0, a step from the first rank's start to the last rank's end;
    ``ranks[i]``: coords, step_times, phases (pipeline / grad sync / optimizer seconds
    per step), bubble per step, stash_peak (and events if ``run.trace``)."""
    owners = [r for r in ranks if r["losses"] is not None]
    losses = ([sum(r["losses"][s] for r in owners) / len(owners) for s in range(run.steps)]
              if owners else [])
    merged = {key: {k: t for r in ranks if r[key] for k, t in r[key].items()}
              for key in ("state_dict", "grads")}
    per_rank = []
    for r in ranks:
        row = dict(rank=r["rank"], coords=r["coords"], bubble=r["bubble"],
                   stash_peak=r["stash_peak"],
                   step_times=[ph[3] - ph[0] for ph in r["phases"]],
                   phases=[{"pipeline": ph[1] - ph[0], "grad_sync": ph[2] - ph[1],
                            "optimizer": ph[3] - ph[2]} for ph in r["phases"]])
        if run.trace:
            row["events"] = r["events"]
        per_rank.append(row)
    return RunResult(
        losses=losses, state_dict=merged["state_dict"], grads=merged["grads"],
        events=[e for r in ranks for e in r["events"]] if run.trace else [],
        memory=[r["memory"] for r in ranks],
        step_times=[max(r["phases"][s][3] for r in ranks) - min(r["phases"][s][0] for r in ranks)
                    for s in range(run.steps)],
        ranks=per_rank)


def run(run: Run3D, world_size: int, timeout: float = 300.0) -> RunResult:
    """Check ``run``, train on ``world_size`` = dp * pp * tp CPU ranks, gather the result."""
    from ..launch import launch
    if not isinstance(run, Run3D):
        raise ValueError(f"run must be a Run3D, got {type(run).__name__}")
    run.check(world_size)
    return collect(run, launch(train_worker, world_size, run, timeout=timeout, backend="gloo"))
