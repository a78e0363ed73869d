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

from lessons.l00_collectives import exercises as ex00
from lessons.l05_context_parallel import exercises as ex05
from lessons.l01_data_parallel import exercises as ex01
from lessons.l04_expert_parallel import exercises as ex04
from lessons.l06_3d_parallel import exercises as ex06
from lessons.l07_mixed_precision import exercises as ex07
from lessons.l08_checkpoints_and_failures import exercises as ex08
from lessons.l09_the_whole_answer import exercises as ex09
from lessons.l03_pipeline_parallel import exercises as ex03
from lessons.l02_tensor_parallel import exercises as ex02

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


def test_tp_dividing_after_g_is_named_the_mean_not_a_missing_all_reduce():
    v = ex02.check_tp_mlp_forward(tp_fwd_divides_by_t)
    assert not v["ok"]
    m = v["message"]
    assert "It is 1/2 of the sum: the mean over the 2 ranks" in m and "don't divide" in m
    assert "did g all-reduce" not in m


# --- notebook 02 §8: the all-gather -> GEMM, chunked and pipelined ---------------------------

def chunked_imports_inside(x_shard, weight, group, chunks):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    t, (B, s, _) = dist.get_world_size(group), x_shard.shape
    n = s // chunks
    out = torch.empty(B, t * s, weight.shape[1])
    bufs = [[torch.empty(B, n, x_shard.shape[2]) for _ in range(t)] for _ in range(chunks)]
    works = [dist.all_gather(bufs[0], x_shard[:, :n].contiguous(), group=group, async_op=True)]
    for k in range(chunks):
        if k + 1 < chunks:
            piece = x_shard[:, (k + 1) * n:(k + 2) * n].contiguous()
            works.append(dist.all_gather(bufs[k + 1], piece, group=group, async_op=True))
        works[k].wait()
        for r in range(t):
            out[:, r * s + k * n:r * s + (k + 1) * n] = F.linear(bufs[k][r], weight.t())
    return out


def chunked_from_import(x_shard, weight, group, chunks):
    import torch
    from torch.distributed import all_gather_into_tensor, get_world_size
    t, (B, s, h) = get_world_size(group), x_shard.shape
    n = s // chunks
    flat = [torch.empty(t * B, n, h) for _ in range(chunks)]  # rank-major: (t, B, n, h)
    works = [all_gather_into_tensor(flat[k], x_shard[:, k * n:(k + 1) * n].contiguous(),
                                    group=group, async_op=True) for k in range(chunks)]
    parts = []
    for k in range(chunks):
        works[k].wait()
        parts.append(torch.matmul(flat[k].view(t, B, n, h), weight))  # (t, B, n, out)
    y = torch.stack(parts, dim=1)                                      # (t, chunks, B, n, out)
    return y.permute(2, 0, 1, 3, 4).reshape(B, t * s, -1)


def chunked_helper(x_shard, weight, group, chunks):
    import torch

    def gather(piece):
        bufs = [torch.empty_like(piece) for _ in range(torch.distributed.get_world_size(group))]
        return bufs, torch.distributed.all_gather(bufs, piece, group=group, async_op=True)

    pieces = [p.contiguous() for p in x_shard.chunk(chunks, dim=1)]
    pending, results = gather(pieces[0]), []
    for k in range(chunks):
        bufs, work = pending
        if k + 1 < chunks:
            pending = gather(pieces[k + 1])
        work.wait()
        results.append([b @ weight for b in bufs])               # results[k][r]
    t = len(results[0])
    return torch.cat([results[k][r] for r in range(t) for k in range(chunks)], dim=1)


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


# --- notebook 03: 1F1B and ZB-H1 as data, the partition (no communication) ----------------------

def f1b_loop(stage, n_stages, n_micro):
    warmup = min(n_stages - stage - 1, n_micro)
    actions, f, b = [], 0, 0
    while f < warmup:
        actions.append(("F", f))
        f += 1
    while b < n_micro:
        if f < n_micro:
            actions.append(("F", f))
            f += 1
        actions.append(("B", b))
        b += 1
    return actions


def f1b_comprehension(stage, n_stages, n_micro):
    w = min(n_stages - stage - 1, n_micro)
    steady = [a for i in range(n_micro - w) for a in (("F", w + i), ("B", i))]
    return [("F", i) for i in range(w)] + steady + [("B", i) for i in range(n_micro - w, n_micro)]


