"""One configuration's predicted step: time (compute, exposed communication, bubble),
memory per GPU, throughput -- ``predict(model, cluster, layout, global_batch)``, and
``estimate(...)`` with plain arguments. Every formula is in ``parlab.cost``; this file
composes them for one layout (``spec``: tp fastest, then cp, dp, pp).

    per micro-batch, slowest stage:  its layers x cost.layer_time (forward + backward)
                                     + the output layer and loss (last stage)
                                     + TP, CP and EP communication not hidden
    step = m x that                                  (m = global_batch / (dp b))
         + cost.bubble_ratio(pp, m, v) x m x that    (fill and drain)
         + cost.pipeline_p2p_time                    (stage boundaries)
         + the gradient reduce and parameter gather that does not fit behind the last
           micro-batch's backward / the first one's forward (ZeRO-3: layer by layer, as
           FSDP2 or DeepSpeed 2021 hide it, every micro-batch or once: cost.fsdp)
         + the optimizer step
         + activation offloading's copies that do not fit behind the other layers' compute

Overlaps are the ones the options allow: TP collectives behind their GEMMs with
``tp_comm_overlap`` (Transformer Engine's userbuffers), otherwise exposed (Narayanan et al.
2021 do not overlap them); ring attention's hops behind the attention they feed (Liu et al.
2024, §3); CP all-gather (Llama 3, Dubey et al. 2024, §3.3.2) and Ulysses' all-to-alls
exposed; MoE dispatch and combine exposed. Memory: ``cost.zero_memory`` for the first
stage's weights and ``cost.activation_memory`` x the micro-batches it holds (``cost.
interleaved_peak_activations``), plus a layer's full activations while it is recomputed and,
without pipelining, fp32 logits (offloaded layers' activations in host memory, but the
one being copied); with fp8 / mxfp8 / nvfp4 the GEMM inputs kept for backward
at that dtype's bytes. It predicts peak *allocated* memory (``MemoryPerGPU.counter``). Left
out, so "fits" is optimistic: the CUDA context, fragmentation, workspaces, communication
buffers, the last stage's logits. FLOPs: ``Estimate.flop_convention``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from .. import cost
from ..hardware import LINK_PRESETS
from ..validate import check_int
from .constants import CONSTANTS, Constants
from ..cost.memory import MEMORY_COUNTER
from .conventions import FLOP_CONVENTION, flops_as
from .presets import cluster_for
from .spec import Cluster, Layout, LayoutError, ModelSpec
from .stacks import DEFAULT_STACK, STACKS, stack_constants
from .communication import cp_comm, dp_sync, ep_comm, expert_dp, tp_comm


@dataclass(frozen=True)
class StepTime:
    """Seconds per step: compute + communication (exposed) + bubble = total; ``ideal`` is
    the model FLOPs at every GPU's peak (the MFU = 1 time): total - ideal is overhead."""
    compute: float
    communication: float
    bubble: float
    total: float
    tp_comm: float  # the parts of ``communication``
    cp_comm: float
    pp_comm: float
    dp_comm: float
    ep_comm: float = 0.0
    optimizer: float = 0.0  # part of ``compute``
    ideal: float = 0.0
    offload: float = 0.0  # part of ``compute``: waiting for activation offloading's copies


@dataclass(frozen=True)
class MemoryPerGPU:
    """Bytes per GPU (the first pipeline stage, the fullest): params + grads + optimizer +
    activations = total, against ``capacity`` (the preset's marketed GB x 1e9). ``total``
    predicts peak *allocated* memory; ``counter`` says so and what is left out."""
    params: float
    grads: float
    optimizer: float
    activations: float
    total: float
    capacity: float
    counter: str = MEMORY_COUNTER  # which counter ``total`` predicts, and what it leaves out

    @property
    def spare(self) -> float:
        return self.capacity - self.total


