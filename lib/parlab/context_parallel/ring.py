"""Ring attention: exact attention over a sequence sharded across a ring of ranks.

Liu, Zaharia & Abbeel, "Ring Attention with Blockwise Transformers for Near-Infinite
Context" (ICLR 2024, arXiv 2310.01889), §3 and Algorithm 1: every rank keeps its own
query block and the key/value blocks travel round the ring, each rank sending the block
it holds to its right neighbour while it computes attention against it, so after cp
steps every query has met every key without any rank ever holding more than one
foreign K/V block. Blockwise attention is exact because softmax can be merged: a block
contributes its normalised output o_b and its log-sum-exp l_b = log sum_j exp(s_ij), and

    l = log(exp(l_a) + exp(l_b)),   o = o_a exp(l_a - l) + o_b exp(l_b - l)

(the online softmax of Milakov & Gimelshein 2018, as in FlashAttention, Dao et al. 2022,
§3.1). The backward pass is written by hand, FlashAttention-style (Dao et al. §3.1 and
Appendix B.2): it recomputes each block's probabilities from q, k and the saved
log-sum-exp, so a rank saves only its q, k, v shards, the output and the LSE -- never a
score matrix. The gradient of a K/V block is a sum over every rank's queries, so the
dK/dV accumulators travel round the ring with their block, as the authors' code does
(haoliuhl/ringattention, ``_ring_attention_bwd``: k, v, dk and dv are passed on
together), and end on the rank that owns the block.

Causal attention skips work (the paper does not discuss the causal mask; the authors'
code applies it per block): with the contiguous
layout rank r needs only blocks from ranks <= r; with the zigzag layout
(``layout.py``) every foreign block is needed, but only half of it -- all queries
against the early half of an earlier rank's keys, or the late half of the queries
against a later rank's keys -- so every rank does the same work.

Traffic per rank and layer (``cost.cp_comm_per_layer``; S = one K shard's bytes):
forward cp-1 messages of K and V (2S each); backward cp-1 of K and V plus cp of dK and
dV (the last one brings each rank its own complete dK/dV). Every message is posted
before the block's computation and waited on after it, so transfer and compute overlap;
each is traced with its exact bytes (``bytes_modelled=False``). The attention scores each
block computes are reported to ``trace.probe("attention_scores", n)``: a work counter
the runner may listen to.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from .. import trace
from ..mesh import global_rank
from ..validate import check_bool, check_choice
from .layout import LAYOUTS

KV = 1  # message tags: a K/V block and a dK/dV accumulator may be in flight at once
DKV = 2


# --- which block a rank computes, and merging blocks ---------------------------------

def block_plan(rank: int, source: int, cp: int, layout: str, causal: bool, s_local: int):
    """What rank ``rank``'s queries compute against the K/V shard of rank ``source``:
    (query rows, key columns, diagonal) -- slices of the local shards, and whether this
    is the shard against itself, which needs the causal triangle -- or None to skip."""
    every = slice(None)
    if not causal:
        return every, every, False
    if source == rank:             # positions increase inside a shard: a plain triangle
        return every, every, True
    if layout == "contiguous":     # earlier ranks hold earlier positions
        return (every, every, False) if source < rank else None
    early = slice(0, s_local // 2)
    late = slice(s_local // 2, None)
    if source < rank:              # its early chunk precedes both of mine, its late one neither
        return every, early, False
    return late, every, False      # only my late chunk comes after both of its chunks


def merge(out, lse, block_out, block_lse):
    """Fold one block's (output, log-sum-exp) into the running ones: the online softmax."""
    new_lse = torch.logaddexp(lse, block_lse)
    out = out * torch.exp(lse - new_lse).unsqueeze(-1) \
        + block_out * torch.exp(block_lse - new_lse).unsqueeze(-1)
    return out, new_lse


def _scores(q, k, diagonal):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if diagonal:
        future = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1)
        s = s.masked_fill(future, float("-inf"))
    return s


# --- point to point, posted now and waited on later ---------------------------------

def _post(send, dst, recv, src, group, tag, name, **meta):
    """isend ``send`` to global rank ``dst`` and irecv ``recv`` from ``src``; returns
    ``wait()``, which completes both and records one comm event with exact bytes, from
    posting to completion (it spans whatever the caller computed meanwhile)."""
    t0 = trace.now()
    # one batch: NCCL then posts both together (a lone recv would block its stream before
    # the send when left and right are the same rank, cp = 2); gloo simply posts both
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, recv, src, group, tag),
                                    dist.P2POp(dist.isend, send, dst, group, tag)])

    def wait():
        for w in works:
            w.wait()
        nbytes = send.numel() * send.element_size()
        trace.record("comm", name, t0, trace.now(), bytes_sent=nbytes,
                     bytes_recv=recv.numel() * recv.element_size(), op="p2p", **meta)

    return wait


def _neighbours(group):
    r = dist.get_rank(group)
    n = dist.get_world_size(group)
    return r, n, global_rank(group, (r + 1) % n), global_rank(group, (r - 1) % n)


# --- forward: K/V blocks go round, partial outputs merge ---------------------------

