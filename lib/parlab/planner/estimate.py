"""One configuration's predicted step: time (compute, exposed communication, bubble),
memory per GPU (parameters, gradients, optimizer, activations), and throughput.

Every formula is in ``parlab.cost``; this file only composes them for one layout:
n_gpus = dp x tp x pp x cp, Megatron's rank order (tp fastest, then cp, dp, pp).

    per micro-batch, slowest stage:  t_stage = L/pp layers x cost.layer_time
                                     + the logits (last stage) + TP + CP communication
    step = m t_stage                                    (m = global_batch / (dp b))
         + cost.bubble_ratio(pp, m, v) x m t_stage      (fill and drain)
         + cost.pipeline_p2p_time                       (stage boundaries)
         + cost.dp_grad_sync(...)["exposed_s"]          (gradients, over dp x cp ranks;
                                                         ZeRO-3: once per micro-batch)

TP collectives are exposed (Megatron 2021 does not overlap them; full recomputation
repeats the forward ones); ring attention's K/V hops hide behind the attention core up
to its time. Memory follows ``cost.zero_memory`` (the first stage's weights: its layers
plus the embedding) and ``cost.activation_memory`` x the micro-batches the first stage
holds (``cost.interleaved_peak_activations``), plus one layer's full activations while it
is recomputed and, without pipelining, fp32 logits. Left out, so "fits" is optimistic:
the CUDA context, allocator fragmentation, communication buffers, and the optimizer
step's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import cost
from ..validate import check_bool, check_choice, check_float, check_int
from .presets import CONSTANTS, resolve_gpu, resolve_link


@dataclass(frozen=True)
class StepTime:
    """Seconds per training step: compute + communication (exposed) + bubble = total."""
    compute: float
    communication: float
    bubble: float
    total: float
    tp_comm: float  # the parts of ``communication``
    cp_comm: float
    pp_comm: float
    dp_comm: float


@dataclass(frozen=True)
class MemoryPerGPU:
    """Bytes per GPU (the first pipeline stage, the fullest): params + grads + optimizer +
    activations = total, against ``capacity`` (the preset's marketed GB x 1e9)."""
    params: float
    grads: float
    optimizer: float
    activations: float
    total: float
    capacity: float

    @property
    def spare(self) -> float:
        return self.capacity - self.total


@dataclass(frozen=True)
class Estimate:
    n_layers: int
    d_model: int
    n_heads: int
    seq_len: int
    vocab_size: int
    n_gpus: int
    dp: int
    tp: int
    pp: int
    cp: int
    ep: int
    v: int
    micro_batch: int
    n_micro_batches: int  # per pipeline per step (m)
    global_batch: int
    zero_stage: int
    recompute: str
    sequence_parallel: bool
    gpu: str
    step_time: StepTime
    memory_per_gpu: MemoryPerGPU
    fits: bool
    tflops_per_gpu: float  # executed FLOPs (recomputation included): Narayanan et al.'s accounting
    model_tflops_per_gpu: float  # PaLM's model FLOPs, no recomputation
    mfu: float  # model_tflops_per_gpu / peak
    hfu: float  # tflops_per_gpu / peak
    tokens_per_second: float  # whole job
    peak_tflops: float

    @property
    def bubble_fraction(self) -> float:
        return self.step_time.bubble / self.step_time.total


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _check_layout(n_layers, n_heads, seq_len, n_gpus, tp, pp, cp, ep, v, global_batch,
                  zero_stage, uneven_stages) -> int:
    """dp, once the layout is valid; else a ValueError naming the constraint."""
    if ep != 1:
        raise ValueError(f"ep={ep}: expert parallelism needs a mixture-of-experts model; the "
                         "planner models dense GPTs, so ep must be 1")
    if n_heads % tp:
        raise ValueError(f"tp={tp} must divide n_heads={n_heads} (each rank holds whole heads)")
    if seq_len % cp:
        raise ValueError(f"cp={cp} must divide seq_len={seq_len}")
    if n_gpus % (tp * pp * cp * ep):
        raise ValueError(f"n_gpus={n_gpus} must be divisible by tp*pp*cp*ep = "
                         f"{tp * pp * cp * ep} (tp={tp}, pp={pp}, cp={cp}, ep={ep})")
    if pp > n_layers:
        raise ValueError(f"pp={pp} must be <= n_layers={n_layers} (a stage needs a layer)")
    if v > 1 and pp == 1:
        raise ValueError(f"v={v}: interleaving needs pp > 1")
    if n_layers % (pp * v) and not uneven_stages:
        what = f"pp={pp}" if v == 1 else f"pp*v={pp * v}"
        raise ValueError(f"{what} must divide n_layers={n_layers} (equal stages; "
                         "uneven_stages=True times the slowest one)")
    if pp > 1 and zero_stage >= 2:
        raise ValueError(f"zero_stage={zero_stage} with pp={pp}: ZeRO-2/3 shard the gradients "
                         "or weights every micro-batch of a pipeline needs; use zero_stage 0 "
                         "or 1 (Megatron's distributed optimizer is ZeRO-1)")
    dp = n_gpus // (tp * pp * cp)
    if global_batch % dp:
        raise ValueError(f"global_batch={global_batch} must be divisible by dp={dp}")
    return dp


def estimate(n_layers: int, d_model: int, n_heads: int, seq_len: int, vocab_size: int,
             n_gpus: int, tp: int, pp: int, global_batch: int, micro_batch: int | None = None,
             gpu="A100-80GB", *, cp: int = 1, ep: int = 1, v: int = 1, zero_stage: int = 0,
             recompute: str = "none", sequence_parallel: bool = False,
             gpus_per_node: int = CONSTANTS["gpus_per_node"],
             inter_link=CONSTANTS["inter_link"], dp_overlap: bool = True,
             uneven_stages: bool = False, matmul_efficiency: float | None = None,
             traffic_factor: float | None = None) -> Estimate:
    """Predicted step of a GPT (n_layers x d_model, n_heads, seq_len, vocab_size) trained on
    n_gpus = dp x tp x pp x cp GPUs with ``global_batch`` sequences per step.

    ``micro_batch=None`` tries every micro-batch that divides global_batch / dp and returns
    the fastest that fits in memory (ties: the larger); if none fits, micro-batch 1 (with
    ``fits=False``). ``gpu``: a hardware preset or alias ("A100-80GB", "H100-80GB", see
    ``presets.GPU_ALIASES``). ``v``: model chunks per rank (interleaved 1F1B; needs m a
    multiple of pp). ``zero_stage`` 0-3 (2 and 3 only without pipelining).
    ``recompute``: "none", "selective" or "full". ``cp``: context parallel (ring
    attention) degree; ``ep`` must be 1 (dense models). ``dp_overlap``: gradient
    synchronisation overlapped with the last micro-batch's backward (PyTorch DDP) or
    after it (Megatron's "local" DDP). ``uneven_stages``: allow pp (x v) not dividing
    n_layers, timing the slowest stage (ceil). ``matmul_efficiency`` / ``traffic_factor``
    default to ``presets.CONSTANTS``. Bad input: ValueError naming the field.
    """
    n_layers, d_model = check_int("n_layers", n_layers), check_int("d_model", d_model)
    n_heads, seq_len = check_int("n_heads", n_heads), check_int("seq_len", seq_len)
    vocab_size, n_gpus = check_int("vocab_size", vocab_size), check_int("n_gpus", n_gpus)
    tp, pp, cp = check_int("tp", tp), check_int("pp", pp), check_int("cp", cp)
    ep, v = check_int("ep", ep), check_int("v", v)
    global_batch = check_int("global_batch", global_batch)
    zero_stage = check_choice("zero_stage", zero_stage, cost.ZERO_STAGES)
    recompute = check_choice("recompute", recompute, cost.RECOMPUTE)
    sequence_parallel = check_bool("sequence_parallel", sequence_parallel)
    gpus_per_node = check_int("gpus_per_node", gpus_per_node)
    dp_overlap, uneven_stages = check_bool("dp_overlap", dp_overlap), \
        check_bool("uneven_stages", uneven_stages)
    eff = CONSTANTS["matmul_efficiency"] if matmul_efficiency is None else \
        check_float("matmul_efficiency", matmul_efficiency, 0.0, high=1.0)
    k = CONSTANTS["traffic_factor"] if traffic_factor is None else \
        check_float("traffic_factor", traffic_factor, 0.0, strict=False)
    spec, inter = resolve_gpu(gpu), resolve_link(inter_link)
    dp = _check_layout(n_layers, n_heads, seq_len, n_gpus, tp, pp, cp, ep, v, global_batch,
                       zero_stage, uneven_stages)
    args = (n_layers, d_model, n_heads, seq_len, vocab_size, n_gpus, dp, tp, pp, cp, v,
            global_batch, zero_stage, recompute, sequence_parallel, gpus_per_node, inter,
            dp_overlap, eff, k, spec)
    if micro_batch is not None:
        return _estimate(check_int("micro_batch", micro_batch), *args)
    per_replica = global_batch // dp
    best = None
    for b in _divisors(per_replica):
        if v > 1 and (per_replica // b) % pp:
            continue
        e = _estimate(b, *args)
        if e.fits and (best is None or e.step_time.total <= best.step_time.total * (1 + 1e-9)):
            best = e
    if best is None:
        if v > 1 and per_replica % pp:
            raise ValueError(f"v={v}: interleaving needs the micro-batches per step, "
                             f"global_batch/dp = {per_replica} / b, to be a multiple of pp={pp}")
        b = 1 if v == 1 else max(b for b in _divisors(per_replica) if (per_replica // b) % pp == 0)
        best = _estimate(b, *args)
    return best


def _link(group: int, stride: int, gpus_per_node: int, intra, inter):
    """The slowest link of a ring of ``group`` ranks ``stride`` apart."""
    return intra if group == 1 or group * stride <= gpus_per_node else inter


def _estimate(b, L, h, a, s, V, n_gpus, dp, tp, pp, cp, v, B, zero, recompute, sp, gpn,
              inter, overlap, eff, k, spec) -> Estimate:
    from ..hardware import LINK_PRESETS
    if B % (dp * b):
        raise ValueError(f"micro_batch={b} must divide global_batch/dp = {B}/{dp}")
    m = B // (dp * b)
    if v > 1 and m % pp:
        raise ValueError(f"v={v}: interleaving needs m = global_batch/(dp*micro_batch) = {m} "
                         f"to be a multiple of pp={pp}")
    peak = spec.peak_tflops[CONSTANTS["dtype"]] * 1e12
    intra = LINK_PRESETS[spec.link]
    s_loc = s // cp
    layers = math.ceil(L / pp)  # the slowest stage
    lt = cost.layer_time(b, s, h, a, tp, peak, spec.hbm_gb_per_s * 1e9, recompute, sp, eff, k, cp)
    logits_s = 3 * 2 * b * s_loc * h * V / tp / (peak * eff)
    compute1 = layers * lt["time_s"] + logits_s

    # tensor parallelism: every collective of every layer, exposed
    tp_link = _link(tp, 1, gpn, intra, inter)
    comm = cost.tp_comm_per_layer(b, s_loc, h, tp, sp)
    fwd_repeat = 2 if recompute == "full" else 1
    tp1 = layers * sum(
        (n * (fwd_repeat if direction == "forward" else 1)) * cost.collective_time(
            op, comm["message_bytes"], tp, tp_link.latency_us * 1e-6,
            tp_link.gb_per_s_per_direction * 1e9)
        for direction in ("forward", "backward") for op, n in comm[direction].items())
    # context parallelism: ring attention's hops, hidden behind the attention core
    cp1 = 0.0
    if cp > 1:
        cp_link = _link(cp, tp, gpn, intra, inter)
        ring = cost.cp_comm_per_layer(b, s, h, cp, "ring")
        hops = ring["messages"] * cost.p2p_time(ring["message_bytes"] / tp,
                                                cp_link.latency_us * 1e-6,
                                                cp_link.gb_per_s_per_direction * 1e9)
        core = 3 * 4 * b * s_loc * s * h / tp / (peak * eff)
        cp1 = layers * max(0.0, hops - core)
    t_stage = compute1 + tp1 + cp1
    bubble = cost.bubble_ratio(pp, m, v) * m * t_stage if pp > 1 else 0.0
    pp_link = _link(2, tp * cp * dp, gpn, intra, inter)
    pp_s = cost.pipeline_p2p_time(b, s_loc, h, pp, m, pp_link.latency_us * 1e-6,
                                  pp_link.gb_per_s_per_direction * 1e9, v, tp)

    # weights of the first stage (its layers and the embedding), per GPU
    stage_params = (layers * (12 * h * h + 13 * h) + (V + s) * h) / tp
    dp_group = dp * cp
    dp_link = _link(dp_group, tp, gpn, intra, inter)
    passes = 4 if recompute == "full" else 3
    backward = (passes - 1) / passes * compute1
    # ZeRO-3 keeps no whole weights between micro-batches: it all-gathers them again for
    # every micro-batch's forward and backward and reduce-scatters every micro-batch's
    # gradients (DeepSpeed stage 3; FSDP without no_sync), so its traffic grows with m,
    # and each micro-batch's share can hide only behind that micro-batch's backward.
    repeat = m if zero == 3 else 1
    sync = cost.dp_grad_sync(round(stage_params) * repeat, dp_group,
                             dp_link.latency_us * 1e-6, dp_link.gb_per_s_per_direction * 1e9,
                             zero, 2, backward * repeat, overlap)
    comm_total = m * (tp1 + cp1) + pp_s + sync["exposed_s"]
    total = m * compute1 + comm_total + bubble
    step = StepTime(m * compute1, comm_total, bubble, total, m * tp1, m * cp1, pp_s,
                    sync["exposed_s"])

    states = cost.zero_memory(round(stage_params), dp_group, zero)
    per_layer = cost.activation_memory(s_loc, b, h, a, 1, recompute, tp, sp)
    act = per_layer * layers * cost.interleaved_peak_activations(pp, m, v)
    if recompute != "none":  # the layer being recomputed holds its full activations
        act += cost.activation_memory(s_loc, b, h, a, 1, "none", tp, sp)
    if pp == 1:  # fp32 logits of the micro-batch (the last stage's, here the only one)
        act += 4 * b * s_loc * V / tp
    cap = spec.memory_gb * 1e9
    mem_total = states["total"] + act
    memory = MemoryPerGPU(states["params"], states["grads"], states["optimizer"], act,
                          mem_total, cap)

    executed = cost.megatron_flops(B, s, L, h, V, recompute)
    model = cost.megatron_flops(B, s, L, h, V, "none")
    tflops = executed / total / n_gpus / 1e12
    tokens = B * s / total
    mfu = cost.mfu(tokens / n_gpus, model / (B * s), peak)
    return Estimate(L, h, a, s, V, n_gpus, dp, tp, pp, cp, 1, v, b, m, B, zero, recompute, sp,
                    spec.name, step, memory, mem_total <= cap, tflops,
                    model / total / n_gpus / 1e12, mfu, tflops * 1e12 / peak, tokens,
                    peak / 1e12)
