"""Rank-side workers for the context-parallel tests (ranks import them by name)."""
import torch
import torch.distributed as dist

from parlab import mesh
from parlab.context_parallel import (ring, ring_attention, shard_sequence, train_worker,
                                     ulysses_attention)

ATTENTION = {"ring": ring_attention, "ulysses": ulysses_attention}


def full_inputs(shape, seed=0, dtype=torch.float64):
    """q, k, v and an output gradient for the whole sequence, equal on every rank."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g, dtype=dtype) for _ in range(4)]


def attention_worker(kind, shape, causal, layout, seed=0, group_size=None):
    """This rank's shards of the output and of dq, dk, dv for the whole-sequence inputs
    ``full_inputs(shape, seed)``, by ``kind`` attention over this rank's group (the
    world, or consecutive groups of ``group_size`` ranks)."""
    torch.set_num_threads(1)
    group = mesh.split(group_size)[0] if group_size else None
    n, r = dist.get_world_size(group), dist.get_rank(group)
    q, k, v, dout = (shard_sequence(t, 2, n, r, layout).clone() for t in full_inputs(shape, seed))
    for t in (q, k, v):
        t.requires_grad_()
    out = ATTENTION[kind](q, k, v, causal=causal, group=group, layout=layout)
    out.backward(dout)
    return {"out": out.detach(), "dq": q.grad, "dk": k.grad, "dv": v.grad}


def saved_bytes_worker(kind, shape, layout):
    """Bytes of the distinct storages autograd saves for backward inside one call of
    ``kind`` attention (inputs included, as they are saved too)."""
    torch.set_num_threads(1)
    n, r = dist.get_world_size(), dist.get_rank()
    q, k, v = (shard_sequence(t, 2, n, r, layout).clone().requires_grad_()
               for t in full_inputs(shape)[:3])
    seen, total = set(), [0]

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in seen:
            seen.add(ptr)
            total[0] += t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = ATTENTION[kind](q, k, v, causal=True, layout=layout)
    out.sum().backward()
    return {"saved": total[0], "shard": q.numel() * q.element_size()}


def refusal_worker(shape):
    """Ulysses on a group whose size does not divide the heads: the error it raises."""
    q = torch.zeros(shape, dtype=torch.float64)
    try:
        ulysses_attention(q, q, q)
    except ValueError as e:
        return str(e)
    return None


# --- planted bugs (restored after: the ranks are reused by later tests) ---------------

def _merge_without_rescaling(out, lse, block_out, block_lse):
    """The classic mistake: the new block is weighted right, the old output is not
    rescaled by exp(lse - new_lse)."""
    new_lse = torch.logaddexp(lse, block_lse)
    return out + block_out * torch.exp(block_lse - new_lse).unsqueeze(-1), new_lse


def _plan_missing_left_block(plan):
    def planned(rank, source, cp, layout, causal, s_local):
        if source == (rank - 1) % cp:  # the left neighbour's block, needed causally
            return None
        return plan(rank, source, cp, layout, causal, s_local)
    return planned


def _planted(bug):
    """Plant ``bug`` in parlab.context_parallel.ring; returns the undo."""
    saved = ring.merge, ring.block_plan
    if bug == "wrong_merge":
        ring.merge = _merge_without_rescaling
    elif bug == "missing_block":
        ring.block_plan = _plan_missing_left_block(ring.block_plan)
    else:
        raise ValueError(f"bug={bug!r}")

    def undo():
        ring.merge, ring.block_plan = saved
    return undo


def buggy_attention_worker(bug, shape, causal, layout):
    """``attention_worker`` for ring attention with one classic mistake planted:
      "wrong_merge"    the online-softmax merge forgets to rescale the running output;
      "missing_block"  the block from the left neighbour is skipped (with a causal mask
                       it is needed by every rank but the first)."""
    undo = _planted(bug)
    try:
        return attention_worker("ring", shape, causal, layout)
    finally:
        undo()


def buggy_train_worker(run, bug):
    """``train_worker`` with ``bug`` planted in ring attention (see buggy_attention_worker)."""
    undo = _planted(bug)
    try:
        return train_worker(run)
    finally:
        undo()


def cp_on_subgroups(runs):
    """Cut the world into groups of 2 consecutive ranks; group i trains ``runs[i]``
    context-parallel over its own group. Returns this rank's worker result, with the
    world rank and the group index beside it."""
    group, index = mesh.split(2)
    runs[index].check(dist.get_world_size(group))
    return dict(train_worker(runs[index], group), world_rank=dist.get_rank(), group=index)
