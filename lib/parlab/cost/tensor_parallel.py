"""Tensor and sequence parallelism: what one transformer layer communicates, and what
that costs one TP group on real links.

Tensor parallelism (Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter
Language Models Using Model Parallelism", 2019, §3, Fig. 3-4) puts the conjugate pair
f (identity forward, all-reduce backward) before each column-parallel layer and g
(all-reduce forward, identity backward) after each row-parallel one: "4 total
communication operations in the forward and backward pass of a single model parallel
transformer layer" (Fig. 4). Sequence parallelism (Korthikanti et al., "Reducing
Activation Recomputation in Large Transformer Models", MLSys 2023, §4.2.2, Fig. 5)
turns them into g (all-gather forward, reduce-scatter backward) and g-bar
(reduce-scatter forward, all-gather backward).

Every count here is what ``parlab.tensor_parallel`` issues per block per training step,
as traced: embeddings, the vocabulary-parallel loss and the once-per-step all-reduce of
the sequence-parallel parameters' gradients are not per layer and are left out.

Domains: shapes and degrees integers >= 1, ``tp`` dividing ``n_heads`` where heads are
given (the lab also needs ``tp`` to divide ``seq_len`` with sequence parallelism; the
byte counts do not); ``bytes_per_value``, ``peak_flops`` and ``bandwidth`` finite and
> 0; ``alpha`` finite and >= 0; ``efficiency`` in (0, 1].
"""

from __future__ import annotations

from ..validate import check_bool, check_float, check_int
from .collectives import collective_bytes, collective_time
from .compute import flops_per_token, transformer_params
from .network import group_bandwidth

# per layer, per training step (forward + backward), t > 1: (forward, backward) counts,
# and the operators that issue each count (tp_comm_sites)
_TP = ({"all_reduce": 2}, {"all_reduce": 2})
_SP = ({"all_gather": 2, "reduce_scatter": 2}, {"reduce_scatter": 2, "all_gather": 4})
_TP_SITES = ({"all_reduce": "g after attn.proj and mlp.fc2 (Shoeybi §3)"},
             {"all_reduce": "f before attn.qkv and mlp.fc1 (Shoeybi §3)"})
_SP_SITES = ({"all_gather": "g before attn.qkv and mlp.fc1 (Korthikanti §4.2.2)",
              "reduce_scatter": "g-bar after attn.proj and mlp.fc2 (Korthikanti §4.2.2)"},
             {"reduce_scatter": "g's backward, before attn.qkv and mlp.fc1",
              "all_gather": "2 g-bar's backward, after attn.proj and mlp.fc2; 2 re-gathers "
                            "of the saved qkv / fc1 input shard"})


def tp_comm_per_layer(micro_batch: int, seq_len: int, d_model: int, tp: int,
                      sequence_parallel: bool = False, bytes_per_value: float = 2) -> dict:
    """The collectives one transformer layer issues per training step (forward +
    backward) on each rank of a TP group of degree ``tp``, and the bytes they move.

    Without sequence parallelism: forward 2 all-reduces (g after attn.proj and
    mlp.fc2), backward 2 (f before attn.qkv and mlp.fc1) -- Shoeybi et al. §3, Fig. 4.
    With it: forward 2 all-gathers (g) + 2 reduce-scatters (g-bar); backward 2
    reduce-scatters + 4 all-gathers. Korthikanti §4.2.2 counts "four all-gathers and
    four reduce-scatters"; the 2 extra all-gathers come from saving only this rank's
    sequence shard of the qkv / fc1 input for backward and gathering it again there
    (the same section's last paragraph; Megatron-LM's
    LinearWithGradAccumulationAndAsyncCommunication does the same). ``tp`` = 1: every
    operator is a no-op, nothing is sent.

    Every collective moves one full activation, M = micro_batch * seq_len * d_model *
    bytes_per_value bytes (the all-reduce buffer, the all-gather's output, the
    reduce-scatter's input). "bytes" is what each rank sends with ring algorithms
    (``collective_bytes``): 8 (t-1)/t M without SP -- Narayanan et al. 2021, §3.2:
    "8bsh((t-1)/t) per layer per device", counted there in values -- and 10 (t-1)/t M
    with it.

    The honest conclusion: for the activations' collectives SP moves exactly the bytes
    TP does (a ring all-reduce *is* a reduce-scatter then an all-gather, Korthikanti
    §4.2.2), plus the re-gather -- 2 (t-1)/t M, 25% more -- when only the shard is
    saved. SP buys memory (``activation_memory``), not bandwidth.

    Returns {"collectives": count, "forward": {op: n}, "backward": {op: n},
    "by_op": {op: n}, "message_bytes": M, "bytes": sent per rank, "regather_bytes":
    the part of "bytes" due to the backward re-gather}. Which operators issue each
    count: ``tp_comm_sites``.
    """
    b = check_int("micro_batch", micro_batch)
    s = check_int("seq_len", seq_len)
    h = check_int("d_model", d_model)
    t = check_int("tp", tp)
    sequence_parallel = check_bool("sequence_parallel", sequence_parallel)
    bytes_per_value = check_float("bytes_per_value", bytes_per_value, 0.0)
    M = b * s * h * bytes_per_value
    forward, backward = ({}, {}) if t == 1 else (_SP if sequence_parallel else _TP)
    by_op = {op: forward.get(op, 0) + backward.get(op, 0) for op in {**forward, **backward}}
    sent = sum((n * collective_bytes(op, M, t) for op, n in by_op.items()), 0.0)
    regather = 2 * collective_bytes("all_gather", M, t) if sequence_parallel else 0.0
    return {"collectives": sum(by_op.values()), "forward": dict(forward),
            "backward": dict(backward), "by_op": by_op, "message_bytes": M,
            "bytes": sent, "regather_bytes": regather}


