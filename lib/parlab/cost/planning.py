"""Planning: the pieces of a 3D-parallel step time that the other modules do not have --
the pipeline's point-to-point time, the data-parallel gradient synchronisation (exposed or
hidden behind backward), and the activations an interleaved pipeline's first stage holds.
``parlab.planner`` composes them with ``step.layer_time`` (a layer on one GPU),
``bubble_ratio``, ``tp_comm_per_layer``, ``network.group_collective_time``,
``zero_memory``, ``activation_memory`` and ``flops_per_token`` (count="megatron": FLOPs as
Narayanan et al. count them).

Domains: shapes, degrees and counts integers >= 1; ``bandwidth`` and ``bytes_per_value``
finite and > 0; ``alpha``, ``grad_bytes`` and times finite and >= 0; ``n_params`` a whole
number >= 0; flags True/False.
"""

from __future__ import annotations

from ..validate import check_bool, check_float, check_int, check_whole
from .collectives import collective_steps
from .data_parallel import dp_step_time
from .memory import _check_stage, zero_comm_volume


def pipeline_p2p_time(micro_batch: int, seq_len: int, d_model: int, p: int, m: int,
                      alpha: float, bandwidth: float, v: int = 1, tp: int = 1,
                      scatter_gather: bool = True, bytes_per_value: float = 2) -> float:
    """Exposed seconds of a pipeline's point-to-point transfers in one step (1F1B, or
    interleaved with ``v`` chunks per rank), per rank on the critical path.

    Each micro-batch crosses each stage boundary twice: its activations forward and their
    gradient backward, b s h values each. Megatron's blocking send/recv pairs put every
    one of a rank's 2 v m transfers on its critical path, and the fill and drain add
    2 (p - 1) more hops: 2 (v m + p - 1) x (alpha + S / bandwidth). With the
    scatter/gather optimisation (Narayanan et al. 2021, §4.1) each of the tp ranks sends
    1/tp of the tensor over its own network card and the pieces are re-gathered over
    NVLink (not counted here): S = b s h bytes_per_value / tp. p = 1: nothing is sent.
    """
    b = check_int("micro_batch", micro_batch)
    s = check_int("seq_len", seq_len)
    h = check_int("d_model", d_model)
    p = check_int("p", p)
    m = check_int("m", m)
    alpha = check_float("alpha", alpha, 0.0, strict=False)
    bandwidth = check_float("bandwidth", bandwidth, 0.0)
    v = check_int("v", v)
    t = check_int("tp", tp)
    scatter_gather = check_bool("scatter_gather", scatter_gather)
    bytes_per_value = check_float("bytes_per_value", bytes_per_value, 0.0)
    if p == 1:
        return 0.0
    size = b * s * h * bytes_per_value / (t if scatter_gather else 1)
    return 2 * (v * m + p - 1) * (alpha + size / bandwidth)


def dp_grad_sync(n_params: float, dp: int, alpha: float, bandwidth: float, stage: int = 0,
                 grad_bytes: float = 2, backward_s: float = 0.0, overlap: bool = True) -> dict:
    """The data-parallel synchronisation of one GPU's ``n_params`` parameters once per
    step, and how much of it shows.

    Bytes: ``zero_comm_volume`` (ring: plain DP and ZeRO-1/2 2 Psi (dp-1)/dp, ZeRO-3
    3 Psi (dp-1)/dp); time: that over ``bandwidth`` plus alpha per ring step (2 (dp-1)
    for the all-reduce, 3 (dp-1) for ZeRO-3). Exposed: what does not fit behind the
    backward compute it can overlap with, ``backward_s`` -- with gradient accumulation
    over micro-batches (any pipeline) only the last micro-batch's backward, as in
    PyTorch DDP -- by ``dp_step_time`` (Li et al. 2020): max(backward_s, time) -
    backward_s with ``overlap``, all of it without (Megatron's "local" DDP all-reduces
    after backward). Returns {"bytes", "time_s", "exposed_s"}.
    """
    n_params = check_whole("n_params", n_params)
    dp = check_int("dp", dp)
    alpha = check_float("alpha", alpha, 0.0, strict=False)
    bandwidth = check_float("bandwidth", bandwidth, 0.0)
    stage = _check_stage(stage)
    grad_bytes = check_float("grad_bytes", grad_bytes, 0.0, strict=False)
    backward_s = check_float("backward_s", backward_s, 0.0, strict=False)
    overlap = check_bool("overlap", overlap)
    sent = zero_comm_volume(n_params, dp, stage, grad_bytes)
    steps = collective_steps("all_reduce", dp) * (1.5 if stage == 3 else 1)
    time_s = steps * alpha + sent / bandwidth
    exposed = dp_step_time(0.0, backward_s, time_s, overlap) - backward_s
    return {"bytes": sent, "time_s": time_s, "exposed_s": max(0.0, exposed)}