def f1b_helper(stage, n_stages, n_micro):
    def names(op, mbs):
        return [f"{op}{mb}" for mb in mbs]  # "F3": the checker reads these too

    warmup = min(n_stages - stage - 1, n_micro)
    out = names("F", range(warmup))
    for i in range(n_micro - warmup):
        out += names("F", [warmup + i]) + names("B", [i])
    return out + names("B", range(n_micro - warmup, n_micro))


def zb_loop(stage, n_stages, n_micro):
    warmup = min(n_stages - stage - 1, n_micro)
    actions, f, b, w = [], 0, 0, 0
    while f < warmup:
        actions.append(("F", f))
        f += 1
    while b < n_micro:
        if f < n_micro:
            actions.append(("F", f))
            f += 1
        actions.append(("B", b))
        b += 1
        if b - w > stage:  # W lags its B by `stage` backwards
            actions.append(("W", w))
            w += 1
    while w < n_micro:
        actions.append(("W", w))
        w += 1
    return actions


def zb_from_1f1b(stage, n_stages, n_micro):
    w = min(n_stages - stage - 1, n_micro)
    one = ([("F", i) for i in range(w)] + [a for i in range(n_micro - w) for a in (("F", w + i), ("B", i))]
           + [("B", i) for i in range(n_micro - w, n_micro)])
    out = []
    for op, mb in one:
        out.append((op, mb))
        if op == "B" and mb >= stage:
            out.append(("W", mb - stage))
    return out + [("W", i) for i in range(n_micro - stage, n_micro)]


def zb_helper(stage, n_stages, n_micro):
    def names(op, mbs):
        return [f"{op}{mb}" for mb in mbs]  # "W3": the checker reads these too

    warmup = min(n_stages - stage - 1, n_micro)
    out = names("F", range(warmup))
    for j in range(n_micro):
        out += names("F", [warmup + j] if warmup + j < n_micro else []) + names("B", [j])
        out += names("W", [j - stage] if j >= stage else [])
    return out + names("W", range(n_micro - stage, n_micro))


def partition_loop(n_layers, n_stages):
    sizes = [0] * n_stages
    for layer in range(n_layers):
        sizes[layer % n_stages] += 1
    return sizes


def partition_comprehension(n_layers, n_stages):
    return [n_layers // n_stages + (1 if s < n_layers % n_stages else 0) for s in range(n_stages)]


def partition_helper(n_layers, n_stages):
    import math

    def size(s):
        return math.ceil((n_layers - s) / n_stages)  # stage s gets layers s, s + P, ...

    return list(map(size, range(n_stages)))


# --- notebook 01: DP's exchange, ZeRO-1's step ------------------------------------------------

def dp_imports_inside(grads, rank, world_size):
    import torch.distributed as dist
    for g in grads:
        dist.all_reduce(g)
        g /= world_size


def dp_from_import(grads, rank, world_size):
    from torch.distributed import ReduceOp, all_reduce
    [all_reduce(g, op=ReduceOp.SUM) for g in grads]
    for g in grads:
        g.mul_(1.0 / world_size)


def dp_async_flat(grads, rank, world_size):
    import torch
    flat = torch.cat([g.reshape(-1) for g in grads])  # one bucket, as DDP does
    torch.distributed.all_reduce(flat, async_op=True).wait()
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g) / world_size)
        offset += g.numel()


def zero1_imports_inside(params, grads, state, rank, world_size, lr):
    import torch
    import torch.distributed as dist
    shard = params.numel() // world_size
    g = torch.empty(shard)
    dist.reduce_scatter(g, list(grads.chunk(world_size)))
    g /= world_size
    m = state.setdefault("momentum", torch.zeros(shard))
    m.mul_(0.9).add_(g)
    mine = params[rank * shard:(rank + 1) * shard]
    mine -= lr * m
    dist.all_gather(list(params.chunk(world_size)), mine.clone())


def zero1_from_import(params, grads, state, rank, world_size, lr):
    import torch
    from torch.distributed import all_gather_into_tensor, reduce_scatter_tensor
    n = params.numel() // world_size
    g = torch.zeros(n)
    reduce_scatter_tensor(g, grads.contiguous())
    if "momentum" not in state:
        state["momentum"] = torch.zeros(n)
    state["momentum"] = 0.9 * state["momentum"] + g / world_size
    new = params[rank * n:(rank + 1) * n] - lr * state["momentum"]
    all_gather_into_tensor(params, new.contiguous())


