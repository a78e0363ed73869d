"""The exposed communication of one layout's step, by dimension, for ``estimate.predict``:
TP's collectives per layer, CP's ring hops or all-gather, EP's dispatch and combine, and
the data-parallel synchronisation (plain DP, ZeRO-1/2, ZeRO-3 / FSDP layer by layer).
Every formula is in ``parlab.cost``; this file decides what the layout hides behind what.
"""

from __future__ import annotations

from .. import cost

def tp_comm(model, cluster, lay, lt, micro_batch, sp) -> float:
    """Exposed TP seconds of one layer, one micro-batch: ``cost.tp_comm_per_layer``'s
    collectives over the TP group (stride 1); a MoE layer's experts are whole on a rank, so
    only its attention half talks over TP. Full recomputation repeats the forward's; "op"
    (torchtitan's policy saves the reduce-scatters' outputs) gathers again what the
    backward's re-gathers already count with sequence parallelism, and repeats the
    attention half's all-reduce without (the MLP norm's input, recomputed, needs it)."""
    s = model.shape
    tp = lay.tp
    if tp == 1:
        return 0.0
    c = cost.tp_comm_per_layer(micro_batch, model.seq_len // lay.cp, s.d_model, tp, sp)
    share = 0.5 if s.moe else 1.0
    t = {d: share * sum(k * cluster.collective(op, c["message_bytes"], tp, 1)
                        for op, k in c[d].items()) for d in ("forward", "backward")}
    fwd = t["forward"]
    # "op" with sequence parallelism gathers the norms' outputs again for the matmuls it
    # redoes: the backward's two re-gathers ``tp_comm_per_layer`` already counts
    redo = {"full": fwd, "op": 0.0 if sp else fwd / 2}
    bwd = t["backward"] + redo.get(lay.recompute, 0.0)
    if lay.tp_comm_overlap:  # backward's collectives beside the weight-gradient GEMMs
        return fwd + max(0.0, bwd - lt["gemm_forward"])
    return fwd + bwd


def cp_comm(model, cluster, lay, lt, micro_batch) -> float:
    """Exposed CP seconds of one layer, one micro-batch, over a CP group (stride tp). ring:
    ``cost.cp_comm_per_layer``'s K/V hops, each behind the attention block it feeds;
    allgather: K and V gathered forward, their gradients reduce-scattered backward;
    ulysses: its 8 all-to-alls. K/V are this rank's heads (grouped-query: kv/tp, at least
    one head)."""
    s = model.shape
    tp = lay.tp
    cp = lay.cp
    b = micro_batch
    if cp == 1:
        return 0.0
    kv_local = max(s.kv // tp, s.head_dim)
    shard = b * (model.seq_len // cp) * kv_local * 2          # one K (or V) block, bytes
    if lay.cp_kind == "ring":
        c = cost.cp_comm_per_layer(b, model.seq_len, s.q, cp, "ring", 2, s.n_heads, s.n_kv_heads)
        hop = cluster.collective("p2p", 2 * shard, 2, tp)
        fwd = c["forward"]["p2p"] * hop
        bwd = c["backward"]["p2p"] * hop
        a = lt["attention_forward"]
        return max(0.0, fwd - a) + max(0.0, bwd - 2.5 * a)
    if lay.cp_kind == "allgather":
        one = cluster.collective("all_gather", 2 * shard * cp, cp, tp)
        return one * (2 + (lay.recompute in ("op", "full")))  # K, V gathered again
    q_bytes = b * (model.seq_len // cp) * s.q // tp * 2
    one = 2 * cluster.collective("all_to_all", q_bytes, cp, tp) + \
        2 * cluster.collective("all_to_all", shard, cp, tp)
    return one * (2 + (lay.recompute in ("op", "full")))


def ep_comm(model, cluster, lay, micro_batch) -> float:
    """Seconds of one MoE layer's token exchange, one micro-batch: dispatch and combine
    forward and again backward (GShard, Lepikhin et al. 2020, §3.2) over the ep
    consecutive GPUs, each rank's b s / (cp tp) tokens (x the capacity factor when buffers
    are padded) by ``cost.moe_dispatch_time``, exposed."""
    s = model.shape
    ep = lay.ep
    if not s.moe or ep == 1:
        return 0.0
    tokens = micro_batch * model.seq_len / (lay.cp * lay.tp) * (lay.capacity_factor or 1.0)
    one = cluster.dispatch(tokens, s, ep, lay.ep_dispatch == "dedup")
    return one * (4 + 2 * (lay.recompute == "full"))


def dp_sync(cluster, lay, dp, dense, experts, layers, lt, m) -> float:
    """Exposed seconds of the data-parallel synchronisation of one step, one GPU's
    parameters (``dense`` over dp x cp GPUs tp apart, ``experts`` over dp x cp x tp / ep):
    plain DP all-reduces the gradients; ZeRO-1/2 reduce-scatter them and all-gather the
    updated weights (Rajbhandari et al. 2020, §5; Megatron's distributed optimizer), hidden
    behind the last micro-batch's backward / the first one's forward with ``dp_overlap``
    -- chunk by chunk under interleaving (``cost.chunked_sync_exposed``);
    ZeRO-3 gathers every layer's weights forward and backward and reduce-scatters its
    gradients, every micro-batch, each behind that layer's compute (§7.2.2)."""
    group = dp * lay.cp
    stride = lay.tp
    egroup = expert_dp(lay, dp)
    if group == 1 and egroup == 1:
        return 0.0

    def coll(op, share):
        return ((cluster.collective(op, 2 * dense * share, group, stride) if dense else 0.0)
                + (cluster.collective(op, 2 * experts * share, egroup, lay.ep) if experts else 0.0))

    if lay.zero_stage == 3:
        return zero3_sync(lay, coll, layers, lt, m)
    if lay.zero_stage == 0:
        reduce = coll("all_reduce", 1.0)
        gather = 0.0
    else:
        reduce = coll("reduce_scatter", 1.0)
        gather = coll("all_gather", 1.0)
    if not lay.dp_overlap:
        return reduce + gather
    # interleaved, each model chunk syncs its share once its last micro-batch is through
    return (cost.chunked_sync_exposed(reduce, layers * lt["backward"], lay.v, lay.pp)
            + cost.chunked_sync_exposed(gather, layers * lt["forward"], lay.v, lay.pp))


def expert_dp(lay, dp: int) -> int:
    """Ranks that hold the same experts, over which their gradients are reduced and ZeRO
    shards their states: dp x cp x tp / ep (experts whole on a rank; Megatron's expert data
    parallelism)."""
    return max(1, dp * lay.cp * lay.tp // lay.ep)


def zero3_sync(lay, coll, layers, lt, m) -> float:
    """Exposed seconds of ZeRO-3 / FSDP in one step (``cost.fsdp_step_exposed``): each
    unit's gather as ``cost.fsdp_unit_messages`` collectives of its share of the bytes (one
    flat one for FSDP2, one per weight matrix for DeepSpeed's of 2021), each paying the
    group's latency (it grows with the ranks) and bandwidth."""
    k = cost.fsdp_unit_messages(lay.fsdp_impl, _MATRICES)
    ag = k * coll("all_gather", 1 / (layers * k))
    rs = k * coll("reduce_scatter", 1 / (layers * k))
    return cost.fsdp_step_exposed(ag, rs, lt["forward"], lt["backward"], layers, m,
                                  lay.fsdp_impl, lay.keeps_unsharded)


# the weight matrices of a block (QKV fused, projection, two MLP matrices, gate and up fused):
# DeepSpeed's ZeRO-3 gathers each by itself; biases and norms stay whole
_MATRICES = 4