def chunked_sync_exposed(sync_s: float, stage_s: float, v: int = 1, p: int = 1) -> float:
    """Seconds of a data-parallel sync (``sync_s`` for the stage's whole share) that show
    beside one micro-batch's pass over the stage (``stage_s``: its backward for the
    gradients' reduce, its forward for the weights' gather) when each of the stage's ``v``
    model chunks syncs its own share.

    Megatron's interleaved schedule enables a chunk's gradient reduce at that chunk's last
    micro-batch (``is_last_microbatch_for_model_chunk`` in megatron/core/pipeline_parallel/
    schedules.py, since d2de701, 2023-05; at f2e5db4 as at today's head), so the
    reduce-scatters of a chunk run while the stage is still busy with the chunks after it.
    On the first stage the chunk k from the end finishes its last backward k p chunk-slots
    before the stage's last (p micro-batches of the other chunks pass between them); each
    share, sync_s / v, starts as its chunk's backward starts (its buckets fill during it)
    and after the share before it (one network). What shows is
    max over k of ((k + 1) sync_s / v - (k p + 1) stage_s / v), at least 0; the weights'
    gathers are the mirror image in the first micro-batch's forward. v = 1 (and any pipeline
    without interleaving) gives max(0, sync_s - stage_s): the last micro-batch's backward
    hides it, as in PyTorch DDP (``dp_grad_sync``)."""
    sync_s = check_float("sync_s", sync_s, 0.0, strict=False)
    stage_s = check_float("stage_s", stage_s, 0.0, strict=False)
    v = check_int("v", v)
    p = check_int("p", p)
    share, chunk = sync_s / v, stage_s / v
    return max(0.0, max((k + 1) * share - (k * p + 1) * chunk for k in range(v)))


def offload_exposed(layer_bytes: float, offloaded: int, layers: int, bandwidth: float,
                    forward_s: float, backward_s: float) -> float:
    """Seconds one micro-batch waits for activation offloading (Megatron-Core's
    cpu_offloading_num_layers, its double-buffered handler): the first ``offloaded`` of a
    stage's ``layers`` layers send their ``layer_bytes`` of saved activations to the host
    over ``bandwidth`` (B/s, one direction) during the forward and fetch them back during
    the backward, each way behind the other layers' compute (``forward_s`` / ``backward_s``
    a layer); what does not fit behind it is exposed. The copies' share of HBM bandwidth is
    not counted."""
    layer_bytes = check_float("layer_bytes", layer_bytes, 0.0, strict=False)
    offloaded = check_int("offloaded", offloaded, 0)
    layers = check_int("layers", layers)
    bandwidth = check_float("bandwidth", bandwidth, 0.0)
    forward_s = check_float("forward_s", forward_s, 0.0, strict=False)
    backward_s = check_float("backward_s", backward_s, 0.0, strict=False)
    if offloaded >= layers and offloaded:
        raise ValueError(f"offloaded={offloaded} must be fewer than layers={layers}: the layer "
                         "being copied stays")
    one_way = offloaded * layer_bytes / bandwidth
    return sum(max(0.0, one_way - (layers - 1) * t) for t in (forward_s, backward_s))


def interleaved_peak_activations(p: int, m: int, v: int = 1) -> float:
    """Micro-batches' worth of a whole stage's activations that the first pipeline rank
    holds at its peak: 1F1B (v = 1) min(m, p) (``pipeline_peak_activations``); the
    interleaved schedule (v chunks of L/(p v) layers each) warms up with
    2 (p - 1) + (v - 1) p chunk forwards plus the one in flight (Megatron-LM's
    interleaved schedule in its code; the paper, Narayanan et al. 2021, says only
    "comparable memory footprint", abstract and §1): min(m v, (v + 1) p - 1) chunks =
    that / v stages' worth, about p (1 + 1/v)."""
    p = check_int("p", p)
    m = check_int("m", m)
    v = check_int("v", v)
    if v == 1:
        return float(min(m, p))
    return min(m * v, (v + 1) * p - 1) / v


def data_parallel_degree(n_gpus: int, tp: int = 1, pp: int = 1, cp: int = 1) -> int:
    """The data-parallel degree d of a layout: n = d x t x p (x cp), Narayanan et al.
    2021, §3 ("PTD-P": n GPUs as t-way tensor, p-way pipeline and d-way data
    parallelism, d = n / (t p)); context parallelism takes its own factor. The product
    of the other degrees must divide ``n_gpus``."""
    n_gpus = check_int("n_gpus", n_gpus)
    tp = check_int("tp", tp)
    pp = check_int("pp", pp)
    cp = check_int("cp", cp)
    if n_gpus % (tp * pp * cp):
        raise ValueError(f"tp={tp} x pp={pp} x cp={cp} = {tp * pp * cp} must divide "
                         f"n_gpus={n_gpus}")
    return n_gpus // (tp * pp * cp)