def zero1_all_reduce_then_slice(params, grads, state, rank, world_size, lr):
    import torch
    import torch.distributed as dist
    n = params.numel() // world_size
    mine = slice(rank * n, (rank + 1) * n)
    total = grads.clone()
    dist.all_reduce(total, async_op=True).wait()
    m = state.get("momentum", torch.zeros(n)) * 0.9 + total[mine] / world_size
    state["momentum"] = m
    params[mine] -= lr * m
    parts = [torch.empty(n) for _ in range(world_size)]
    dist.all_gather(parts, params[mine].clone())
    params.copy_(torch.cat(parts))


# --- notebook 05: the zig-zag shard (no communication), ring attention ------------------------

def zigzag_comprehension(x, rank, world_size):
    import torch
    c = x.shape[0] // (2 * world_size)
    idx = [i for k in (rank, 2 * world_size - 1 - rank) for i in range(k * c, (k + 1) * c)]
    return x[torch.tensor(idx)]


def zigzag_loop(x, rank, world_size):
    import torch
    parts = []
    for k, chunk in enumerate(x.chunk(2 * world_size)):
        if k in (rank, 2 * world_size - 1 - rank):
            parts.append(chunk)
    return torch.cat(parts)


def zigzag_helper(x, rank, world_size):
    import torch

    def chunk(k):
        c = x.shape[0] // (2 * world_size)
        return x[k * c:(k + 1) * c]

    return torch.cat((chunk(rank), chunk(2 * world_size - 1 - rank)), dim=0)


def ring_attn_imports_inside(q, k, v, rank, world_size):
    import torch
    import torch.distributed as dist
    scale = q.shape[-1] ** -0.5
    m = torch.full(q.shape[:-1] + (1,), float("-inf"))
    l = torch.zeros(q.shape[:-1] + (1,))
    acc = torch.zeros_like(q)
    kv = torch.stack([k, v]).contiguous()
    for step in range(world_size):
        if step < world_size - 1:
            incoming = torch.empty_like(kv)
            reqs = [dist.isend(kv, (rank + 1) % world_size),
                    dist.irecv(incoming, (rank - 1) % world_size)]
        s = q @ kv[0].transpose(-1, -2) * scale
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        alpha = torch.exp(m - m_new)
        l, acc, m = l * alpha + p.sum(-1, keepdim=True), acc * alpha + p @ kv[1], m_new
        if step < world_size - 1:
            for r in reqs:
                r.wait()
            kv = incoming
    return acc / l


def ring_attn_from_import(q, k, v, rank, world_size):
    import torch
    from torch.distributed import recv, send
    # blocking, ordered so that no two neighbours both wait: even ranks send first
    scale = q.shape[-1] ** -0.5
    blocks_k, blocks_v = [k], [v]
    kk, vv = k.clone(), v.clone()
    for _ in range(world_size - 1):
        nk, nv = torch.empty_like(kk), torch.empty_like(vv)
        right, left = (rank + 1) % world_size, (rank - 1) % world_size
        if rank % 2 == 0:
            send(kk, right)
            send(vv, right)
            recv(nk, left)
            recv(nv, left)
        else:
            recv(nk, left)
            recv(nv, left)
            send(kk, right)
            send(vv, right)
        kk, vv = nk, nv
        blocks_k.append(kk)
        blocks_v.append(vv)
    # every block is here; the same online softmax over them, in arrival order
    m = torch.full(q.shape[:-1] + (1,), float("-inf"))
    l, acc = torch.zeros(q.shape[:-1] + (1,)), torch.zeros_like(q)
    for kb, vb in zip(blocks_k, blocks_v):
        s = q @ kb.transpose(-1, -2) * scale
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p, alpha = torch.exp(s - m_new), torch.exp(m - m_new)
        l, acc, m = l * alpha + p.sum(-1, keepdim=True), acc * alpha + p @ vb, m_new
    return acc / l


def ring_attn_batched_p2p(q, k, v, rank, world_size):
    import torch
    import torch.distributed as dist
    scale = q.shape[-1] ** -0.5
    m = torch.full(q.shape[:-1] + (1,), float("-inf"))
    l, acc = torch.zeros(q.shape[:-1] + (1,)), torch.zeros_like(q)
    kv = torch.stack([k, v]).contiguous()
    for step in range(world_size):
        s = q @ kv[0].transpose(-1, -2) * scale
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p, alpha = torch.exp(s - m_new), torch.exp(m - m_new)
        l, acc, m = l * alpha + p.sum(-1, keepdim=True), acc * alpha + p @ kv[1], m_new
        if step < world_size - 1:
            incoming = torch.empty_like(kv)
            ops = [dist.P2POp(dist.isend, kv, (rank + 1) % world_size),
                   dist.P2POp(dist.irecv, incoming, (rank - 1) % world_size)]
            for req in dist.batch_isend_irecv(ops):
                req.wait()
            kv = incoming
    return acc / l


