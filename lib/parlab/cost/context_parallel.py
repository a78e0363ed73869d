"""Context parallelism: what one attention layer sends, how the causal work spreads over
the ranks, and the attention's working memory per rank.

Three ways to split the sequence over cp ranks (``parlab.context_parallel``):

  ring         Liu, Zaharia & Abbeel, "Ring Attention with Blockwise Transformers for
               Near-Infinite Context" (ICLR 2024, arXiv 2310.01889), §3 and Algorithm 1:
               K/V blocks travel round the ring, point to point, overlapped with compute.
  ulysses      Jacobs et al., "DeepSpeed Ulysses" (2023, arXiv 2309.14509), "Core
               Design", Fig. 1: all-to-alls from sequence shards to head shards and back.
  megatron_sp  for comparison, Megatron's sequence parallelism inside tensor parallelism
               (Korthikanti et al. 2022, §4.2.2): ``tp_comm_per_layer`` with SP.

Every count is what the lab's implementation sends, per rank, per layer, per training
step (forward + backward), as its traced events count it: ring bytes exactly (its
isend/irecv), Ulysses' and Megatron's as the ring algorithm of ``collective_bytes``
would move them (the traced collectives' modelled bytes).

Domains: shapes and degrees integers >= 1; ``bytes_per_value`` finite and > 0; cp must
divide n_heads for Ulysses and seq_len for the per-rank memory; ``n_kv_heads`` (grouped-
query attention) needs ``n_heads``, which it divides, and which divides ``d_model``.
"""

from __future__ import annotations

from ..validate import check_bool, check_choice, check_float, check_int
from .collectives import collective_bytes
from .tensor_parallel import tp_comm_per_layer

CP_METHODS = ("ring", "ulysses", "megatron_sp")
CP_LAYOUTS = ("contiguous", "zigzag")


def _kv_width(d_model: int, n_heads, n_kv_heads) -> int:
    """Width of K (or V) per position: d_model, or d_model n_kv_heads / n_heads (GQA)."""
    if n_heads is None and n_kv_heads is None:
        return d_model
    a = check_int("n_heads", n_heads)
    if d_model % a:
        raise ValueError(f"n_heads={a} must divide d_model={d_model}")
    g = a if n_kv_heads is None else check_int("n_kv_heads", n_kv_heads)
    if a % g:
        raise ValueError(f"n_kv_heads={g} must divide n_heads={a}")
    return d_model // a * g


def _sent(ops: dict, nbytes: dict, n: int) -> float:
    return sum((k * collective_bytes(op, nbytes[op], n) for op, k in ops.items()), 0.0)


def cp_comm_per_layer(micro_batch: int, seq_len: int, d_model: int, cp: int,
                      method: str = "ring", bytes_per_value: float = 2,
                      n_heads: int | None = None, n_kv_heads: int | None = None) -> dict:
    """Messages and bytes one rank sends for one attention layer per training step.

    ring: S = micro_batch (seq_len/cp) d_kv bytes_per_value is one shard of K (d_kv =
    d_model, or d_model n_kv_heads/n_heads with grouped-query attention). Each message
    carries two shards (K and V, or dK and dV): 2S. Forward: cp-1 hops of K and V (every
    rank meets every block; Liu et al. Algorithm 1's "for count = 1 to N_h - 1").
    Backward: cp-1 hops of K and V again, plus cp hops of the dK/dV accumulators, which
    travel with their block and need one hop more to reach the block's owner (the
    authors' code rotates k, v, dk, dv together). Total (3 cp - 2) 2S.

    ulysses: forward 4 all-to-alls -- q, k, v from sequence to head shards and the
    output back -- and backward 4 (the output's gradient in, dq, dk, dv out); each moves
    (cp-1)/cp of the local tensor, M = micro_batch (seq_len/cp) d_model bytes_per_value
    for q and the output (M d_kv/d_model for k and v): 8 (cp-1)/cp M without GQA. Jacobs
    et al. count the forward as 4Nh/P per link; the total here is per rank, both passes.

    megatron_sp: ``tp_comm_per_layer(..., tp=cp, sequence_parallel=True)``: the whole
    layer's all-gathers and reduce-scatters of full activations (b s h each), which do
    not shrink as cp grows.

    cp = 1: nothing is sent. Returns {"method", "forward": {op: n}, "backward": {op: n},
    "messages", "message_bytes" (ring: 2S; ulysses: M; megatron_sp: b s h bytes),
    "forward_bytes", "backward_bytes", "bytes"} -- bytes sent by one rank.
    """
    b = check_int("micro_batch", micro_batch)
    s = check_int("seq_len", seq_len)
    h = check_int("d_model", d_model)
    n = check_int("cp", cp)
    method = check_choice("method", method, CP_METHODS)
    bpv = check_float("bytes_per_value", bytes_per_value, 0.0)
    d_kv = _kv_width(h, n_heads, n_kv_heads)
    if method == "ulysses" and n_heads is not None and n_heads % n:
        raise ValueError(f"cp={n} must divide n_heads={n_heads} (Ulysses gives each rank "
                         "whole heads)")
    if method == "megatron_sp":
        tp = tp_comm_per_layer(b, s, h, n, True, bpv)
        size = {op: tp["message_bytes"] for op in tp["by_op"]}
        fwd = _sent(tp["forward"], size, n)
        bwd = _sent(tp["backward"], size, n)
        return {"method": method, "forward": tp["forward"], "backward": tp["backward"],
                "messages": tp["collectives"], "message_bytes": tp["message_bytes"],
                "forward_bytes": fwd, "backward_bytes": bwd, "bytes": tp["bytes"]}
    if method == "ring":
        message = 2 * b * s / n * d_kv * bpv
        forward, backward = ({"p2p": n - 1}, {"p2p": 2 * n - 1}) if n > 1 else ({}, {})
        fwd = forward.get("p2p", 0) * message
        bwd = backward.get("p2p", 0) * message
    else:
        message = b * s / n * h * bpv
        kv = message * d_kv / h
        forward, backward = ({"all_to_all": 4}, {"all_to_all": 4}) if n > 1 else ({}, {})
        fwd = bwd = (2 * collective_bytes("all_to_all", message, n)
                     + 2 * collective_bytes("all_to_all", kv, n)) if n > 1 else 0.0
    return {"method": method, "forward": forward, "backward": backward,
            "messages": sum(forward.values()) + sum(backward.values()),
            "message_bytes": message, "forward_bytes": fwd, "backward_bytes": bwd,
            "bytes": fwd + bwd}