@dataclass(frozen=True)
class Estimate:
    model: ModelSpec
    cluster: Cluster
    layout: Layout
    n_gpus: int
    dp: int
    global_batch: int
    n_micro_batches: int  # per pipeline per step (m)
    dtype: str
    step_time: StepTime
    memory_per_gpu: MemoryPerGPU
    fits: bool
    tflops_per_gpu: float  # executed FLOPs (recomputation included): Narayanan et al.'s accounting
    model_tflops_per_gpu: float  # model FLOPs (Megatron-LM / PaLM), no recomputation
    mfu: float  # model_tflops_per_gpu / the 16-bit peak
    hfu: float  # tflops_per_gpu / the 16-bit peak
    tokens_per_second: float  # whole job
    peak_tflops: float
    constants: Constants = CONSTANTS
    flop_convention: str = FLOP_CONVENTION  # what mfu / tflops count (planner.conventions)

    def flops_as(self, flops: str = "model", attention: str = "full") -> dict:
        """This step's throughput and utilisation in another FLOP count (``conventions``)."""
        return flops_as(self, flops, attention)

    def __getattr__(self, name):  # the layout's and the model's fields read through
        for part in ("layout", "model"):
            obj = object.__getattribute__(self, part)
            if name in type(obj).__dataclass_fields__:
                return getattr(obj, name)
        if name in ("d_model", "n_heads"):
            return getattr(object.__getattribute__(self, "model"), name)
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    @property
    def gpu(self) -> str:
        return self.cluster.gpu.name

    @property
    def bubble_fraction(self) -> float:
        return self.step_time.bubble / self.step_time.total


# a layer's time depends on the shape, the device and (b, tp, cp, ep, ...), not on pp, dp or
# the ZeRO stage: ``plan`` asks for the same one thousands of times
_layer_time = functools.lru_cache(maxsize=8192)(cost.layer_time)


def divisors(n: int) -> tuple:
    """The divisors of ``n``, smallest first, from its prime factors found by trial
    division: d runs while d*d is at most what is left of n, so a batch of powers of two
    and small primes (10**12 = 2**12 5**12) factors at once, and no n takes more than
    sqrt(n) / 2 steps (a prime near 10**12: 5 x 10**5) -- never a loop as long as the
    batch. Cached: ``plan`` asks for the same batch's divisors for every variant."""
    return _divisors(check_int("n", n))  # checked outside the cache: True would hit 1's entry


@functools.lru_cache(maxsize=256)
def _divisors(n: int) -> tuple:
    factors = {}
    left = n
    d = 2
    while d * d <= left:
        while left % d == 0:
            factors[d] = factors.get(d, 0) + 1
            left //= d
        d += 1 if d == 2 else 2
    if left > 1:
        factors[left] = factors.get(left, 0) + 1
    out = [1]
    for prime, power in factors.items():
        out = [x * prime ** k for x in out for k in range(power + 1)]
    return tuple(sorted(out))


def _check_inputs(model, cluster, layout, constants) -> None:
    """A ValueError naming the first of predict's objects that is not what it must be
    (rather than an AttributeError deep in the model)."""
    for name, value, kind in (("model", model, ModelSpec), ("cluster", cluster, Cluster),
                              ("layout", layout, Layout), ("constants", constants, Constants)):
        if not isinstance(value, kind):
            raise ValueError(f"{name}={value!r} must be a planner.{kind.__name__}")