# --- notebook 04: routing, per rank (no communication) and global -----------------------------

def route_loop(logits, top_k, capacity):
    import torch
    experts = logits.topk(top_k, dim=-1).indices
    kept = torch.zeros_like(experts, dtype=torch.bool)
    load = [0] * logits.shape[-1]
    for c in range(top_k):              # every first choice before any second choice
        for t in range(logits.shape[0]):  # then earlier tokens first
            e = int(experts[t, c])
            kept[t, c] = load[e] < capacity
            load[e] += 1
    return experts, kept


def route_comprehension(logits, top_k, capacity):
    import torch
    experts = torch.argsort(logits, dim=-1, descending=True)[:, :top_k]
    order = [(c, t) for c in range(top_k) for t in range(logits.shape[0])]
    seen = [[int(experts[t2, c2]) for c2, t2 in order[:i]].count(int(experts[t, c]))
            for i, (c, t) in enumerate(order)]
    kept = torch.zeros(experts.shape, dtype=torch.bool)
    for (c, t), ahead in zip(order, seen):
        kept[t, c] = ahead < capacity
    return experts, kept


def route_helper(logits, top_k, capacity):
    import torch

    def position_in_queue(experts):
        onehot = torch.nn.functional.one_hot(experts.T.reshape(-1), logits.shape[-1])
        pos = (onehot.cumsum(0) - onehot).mul(onehot).sum(-1)  # choice-major order
        return pos.view(top_k, -1).T

    experts = logits.topk(top_k).indices
    return experts, position_in_queue(experts) < capacity


def global_route_imports_inside(logits, top_k, capacity, rank, world_size):
    import torch
    import torch.distributed as dist
    experts = logits.topk(top_k, dim=-1).indices
    onehot = torch.nn.functional.one_hot(experts, logits.size(-1))
    counts = onehot.sum(0)
    everyone = [torch.zeros_like(counts) for _ in range(world_size)]
    dist.all_gather(everyone, counts)
    everyone = torch.stack(everyone)
    total = everyone.sum(0)
    before = (total.cumsum(0) - total) + everyone[:rank].sum(0)
    position = (onehot.cumsum(0) - onehot + before).gather(2, experts.unsqueeze(-1)).squeeze(-1)
    return experts, position < capacity


def global_route_from_import(logits, top_k, capacity, rank, world_size):
    import torch
    from torch.distributed import all_reduce
    experts = logits.topk(top_k, dim=-1).indices
    n, e = logits.shape
    # every rank's (k, E) counts in one (W, k, E) tensor: mine in my row, zeros elsewhere
    table = torch.zeros(world_size, top_k, e, dtype=torch.long)
    for t in range(n):
        for c in range(top_k):
            table[rank, c, experts[t, c]] += 1
    all_reduce(table)
    kept = torch.zeros(n, top_k, dtype=torch.bool)
    for c in range(top_k):
        load = table[:, :c].sum((0, 1)) + table[:rank, c].sum(0)  # ahead of my choice c
        for t in range(n):
            x = int(experts[t, c])
            kept[t, c] = bool(load[x] < capacity)
            load[x] += 1
    return experts, kept


def global_route_async(logits, top_k, capacity, rank, world_size):
    import torch
    experts = logits.topk(top_k, dim=-1).indices
    onehot = torch.nn.functional.one_hot(experts, logits.size(-1))
    counts = onehot.sum(0).contiguous()
    parts = [torch.empty_like(counts) for _ in range(world_size)]
    torch.distributed.all_gather(parts, counts, async_op=True).wait()
    gathered = torch.stack(parts)
    total = gathered.sum(0)
    before = (total.cumsum(0) - total) + gathered[:rank].sum(0)
    position = (onehot.cumsum(0) - onehot + before).gather(2, experts.unsqueeze(-1)).squeeze(-1)
    return experts, position < capacity


# --- notebook 04: expert choice over the global batch -------------------------------------------

def expert_choice_imports_inside(logits, capacity, rank, world_size):
    import torch
    import torch.distributed as dist
    scores = logits.softmax(-1)
    parts = [torch.empty_like(scores) for _ in range(world_size)]
    dist.all_gather(parts, scores.contiguous())
    gates, tokens = torch.cat(parts).t().topk(capacity, dim=-1)
    return tokens, gates