def tp_comm_sites(tp: int, sequence_parallel: bool = False) -> dict:
    """Where each of ``tp_comm_per_layer``'s counts comes from: {"forward": {op: the
    operators of one block that issue them}, "backward": {...}}, the same ops as its
    counts (none at ``tp`` = 1)."""
    t = check_int("tp", tp)
    sequence_parallel = check_bool("sequence_parallel", sequence_parallel)
    forward, backward = ({}, {}) if t == 1 else (_SP_SITES if sequence_parallel else _TP_SITES)
    return {"forward": dict(forward), "backward": dict(backward)}


def tp_scaling(n_layers: int, d_model: int, n_heads: int, seq_len: int, micro_batch: int,
               tp: int, peak_flops: float, bandwidth: float, alpha: float,
               efficiency: float = 0.5, sequence_parallel: bool = False,
               bytes_per_value: float = 2) -> dict:
    """Predicted time for ONE TP group of degree ``tp`` to train one micro-batch
    (forward + backward) through ``n_layers`` GPT layers: compute, then communication,
    not overlapped.

    compute_s = model FLOPs / (tp * peak_flops * efficiency). Model FLOPs per layer are
    3 x (24 b s h^2 + 4 b s^2 h): the forward count of Narayanan et al., "Efficient
    Large-Scale Language Model Training on GPU Clusters Using Megatron-LM" (SC 2021),
    Appendix "Floating-Point Operations", backward twice forward, no recomputation
    (Korthikanti et al. Appendix A, Eq. 7, without the logits) -- equal to
    ``flops_per_token(transformer_params(L, h), L, s, h) * b * s``, which computes it.
    ``efficiency``: the fraction of peak the matmuls reach; it should fall as tp
    grows and they get thinner, which this model leaves to the caller.

    comm_s = n_layers x the ring ``collective_time`` of each collective of
    ``tp_comm_per_layer``. ``bandwidth`` (bytes/s, per GPU per direction) and ``alpha``
    (s) are those of the slowest link on the TP ring: NVLink while tp fits in a node,
    the inter-node network once it does not (``tp_scaling_curve`` picks).

    Returns {"model_flops", "compute_s", "comm_s", "step_s", "comm_bytes" (sent per GPU),
    "tokens_per_s" (the group's, b s / step_s), "tokens_per_s_per_gpu", "mfu" (model
    FLOPs / (step_s tp peak_flops)), "comm_fraction" (comm_s / step_s)}.
    """
    L, h, a = check_int("n_layers", n_layers), check_int("d_model", d_model), \
        check_int("n_heads", n_heads)
    s, b, t = check_int("seq_len", seq_len), check_int("micro_batch", micro_batch), \
        check_int("tp", tp)
    peak_flops = check_float("peak_flops", peak_flops, 0.0)
    bandwidth = check_float("bandwidth", bandwidth, 0.0)
    alpha = check_float("alpha", alpha, 0.0, strict=False)
    efficiency = check_float("efficiency", efficiency, 0.0, high=1.0)
    sequence_parallel = check_bool("sequence_parallel", sequence_parallel)
    bytes_per_value = check_float("bytes_per_value", bytes_per_value, 0.0)
    if a % t:
        raise ValueError(f"tp={t} must divide n_heads={a} (each rank holds whole heads)")
    comm = tp_comm_per_layer(b, s, h, t, sequence_parallel, bytes_per_value)
    flops = flops_per_token(transformer_params(L, h), L, s, h) * b * s
    compute_s = flops / (t * peak_flops * efficiency)
    comm_s = L * sum(n * collective_time(op, comm["message_bytes"], t, alpha, bandwidth)
                     for op, n in comm["by_op"].items())
    step_s = compute_s + comm_s
    return {"model_flops": flops, "compute_s": compute_s, "comm_s": comm_s, "step_s": step_s,
            "comm_bytes": L * comm["bytes"], "tokens_per_s": b * s / step_s,
            "tokens_per_s_per_gpu": b * s / step_s / t, "mfu": flops / (step_s * t * peak_flops),
            "comm_fraction": comm_s / step_s}


