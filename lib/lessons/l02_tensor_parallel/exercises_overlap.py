"""Notebook 02's exercise on §8's forward overlap: sequence parallelism's all-gather before
a column-parallel GEMM, cut into chunks and pipelined (Wang et al., ASPLOS 2023, §3; the
lab's own form is ``tensor_parallel.collective_matmul.all_gather_matmul_forward``).

``my_chunked_all_gather_matmul(x_shard, weight, group, chunks)``: ``x_shard`` is this
rank's run of the sequence, (batch, T/t, h); return ``all_gather(x) @ weight``, (batch, T,
out), gathering x in ``chunks`` pieces along the sequence and multiplying each piece while
the next one travels. The checker runs it on t real ranks and compares every rank's
result with one device's. It reads with ``watch.DistWatch`` which collectives ran and how
many elements each carried, and the order of events: each all-gather's issue and wait,
and every matmul the function computed (``_Matmuls``). So it sees a whole all-gather, the
wrong number or size of pieces, and a chunked but serial version (each piece waited for
before the next is issued); it does not time anything, so it cannot see whether the
transfer really ran beside the matmul (that is the backend's and the hardware's doing),
nor which rows a matmul multiplied."""

from __future__ import annotations

import types

import torch
import torch.distributed as dist
from torch.overrides import TorchFunctionMode

from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.checkers.watch import DistWatch
from lessons.common.i18n import t as say

from .text import TEXT
from lessons.common import record

BATCH, SEQ, HIDDEN, OUT = 2, 16, 8, 6  # x: (BATCH, SEQ, HIDDEN); each rank's weight (HIDDEN, OUT)
GATHERS = ("all_gather", "all_gather_into_tensor")


def solution_chunked_all_gather_matmul(x_shard, weight, group, chunks):
    t = dist.get_world_size(group)
    B, shard, _ = x_shard.shape
    n = shard // chunks                                    # positions per piece
    pieces = x_shard.chunk(chunks, dim=1)                  # cut along the sequence
    out = x_shard.new_empty(B, t * shard, weight.shape[1])

    def start(k):  # issue piece k's all-gather; it travels while we compute
        bufs = [torch.empty_like(pieces[k]) for _ in range(t)]
        return bufs, dist.all_gather(bufs, pieces[k].contiguous(), group=group, async_op=True)

    pending = start(0)
    for k in range(chunks):
        bufs, work = pending
        if k + 1 < chunks:
            pending = start(k + 1)                         # the next piece in flight ...
        work.wait()                                        # ... while this one is multiplied
        for r in range(t):                                 # rank r's piece k: its positions
            out[:, r * shard + k * n:r * shard + (k + 1) * n] = bufs[r] @ weight
    return out