def expert_choice_from_import(logits, capacity, rank, world_size):
    import torch
    from torch.distributed import all_gather_into_tensor
    n, e = logits.shape
    every = torch.empty(world_size * n, e)
    all_gather_into_tensor(every, logits.contiguous())     # gather the logits, softmax after
    s = every.softmax(dim=1)
    tokens = torch.stack([s[:, j].argsort(descending=True)[:capacity] for j in range(e)])
    return tokens, torch.stack([s[tokens[j], j] for j in range(e)])


def expert_choice_async(logits, capacity, rank, world_size):
    import torch
    # each rank's top-capacity candidates per expert suffice: a token outside its own
    # rank's top-capacity cannot be in the batch's
    s = logits.softmax(-1)
    vals, idx = s.topk(min(capacity, s.size(0)), dim=0)        # (c, E) candidates
    idx = idx + rank * s.size(0)
    vs = [torch.empty_like(vals) for _ in range(world_size)]
    ids = [torch.empty_like(idx) for _ in range(world_size)]
    torch.distributed.all_gather(vs, vals.contiguous(), async_op=True).wait()
    torch.distributed.all_gather(ids, idx.contiguous(), async_op=True).wait()
    vals, idx = torch.cat(vs), torch.cat(ids)                  # (W c, E)
    top = vals.topk(capacity, dim=0)
    return idx.gather(0, top.indices).t(), top.values.t()


# --- notebook 06: the groups (no communication in the function), the DP gradient sync ---------

def groups_loop(rank, dp, pp, tp):
    d, rest = divmod(rank, pp * tp)
    p, t = divmod(rest, tp)
    out = {"tp": [], "pp": [], "dp": []}
    for i in range(tp):
        out["tp"].append((d * pp + p) * tp + i)
    for i in range(pp):
        out["pp"].append((d * pp + i) * tp + t)
    for i in range(dp):
        out["dp"].append((i * pp + p) * tp + t)
    return out


def groups_comprehension(rank, dp, pp, tp):
    everyone = [(d, p, t) for d in range(dp) for p in range(pp) for t in range(tp)]
    me = everyone[rank]
    return {axis: [r for r, c in enumerate(everyone)
                   if all(c[j] == me[j] for j in range(3) if j != i)]
            for i, axis in enumerate(("dp", "pp", "tp"))}


def groups_helper(rank, dp, pp, tp):
    def to_rank(d, p, t):
        return (d * pp + p) * tp + t

    d, p, t = rank // (pp * tp), rank // tp % pp, rank % tp
    return {"tp": [to_rank(d, p, i) for i in range(tp)],
            "pp": [to_rank(d, i, t) for i in range(pp)],
            "dp": [to_rank(i, p, t) for i in range(dp)]}


def grad_sync_imports_inside(grad, groups):
    import torch.distributed as dist
    dist.all_reduce(grad, group=groups["dp"])
    return grad / dist.get_world_size(groups["dp"])


def grad_sync_from_import(grad, groups):
    from torch.distributed import ReduceOp, all_reduce, get_world_size
    g = grad.clone()
    all_reduce(g, op=ReduceOp.SUM, group=groups["dp"])
    g.div_(get_world_size(group=groups["dp"]))
    return g


def grad_sync_async(grad, groups):
    import torch
    group = groups["dp"]
    torch.distributed.all_reduce(grad, group=group, async_op=True).wait()
    return grad / torch.distributed.get_world_size(group)


def grad_norm_imports_inside(grads, groups):
    import math
    import torch
    import torch.distributed as dist
    first = dist.get_rank(groups["tp"]) == 0
    total = torch.zeros(1, dtype=torch.float64)
    for g in grads.values():
        if g.tp_split is not None or first:
            total += g.double().pow(2).sum()
    for axis in ("tp", "pp"):
        dist.all_reduce(total, group=groups[axis])
    return math.sqrt(total.item())


def grad_norm_from_import(grads, groups):
    from torch import stack, zeros
    from torch.distributed import all_reduce, get_rank
    mine = [g for g in grads.values() if getattr(g, "tp_split", None) is not None
            or get_rank(group=groups["tp"]) == 0]
    total = stack([g.norm() ** 2 for g in mine]).sum().reshape(1) if mine else zeros(1)
    all_reduce(total, group=groups["tp"])
    all_reduce(total, group=groups["pp"])
    return total.sqrt()