def causal_work_per_rank(cp: int, layout: str = "zigzag") -> dict:
    """How the causal attention's score computations spread over cp ranks with ring
    attention, in blocks of (seq_len/cp)^2 scores per head (masked entries included).

    contiguous: rank r holds positions [r s/cp, (r+1) s/cp); its queries need the blocks
    of ranks 0..r -- r full blocks and its own (triangular) one: r + 1 blocks. The last
    rank works cp blocks, the mean is (cp+1)/2, the imbalance 2 cp/(cp+1) (1.6 at cp=4,
    -> 2 as cp grows): the whole group waits for the last rank at every layer.

    zigzag: rank r holds chunks r and 2cp-1-r of 2cp (Megatron-LM,
    ``get_batch_on_this_cp_rank``). Its own shard is one block under a triangular mask;
    every other rank's shard is needed by exactly half: all its queries against the
    early chunk of an earlier rank, or its late chunk against the whole shard of a later
    rank -- 1/2 block each. 1 + (cp-1)/2 = (cp+1)/2 blocks on every rank: imbalance 1,
    and the same total as contiguous, cp (cp+1)/2 blocks (non-causal: cp^2).

    Returns {"layout", "blocks": per rank, "share": per rank (sums to 1), "total",
    "mean", "max", "imbalance": max/mean, "causal_fraction": total / cp^2}.
    """
    n = check_int("cp", cp)
    layout = check_choice("layout", layout, CP_LAYOUTS)
    blocks = [float(r + 1) for r in range(n)] if layout == "contiguous" \
        else [(n + 1) / 2] * n
    total = sum(blocks)
    mean = total / n
    return {"layout": layout, "blocks": blocks, "share": [w / total for w in blocks],
            "total": total, "mean": mean, "max": max(blocks),
            "imbalance": max(blocks) / mean, "causal_fraction": total / n ** 2}


def attention_memory_per_rank(seq_len: int, micro_batch: int, n_heads: int, head_dim: int,
                              cp: int, method: str = "ring", bytes_per_value: float = 2,
                              flash: bool = False) -> float:
    """Peak bytes of one attention layer's working set on one rank, in this model:

    ring: one block of scores at a time, micro_batch n_heads c^2 values for c =
    seq_len/cp (all heads together, as ``context_parallel.ring`` computes them), plus
    Liu et al.'s six blocks (§3, "Memory Requirement": the query block, the current K
    and V, the K and V being received, the output), 6 micro_batch c n_heads head_dim.
    ulysses: the whole (seq_len x seq_len) scores for n_heads/cp heads, micro_batch
    (n_heads/cp) seq_len^2, plus q, k, v and the output gathered for those heads over
    the whole sequence, 4 micro_batch seq_len (n_heads/cp) head_dim.

    ``flash``: a fused kernel (FlashAttention) keeps no score matrix, so only the second
    term remains. Left out: the log-sum-exp (1/head_dim of a block), autograd's saved
    activations, and the all-to-alls' send buffers. The score term is where the two
    differ: ring's falls as 1/cp^2, Ulysses' as 1/cp.
    """
    s = check_int("seq_len", seq_len)
    b = check_int("micro_batch", micro_batch)
    a, d, n = check_int("n_heads", n_heads), check_int("head_dim", head_dim), \
        check_int("cp", cp)
    method = check_choice("method", method, ("ring", "ulysses"))
    bpv = check_float("bytes_per_value", bytes_per_value, 0.0)
    flash = check_bool("flash", flash)
    if s % n:
        raise ValueError(f"cp={n} must divide seq_len={s}")
    c = s // n
    if method == "ring":
        scores = b * a * c * c
        blocks = 6 * b * c * a * d
    else:
        if a % n:
            raise ValueError(f"cp={n} must divide n_heads={a} (Ulysses gives each rank "
                             "whole heads)")
        scores = b * (a // n) * s * s
        blocks = 4 * b * s * (a // n) * d
    return float((0 if flash else scores) + blocks) * bpv
