"""Notebook 06 (3D parallelism), "Your turn": checkers and reference solutions.

Coding exercises (the third, ``my_global_grad_norm``, lives in ``exercises.clip``):
``my_groups(rank, dp, pp, tp) -> {"tp": [...], "pp": [...], "dp": [...]}``,
the world ranks in each of ``rank``'s three groups, in the mesh order of ``parlab.mesh``
(rank = (dp_i * pp + pp_i) * tp + tp_i: TP fastest, DP outermost). Checked first for every
rank of 8 against ``Mesh.groups``; then really used on 8 ranks: every rank creates the
groups the function describes, all-reduces its rank id over each, and the sums are
compared with the mesh's, naming the rank and the group.

Numeric ones (``check_*``) compare with ``mesh.Mesh``, ``parlab.cost`` and ``planner.estimate``.
"""

from __future__ import annotations


import torch
import torch.distributed as dist

from parlab import cost, planner
from parlab.mesh import Mesh
from lessons.common.checkers import core
from lessons.common.i18n import t
from .hints import HINTS
from .text import TEXT

__all__ = ["check_coords", "check_tp_group", "check_bubble", "check_memory", "memory_answer",
           "check_groups", "solution_groups", "check_grad_sync", "solution_grad_sync",
           "check_global_grad_norm", "solution_global_grad_norm", "show_solution", "hints",
           "solution_html", "AXES"]

AXES = ("tp", "pp", "dp")


# --- numeric answers ----------------------------------------------------------------------

def check_coords(answer, rank: int = 5, dp: int = 2, pp: int = 2, tp: int = 2) -> dict:
    """``answer`` = {"dp":, "pp":, "tp":} of ``rank`` in Mesh(dp, pp, tp)."""
    want = {k: v for k, v in Mesh(dp=dp, pp=pp, tp=tp).coords(rank).items() if k != "cp"}
    if answer is None:
        return core.missing("answer = {'dp': ..., 'pp': ..., 'tp': ...}")
    if not isinstance(answer, dict):
        return core.verdict(False, t(TEXT, "coords.not_dict", got=core.shown(answer)))
    got = {}
    for k in want:
        if k not in answer:
            return core.verdict(False, t(TEXT, "coords.no_key", name=repr(k)))
        got[k], why = core.as_number(answer[k], whole=True)
        if why:
            return core.verdict(False, f"{k} {why}")
    if got == want:
        return core.verdict(True, t(TEXT, "coords.right", rank=rank, want=want))
    wrong = [k for k in want if got[k] != want[k]]
    return core.verdict(False, t(TEXT, "coords.wrong", wrong=", ".join(wrong)))


def check_tp_group(answer, rank: int = 6, dp: int = 2, pp: int = 2, tp: int = 2) -> dict:
    """``answer`` = the world ranks in ``rank``'s TP group."""
    want = next(g for g in Mesh(dp=dp, pp=pp, tp=tp).groups("tp") if rank in g)
    got, bad = core.read_numbers(answer, "the TP group", whole=True, ask="answer = [ranks]")
    if bad:
        return bad
    if sorted(got) == want:
        return core.verdict(True, t(TEXT, "tp_group.right", want=want))
    return core.verdict(False, t(TEXT, "tp_group.wrong", got=sorted(got)))


def check_bubble(answer, pp: int = 4, micro_batches: int = 8) -> dict:
    """The bubble's share of the step, (p-1)/(m+p-1): ``cost.bubble_fraction``."""
    want = cost.bubble_fraction(pp, micro_batches)
    return core.check_number(answer, want, rel_tol=0.01, share=True, name="bubble share",
                             hint=t(TEXT, "bubble.hint"),
                             explanation=f"(p-1)/(m+p-1) = {pp - 1}/{micro_batches + pp - 1}.")


def memory_answer(model: str = "175B", n_gpus: int = 1024, tp: int = 8, pp: int = 16,
                  global_batch: int = 1536) -> float:
    """Weights + gradients + Adam states per GPU of the first stage (GB, 1e9), plain DP,
    as ``planner.estimate`` counts them."""
    m = planner.resolve_model(model)
    e = planner.estimate(m["n_layers"], m["d_model"], m["n_heads"], m["seq_len"],
                         m["vocab_size"], n_gpus, tp, pp, global_batch, 1, recompute="full")
    mem = e.memory_per_gpu
    return (mem.params + mem.grads + mem.optimizer) / 1e9