def grad_norm_async(grads, groups):
    import torch
    tp_rank = torch.distributed.get_rank(groups["tp"])
    squares = [torch.linalg.vector_norm(g) ** 2 for g in grads.values()
               if g.tp_split is not None or tp_rank == 0]
    total = torch.stack(squares).sum().reshape(1)
    torch.distributed.all_reduce(total, group=groups["tp"], async_op=True).wait()
    torch.distributed.all_reduce(total, group=groups["pp"], async_op=True).wait()
    return float(total.sqrt())


# --- notebook 07: dynamic loss scaling ---------------------------------------------------

def scaled_step_imports_inside(params, optimizer, scale, good_steps, growth_interval):
    import math
    grads = [p.grad for p in params if p.grad is not None]
    if any(not math.isfinite(float(g.abs().max())) for g in grads):
        return scale / 2, 0
    for g in grads:
        g.div_(scale)
    optimizer.step()
    good_steps += 1
    return (scale * 2, 0) if good_steps >= growth_interval else (scale, good_steps)


def scaled_step_one_norm(params, optimizer, scale, good_steps, growth_interval):
    from torch import isfinite, stack
    grads = [p.grad for p in params if p.grad is not None]
    total = stack([g.float().norm() for g in grads]).sum()  # inf/NaN anywhere shows here
    if not isfinite(total):
        return 0.5 * scale, 0
    for g in grads:
        g.mul_(1 / scale)
    optimizer.step()
    if good_steps + 1 == growth_interval:
        return 2 * scale, 0
    return scale, good_steps + 1


def scaled_step_helper(params, optimizer, scale, good_steps, growth_interval):
    def overflowed(grads):
        return any(bool(torch.isinf(g).any() or torch.isnan(g).any()) for g in grads)  # noqa: F821

    grads = [p.grad for p in params if p.grad is not None]
    if overflowed(grads):
        return scale * 0.5, 0
    torch._foreach_mul_(grads, 1.0 / scale)  # noqa: F821  (torch is in the learner's scope)
    optimizer.step()
    good_steps += 1
    return (scale * 2.0, 0) if good_steps == growth_interval else (scale, good_steps)


# --- notebook 08: the resume hook -------------------------------------------------------

def resume_imports_inside(train_state):
    import torch
    torch.set_rng_state(train_state["rng"])
    return train_state["step"].item()


def resume_from_import(train_state):
    from torch import set_rng_state
    step, rng = train_state["step"], train_state["rng"]
    set_rng_state(rng.clone())
    return int(step)


def resume_returns_the_tensor(train_state):
    torch.random.set_rng_state(train_state["rng"])  # noqa: F821  (torch is in the learner's scope)
    return train_state["step"]


