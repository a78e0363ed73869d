"""Notebook 01's exercises (data parallelism and ZeRO): checkers and reference solutions.

Coding exercises, run on real ranks (``core.run_learner``):

  my_dp_exchange(grads, rank, world_size)        naive DP's exchange: every rank's
      gradients become the average over the ranks, in place (``dp_exchange.py``).
  my_zero1_step(params, grads, state, rank, world_size, lr)
      ZeRO-1's step (Rajbhandari et al. 2020, §5.1) with SGD + momentum: reduce-scatter
      the gradient (average), update this rank's shard, keep the momentum of that shard
      only, all-gather the parameters. Checked step by step against single-device SGD.
  my_hsdp_grad_sync(grad, shard_group, replicate_group)
      HSDP's gradient sync on a 2 x 2 mesh: this rank's shard of the gradient averaged
      over all ranks, reduce-scattered in the node, all-reduced across (``hsdp.py``).

Numeric exercises (``widgets.answer_box``): ZeRO memory per GPU, ZeRO-3 traffic, a
plain-DP all-reduce and HSDP's cross-node bytes, each against ``parlab.cost``.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from parlab import cost
from parlab.validate import check_float, check_int
from lessons.common.checkers import core
from lessons.common.i18n import Questions, t
from .hints import HINTS
from .text import TEXT
from .exercises_dp_exchange import check_dp_exchange, solution_dp_exchange
from .exercises_hsdp import check_hsdp_grad_sync, solution_hsdp_grad_sync
from lessons.common import record

__all__ = ["check_dp_exchange", "check_zero1_step", "check_hsdp_grad_sync", "check_zero_memory",
           "check_zero3_traffic", "check_dp_allreduce_bytes", "check_hsdp_traffic",
           "solution_dp_exchange", "solution_zero1_step", "solution_hsdp_grad_sync",
           "show_solution", "hints", "QUESTIONS"]


# --- 1. ZeRO-1's step ----------------------------------------------------------------------

ZERO1_PARAMS, ZERO1_ROWS, ZERO1_STEPS, ZERO1_LR, MOMENTUM = 48, 6, 4, 0.05, 0.9


def solution_zero1_step(params, grads, state, rank, world_size, lr):
    """Reference: ZeRO-1 with SGD + momentum 0.9 (momentum kept for this rank's shard only)."""
    shard = params.numel() // world_size
    g = torch.empty(shard)
    dist.reduce_scatter(g, list(grads.chunk(world_size)))  # g = sum over ranks of my slice
    g /= world_size                                        # ... averaged
    if "momentum" not in state:
        state["momentum"] = torch.zeros(shard)             # 1/W of the optimizer state
    m = state["momentum"]
    m.mul_(0.9).add_(g)
    mine = params[rank * shard:(rank + 1) * shard]          # a view: updates params in place
    mine -= lr * m
    dist.all_gather(list(params.chunk(world_size)), mine.clone())  # everyone's new shard


def _zero1_data(world_size: int, steps: int = ZERO1_STEPS):
    """Initial parameters and, per step, a least-squares batch (X, y) of ROWS rows per
    rank: the same on every rank (seeded), so each rank can take its own rows."""
    gen = torch.Generator().manual_seed(1)
    p0 = torch.randn(ZERO1_PARAMS, generator=gen)
    batches = [(torch.randn(ZERO1_ROWS * world_size, ZERO1_PARAMS, generator=gen) / 4,
                torch.randn(ZERO1_ROWS * world_size, generator=gen)) for _ in range(steps)]
    return p0, batches


def _grad(p, X, y):
    """Gradient of the mean squared error mean((X p - y)^2) over X's rows."""
    return 2 * X.T @ (X @ p - y) / X.shape[0]


def zero1_reference(world_size: int, steps: int = ZERO1_STEPS, lr: float = ZERO1_LR) -> list:
    """Single-device SGD + momentum on the whole batch: the parameters after each step."""
    p, batches = _zero1_data(world_size, steps)
    m, out = torch.zeros_like(p), []
    for X, y in batches:
        m = MOMENTUM * m + _grad(p, X, y)
        p = p - lr * m
        out.append(p.clone())
    return out


def _zero1_harness(source: str, name: str, steps: int, lr: float) -> dict:
    """Rank side: ``steps`` steps, each with this rank's gradient of its own rows."""
    fn = core.load_learner(source, name)
    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    p0, batches = _zero1_data(world, steps)
    params, state, after = p0.clone(), {}, []
    rows = slice(rank * ZERO1_ROWS, (rank + 1) * ZERO1_ROWS)
    for X, y in batches:
        grads = _grad(params, X[rows], y[rows])
        try:
            fn(params, grads, state, rank, world, lr)
        except NotImplementedError:
            raise core.NotWritten(name) from None
        after.append(params.detach().clone())
    return {"after": after, "state_numel": _numel(state)}


def _numel(obj) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.numel()
    if isinstance(obj, dict):
        return sum(_numel(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_numel(v) for v in obj)
    return 0


def check_zero1_step(fn, world_size: int = 4, steps: int = ZERO1_STEPS, lr: float = ZERO1_LR,
                     timeout: float = 30.0) -> dict:
    """Run ``fn(params, grads, state, rank, world_size, lr)`` for ``steps`` steps on
    ``world_size`` ranks; after every step each rank's parameters must equal single-device
    SGD + momentum's, and each rank's ``state`` may hold only its shard's momentum."""
    core.check_ranks("world_size", world_size, 2)
    check_int("steps", steps, 1, 1000)
    check_float("lr", lr)
    core.check_timeout(timeout)
    results, bad = core.run_learner(_zero1_harness, fn, world_size, steps, lr, timeout=timeout)
    if bad:
        return bad
    want = zero1_reference(world_size, steps, lr)
    p0 = _zero1_data(world_size, steps)[0]
    shard = ZERO1_PARAMS // world_size
    for step in range(steps):
        for rank, r in enumerate(results):
            got = r["after"][step]
            msg = core.compare_tensors(got, want[step], where=t(TEXT, "zero1_where", step=step, rank=rank),
                                       atol=1e-5, rtol=1e-4)
            if msg:
                before = p0 if step == 0 else want[step - 1]
                return core.verdict(False, msg + _zero1_hint(got, want[step], before, rank,
                                                             shard, world_size, step))
    biggest = max(range(world_size), key=lambda k: results[k]["state_numel"])
    held = results[biggest]["state_numel"]
    if held > shard:
        return core.verdict(False, t(TEXT, "zero1_state", rank=biggest, held=held, shard=shard))
    return core.verdict(True, t(TEXT, "zero1_ok", steps=steps, world=world_size, shard=shard))


def _zero1_hint(got, want, before, rank, shard, world_size, step) -> str:
    if got.shape != want.shape:
        return ""
    lo, hi = rank * shard, (rank + 1) * shard
    others = torch.ones_like(got, dtype=torch.bool)
    others[lo:hi] = False
    if torch.allclose(got[lo:hi], want[lo:hi], rtol=1e-4, atol=1e-5):
        if torch.allclose(got[others], before[others], rtol=1e-6, atol=1e-7):
            return t(TEXT, "zero1_not_gathered", rank=rank, lo=lo, hi=hi)
        return t(TEXT, "zero1_misplaced", rank=rank, lo=lo, hi=hi)
    if step == 0 and torch.allclose(before - got, world_size * (before - want), rtol=1e-3,
                                    atol=1e-6):
        return t(TEXT, "zero1_summed", world=world_size)
    return ""


# --- 2. numbers: memory, traffic ------------------------------------------------------------

GB = 1e9


# the numeric exercises' questions (their numbers are written in the text)
QUESTIONS = Questions(TEXT, dict.fromkeys(("zero_memory", "zero3_traffic", "dp_allreduce",
                                           "hsdp_traffic")))


def check_zero_memory(answer) -> dict:
    """Model states per GPU (GB) of 13B on 8 GPUs under ZeRO-2 (``cost.zero_memory``)."""
    n = cost.MODEL_PRESETS["13B"].n_params
    per_stage = {s: cost.zero_memory(n, 8, s)["total"] / GB for s in range(4)}
    hint = _which(answer, {t(TEXT, "zero_memory_stage", stage=s) if s else t(TEXT, "zero_memory_dp"): v
                           for s, v in per_stage.items() if s != 2})
    return core.check_number(answer, per_stage[2], rel_tol=0.02, unit="GB",
                             hint=hint or t(TEXT, "zero_memory_hint"),
                             explanation=t(TEXT, "zero_memory_why"))


def check_zero3_traffic(answer) -> dict:
    """Bytes (GB) each GPU sends per step, 13B on 8 GPUs, ZeRO-3 (``cost.zero_comm_volume``)."""
    n = cost.MODEL_PRESETS["13B"].n_params
    want = cost.zero_comm_volume(n, 8, 3) / GB
    hint = _which(answer, {t(TEXT, "zero3_traffic_dp"): cost.zero_comm_volume(n, 8, 0) / GB,
                           t(TEXT, "zero3_traffic_no_ring"): 3 * 2 * n / GB})
    return core.check_number(answer, want, rel_tol=0.02, unit="GB",
                             hint=hint or t(TEXT, "zero3_traffic_hint"),
                             explanation=t(TEXT, "zero3_traffic_why"))


def check_dp_allreduce_bytes(answer) -> dict:
    """Bytes (GB) each GPU sends in a ring all-reduce of 1.3B fp16 gradients over 16 GPUs."""
    n = cost.MODEL_PRESETS["1.3B"].n_params
    S = 2 * n
    want = cost.collective_bytes("all_reduce", S, 16) / GB
    hint = _which(answer, {t(TEXT, "dp_allreduce_2s"): 2 * S / GB, t(TEXT, "dp_allreduce_s"): S / GB})
    return core.check_number(answer, want, rel_tol=0.01, unit="GB",
                             hint=hint or t(TEXT, "dp_allreduce_hint"),
                             explanation=t(TEXT, "dp_allreduce_why", billions=n / 1e9))


def check_hsdp_traffic(answer) -> dict:
    """GB each GPU sends across nodes per step, 70B as HSDP 8 x 8 (``cost.hsdp_comm_volume``)."""
    n = cost.MODEL_PRESETS["70B"].n_params
    want = cost.hsdp_comm_volume(n, 8, 8)["inter_node"] / GB
    hint = _which(answer, {t(TEXT, "hsdp_traffic_flat"): cost.zero_comm_volume(n, 64, 3) / GB,
                           t(TEXT, "hsdp_traffic_whole"): cost.collective_bytes("all_reduce", 2 * n, 8) / GB})
    return core.check_number(answer, want, rel_tol=0.02, unit="GB",
                             hint=hint or t(TEXT, "hsdp_traffic_hint"),
                             explanation=t(TEXT, "hsdp_traffic_why"))


def _which(answer, candidates: dict) -> str:
    """'That is <name>.' if ``answer`` is within 1% of one of the candidates' values."""
    a, why = core.as_number(answer)
    if why:
        return ""  # check_number says what is wrong with it
    for name, v in candidates.items():
        if abs(a - v) <= 0.01 * abs(v):
            return t(TEXT, "that_is", name=name)
    return ""


# --- reference solutions on demand ----------------------------------------------------------

SOLUTIONS = {"my_dp_exchange": solution_dp_exchange, "my_zero1_step": solution_zero1_step,
             "my_hsdp_grad_sync": solution_hsdp_grad_sync}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution of a coding exercise, each behind a click
    ("my_dp_exchange", "my_zero1_step", "my_hsdp_grad_sync")."""
    return core.hints(SOLUTIONS, HINTS, name)


def show_solution(name: str) -> None:
    """Print the reference solution of exercise ``name`` (one of ``SOLUTIONS``)."""
    core.show_solution(SOLUTIONS, name)


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
