"""Every coding exercise's checker says "Correct" to the reference solution written the
ways a learner writes it, not only the way the reference is written:

(a) the imports inside the function (notebook 00 asks for self-contained functions),
(b) ``from torch.distributed import ...`` inside it,
(c) ``P2POp`` + ``batch_isend_irecv`` where the exercise is point-to-point; a third
    natural way otherwise (``async_op=True`` and ``wait``, ``torch.distributed.<op>``
    spelled out; for exercises without communication: a loop, a comprehension, a
    helper function inside).

The checkers used to hook the name ``dist`` in the namespace the learner's source runs
in, which an ``import torch.distributed as dist`` inside the function shadows: a right
reduce-scatter got "rank 0 sent 0 bytes where 36 suffice". They now watch the functions
on the ``torch.distributed`` module itself (``exercises.watch``).

Then the diagnoses that used to be wrong or vague, each with the wrong code that showed
it: a TP MLP that divides by t after g, a ring one all-gather step short, a pipeline
stage receiving from the wrong rank (which ended in a SIGSEGV).

The variants are module-level functions: a checker sends the function's source to the
ranks (``inspect.getsource``), and nothing from this module travels with it but what
the function names.
"""

from __future__ import annotations

import pytest

from parlab.exercises import collectives as ex00
from parlab.exercises import pipeline_parallel as ex03
from parlab.exercises import tensor_parallel as ex02

pytestmark = pytest.mark.timeout(120)


# --- notebook 00: reduce-scatter ---------------------------------------------------------

def rs_imports_inside(x, rank, world_size):
    import torch
    import torch.distributed as dist
    chunks = x.chunk(world_size)
    out = chunks[rank].clone()
    sends = [dist.isend(chunks[p].contiguous(), p) for p in range(world_size) if p != rank]
    incoming = torch.empty_like(out)
    for p in range(world_size):
        if p != rank:
            dist.recv(incoming, p)
            out += incoming
    for req in sends:
        req.wait()
    return out


def rs_from_import(x, rank, world_size):
    from torch.distributed import irecv, isend
    chunks = x.chunk(world_size)
    out = chunks[rank].clone()
    reqs, bufs = [], []
    for p in range(world_size):
        if p != rank:
            reqs.append(isend(chunks[p].contiguous(), dst=p))
            buf = chunks[rank].clone()
            bufs.append(buf)
            reqs.append(irecv(buf, src=p))
    for r in reqs:
        r.wait()
    for buf in bufs:
        out += buf
    return out


def rs_batched_p2p(x, rank, world_size):
    import torch
    import torch.distributed as dist
    chunks = x.chunk(world_size)
    peers = [p for p in range(world_size) if p != rank]
    bufs = {p: torch.empty_like(chunks[rank]) for p in peers}
    ops = [dist.P2POp(dist.isend, chunks[p].contiguous(), p) for p in peers]
    ops += [dist.P2POp(dist.irecv, bufs[p], p) for p in peers]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return chunks[rank] + sum(bufs.values())


# --- notebook 00: ring all-reduce ----------------------------------------------------------