def tp_scaling_curve(n_layers: int, d_model: int, n_heads: int, seq_len: int,
                     micro_batch: int, tps, gpus_per_node: int, intra_bandwidth: float,
                     intra_alpha: float, inter_bandwidth: float, inter_alpha: float,
                     peak_flops: float, efficiency: float = 0.5,
                     sequence_parallel: bool = False, bytes_per_value: float = 2,
                     nics_per_node: int | None = None) -> list[dict]:
    """``tp_scaling`` for each degree in ``tps``: one row per tp, in the given order, with
    "tp", "link" ("intra" while tp <= gpus_per_node: the group fits in one node and
    its ring runs over ``intra_bandwidth`` / ``intra_alpha``, e.g. NVLink; "inter"
    beyond, where the ring crosses nodes), "bandwidth", "alpha" and tp_scaling's keys.

    Across nodes the ring is not limited to one port: NCCL runs one ring per network
    card ("rail") of the node, so the gpus_per_node members of a node drive all
    ``nics_per_node`` cards (default: one per GPU, a DGX's layout) and the bus bandwidth
    is ``network.group_bandwidth``: min(intra, nics_per_node x inter_bandwidth) -- 8 HDR
    cards measured 192 GB/s on DGX A100 (nccl#812) -- at ``inter_alpha`` per step.
    ``nics_per_node=1`` gives the single 25 GB/s port of a node with one card. Megatron
    still keeps TP inside a node (Narayanan et al. 2021, §3.2, Takeaway #1), and t = 8 is
    its fastest (§5.4.1, Fig. 13): past a node the ring's hops are slower than NVLink and
    every all-reduce of every layer pays them.
    """
    try:
        degrees = list(tps)
    except TypeError:
        raise ValueError(f"tps={tps!r} must be a sequence of TP degrees") from None
    if not degrees:
        raise ValueError(f"tps={tps!r} must hold at least one TP degree")
    a = check_int("n_heads", n_heads)
    for i, t in enumerate(degrees):
        try:
            check_int(f"tps[{i}]", t)
        except ValueError as e:
            raise ValueError(f"tps={tps!r}: {e}") from None
        if a % t:
            raise ValueError(f"tps={tps!r}: tp={t} must divide n_heads={a}")
    gpus_per_node = check_int("gpus_per_node", gpus_per_node)
    nics = gpus_per_node if nics_per_node is None else check_int("nics_per_node", nics_per_node)
    intra = check_float("intra_bandwidth", intra_bandwidth, 0.0)
    links = {"intra": (intra, check_float("intra_alpha", intra_alpha, 0.0, strict=False)),
             "inter": (check_float("inter_bandwidth", inter_bandwidth, 0.0),
                       check_float("inter_alpha", inter_alpha, 0.0, strict=False))}
    rows = []
    for t in degrees:
        link = "intra" if t <= gpus_per_node else "inter"
        bw, lat = links[link]
        if link == "inter":
            bw = group_bandwidth("all_reduce", t, 1, gpus_per_node, intra, bw,
                                 nics / gpus_per_node)
        row = {"tp": int(t), "link": link, "bandwidth": bw, "alpha": lat}
        row.update(tp_scaling(n_layers, d_model, a, seq_len, micro_batch, t, peak_flops, bw,
                              lat, efficiency, sequence_parallel, bytes_per_value))
        rows.append(row)
    return rows


# --- forward overlap by chunking (Wang et al., ASPLOS 2023, §3) ----------------------------