def check_memory(answer, model: str = "175B", n_gpus: int = 1024, tp: int = 8, pp: int = 16,
                 global_batch: int = 1536) -> dict:
    """Model states per GPU (GB) of the first stage: its L/pp layers plus the embedding,
    split over tp, 16 bytes a parameter."""
    want = memory_answer(model, n_gpus, tp, pp, global_batch)
    return core.check_number(answer, want, rel_tol=0.05, unit="GB", name="GB",
                             hint=t(TEXT, "memory.hint"), explanation=t(TEXT, "memory.explanation"))


# --- coding exercise: the 3D groups, then used on 8 ranks --------------------------------

def solution_groups(rank, dp, pp, tp):
    """The world ranks of ``rank``'s TP, PP and DP groups; rank = (d_i * pp + p_i) * tp + t_i."""
    d_i, rest = divmod(rank, pp * tp)
    p_i, t_i = divmod(rest, tp)
    return {"tp": [(d_i * pp + p_i) * tp + i for i in range(tp)],
            "pp": [(d_i * pp + i) * tp + t_i for i in range(pp)],
            "dp": [(i * pp + p_i) * tp + t_i for i in range(dp)]}


def _groups_of(got, rank: int):
    """The learner's answer for one rank as sorted lists, or a verdict if it is junk."""
    if not isinstance(got, dict) or any(a not in got for a in AXES):
        return None, core.verdict(False, t(TEXT, "groups.not_dict", rank=rank,
                                           got=core.shown(got, 80)))
    out = {}
    for a in AXES:
        ranks, why = core.as_numbers(got[a], whole=True)
        if why:
            return None, core.verdict(False, t(TEXT, "groups.not_list", rank=rank,
                                               axis=a.upper(), why=why))
        out[a] = sorted(ranks)
    return out, None


def _check_mesh(dp, pp, tp) -> Mesh:
    for name, v in (("dp", dp), ("pp", pp), ("tp", tp)):
        core.check_ranks(name, v)
    if dp * pp * tp > core.MAX_LOCAL_RANKS:
        raise ValueError(f"dp * pp * tp = {dp * pp * tp} ranks exceeds the cap of "
                         f"{core.MAX_LOCAL_RANKS} local ranks")
    return Mesh(dp=dp, pp=pp, tp=tp)


def groups_harness(source: str, name: str, dp: int, pp: int, tp: int):
    """On each rank: create every group the learner's function describes (on every rank,
    in one order: ``new_group`` is collective), then all-reduce the rank id over this
    rank's tp, pp and dp groups."""
    fn = core.load_learner(source, name)
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = {a: sorted(fn(rank, dp, pp, tp)[a]) for a in AXES}
    every = sorted({(a, tuple(sorted(fn(r, dp, pp, tp)[a]))) for r in range(world) for a in AXES})
    groups = {key: dist.new_group(list(key[1])) for key in every}
    sums = {}
    for a in AXES:
        x = torch.tensor([float(rank)])
        dist.all_reduce(x, group=groups[a, tuple(mine[a])])
        sums[a] = int(x.item())
    return sums


def check_groups(fn, dp: int = 2, pp: int = 2, tp: int = 2, timeout: float = 30.0) -> dict:
    """``fn(rank, dp, pp, tp)`` against ``Mesh`` for every rank (in a child process,
    ``core.call_learner``), then on dp*pp*tp real ranks."""
    mesh = _check_mesh(dp, pp, tp)
    core.check_timeout(timeout)
    world = mesh.size
    answers, failed = core.call_learner(fn, [(r, dp, pp, tp) for r in range(world)],
                                        label="my_groups", timeout=timeout)
    for rank, raw in enumerate(answers):
        got, bad = _groups_of(raw, rank)
        if bad:
            return bad
        for a in AXES:
            want = next(g for g in mesh.groups(a) if rank in g)
            if got[a] != want:
                c = mesh.coords(rank)
                return core.verdict(False, t(TEXT, "groups.wrong", rank=rank, axis=a.upper(),
                                             got=got[a], want=want, dp=c["dp"], pp=c["pp"],
                                             tp=c["tp"], coord=a))
    if failed:
        return failed
    sums, bad = core.run_learner(groups_harness, fn, world, dp, pp, tp, timeout=timeout)
    if bad:
        return bad
    for rank, s in enumerate(sums):
        for a in AXES:
            want = sum(next(g for g in mesh.groups(a) if rank in g))
            if s[a] != want:
                return core.verdict(False, t(TEXT, "groups.sum_wrong", rank=rank, axis=a.upper(),
                                             got=s[a], want=want))
    return core.verdict(True, t(TEXT, "groups.right", dp=dp, pp=pp, tp=tp, world=world,
                                last=world - 1, tp_sum=sums[-1]["tp"], pp_sum=sums[-1]["pp"],
                                dp_sum=sums[-1]["dp"]), sums=sums)


