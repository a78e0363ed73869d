"""Notebook 02 §8's exercise: SP's all-gather -> GEMM in chunks, pipelined. The reference
passes on 2 and 4 ranks, each planted mistake (one whole all-gather, chunked but serial,
pieces in arrival order, pieces joined along the batch, cut along the features, never
waited for) gets its own message, the placeholder gets "not answered", and bad settings
are a ValueError naming the field before any rank starts. DistWatch's timeline notes the
issue and the wait of async collectives, and hands the Work's other attributes through."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

import parlab
from lessons.common.checkers import learner
from lessons.l02_tensor_parallel import exercises as ex
from lessons.common.checkers.watch import DistWatch

pytestmark = pytest.mark.timeout(120)


# --- planted answers: sent to the ranks by their source, so self-contained ----------------

def whole_all_gather(x_shard, weight, group, chunks):
    t = dist.get_world_size(group)
    bufs = [torch.empty_like(x_shard) for _ in range(t)]
    dist.all_gather(bufs, x_shard, group=group)  # planted: one all-gather, nothing to overlap
    return torch.cat(bufs, dim=1) @ weight


def chunked_but_serial(x_shard, weight, group, chunks):
    t = dist.get_world_size(group)
    B, s, _ = x_shard.shape
    n = s // chunks
    out = x_shard.new_empty(B, t * s, weight.shape[1])
    for k, piece in enumerate(x_shard.chunk(chunks, dim=1)):
        bufs = [torch.empty_like(piece) for _ in range(t)]
        # planted: waited for at once, so nothing runs while it travels
        dist.all_gather(bufs, piece.contiguous(), group=group, async_op=True).wait()
        for r in range(t):
            out[:, r * s + k * n:r * s + (k + 1) * n] = bufs[r] @ weight
    return out


def blocking_pieces(x_shard, weight, group, chunks):
    t = dist.get_world_size(group)
    B, s, _ = x_shard.shape
    n = s // chunks
    out = x_shard.new_empty(B, t * s, weight.shape[1])
    for k, piece in enumerate(x_shard.chunk(chunks, dim=1)):
        bufs = [torch.empty_like(piece) for _ in range(t)]
        dist.all_gather(bufs, piece.contiguous(), group=group)  # planted: blocking
        for r in range(t):
            out[:, r * s + k * n:r * s + (k + 1) * n] = bufs[r] @ weight
    return out


def arrival_order(x_shard, weight, group, chunks):
    t = dist.get_world_size(group)
    pieces = x_shard.chunk(chunks, dim=1)
    outs, pending = [], None
    for k in range(chunks + 1):
        nxt = None
        if k < chunks:
            bufs = [torch.empty_like(pieces[k]) for _ in range(t)]
            nxt = (bufs, dist.all_gather(bufs, pieces[k].contiguous(), group=group, async_op=True))
        if pending is not None:
            pending[1].wait()
            outs.append(torch.cat(pending[0], dim=1) @ weight)
        pending = nxt
    return torch.cat(outs, dim=1)  # planted: chunk-major, the sequence is rank-major


def joined_along_batch(x_shard, weight, group, chunks):
    t = dist.get_world_size(group)
    outs = []
    for piece in x_shard.chunk(chunks, dim=1):
        bufs = [torch.empty_like(piece) for _ in range(t)]
        dist.all_gather(bufs, piece.contiguous(), group=group)
        outs.append(torch.cat(bufs) @ weight)  # planted: torch.cat's default dim=0, the batch
    return torch.cat(outs, dim=1)


def cut_along_features(x_shard, weight, group, chunks):
    t = dist.get_world_size(group)
    outs = []
    for piece in x_shard.chunk(chunks, dim=-1):  # planted: the features, not the sequence
        bufs = [torch.empty_like(piece) for _ in range(t)]
        dist.all_gather(bufs, piece.contiguous(), group=group)
        outs.append(torch.cat(bufs, dim=1) @ weight)
    return torch.cat(outs, dim=1)


def never_waits(x_shard, weight, group, chunks):
    t = dist.get_world_size(group)
    B, s, _ = x_shard.shape
    n = s // chunks
    out = x_shard.new_empty(B, t * s, weight.shape[1])
    for k, piece in enumerate(x_shard.chunk(chunks, dim=1)):
        bufs = [torch.empty_like(piece) for _ in range(t)]
        dist.all_gather(bufs, piece.contiguous(), group=group, async_op=True)
        dist.barrier(group=group)  # planted: no wait() on the handle (the barrier hides the race)
        for r in range(t):
            out[:, r * s + k * n:r * s + (k + 1) * n] = bufs[r] @ weight
    return out


def gathers_own_positions_only(x_shard, weight, group, chunks):
    return x_shard @ weight  # planted: no communication at all


def my_chunked_all_gather_matmul(x_shard, weight, group, chunks):
    raise NotImplementedError  # your code


@pytest.mark.parametrize("world_size, chunks", [(2, 4), (2, 2), (4, 2)])
def test_the_reference_passes(world_size, chunks):
    v = ex.check_chunked_all_gather_matmul(ex.solution_chunked_all_gather_matmul,
                                           world_size=world_size, chunks=chunks)
    assert v["ok"], v["message"]
    assert f"each ran {chunks} all-gathers" in v["message"] and "cannot see: time" in v["message"]


@pytest.mark.parametrize("fn, words", [
    (whole_all_gather, "one all-gather of the whole shard (128 elements)"),
    (chunked_but_serial, "but serial: none of them had a matmul running"),
    (blocking_pieces, "async_op=True before multiplying piece k"),
    (arrival_order, "in the order the pieces arrived"),
    (joined_along_batch, "torch.cat's default dim=0"),
    (cut_along_features, "along the sequence (dim 1)"),
    (never_waits, "never waited for 4 of its all-gathers"),
    (gathers_own_positions_only, "this rank's own positions only"),
    (my_chunked_all_gather_matmul, "Not answered yet"),
], ids=lambda v: getattr(v, "__name__", "")[:24])
def test_each_planted_mistake_gets_its_own_message(fn, words):
    v = ex.check_chunked_all_gather_matmul(fn)
    assert not v["ok"] and words in v["message"], v["message"]


def test_a_crash_shows_the_learners_line_not_the_checkers():
    message = ex.check_chunked_all_gather_matmul(cut_along_features)["message"]
    assert "<your cut_along_features>" in message and "func(*args" not in message, message


@pytest.mark.parametrize("kwargs, named", [
    (dict(world_size=1), "world_size=1"), (dict(world_size=3), "world_size=3 must divide"),
    (dict(chunks=1), "chunks=1"), (dict(chunks=3), "chunks=3 must divide"),
    (dict(world_size=4, chunks=8), "chunks=8 must divide"), (dict(chunks=2.0), "chunks=2.0"),
    (dict(seed=-1), "seed=-1"), (dict(timeout=0), "timeout=0")])
def test_bad_settings_are_refused_before_any_rank_starts(kwargs, named, monkeypatch):
    def no_ranks(*args, **kwargs):
        raise AssertionError("a rank was started before the parameters were checked")
    monkeypatch.setattr(learner, "launch", no_ranks)
    with pytest.raises(ValueError, match=named):
        ex.check_chunked_all_gather_matmul(ex.solution_chunked_all_gather_matmul, **kwargs)


def _timeline_worker():
    x = torch.ones(4)
    with DistWatch() as w:
        work = dist.all_reduce(x, async_op=True)
        future = work.get_future()          # the Work's own attribute, handed through
        work.wait()
        work.wait()                         # a second wait is not noted twice
        dist.all_reduce(x)                  # blocking: issued and done at once
    return dict(timeline=w.timeline, collectives=w.collectives, x=x.tolist(),
                future=type(future).__name__)


def test_watch_notes_the_issue_and_wait_of_async_collectives():
    res = parlab.launch(_timeline_worker, 2)[0]
    assert res["timeline"] == [("issue", 0), ("done", 0), ("issue", 1), ("done", 1)]
    assert [op for op, _, _ in res["collectives"]] == ["all_reduce", "all_reduce"]
    assert res["x"] == [4.0] * 4 and res["future"] == "Future"