def chunked_overlap(chunk_comm_s: float, chunk_compute_s: float, chunks: int) -> dict:
    """A collective and the GEMM that depends on it (or that it depends on), cut into
    ``chunks`` pieces and pipelined: piece k+1 travels while piece k is multiplied (Wang
    et al., "Overlap Communication with Dependent Computation via Decomposition in Large
    Deep Learning Models", ASPLOS 2023, §3). A two-stage pipeline: the first piece's
    collective (for GEMM -> reduce-scatter: the last piece's) has nothing to hide behind,

        time = m + p + (c - 1) max(m, p),   m, p = one piece's collective / GEMM time,

    so the exposed communication, time - c p, is m = 1/c of the collective while the GEMM
    is the longer stage, and c (m - p) + p when the link is. ``chunks`` = 1: all of it.
    Returns {"time_s", "exposed_s", "exposed_fraction" (exposed / (c m))}."""
    m = check_float("chunk_comm_s", chunk_comm_s, 0.0, strict=False)
    p = check_float("chunk_compute_s", chunk_compute_s, 0.0, strict=False)
    c = check_int("chunks", chunks)
    time = m + p + (c - 1) * max(m, p)
    exposed = time - c * p
    return {"time_s": time, "exposed_s": exposed,
            "exposed_fraction": exposed / (c * m) if m > 0 else 0.0}


# the forward collectives of one SP layer and the GEMM beside each: (site, op, GEMM's
# weight in units of h^2 -- qkv 3h^2, proj h^2, fc1 / fc2 4h^2: Korthikanti App. A's
# FLOP count; the sites themselves are §4.2.2's)
_SP_FORWARD_SITES = (("attn.qkv", "all_gather", 3), ("attn.proj", "reduce_scatter", 1),
                     ("mlp.fc1", "all_gather", 4), ("mlp.fc2", "reduce_scatter", 4))


def tp_forward_overlap(n_layers: int, d_model: int, n_heads: int, seq_len: int,
                       micro_batch: int, tp: int, peak_flops: float, bandwidth: float,
                       alpha: float, chunks: int, efficiency: float = 0.5,
                       bytes_per_value: float = 2) -> dict:
    """``tp_scaling``'s step with sequence parallelism, its communication hidden as far as
    this model allows: backward's behind the weight-gradient matmuls (all of it: the
    model's assumption, as for ``TPRun(overlap=True)``), forward's by chunking each
    all-gather -> GEMM and GEMM -> reduce-scatter into ``chunks`` pipelined pieces
    (``chunked_overlap``: one piece of every collective stays exposed; each piece pays
    the link's latency ``alpha`` again). What smaller GEMMs lose in efficiency and what
    the collectives take from the GEMMs' memory bandwidth are left out: these are bounds.

    Returns {"chunks", "sites": per forward site {"site", "op", "comm_s", "gemm_s",
    "exposed_s"} for one layer, "forward_comm_s" (all layers, unchunked),
    "exposed_forward_s", "exposed_share" (exposed / forward_comm), "backward_comm_s",
    "step_s" (no overlap), "step_backward_overlap_s", "step_overlap_s",
    "gain_backward", "gain" (step_s / step_overlap_s - 1), "full_gain" (all
    communication hidden), "comm_fraction"}."""
    c = check_int("chunks", chunks)
    base = tp_scaling(n_layers, d_model, n_heads, seq_len, micro_batch, tp, peak_flops,
                      bandwidth, alpha, efficiency, True, bytes_per_value)
    L = n_layers
    h = d_model
    t = tp
    M = micro_batch * seq_len * h * bytes_per_value
    sites = []
    forward = 0.0
    exposed = 0.0
    for site, op, k in _SP_FORWARD_SITES:
        whole = collective_time(op, M, t, alpha, bandwidth) if t > 1 else 0.0
        gemm = 2 * micro_batch * seq_len * k * h * h / t / (peak_flops * efficiency)
        piece = collective_time(op, M / c, t, alpha, bandwidth) if t > 1 else 0.0
        hidden = chunked_overlap(piece, gemm / c, c)["exposed_s"] if c > 1 else whole
        sites.append({"site": site, "op": op, "comm_s": whole, "gemm_s": gemm,
                      "exposed_s": hidden})
        forward = forward + L * whole
        exposed = exposed + L * hidden
    step = base["step_s"]
    backward = base["comm_s"] - forward
    step_bwd = step - backward
    step_ov = step_bwd - forward + exposed
    return {"chunks": c, "sites": sites, "forward_comm_s": forward, "exposed_forward_s": exposed,
            "exposed_share": exposed / forward if forward > 0 else 0.0,
            "backward_comm_s": backward, "step_s": step, "step_backward_overlap_s": step_bwd,
            "step_overlap_s": step_ov, "gain_backward": step / step_bwd - 1,
            "gain": step / step_ov - 1, "full_gain": step / (step - base["comm_s"]) - 1,
            "comm_fraction": base["comm_fraction"]}