def layout_loop(n_params, n_layers, n_heads, n_gpus, gpus_per_node, gpu_memory_gb):
    budget = 0.7 * gpu_memory_gb * 1e9
    tp = pp = 1
    for _ in range(20):
        dp = n_gpus // (tp * pp)
        kept = 2 if pp == 1 else 4
        if n_params / (tp * pp) * (kept + (16 - kept) / dp) <= budget:
            break
        if tp < gpus_per_node and n_heads % (2 * tp) == 0 and 2 * tp * pp <= n_gpus:
            tp *= 2
        elif n_layers % (2 * pp) == 0 and 2 * tp * pp <= n_gpus:
            pp *= 2
        else:
            break
    return dict(tp=tp, pp=pp, dp=n_gpus // (tp * pp))


def layout_search(n_params, n_layers, n_heads, n_gpus, gpus_per_node, gpu_memory_gb):
    """The first (tp, pp) in order of tp * pp, tp first, whose states fit."""
    import itertools
    pows = [2 ** k for k in range(13)]
    for tp, pp in sorted(itertools.product(pows, pows), key=lambda x: (x[0] * x[1], x[1])):
        if tp > gpus_per_node or n_heads % tp or n_layers % pp or n_gpus % (tp * pp):
            continue
        dp = n_gpus // (tp * pp)
        per_gpu = n_params / (tp * pp) * ((2 + 14 / dp) if pp == 1 else (4 + 12 / dp))
        if per_gpu <= 0.7 * gpu_memory_gb * 1e9:
            return {"tp": tp, "pp": pp, "dp": dp}
    return {"tp": gpus_per_node, "pp": 1, "dp": n_gpus // gpus_per_node}


def _layout_fits(n_params, tp, pp, n_gpus, memory_gb):
    dp = n_gpus // (tp * pp)
    return n_params / (tp * pp) * ((2 + 14 / dp) if pp == 1 else (4 + 12 / dp)) <= 0.7 * memory_gb * 1e9


def layout_helper(n_params, n_layers, n_heads, n_gpus, gpus_per_node, gpu_memory_gb):
    tp, pp = 1, 1
    while not _layout_fits(n_params, tp, pp, n_gpus, gpu_memory_gb) and tp < gpus_per_node \
            and n_heads % (2 * tp) == 0:
        tp *= 2
    while not _layout_fits(n_params, tp, pp, n_gpus, gpu_memory_gb) and n_layers % (2 * pp) == 0:
        pp *= 2
    return {"tp": tp, "pp": pp, "dp": n_gpus // (tp * pp)}


def two_level_imports_inside(x, node_group, network_group):
    import torch
    import torch.distributed as dist
    g = dist.get_world_size(node_group)
    pieces = list(x.chunk(g))
    mine = torch.zeros_like(pieces[0])
    dist.reduce_scatter(mine, pieces, group=node_group)
    dist.all_reduce(mine, group=network_group)
    gathered = [torch.zeros_like(mine) for _ in range(g)]
    dist.all_gather(gathered, mine, group=node_group)
    return torch.cat(gathered)


def two_level_from_import(x, node_group, network_group):
    import torch
    from torch.distributed import all_gather_into_tensor, all_reduce, get_world_size, \
        reduce_scatter_tensor
    mine = torch.empty(x.numel() // get_world_size(node_group))
    reduce_scatter_tensor(mine, x, group=node_group)
    all_reduce(mine, group=network_group)
    all_gather_into_tensor(x, mine, group=node_group)
    return x


def _two_level_phase(op, *args, group):
    import torch.distributed as dist
    getattr(dist, op)(*args, group=group)


def two_level_helper(x, node_group, network_group):
    import torch
    import torch.distributed as dist
    pieces = list(x.chunk(dist.get_world_size(node_group)))
    mine = torch.empty_like(pieces[0])
    _two_level_phase("reduce_scatter", mine, pieces, group=node_group)
    _two_level_phase("all_reduce", mine, group=network_group)
    _two_level_phase("all_gather", pieces, mine, group=node_group)
    return torch.cat(pieces)


def hsdp_imports_inside(grad, shard_group, replicate_group):
    import torch
    import torch.distributed as dist
    s, r = dist.get_world_size(shard_group), dist.get_world_size(replicate_group)
    mine = torch.zeros(grad.numel() // s)
    dist.reduce_scatter(mine, list(grad.chunk(s)), group=shard_group)
    dist.all_reduce(mine, group=replicate_group)
    return mine / (s * r)


def hsdp_from_import(grad, shard_group, replicate_group):
    import torch
    from torch.distributed import all_reduce, get_world_size, reduce_scatter_tensor
    mine = torch.empty(grad.numel() // get_world_size(shard_group))
    reduce_scatter_tensor(mine, grad / get_world_size(), group=shard_group)
    all_reduce(mine, group=replicate_group)
    return mine


def hsdp_async(grad, shard_group, replicate_group):
    import torch
    import torch.distributed as dist
    s = dist.get_world_size(shard_group)
    mine = torch.empty_like(grad.chunk(s)[0])
    dist.reduce_scatter(mine, list(grad.chunk(s)), group=shard_group, async_op=True).wait()
    dist.all_reduce(mine, group=replicate_group, async_op=True).wait()
    return mine.div_(s * dist.get_world_size(replicate_group))


# --- every style of every exercise is judged correct ------------------------------------

# exercise: (its checker, the checker's arguments, text its verdict must hold, its styles)
STYLES = {
    "reduce_scatter": (ex00.check_reduce_scatter, {}, "each sent 36 bytes",
                       [rs_imports_inside, rs_from_import, rs_batched_p2p]),
    "ring_all_reduce": (ex00.check_ring_all_reduce, {}, "each sent 72 bytes",
                        [ring_imports_inside, ring_from_import, ring_batched_p2p]),
    "two_level_all_reduce": (ex00.check_two_level_all_reduce, {}, "all-reduced 4 of 8 elements",
                             [two_level_imports_inside, two_level_from_import, two_level_helper]),
    "tp_mlp_forward": (ex02.check_tp_mlp_forward, {}, None,
                       [tp_fwd_imports_inside, tp_fwd_from_import, tp_fwd_async]),
    "tp_mlp": (ex02.check_tp_mlp, {}, None,
               [tp_mlp_imports_inside, tp_mlp_from_import, tp_mlp_async]),
    "chunked_all_gather_matmul": (ex02.check_chunked_all_gather_matmul, {}, "each ran 4 all-gathers",
                                  [chunked_imports_inside, chunked_from_import, chunked_helper]),
    "pipeline_forward": (ex03.check_pipeline_forward, {}, None,
                         [pp_imports_inside, pp_from_import, pp_batched_p2p]),
    "1f1b": (ex03.check_1f1b, dict(p=2, m=4), None,
             [f1b_loop, f1b_comprehension, f1b_helper]),
    "zb_h1": (ex03.check_zb_h1, dict(p=2, m=4), "a third of 1F1B's",
              [zb_loop, zb_from_1f1b, zb_helper]),
    "partition": (ex03.check_partition, {}, None,
                  [partition_loop, partition_comprehension, partition_helper]),
    "hsdp_grad_sync": (ex01.check_hsdp_grad_sync, {}, "all-reduced 4 elements (1/2)",
                       [hsdp_imports_inside, hsdp_from_import, hsdp_async]),
    "dp_exchange": (ex01.check_dp_exchange, {}, None,
                    [dp_imports_inside, dp_from_import, dp_async_flat]),
    "zero1_step": (ex01.check_zero1_step, {}, None,
                   [zero1_imports_inside, zero1_from_import, zero1_all_reduce_then_slice]),
    "zigzag_shard": (ex05.check_zigzag_shard, {}, None,
                     [zigzag_comprehension, zigzag_loop, zigzag_helper]),
    "ring_attention": (ex05.check_ring_attention, {}, None,
                       [ring_attn_imports_inside, ring_attn_from_import, ring_attn_batched_p2p]),
    "route": (ex04.check_route, {}, None,
              [route_loop, route_comprehension, route_helper]),
    "global_route": (ex04.check_global_route, {}, None,
                     [global_route_imports_inside, global_route_from_import, global_route_async]),
    "expert_choice_route": (ex04.check_expert_choice_route, {}, "nothing was dropped",
                            [expert_choice_imports_inside, expert_choice_from_import,
                             expert_choice_async]),
    "groups": (ex06.check_groups, {}, None,
               [groups_loop, groups_comprehension, groups_helper]),
    "grad_sync": (ex06.check_grad_sync, {}, None,
                  [grad_sync_imports_inside, grad_sync_from_import, grad_sync_async]),
    "global_grad_norm": (ex06.check_global_grad_norm, {}, "rank 0 ran 2 collectives",
                         [grad_norm_imports_inside, grad_norm_from_import, grad_norm_async]),
    "scaled_step": (ex07.check_scaled_step, {}, None,
                    [scaled_step_imports_inside, scaled_step_one_norm, scaled_step_helper]),
    "resume": (ex08.check_resume, {}, "equal the uninterrupted run",
               [resume_imports_inside, resume_from_import, resume_returns_the_tensor]),
    "layout": (ex09.check_layout, {}, "as fast as the best",
               [layout_loop, layout_search, layout_helper]),
}


@pytest.mark.parametrize("exercise, style", [(e, i) for e, (*_, fns) in STYLES.items()
                                             for i in range(len(fns))])
def test_every_style_is_correct(exercise, style):
    check, kwargs, says, fns = STYLES[exercise]
    v = check(fns[style], **kwargs)
    assert v["ok"], f"{fns[style].__name__}: {v['message']}"
    if says:
        assert says in v["message"]


def test_every_coding_exercise_has_its_styles_here():
    """A new ``check_<x>(fn, ...)`` gets its three styles in this file, or this fails."""
    import inspect
    wanted = {"reduce_scatter", "ring_all_reduce", "two_level_all_reduce", "tp_mlp_forward", "tp_mlp",
              "chunked_all_gather_matmul", "1f1b",
              "zb_h1",
              "pipeline_forward", "partition", "dp_exchange", "zero1_step", "hsdp_grad_sync", "zigzag_shard",
              "expert_choice_route",
              "ring_attention", "route", "global_route", "groups", "grad_sync", "global_grad_norm",
              "scaled_step", "resume", "layout"}
    for module in (ex00, ex01, ex02, ex03, ex04, ex05, ex06, ex07, ex08, ex09):
        for name, fn in vars(module).items():
            if name.startswith("check_") and inspect.isfunction(fn) \
                    and list(inspect.signature(fn).parameters)[:1] == ["fn"]:
                assert name[len("check_"):] in wanted, f"{module.__name__}.{name} has no style test"
    assert set(STYLES) == wanted
    assert all(len(fns) == 3 for *_, fns in STYLES.values())