def inputs(seed: int, world_size: int):
    """(x, weights): the whole x (BATCH, SEQ, HIDDEN) and one (HIDDEN, OUT) weight per rank
    (its column slice of the layer), from a seed."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, SEQ, HIDDEN, generator=g)
    return x, [torch.randn(HIDDEN, OUT, generator=g) / HIDDEN ** 0.5 for _ in range(world_size)]


class _Matmuls(TorchFunctionMode):
    """Notes ("matmul",) in a watch's timeline at every matrix product the learner's code
    computes (``@``, torch.matmul, F.linear, einsum, ...): what ran while an all-gather
    was in flight."""

    NAMES = frozenset({"matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "linear", "einsum",
                       "addmm", "baddbmm", "addbmm", "tensordot"})

    def __init__(self, timeline: list):
        super().__init__()
        self.timeline = timeline

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in self.NAMES:
            self.timeline.append(("matmul",))
        return func(*args, **(kwargs or {}))


def _without_mode_frames(tb):
    """Traceback ``tb`` without the frames of ``_Matmuls.__torch_function__``."""
    kept = []
    while tb is not None:
        if tb.tb_frame.f_code is not _Matmuls.__torch_function__.__code__:
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def harness(source: str, name: str, chunks: int, seed: int):
    """On a rank: the learner's call on this rank's shard and weight; what it returned,
    the collectives it ran and the order of issues, waits and matmuls."""
    fn = core.load_learner(source, name)
    r, t = dist.get_rank(), dist.get_world_size()
    x, weights = inputs(seed, t)
    shard = SEQ // t
    try:
        with DistWatch() as watch, _Matmuls(watch.timeline):
            out = fn(x[:, r * shard:(r + 1) * shard].clone(), weights[r].clone(),
                     dist.group.WORLD, chunks)
    except Exception as e:  # the learner's frames only: not _Matmuls' between them
        raise e.with_traceback(_without_mode_frames(e.__traceback__)) from None
    if isinstance(out, torch.Tensor):
        out = out.detach().clone()
    return dict(out=out, collectives=watch.collectives, timeline=watch.timeline)


def _arrival_order(want: torch.Tensor, t: int, chunks: int) -> torch.Tensor:
    """``want`` with its positions in the order the pieces arrive (piece 0 of every rank,
    then piece 1, ...) instead of rank-major."""
    shard, n = SEQ // t, SEQ // t // chunks
    idx = [r * shard + k * n + i for k in range(chunks) for r in range(t) for i in range(n)]
    return want[:, idx]


def _wrong_output(out, want, rank: int, t: int, chunks: int) -> str | None:
    msg = core.compare_tensors(out, want, where=f"rank {rank}", atol=1e-5, rtol=1e-4)
    if msg is None:
        return None
    if isinstance(out, torch.Tensor) and out.dim() == 3 and out.shape[0] != BATCH:
        return say(TEXT, "joined_on_batch", msg=msg, batch=BATCH)
    if isinstance(out, torch.Tensor) and tuple(out.shape) == (BATCH, SEQ // t, want.shape[2]):
        return say(TEXT, "own_positions", msg=msg, t=t)
    if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(want.shape) and torch.allclose(
            out.double(), _arrival_order(want, t, chunks).double(), atol=1e-5, rtol=1e-4):
        return say(TEXT, "arrival_order", msg=msg, shard=SEQ // t, n=SEQ // t // chunks)
    if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(want.shape):
        return say(TEXT, "where_pieces_land", msg=msg, shard=SEQ // t, n=SEQ // t // chunks)
    return msg


def _schedule(res: dict, t: int, chunks: int, rank: int) -> str | None:
    """None if rank ``rank`` gathered x in ``chunks`` equal all-gathers with a matmul
    running while each later piece was in flight; else what it did instead."""
    colls = res["collectives"]
    whole = BATCH * (SEQ // t) * HIDDEN
    others = sorted({op for op, _, _ in colls if op not in GATHERS})
    if not colls:
        return say(TEXT, "no_collective", rank=rank)
    if others:
        return say(TEXT, "other_collectives", rank=rank, others=", ".join(others), chunks=chunks)
    sizes = [n for _, _, n in colls]
    if len(sizes) == 1 and sizes[0] == whole:
        return say(TEXT, "one_whole_gather", whole=whole, chunks=chunks)
    if sizes != [whole // chunks] * chunks:
        return say(TEXT, "wrong_sizes", rank=rank, count=len(sizes), sizes=", ".join(map(str, sizes)),
                   chunks=chunks, piece=whole // chunks, whole=whole)
    in_flight, hidden, done = set(), set(), set()
    for event in res["timeline"]:
        if event[0] == "issue":
            in_flight.add(event[1])
        elif event[0] == "done":
            in_flight.discard(event[1])
            done.add(event[1])
        elif event[0] == "matmul":
            hidden |= in_flight
    if len(done) < chunks:
        return say(TEXT, "never_waited", rank=rank, missing=chunks - len(done))
    if len(hidden) < chunks - 1:
        return say(TEXT, "serial", chunks=chunks, hidden=len(hidden) or say(TEXT, "none"),
                   pipelined=chunks - 1)
    return None


def check_chunked_all_gather_matmul(fn, world_size: int = 2, chunks: int = 4, seed: int = 0,
                                    timeout: float = 30.0) -> dict:
    """Run ``fn(x_shard, weight, group, chunks)`` on ``world_size`` real ranks."""
    t = core.check_ranks("world_size", world_size, 2)
    if SEQ % t:
        raise ValueError(f"world_size={t} must divide the sequence length {SEQ}")
    c = check_int("chunks", chunks, 2)
    if (SEQ // t) % c:
        raise ValueError(f"chunks={c} must divide the positions each rank holds "
                         f"(sequence {SEQ} / world_size {t} = {SEQ // t})")
    check_int("seed", seed, 0)
    core.check_timeout(timeout)
    results, bad = core.run_learner(harness, fn, t, c, seed, timeout=timeout)
    if bad is not None:
        if "cannot be multiplied" in bad["message"]:
            bad = core.verdict(False, bad.get("detail", "") + say(TEXT, "cannot_multiply"))
        return bad
    x, weights = inputs(seed, t)
    for rank, res in enumerate(results):
        wrong = _wrong_output(res["out"], x @ weights[rank], rank, t, c)
        if wrong:
            return core.verdict(False, wrong + ".")
    for rank, res in enumerate(results):
        wrong = _schedule(res, t, c, rank)
        if wrong:
            return core.verdict(False, wrong + ".")
    piece = BATCH * (SEQ // t) * HIDDEN // c
    return core.verdict(True, say(TEXT, "chunked_ok", t=t, c=c, piece=piece))


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