def ring_imports_inside(x, rank, world_size):
    import torch
    import torch.distributed as dist
    chunks = x.chunk(world_size)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    incoming = torch.empty_like(chunks[0])
    for s in range(world_size - 1):
        req = dist.isend(chunks[(rank - s - 1) % world_size].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[(rank - s - 2) % world_size].add_(incoming)
    for s in range(world_size - 1):
        req = dist.isend(chunks[(rank - s) % world_size].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[(rank - s - 1) % world_size].copy_(incoming)
    return x


def ring_from_import(x, rank, world_size):
    from torch.distributed import irecv, isend
    chunks = list(x.clone().chunk(world_size))
    right, left = (rank + 1) % world_size, (rank - 1) % world_size

    def step(send_c):
        buf = chunks[send_c].clone()
        reqs = [isend(chunks[send_c].contiguous(), right), irecv(buf, left)]
        for r in reqs:
            r.wait()
        return buf

    for s in range(world_size - 1):
        c = (rank - s - 2) % world_size
        chunks[c] = chunks[c] + step((rank - s - 1) % world_size)
    for s in range(world_size - 1):
        chunks[(rank - s - 1) % world_size] = step((rank - s) % world_size)
    import torch
    return torch.cat(chunks)


def ring_batched_p2p(x, rank, world_size):
    import torch
    import torch.distributed as dist
    chunks = x.chunk(world_size)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    incoming = torch.empty_like(chunks[0])

    def step(send_c):
        ops = [dist.P2POp(dist.isend, chunks[send_c].contiguous(), right),
               dist.P2POp(dist.irecv, incoming, left)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()

    for s in range(world_size - 1):
        step((rank - s - 1) % world_size)
        chunks[(rank - s - 2) % world_size].add_(incoming)
    for s in range(world_size - 1):
        step((rank - s) % world_size)
        chunks[(rank - s - 1) % world_size].copy_(incoming)
    return x


def ring_all_gather_one_step_short(x, rank, world_size):
    import torch
    import torch.distributed as dist
    chunks = x.chunk(world_size)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    incoming = torch.empty_like(chunks[0])
    for s in range(world_size - 1):
        req = dist.isend(chunks[(rank - s - 1) % world_size].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[(rank - s - 2) % world_size].add_(incoming)
    for s in range(world_size - 2):  # bug: W-2 all-gather steps, W-1 are needed
        req = dist.isend(chunks[(rank - s) % world_size].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[(rank - s - 1) % world_size].copy_(incoming)
    return x


def ring_by_group_methods(x, rank, world_size):
    """Messages through the process group's own methods: the watch cannot see them."""
    import torch
    import torch.distributed as dist
    pg = dist.group.WORLD
    chunks = x.chunk(world_size)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    incoming = torch.empty_like(chunks[0])
    for phase in range(2):
        for s in range(world_size - 1):
            send_c = (rank - s - 1 + phase) % world_size
            recv_c = (rank - s - 2 + phase) % world_size
            req = pg.send([chunks[send_c].contiguous()], right, 0)
            pg.recv([incoming], left, 0).wait()
            req.wait()
            if phase == 0:
                chunks[recv_c].add_(incoming)
            else:
                chunks[recv_c].copy_(incoming)
    return x


@pytest.mark.parametrize("fn", [rs_imports_inside, rs_from_import, rs_batched_p2p])
def test_reduce_scatter_styles_are_correct(fn):
    v = ex00.check_reduce_scatter(fn)
    assert v["ok"], v["message"]
    assert "each sent 36 bytes" in v["message"]


@pytest.mark.parametrize("fn", [ring_imports_inside, ring_from_import, ring_batched_p2p])
def test_ring_all_reduce_styles_are_correct(fn):
    v = ex00.check_ring_all_reduce(fn)
    assert v["ok"], v["message"]
    assert "each sent 72 bytes" in v["message"]


def test_ring_one_all_gather_step_short_names_chunk_rank_and_step():
    v = ex00.check_ring_all_reduce(ring_all_gather_one_step_short)
    assert not v["ok"]
    m = v["message"]
    # rank 0's chunk 1 never came round again: it holds ranks 0, 3, 2's parts, not rank 1's
    assert "rank 0: element [3] is 809, expected 1012" in m
    assert "Chunk 1 on rank 0 holds a partial sum (3 of 4 ranks' parts; rank 1 missing)" in m
    assert "the all-gather phase stopped one step short (3 steps are needed, 2 ran)" in m


def test_messages_the_checker_cannot_see_are_reported_as_its_limit():
    v = ex00.check_ring_all_reduce(ring_by_group_methods)
    assert not v["ok"]
    m = v["message"]
    assert "the checker could not count your bytes" in m and "sent 0" not in m
    assert "process group's own methods" in m


# --- notebook 02: Megatron's MLP, forward ----------------------------------------------------

def tp_fwd_imports_inside(x, w1_shard, w2_shard, rank, world_size):
    import torch
    import torch.distributed as dist
    z = torch.nn.functional.gelu(x @ w1_shard) @ w2_shard
    dist.all_reduce(z)
    return z


def tp_fwd_from_import(x, w1_shard, w2_shard, rank, world_size):
    import torch.nn.functional as F
    from torch.distributed import ReduceOp, all_reduce
    z = F.gelu(x @ w1_shard) @ w2_shard
    all_reduce(z, op=ReduceOp.SUM)
    return z


def tp_fwd_async(x, w1_shard, w2_shard, rank, world_size):
    import torch
    z = torch.matmul(torch.nn.functional.gelu(torch.matmul(x, w1_shard)), w2_shard)
    torch.distributed.all_reduce(z, async_op=True).wait()
    return z


def tp_fwd_divides_by_t(x, w1_shard, w2_shard, rank, world_size):
    import torch
    import torch.distributed as dist
    z = torch.nn.functional.gelu(x @ w1_shard) @ w2_shard
    dist.all_reduce(z)
    return z / world_size  # bug: the all-reduce already is the sum the MLP needs


# --- notebook 02: Megatron's MLP with f and g -------------------------------------------------

def tp_mlp_imports_inside(x, w1_shard, w2_shard, rank, world_size):
    import torch
    import torch.distributed as dist

    class MyF(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.view_as(a)

        @staticmethod
        def backward(ctx, grad):
            grad = grad.clone()
            dist.all_reduce(grad)
            return grad

    class MyG(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a = a.clone()
            dist.all_reduce(a)
            return a

        @staticmethod
        def backward(ctx, grad):
            return grad

    return MyG.apply(torch.nn.functional.gelu(MyF.apply(x) @ w1_shard) @ w2_shard)


def tp_mlp_from_import(x, w1_shard, w2_shard, rank, world_size):
    import torch
    from torch.autograd import Function
    from torch.distributed import all_reduce

    def summed(t):
        t = t.clone()
        all_reduce(t)
        return t

    class F(Function):
        forward = staticmethod(lambda ctx, a: a.view_as(a))
        backward = staticmethod(lambda ctx, g: summed(g))

    class G(Function):
        forward = staticmethod(lambda ctx, a: summed(a))
        backward = staticmethod(lambda ctx, g: g)

    h = torch.nn.functional.gelu(F.apply(x) @ w1_shard)
    return G.apply(h @ w2_shard)


def tp_mlp_async(x, w1_shard, w2_shard, rank, world_size):
    import torch

    class MyF(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, grad):
            out = grad.contiguous().clone()
            torch.distributed.all_reduce(out, async_op=True).wait()
            return out

    class MyG(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            out = a.contiguous().clone()
            torch.distributed.all_reduce(out, async_op=True).wait()
            return out

        @staticmethod
        def backward(ctx, grad):
            return grad

    y = torch.nn.functional.gelu(torch.matmul(MyF.apply(x), w1_shard))
    return MyG.apply(torch.matmul(y, w2_shard))


@pytest.mark.parametrize("fn", [tp_fwd_imports_inside, tp_fwd_from_import, tp_fwd_async])
def test_tp_mlp_forward_styles_are_correct(fn):
    v = ex02.check_tp_mlp_forward(fn)
    assert v["ok"], v["message"]


@pytest.mark.parametrize("fn", [tp_mlp_imports_inside, tp_mlp_from_import, tp_mlp_async])
def test_tp_mlp_styles_are_correct(fn):
    v = ex02.check_tp_mlp(fn)
    assert v["ok"], v["message"]


def test_tp_dividing_after_g_is_named_the_mean_not_a_missing_all_reduce():
    v = ex02.check_tp_mlp_forward(tp_fwd_divides_by_t)
    assert not v["ok"]
    m = v["message"]
    assert "It is 1/2 of the sum: the mean over the 2 ranks" in m and "don't divide" in m
    assert "did g all-reduce" not in m


# --- notebook 03: GPipe's forward --------------------------------------------------------------

def pp_imports_inside(micro_batches, stage, n_stages, layer):
    import torch
    import torch.distributed as dist
    outputs = []
    for x in micro_batches:
        if stage > 0:
            x = torch.empty_like(x)
            dist.recv(x, stage - 1)
        y = layer(x)
        if stage < n_stages - 1:
            dist.send(y, stage + 1)
        else:
            outputs.append(y)
    return outputs


def pp_from_import(micro_batches, stage, n_stages, layer):
    from torch.distributed import irecv, isend
    outputs, pending = [], []
    for x in micro_batches:
        if stage > 0:
            x = x.clone()
            irecv(x, src=stage - 1).wait()
        y = layer(x)
        if stage == n_stages - 1:
            outputs.append(y)
        else:
            pending.append(isend(y.contiguous(), dst=stage + 1))
    for req in pending:
        req.wait()
    return outputs


def pp_batched_p2p(micro_batches, stage, n_stages, layer):
    import torch
    import torch.distributed as dist

    def exchange(op, tensor, peer):
        for req in dist.batch_isend_irecv([dist.P2POp(op, tensor, peer)]):
            req.wait()

    outputs = []
    for x in micro_batches:
        if stage != 0:
            x = torch.empty_like(x)
            exchange(dist.irecv, x, stage - 1)
        y = layer(x)
        if stage + 1 < n_stages:
            exchange(dist.isend, y, stage + 1)
        else:
            outputs.append(y)
    return outputs


def pp_recv_from_wrong_rank(micro_batches, stage, n_stages, layer):
    import torch
    import torch.distributed as dist
    outputs = []
    for x in micro_batches:
        if stage > 0:
            x = torch.empty_like(x)
            dist.recv(x, 1 if stage == 3 else stage - 1)  # bug: stage 3 listens to rank 1
        y = layer(x)
        if stage < n_stages - 1:
            dist.send(y, stage + 1)
        else:
            outputs.append(y)
    return outputs


def pp_sends_to_wrong_rank(micro_batches, stage, n_stages, layer):
    import torch.distributed as dist
    from torch.distributed import P2POp, batch_isend_irecv
    outputs = []
    for x in micro_batches:
        if stage > 0:
            x = x.clone()
            dist.recv(x, stage - 1)
        y = layer(x)
        if stage < n_stages - 1:
            peer = (stage + 2) % n_stages if stage == 1 else stage + 1  # bug: stage 1 skips 2
            for req in batch_isend_irecv([P2POp(dist.isend, y, peer)]):
                req.wait()
        else:
            outputs.append(y)
    return outputs


@pytest.mark.parametrize("fn", [pp_imports_inside, pp_from_import, pp_batched_p2p])
def test_pipeline_forward_styles_are_correct(fn):
    v = ex03.check_pipeline_forward(fn)
    assert v["ok"], v["message"]


def test_pipeline_receiving_from_the_wrong_rank_is_named_before_anything_crashes():
    v = ex03.check_pipeline_forward(pp_recv_from_wrong_rank)
    assert not v["ok"]
    m = v["message"]
    assert m.startswith("Not yet. stage 3 receives from rank 1; it must receive from stage 2 (rank 2)")
    assert "SIGSEGV" not in m and "died" not in m and "ended" not in m


def test_pipeline_sending_to_the_wrong_rank_is_named_even_through_p2pop():
    v = ex03.check_pipeline_forward(pp_sends_to_wrong_rank)
    assert not v["ok"]
    assert "stage 1 sends to rank 3; it must send to stage 2 (rank 2)" in v["message"]