def predict(model: ModelSpec, cluster: Cluster, layout: Layout, n_gpus: int,
            global_batch: int, constants: Constants = CONSTANTS) -> Estimate:
    """The predicted step of ``model`` on ``n_gpus`` GPUs of ``cluster`` laid out as
    ``layout`` (dp = what its degrees leave), ``global_batch`` sequences per step."""
    _check_inputs(model, cluster, layout, constants)
    n_gpus = check_int("n_gpus", n_gpus)
    B = check_int("global_batch", global_batch)
    lay = layout
    s = model.shape
    L = model.n_layers
    S = model.seq_len
    V = model.vocab_size
    dp = lay.check(model, n_gpus, B)
    dtype = lay.dtype_on(cluster.gpu)
    constants = stack_constants(lay.stack, constants)  # the layout's software stack
    dev = constants.device(cluster.gpu, dtype)
    tp = lay.tp
    pp = lay.pp
    cp = lay.cp
    ep = lay.ep
    v = lay.v
    b = lay.micro_batch
    sp = lay.sequence_parallel and tp > 1
    m = B // (dp * b)
    layers = math.ceil(L / pp)  # a rank's layers: the slowest stage's
    # the embedding and the loss counted as a layer each: a middle rank builds v chunks of
    # (L + 2) / (pp v) layers, the first and the last rank one fewer (spec.Layout)
    ends = lay.ends_as_layers and pp > 1
    if ends:
        layers = (L + 2) // pp
    lt = _layer_time(s, b, S, dev, tp, cp, ep, sp, lay.recompute, lay.attention,
                     dtype in cost.LOW_PRECISION, lay.capacity_factor or 1.0,
                     STACKS[lay.stack].eager_ops)
    tp1 = tp_comm(model, cluster, lay, lt, b, sp)
    cp1 = cp_comm(model, cluster, lay, lt, b)
    ep1 = ep_comm(model, cluster, lay, b)
    comm_layer = tp1 + cp1 + ep1
    logits = cost.logits_time(b * S // cp, s.d_model, V, dev, tp, lay.loss)
    # the slowest rank: without ends_as_layers the last, its `layers` and the loss; with
    # them the last (a layer fewer, and the loss) or a middle rank (`layers`, no loss) --
    # with two ranks there is no middle one
    timed, loss_here = layers, 1
    if ends:
        if pp == 2 or logits > lt["forward"] + lt["backward"] + comm_layer:
            timed = layers - 1
        else:
            loss_here = 0
    compute1 = timed * (lt["forward"] + lt["backward"]) + loss_here * logits
    t_stage = compute1 + timed * comm_layer
    bubble = cost.bubble_ratio(pp, m, v) * m * t_stage if pp > 1 else 0.0

    # stage boundaries: every micro-batch's activations and gradients, scatter/gather over tp
    stride_pp = tp * cp * dp
    p2p_bw = cost.group_bandwidth("p2p", 2, stride_pp, cluster.nvlink_domain,
                                  cluster.link("intra")[0], cluster.link("inter")[0],
                                  cluster.nics_per_gpu)
    p2p_alpha = cluster.link("inter" if cluster.crosses(2, stride_pp) else "intra")[1]
    pp_s = cost.pipeline_p2p_time(b, S // cp, s.d_model, pp, m, p2p_alpha, p2p_bw, v, tp)

    # gradients and weights: the first stage's layers (with ends_as_layers, one fewer) and
    # the embedding; experts over ep
    first = layers - ends
    p = cost.layer_params(s)
    dense = (first * p["dense"] + model.embedding_params()) / tp
    experts = first * p["experts"] / ep
    stage_params = dense + experts
    dp_s = dp_sync(cluster, lay, dp, dense, experts, first, lt, m)
    # ZeRO shards the experts over their own data-parallel group (expert_dp)
    sharded = (dense / (dp * cp) + experts / expert_dp(lay, dp)) if lay.zero_stage else stage_params
    opt = cost.optimizer_time(round(sharded), dev)

    comm = m * timed * comm_layer + pp_s + dp_s
    offload = m * _offload_exposed(model, cluster, lay, layers, lt)
    total = m * compute1 + opt + comm + bubble + offload
    tokens = B * S
    # MFU and the ideal step against the datasheet's 16-bit peak, not the share of it a GPU's
    # clocks sustain (Constants.clock_shares)
    peak = dev.peak_flops / constants.clock_share(cluster.gpu)
    model_flops = model.flops_per_token() * tokens
    step = StepTime(m * compute1 + opt + offload, comm, bubble, total, m * timed * tp1,
                    m * timed * cp1, pp_s, dp_s, m * timed * ep1, opt,
                    model_flops / (n_gpus * peak), offload)
    memory = _memory(model, cluster, lay, dp, m, first, dense, experts)
    executed = cost.flops_per_token(s, L, S, vocab_size=V, count="megatron",
                                    recompute=lay.recompute, attention=lay.attention) * tokens
    return Estimate(model, cluster, lay, n_gpus, dp, B, m, dtype, step, memory,
                    memory.total <= memory.capacity, executed / total / n_gpus / 1e12,
                    model_flops / total / n_gpus / 1e12, model_flops / total / n_gpus / peak,
                    executed / total / n_gpus / peak, tokens / total, peak / 1e12, constants)


def layer_activations(model, cluster, lay) -> float:
    """Bytes one layer keeps for its backward, one micro-batch (``cost.activation_memory``)."""
    dtype = lay.dtype_on(cluster.gpu)
    low = cost.bytes_per_element(dtype) if dtype in cost.LOW_PRECISION else None
    return cost.activation_memory(model.seq_len, lay.micro_batch, recompute=lay.recompute,
                                  tp=lay.tp, sequence_parallel=lay.sequence_parallel and lay.tp > 1,
                                  layer=model.shape, attention=lay.attention, cp=lay.cp,
                                  gemm_input_bytes=low)


def _offload_exposed(model, cluster, lay, layers, lt) -> float:
    """Seconds one micro-batch waits for activation offloading (``cost.offload_exposed``)
    over the GPU's host link at its per-direction bandwidth x NCCL's achieved share."""
    if not lay.offload_layers:
        return 0.0
    link = LINK_PRESETS[cluster.gpu.host_link]
    return cost.offload_exposed(layer_activations(model, cluster, lay), lay.offload_layers,
                                layers, link.gb_per_s_per_direction * 1e9 * link.achieved,
                                lt["forward"], lt["backward"])


def _memory(model, cluster, lay, dp, m, layers, dense, experts) -> MemoryPerGPU:
    """Bytes on a GPU of the first stage (``cost.zero_memory`` of its weights over dp x cp,
    of its experts over their own data-parallel group;
    ``cost.activation_memory`` x the micro-batches 1F1B or the interleaved schedule keeps)."""
    s = model.shape
    S = model.seq_len
    b = lay.micro_batch
    tp = lay.tp
    sp = lay.sequence_parallel and tp > 1
    dtype = lay.dtype_on(cluster.gpu)
    low = cost.bytes_per_element(dtype) if dtype in cost.LOW_PRECISION else None
    states = cost.zero_memory(round(dense), dp * lay.cp, lay.zero_stage)
    if experts:  # sharded over the experts' own data-parallel group, not dp x cp
        more = cost.zero_memory(round(experts), expert_dp(lay, dp), lay.zero_stage)
        states = {k: states[k] + more[k] for k in states}
    per_layer = layer_activations(model, cluster, lay)
    # offloaded layers leave the GPU; the one being copied is still here
    resident = layers - lay.offload_layers + (1 if lay.offload_layers else 0)
    act = per_layer * resident * cost.interleaved_peak_activations(lay.pp, m, lay.v)
    if lay.recompute != "none":  # the layer being recomputed holds its full activations
        act += cost.activation_memory(S, b, tp=tp, sequence_parallel=sp, layer=s,
                                      attention=lay.attention, cp=lay.cp, gemm_input_bytes=low)
    if lay.pp == 1:  # fp32 logits of the micro-batch (the last stage's, here the only one)
        act += 4 * b * (S // lay.cp) * model.vocab_size / tp
    if lay.zero_stage == 3:  # gathered 16-bit weights: the running unit (and the prefetched
        unit = 2 * (dense + experts) / layers  # one), or the whole stage and its gradients
        keep = cost.fsdp_accumulation(unit, layers, m, lay.keeps_unsharded)["extra_bytes"]
        act += keep or unit * (2 if lay.fsdp_impl == "fsdp2" and layers > 1 else 1)
    cap = cluster.gpu.memory_gb * 1e9
    return MemoryPerGPU(states["params"], states["grads"], states["optimizer"], act,
                        states["total"] + act, cap)


_SHAPE = dict(n_kv_heads=None, head_dim=None, d_ff=None, mlp="gelu", n_experts=0, top_k=1,
              expert_d_ff=None, n_shared_experts=0, norm="layernorm")


def estimate(n_layers: int, d_model: int, n_heads: int, seq_len: int, vocab_size: int,
             n_gpus: int, tp: int, pp: int, global_batch: int, micro_batch: int | None = None,
             gpu="A100-80GB", *, shape: cost.LayerShape | None = None,
             constants: Constants = CONSTANTS, gpus_per_node: int | None = None,
             nics_per_node: int | None = None, inter_link=None, nvlink_domain: int | None = None,
             tied_embeddings: bool = True, learned_positions: bool = True,
             stack: str = DEFAULT_STACK, **kw) -> Estimate:
    """Predicted step of a transformer (n_layers x d_model, n_heads, seq_len, vocab_size)
    on n_gpus = dp x tp x pp x cp GPUs with ``global_batch`` sequences per step.

    The layer: a GPT layer by default; Llama-style or MoE with ``n_kv_heads``, ``head_dim``,
    ``mlp="swiglu"`` and ``d_ff``, ``norm="rmsnorm"``, ``n_experts``, ``top_k``, ``expert_d_ff``,
    ``n_shared_experts`` (or a whole ``shape=cost.LayerShape(...)``). The layout: any field
    of ``spec.Layout`` -- cp, cp_kind ("ring" | "ulysses" | "allgather"), ep,
    capacity_factor, v, zero_stage, recompute, sequence_parallel, attention ("fused" |
    "materialized"), loss_kernel (the cross-entropy's implementation, cost.LOSS_KERNELS:
    "triton", "megatron-jit", "megatron", "torch"; default the stack's), dtype ("bf16" | "fp16" |
    "fp8" | "mxfp8" | "nvfp4"; default the
    GPU's 16-bit type; one the GPU has no peak for is a ValueError naming both),
    tp_comm_overlap, dp_overlap, uneven_stages, ends_as_layers (the embedding and the loss a
    layer each in the pipeline split), offload_layers (activation offloading to
    the host over ``GPUSpec.host_link``: pp 1, no recomputation); ``stack``, the software stack whose
    efficiencies apply (``stacks.STACKS``; default "megatron-te"). The cluster: ``gpu`` (a preset or alias) in
    its usual node (``hardware.node_for``), any of gpus_per_node, nics_per_node,
    inter_link, nvlink_domain replaced. ``micro_batch=None`` tries the micro-batches that
    divide global_batch / dp, smallest first until one does not fit, and keeps the fastest
    that fits (ties: the larger); if none fits, micro-batch 1 (``fits=False``). With
    ``shape=``, d_model and n_heads may be None (or must agree with it). Bad input:
    ValueError naming the field; a layout the model cannot run: ``spec.LayoutError``."""
    shape_kw = {k: kw.pop(k) for k in list(kw) if k in _SHAPE}
    flags = {k: kw.pop(k) for k in ("biases", "dropout", "rope") if k in kw}
    if shape is None:
        shape = cost.LayerShape(check_int("d_model", d_model), check_int("n_heads", n_heads),
                                **{**_SHAPE, **shape_kw}, **flags)
    elif shape_kw or flags:
        raise ValueError(f"{sorted(shape_kw) + sorted(flags)}: give them in shape=, not both")
    else:
        if not isinstance(shape, cost.LayerShape):
            raise ValueError(f"shape={shape!r} must be a cost.LayerShape")
        # the shape is what is estimated: a d_model or n_heads beside it that says otherwise
        # would be silently ignored
        for name, value in (("d_model", d_model), ("n_heads", n_heads)):
            if value is not None and value != getattr(shape, name):
                raise ValueError(f"{name}={value!r} disagrees with shape.{name}="
                                 f"{getattr(shape, name)} (give None, or the same value)")
    unknown = sorted(set(kw) - set(Layout.__dataclass_fields__) - {"micro_batch"})
    if unknown:
        raise ValueError(f"{unknown}: not an argument of estimate (a Layout field, a layer "
                         f"field {sorted(_SHAPE)} or the cluster's)")
    model = ModelSpec("model", check_int("n_layers", n_layers), check_int("seq_len", seq_len),
                      check_int("vocab_size", vocab_size), shape, tied_embeddings,
                      learned_positions)
    cluster = cluster_for(gpu, gpus_per_node, nics_per_node, inter_link, nvlink_domain)
    layout = Layout(tp=tp, pp=pp, stack=stack, **kw, micro_batch=1)
    return best_micro_batch(model, cluster, layout, n_gpus, global_batch, micro_batch, constants)


def best_micro_batch(model: ModelSpec, cluster: Cluster, layout: Layout, n_gpus: int,
                     global_batch: int, micro_batch: int | None = None,
                     constants: Constants = CONSTANTS) -> Estimate:
    """``predict`` at ``micro_batch``, or (None) the fastest micro-batch that fits: the
    divisors b of global_batch / dp tried smallest first, stopping at the first that does
    not fit (activations only grow with b), so the search is as long as the memory
    allows, not as long as the batch. Interleaving (v > 1) needs m = global_batch /
    (dp b) to be a multiple of pp: those b are the divisors of global_batch / (dp pp)."""
    _check_inputs(model, cluster, layout, constants)
    if micro_batch is not None:
        return predict(model, cluster, replace(layout, micro_batch=check_int(
            "micro_batch", micro_batch)), n_gpus, global_batch, constants)
    n_gpus = check_int("n_gpus", n_gpus)
    B = check_int("global_batch", global_batch)
    first = replace(layout, micro_batch=1, v=1)  # the degrees and the batch, before b and v
    dp = first.check(model, n_gpus, B)
    per = B // dp
    if layout.v > 1 and per % layout.pp:
        raise LayoutError(f"v={layout.v}: interleaving needs the micro-batches per step, "
                          f"global_batch/dp = {per} / b, to be a multiple of pp={layout.pp}")
    best = None
    first_tried = None
    # b divides per / pp exactly when per / b is a multiple of pp
    for b in divisors(per // layout.pp if layout.v > 1 else per):
        e = predict(model, cluster, replace(layout, micro_batch=b), n_gpus, B, constants)
        if first_tried is None:  # what is returned (fits=False) when nothing fits
            first_tried = e
        if not e.fits:
            break
        if best is None or e.step_time.total <= best.step_time.total * (1 + 1e-9):
            best = e
    return best if best is not None else first_tried