# --- coding exercise: the DP gradient sync on a 2 x 2 x 2 mesh ---------------------------

def solution_grad_sync(grad, groups):
    """Average ``grad`` over the data-parallel replicas only: the ranks that hold the same
    layers (same stage) and the same TP slice."""
    dist.all_reduce(grad, group=groups["dp"])
    return grad / dist.get_world_size(groups["dp"])


def _grad(coords: dict, n: int = 6):
    """Rank-distinct gradient: its stage and TP slice set the base, its replica the offset."""
    return torch.arange(n, dtype=torch.float32) + 100 * coords["pp"] + 10 * coords["tp"] + 3 * coords["dp"]


def grad_sync_harness(source: str, name: str, dp: int, pp: int, tp: int):
    """On each rank: the mesh's groups, this rank's gradient, the learner's sync."""
    fn = core.load_learner(source, name)
    mesh = Mesh(dp=dp, pp=pp, tp=tp).init()
    groups = {a: mesh.group(a) for a in AXES}
    return fn(_grad(mesh.coords(dist.get_rank())), groups)


def check_grad_sync(fn, dp: int = 2, pp: int = 2, tp: int = 2, timeout: float = 30.0) -> dict:
    """Run ``fn(grad, groups)`` on dp*pp*tp ranks; each rank must return the mean of its DP
    group's gradients (its own stage and TP slice, every replica)."""
    from lessons.l05_context_parallel.exercises import _unwritten
    mesh = _check_mesh(dp, pp, tp)
    core.check_timeout(timeout)
    if _unwritten(fn):
        return core.missing(t(TEXT, "unwritten", name=fn.__name__))
    got, bad = core.run_learner(grad_sync_harness, fn, mesh.size, dp, pp, tp, timeout=timeout)
    if bad:
        return bad
    world_mean = torch.stack([_grad(mesh.coords(r)) for r in range(mesh.size)]).mean(0)
    for rank, g in enumerate(got):
        c = mesh.coords(rank)
        group = next(x for x in mesh.groups("dp") if rank in x)
        want = torch.stack([_grad(mesh.coords(r)) for r in group]).mean(0)
        msg = core.compare_tensors(g, want, where=t(TEXT, "sync.where", rank=rank, stage=c["pp"],
                                                    tp=c["tp"]))
        if msg:
            if isinstance(g, torch.Tensor) and g.shape == want.shape:
                if torch.allclose(g, world_mean):
                    msg += t(TEXT, "sync.world_mean")
                elif torch.allclose(g, want * len(group)):
                    msg += t(TEXT, "sync.sum", group=group)
            return core.verdict(False, msg)
    return core.verdict(True, t(TEXT, "sync.right",
                                group=next(x for x in mesh.groups("dp") if 0 in x)))


# the global gradient norm for clipping (§2), in its own module
from .exercises_clip import check_global_grad_norm, solution_global_grad_norm  # noqa: E402
from lessons.common import record

SOLUTIONS = {"my_groups": solution_groups, "my_grad_sync": solution_grad_sync,
             "my_global_grad_norm": solution_global_grad_norm}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution of a coding exercise, each behind a click
    ("my_groups", "my_grad_sync", "my_global_grad_norm")."""
    return core.hints(SOLUTIONS, HINTS, name)





def solution_html(name: str = "my_groups") -> str:
    """The reference solution as an HTML ``<pre>`` block (for ``viz.note``: opens on a click)."""
    return core.solution_html(SOLUTIONS, name)


def show_solution(name: str = "my_groups") -> None:
    """Print the reference solution of a coding exercise (its source)."""
    core.show_solution(SOLUTIONS, name)


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
