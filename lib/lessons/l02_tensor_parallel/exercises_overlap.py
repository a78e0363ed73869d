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
        return (f"{msg}: dim 0 is the batch ({BATCH}), so your pieces were joined along it "
                "(torch.cat's default dim=0). x_shard is (batch, positions, features): join "
                "the gathered pieces along the sequence, dim=1")
    if isinstance(out, torch.Tensor) and tuple(out.shape) == (BATCH, SEQ // t, want.shape[2]):
        return f"{msg}: that is this rank's own positions only; all-gather x from the {t} ranks"
    if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(want.shape) and torch.allclose(
            out.double(), _arrival_order(want, t, chunks).double(), atol=1e-5, rtol=1e-4):
        return (f"{msg}: the positions are in the order the pieces arrived (piece 0 of every "
                f"rank, then piece 1, ...). The sequence is rank-major: rank r holds positions "
                f"r·{SEQ // t} .. (r+1)·{SEQ // t}, so rank r's piece k belongs at "
                f"r·{SEQ // t} + k·{SEQ // t // chunks}")
    if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(want.shape):
        return (f"{msg}. Rank r's piece k covers positions r·{SEQ // t} + k·{SEQ // t // chunks} "
                f"onwards ({SEQ // t // chunks} of them): check where each gathered piece lands")
    return msg


def _schedule(res: dict, t: int, chunks: int, rank: int) -> str | None:
    """None if rank ``rank`` gathered x in ``chunks`` equal all-gathers with a matmul
    running while each later piece was in flight; else what it did instead."""
    colls = res["collectives"]
    whole = BATCH * (SEQ // t) * HIDDEN
    others = sorted({op for op, _, _ in colls if op not in GATHERS})
    if not colls:
        return (f"right result, but rank {rank} ran no collective the checker could see: it "
                "reads torch.distributed's functions (dist.all_gather, ...), not a process "
                "group's own methods or torch.ops.c10d")
    if others:
        return (f"right result, but rank {rank} also ran {', '.join(others)}: gather x with "
                f"{chunks} all-gathers (dist.all_gather or dist.all_gather_into_tensor) only")
    sizes = [n for _, _, n in colls]
    if len(sizes) == 1 and sizes[0] == whole:
        return (f"right result, but through one all-gather of the whole shard ({whole} "
                f"elements): the matmul waits for all of it, so nothing can overlap. Cut "
                f"x_shard into {chunks} pieces along the sequence and gather each")
    if sizes != [whole // chunks] * chunks:
        return (f"right result, but rank {rank} ran {len(sizes)} all-gathers of "
                f"{', '.join(map(str, sizes))} elements; the exercise asks for {chunks} of "
                f"{whole // chunks} each (1/{chunks} of the shard's {whole})")
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
        return (f"right result this time, but rank {rank} never waited for {chunks - len(done)} "
                "of its all-gathers: call wait() on the handle async_op=True returns before "
                "reading the gathered buffers, or the data may not have arrived yet")
    if len(hidden) < chunks - 1:
        return (f"right result, {chunks} all-gathers of 1/{chunks} each, but serial: "
                f"{len(hidden) or 'none'} of them had a matmul running while they travelled "
                f"(pipelined: {chunks - 1}, every piece after the first). Issue piece k+1's "
                "all-gather with async_op=True before multiplying piece k, and wait() for it "
                "only after")
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
            bad = core.verdict(False, bad.get("detail", "") + " | Cut and gather x_shard along the "
                               "sequence (dim 1): every piece keeps all the features the "
                               "weight multiplies")
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
    return core.verdict(True, f"every rank of {t} returns all_gather(x) @ weight; each ran {c} "
                        f"all-gathers of {piece} elements (1/{c} of its shard), and every piece "
                        "after the first was in flight while a matmul ran. What the checker "
                        "cannot see: time. It reads the order of issues, waits and matmuls, "
                        "not whether the transfer really ran beside the matmul (on these CPU "
                        "ranks both share the cores; on GPUs the link and the SMs are apart).")