def _forward(q, k, v, causal, group, layout):
    r, n, right, left = _neighbours(group)
    out = torch.zeros_like(q)
    lse = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device)
    kv = torch.stack([k, v])       # one message per hop
    for step in range(n):
        source = (r - step) % n    # whose block this rank holds now
        if step < n - 1:           # the next block is on the wire while this one computes
            incoming = torch.empty_like(kv)
            arrived = _post(kv, right, incoming, left, group, KV, "ring kv",
                            direction="forward", operator="kv", ring_step=step)
        plan = block_plan(r, source, n, layout, causal, q.size(-2))
        if plan is not None:
            rows, cols, diagonal = plan
            qb = q[..., rows, :]
            kb = kv[0][..., cols, :]
            vb = kv[1][..., cols, :]
            trace.probe("attention_scores", qb.size(1) * qb.size(2) * kb.size(2),
                        direction="forward")
            with trace.span("ring block", direction="forward", ring_step=step, source=source):
                s = _scores(qb, kb, diagonal)
                block_lse = torch.logsumexp(s, -1)
                block_out = torch.exp(s - block_lse.unsqueeze(-1)) @ vb
                out[..., rows, :], lse[..., rows] = merge(out[..., rows, :], lse[..., rows],
                                                          block_out, block_lse)
        if step < n - 1:
            arrived()
            kv = incoming
    return out, lse


# --- backward: K/V go round again, their gradients travel with them -----------------

def _backward(q, k, v, out, lse, dout, causal, group, layout):
    r, n, right, left = _neighbours(group)
    delta = (dout * out).sum(-1)   # D_i = dO_i . O_i (FlashAttention's rowsum), per query
    dq = torch.zeros_like(q)
    kv = torch.stack([k, v])
    dkv_in = None
    dkv_arrived = None
    for step in range(n):
        source = (r - step) % n
        if step < n - 1:
            incoming = torch.empty_like(kv)
            kv_arrived = _post(kv, right, incoming, left, group, KV, "ring kv",
                               direction="backward", operator="kv", ring_step=step)
        dkv = torch.zeros_like(kv)  # this rank's share of d(K, V) of the block it holds
        plan = block_plan(r, source, n, layout, causal, q.size(-2))
        if plan is not None:
            rows, cols, diagonal = plan
            qb = q[..., rows, :]
            dob = dout[..., rows, :]
            kb = kv[0][..., cols, :]
            vb = kv[1][..., cols, :]
            trace.probe("attention_scores", qb.size(1) * qb.size(2) * kb.size(2),
                        direction="backward")
            with trace.span("ring block", direction="backward", ring_step=step, source=source):
                p = torch.exp(_scores(qb, kb, diagonal) - lse[..., rows].unsqueeze(-1))
                dkv[1][..., cols, :] += p.transpose(-2, -1) @ dob
                ds = p * (dob @ vb.transpose(-2, -1) - delta[..., rows].unsqueeze(-1))
                ds = ds / math.sqrt(q.size(-1))
                dq[..., rows, :] += ds @ kb
                dkv[0][..., cols, :] += ds.transpose(-2, -1) @ qb
        if n == 1:
            return dq, dkv[0], dkv[1]
        if dkv_arrived is not None:  # the left neighbour's sum for this same block
            dkv_arrived()
            dkv += dkv_in
        dkv_in = torch.empty_like(dkv)
        dkv_arrived = _post(dkv, right, dkv_in, left, group, DKV, "ring dkv",
                            direction="backward", operator="dkv", ring_step=step)
        if step < n - 1:
            kv_arrived()
            kv = incoming
    dkv_arrived()                  # the last hop brings this rank its own block's sum
    return dq, dkv_in[0], dkv_in[1]


class RingAttention(torch.autograd.Function):
    """softmax(q k^T / sqrt(d) [+ causal mask]) v over the whole sharded sequence."""

    @staticmethod
    def forward(ctx, q, k, v, causal, group, layout):
        out, lse = _forward(q, k, v, causal, group, layout)
        ctx.save_for_backward(q, k, v, out, lse)  # per shard: nothing of size s^2
        ctx.args = (causal, group, layout)
        trace.keep_tags(ctx)
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        with trace.tagged_as(ctx):
            dq, dk, dv = _backward(q, k, v, out, lse, dout.contiguous(), *ctx.args)
        return dq, dk, dv, None, None, None


def check_shards(q, k, v, causal, layout) -> None:
    """Refuse what the attention functions cannot do, naming the argument."""
    check_bool("causal", causal)
    check_choice("layout", layout, LAYOUTS)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name} must be a 4-d tensor [batch, heads, s_local, head_dim], "
                             f"got {getattr(t, 'shape', type(t).__name__)}")
    if not q.shape == k.shape == v.shape:
        raise ValueError(f"q, k and v must have one shape, got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if layout == "zigzag" and q.size(2) % 2:
        raise ValueError(f"s_local={q.size(2)} must be even with layout='zigzag' "
                         "(a shard is two equal chunks)")


def ring_attention(q, k, v, causal: bool = True, group=None, layout: str = "contiguous"):
    """Exact (causal) attention of this rank's query shard over the whole sequence,
    sharded over ``group`` in ``layout`` order. q, k, v: [batch, heads, s_local,
    head_dim], this rank's shards; returns this rank's shard of the output."""
    check_shards(q, k, v, causal, layout)
    return RingAttention.apply(q, k, v, causal, group, layout)
