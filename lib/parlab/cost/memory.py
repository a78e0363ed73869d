"""Memory: ZeRO's model states and traffic, activations (one function: Korthikanti et
al.'s GPT layer, the lab's own, or any LayerShape), and "does it fit?" per GPU.

Domains: ``n_params`` a whole number >= 0 (an int, or a float such as 7.5e9); ``dp``
and ``n_gpus`` integers >= 1; ``stage`` one of ZERO_STAGES; bytes per element finite
and >= 0 (``bytes_per_value`` > 0); shapes (``seq_len``, ``micro_batch``, ``d_model``,
``n_heads``, ``n_layers``, ``tp``, ``cp``) integers >= 1, with ``tp`` dividing ``n_heads``;
``layer`` one of LAYERS or a LayerShape, ``recompute`` one of RECOMPUTE (``activation_memory``:
RECOMPUTE_KINDS, "op" for a dense LayerShape), ``attention``
one of ATTENTION; ``sequence_parallel`` and ``dropout`` bools; ``gpu_memory_gb`` finite
and > 0.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ..validate import check_bool, check_choice, check_float, check_int, check_whole
from .kernels import ATTENTION
from .transformer import LayerShape

ZERO_STAGES = (0, 1, 2, 3)
RECOMPUTE = ("none", "selective", "full")
# RECOMPUTE is what a planner searches (Megatron-LM's kinds, ever more recomputed); a layout
# may also name torchtitan's per-operator policy, "op" (``activation_memory``): in time between
# "selective" and "full"; in memory below "selective" without tensor parallelism, above it
# with (it keeps the down projection's output, a full-width partial sum on every TP rank)
RECOMPUTE_KINDS = ("none", "selective", "op", "full")
ZERO_STAGE_NAMES = {0: "plain DP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}
# What model states (``zero_memory``) plus activations (``activation_memory``) predict
MEMORY_COUNTER = (
    "the peak of live tensors, torch.cuda.max_memory_allocated (what Megatron-LM and NeMo "
    "report as 'max allocated'); not the allocator's reserved memory (its cached, "
    "fragmented blocks: typically 5-15% more) nor the device's used memory (nvidia-smi: "
    "reserved + the CUDA context, ~0.5-1 GB). Left out: the logits on the last pipeline "
    "stage (fp32, b s V / tp: counted only without a pipeline), cuBLAS / Transformer "
    "Engine workspaces, NCCL and communication buffers, fragmentation")


def _check_stage(stage) -> int:
    if isinstance(stage, bool) or not isinstance(stage, numbers.Integral) or stage not in ZERO_STAGES:
        raise ValueError(f"stage={stage!r} must be one of {ZERO_STAGES} (0 = plain DP)")
    return int(stage)


def zero_memory(n_params: float, dp: int, stage: int, param_bytes: float = 2,
                grad_bytes: float = 2, optimizer_bytes: float = 12) -> dict:
    """Per-GPU bytes of model states under ZeRO (Rajbhandari et al., "ZeRO: Memory
    Optimizations Toward Training Trillion Parameter Models", SC 2020, §5, Fig. 1).

    Defaults are mixed-precision Adam as in the paper: fp16 parameters (2 B) and
    gradients (2 B), and K = 12 B of optimizer state per parameter (fp32 master
    copy, momentum and variance). ``stage`` 0 is plain data parallelism (everything
    replicated), 1 shards the optimizer states over ``dp`` ranks (P_os), 2 also the
    gradients (P_os+g), 3 also the parameters (P_os+g+p). Activations, buffers and
    fragmentation are not included (see ``activation_memory``).
    Returns {"params", "grads", "optimizer", "total"} in bytes.
    """
    n_params = check_whole("n_params", n_params)
    dp = check_int("dp", dp)
    stage = _check_stage(stage)
    param_bytes = check_float("param_bytes", param_bytes, 0.0, strict=False)
    grad_bytes = check_float("grad_bytes", grad_bytes, 0.0, strict=False)
    optimizer_bytes = check_float("optimizer_bytes", optimizer_bytes, 0.0, strict=False)
    out = {
        "params": n_params * param_bytes / (dp if stage >= 3 else 1),
        "grads": n_params * grad_bytes / (dp if stage >= 2 else 1),
        "optimizer": n_params * optimizer_bytes / (dp if stage >= 1 else 1),
    }
    out["total"] = out["params"] + out["grads"] + out["optimizer"]
    return out


def zero_comm_volume(n_params: float, dp: int, stage: int, grad_bytes: float = 2,
                     param_bytes: float | None = None) -> float:
    """Bytes each rank sends per training step for the model states, ring algorithms.

    Plain DP and ZeRO-1/2 move 2 Psi: one all-reduce of the gradients, or a
    reduce-scatter of gradients plus an all-gather of updated parameters, each
    Psi (dp-1)/dp. ZeRO-3 moves 3 Psi: parameters are all-gathered again in the
    forward and in the backward pass, plus the gradient reduce-scatter (ZeRO
    paper, §7.1 for plain DP, §7.2.1 for P_os+g, §7.2.2 for P_os+g+p).
    Psi = n_params x bytes per element (``param_bytes`` defaults to ``grad_bytes``);
    returns the exact (dp-1)/dp-scaled figure (-> 2 Psi or 3 Psi for large dp).
    """
    n_params = check_whole("n_params", n_params)
    dp = check_int("dp", dp)
    stage = _check_stage(stage)
    grad_bytes = check_float("grad_bytes", grad_bytes, 0.0, strict=False)
    param_bytes = (grad_bytes if param_bytes is None
                   else check_float("param_bytes", param_bytes, 0.0, strict=False))
    scale = (dp - 1) / dp
    grads = n_params * grad_bytes * scale                 # all-reduce = RS + AG of grads
    if stage == 0:
        return 2 * grads
    if stage in (1, 2):
        return grads + n_params * param_bytes * scale     # RS grads + AG params
    return grads + 2 * n_params * param_bytes * scale     # RS grads + AG params twice


LAYERS = ("korthikanti", "lab")  # activation_memory's named layers (or a LayerShape)


def _layer(layer, d_model, n_heads) -> LayerShape | tuple:
    """``layer`` checked, with ``d_model`` and ``n_heads`` (given for a named layer; None or
    equal to the shape's for a LayerShape): the LayerShape, or (name, h, a)."""
    if isinstance(layer, LayerShape):
        for name, given, own in (("d_model", d_model, layer.d_model),
                                 ("n_heads", n_heads, layer.n_heads)):
            if given is not None and check_int(name, given) != own:
                raise ValueError(f"{name}={given} must be None or the layer's {own}")
        return layer
    if not isinstance(layer, str) or layer not in LAYERS:
        raise ValueError(f"layer={layer!r} must be one of {LAYERS} or a cost.LayerShape")
    return layer, check_int("d_model", d_model), check_int("n_heads", n_heads)


def activation_memory(seq_len: int, micro_batch: int, d_model: int | None = None,
                      n_heads: int | None = None, n_layers: int = 1, recompute: str = "none",
                      tp: int = 1, sequence_parallel: bool = False, bytes_per_value: float = 2,
                      layer="korthikanti", attention: str = "materialized", cp: int = 1,
                      gemm_input_bytes: float | None = None) -> float:
    """Activation bytes ``n_layers`` layers keep for backward, per GPU.

    Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
    (MLSys 2023), §4.1-4.2, Eq. (1), (2), (4) and Table 2: the inputs each GEMM and
    operator saves for backward, 16-bit values and 1-byte dropout masks. Per GPT layer
    ``s b h (34 + 5 a s / h)`` bytes, with s = seq_len, b = micro_batch, h = d_model,
    a = n_heads: per token 10 h outside attention and MLP (2 LayerNorm inputs 4h, the qkv
    and fc1 inputs 4h, 2 residual-dropout masks 2h), 24 h inside (Q, K 4h, V 2h, the
    projection's input 2h; GeLU's input 8h, fc2's input 8h) and 5 a s for the scores
    (softmax output 2, its dropout mask 1, dropout output 2). Tensor parallelism splits
    the inside: ``s b h (10 + 24/t + 5 a s / (h t))``; sequence parallelism the rest too:
    ``s b h (34 + 5 a s / h) / t``. ``tp`` must divide the heads.

    ``layer``, the layer counted:
      "korthikanti"  the paper's GPT layer (GeLU 4h MLP, dropout), of width ``d_model`` with
                     ``n_heads`` heads (which need not divide it: GPT-3 XL's 24 do not).
      "lab"          the lab's own layer (``parlab.model`` Block, ``tensor_parallel.TPBlock``:
                     pre-LN, no dropout; give ``bytes_per_value=4``, it trains in fp32), with
                     what the paper leaves out (§4: "we only consider the main
                     contributors") and this small model makes visible: each LayerNorm's mean
                     and 1/std, s b fp32 values twice (over t with sequence parallelism), and
                     the causal mask, s^2 bytes of bool saved by ``masked_fill`` (each rank its
                     own, never split). Measured with saved-tensor hooks, fp32, s=16, b=8,
                     h=32, a=4, per layer: tp=1 297,216 B; tp=2 182,528 (SP 148,736); tp=4
                     125,184 (SP 74,496) -- all exactly (tests/parlab/cost/test_cost_tp.py);
                     "selective" and "full" follow the same accounting, not yet measured.
                     Materialized attention, cp = 1 only.
      a LayerShape   that layer (GPT or Llama-style, GQA, SwiGLU, MoE), the same inventory
                     with its widths: Q and the projection's input q wide, K and V kv wide
                     (grouped-query attention keeps fewer; with fewer KV heads than tp each
                     rank keeps a copy of its head), the MLP's interior 2 f in and 2 f out
                     for GeLU, 6 f for SwiGLU (gate, up and down inputs; Shazeer 2020), f the
                     top_k routed plus the shared experts' widths, and the routed experts'
                     permuted inputs; no dropout, no masks. ``d_model`` and ``n_heads`` may
                     be None (or must agree with it). LLaMA-7B (h 4096, f 11008, no dropout):
                     ``sbh (32.1 + 2as/h)``, 17.2 GB at s = 2048 over 32 layers, not GPT's
                     30.6.

    ``recompute``: "none"; "selective" (recompute what is cheap to redo and large to keep:
    with materialized attention its core, QK^T, softmax, dropout and attention over V --
    the scores' term disappears, §5; with a fused kernel, which keeps no scores, the norms
    and the MLP's activation function, their outputs 2 x 2h and 2 f: Megatron-LM's
    --recompute-modules "layernorm" and "moe_act"/act); "full" (each layer keeps only its
    input, 2 s b h, §5; divided by t with sequence parallelism, which the paper mentions
    and sets aside); "op" (torchtitan's per-operator selective checkpointing, the
    default of its Llama configurations: _apply_ac_to_transformer_block's policy at
    9dec370 saves the output of every other matmul, of attention and of the sequence-
    parallel reduce-scatters, and recomputes the rest; its matmul counter runs on across
    steps, so with Llama's seven matmuls a block saves Q, V, the gate and the down
    projection's output in one step and K, the output projection and the up projection in
    the next; the larger set is counted, with the layer's input, attention's output and
    statistics, and the reduce-scatters' outputs; dense LayerShapes only: an MoE layer's
    grouped GEMMs are not matmuls to that counter). ``attention``: "materialized" (the scores above) or "fused" (a
    FlashAttention kernel keeps no s x s scores, only its output and fp32 softmax
    statistics, 4 a bytes per token; Dao et al. 2022, §3.1). ``cp``: each GPU holds s/cp
    of the sequence, and scores s/cp x s.

    ``bytes_per_value`` (4 for fp32) rescales the values from the paper's 2 bytes;
    dropout masks (1 byte) and fp32 statistics stay what they are. Embeddings and the
    output layer are left out, as in the paper's per-layer count.

    ``gemm_input_bytes``: bytes per value of the inputs kept for the weight-gradient GEMMs
    (qkv and fc1 inputs, the projection's and fc2's / down's, the experts' permuted inputs)
    when Transformer Engine keeps the fp8 copy it cast for the forward GEMM, not the 16-bit
    one (mxfp8: 1.03125 with its scales, ``precision.bytes_per_element``); None: like the
    rest. Not used with "op", which keeps matmul outputs. Q, K, V (attention runs in 16 bit), norm inputs and the layer input stay.
    """
    S = check_int("seq_len", seq_len)
    b = check_int("micro_batch", micro_batch)
    n_layers = check_int("n_layers", n_layers)
    t = check_int("tp", tp)
    cp = check_int("cp", cp)
    recompute = check_choice("recompute", recompute, RECOMPUTE_KINDS)
    sp = check_bool("sequence_parallel", sequence_parallel)
    bytes_per_value = check_float("bytes_per_value", bytes_per_value, 0.0)
    attention = check_choice("attention", attention, ATTENTION)
    shape = _layer(layer, d_model, n_heads)
    if isinstance(shape, LayerShape):
        lab = False
        h = shape.d_model
        a = shape.n_heads
        q = shape.q
        f = shape.d_ff
        kv = max(shape.kv // t, shape.head_dim) * t   # g < tp: a copy of a K/V head per rank
        gelu = shape.mlp == "gelu"
        dropout = shape.dropout
        routed = 0
        if shape.moe:
            f = (shape.top_k + shape.n_shared_experts) * shape.expert_d_ff
            routed = shape.top_k
    else:
        name, h, a = shape
        lab = name == "lab"
        q = h
        kv = h
        f = 4 * h
        gelu = True
        dropout = name != "lab"
        routed = 0
    if a % t:
        raise ValueError(f"tp={t} must divide n_heads={a}")
    if lab and (attention != "materialized" or cp != 1):
        raise ValueError(f"attention={attention!r}, cp={cp}: layer='lab' materializes its "
                         f"scores, on one rank's whole sequence (attention='materialized', cp=1)")
    tokens = b * S / cp
    split = t if sp else 1
    # bytes per token in the paper's terms, 16-bit values; ``fixed``: the part of them that
    # does not rescale with bytes_per_value (1-byte masks, fp32 statistics)
    if recompute == "op" and (lab or not isinstance(shape, LayerShape) or routed
                              or attention != "fused"):
        raise ValueError(f"recompute='op' is modelled for a dense LayerShape with fused "
                         f"attention (torchtitan's Llama blocks), not layer={layer!r}, "
                         f"attention={attention!r}")
    if recompute == "full":
        per_token = 2 * h / split     # the layer's input only
        fixed = 0.0
    elif recompute == "op":
        # the larger of the two alternating sets of saved matmul outputs: Q, V and the MLP's
        # first (gate, or GeLU's fc1) -- and with SwiGLU the down projection's output, a
        # full-width partial sum on every TP rank before its reduce-scatter
        saved = 2 * (q + kv + f) / t + (2 * h if not gelu else 0.0)
        rs = 2 * 2 * h / t if sp and t > 1 else 0.0   # the two reduce-scatters' outputs
        per_token = 2 * h / split + saved + 2 * q / t + 4 * a / t + rs
        fixed = 4 * a / t                             # attention's fp32 statistics
        # gemm_input_bytes does not apply: "op" keeps matmul outputs (16-bit), and the fp8
        # casts of their inputs are recomputed with the rest
    else:
        masks = 2 if dropout else 0               # the two residual-dropout masks
        unsplit = 4 * 2 + masks                   # norm inputs, qkv and fc1 inputs (+ masks)
        inner = 2 * (q + kv) + 2 * kv + 2 * q     # Q, K | V | the projection's input
        inner += (4 if gelu else 6) * f           # GeLU in + fc2 in | gate, up + down in
        inner += 2 * routed * h                   # the routed experts' permuted inputs
        if recompute == "selective" and attention == "fused":
            unsplit -= 4                          # the norms' outputs, recomputed
            inner -= 2 * f                        # the activation's output, recomputed
        per_token = unsplit * h / split + inner / t
        fixed = masks * h / split
        if gemm_input_bytes is not None:          # kept quantized: 1 value, not 2 bytes
            sel_fused = recompute == "selective" and attention == "fused"
            gemm = (0 if sel_fused else 4 * h / split) + (
                2 * q + (0 if sel_fused else 2 * f) + 2 * routed * h) / t
            low = gemm / 2 * check_float("gemm_input_bytes", gemm_input_bytes, 0.0)
            per_token += low - gemm
            fixed += low                          # already in bytes: not rescaled below
        if attention == "materialized" and recompute == "none":
            per_token += (5 if dropout else 2) * a * S / t   # the scores
            fixed += a * S / t if dropout else 0.0           # their dropout mask
        elif attention == "fused":
            per_token += 4 * a / t                # the softmax statistics, fp32
            fixed += 4 * a / t
        if lab:                                   # the LayerNorms' mean and 1/std, fp32
            per_token += 2 * 2 * 4 / split
            fixed += 2 * 2 * 4 / split
    per_layer = tokens * per_token
    fixed = tokens * fixed
    if lab and recompute == "none":               # the causal mask, s x s bools
        per_layer += S * S
        fixed += S * S
    # values rescale by bytes_per_value / 2, masks and fp32 statistics do not; written as a
    # correction so that bytes_per_value=2 returns the paper's expressions bit for bit
    return (per_layer + (bytes_per_value / 2 - 1) * (per_layer - fixed)) * n_layers


# Korthikanti et al. Table 2: (label, recompute, sequence_parallel, expression as printed)
_TABLE2 = (
    ("no parallelism", "none", False, "sbh(34 + 5as/h)"),
    ("tensor parallel (baseline)", "none", False, "sbh(10 + 24/t + 5as/(ht))"),
    ("tensor + sequence parallel", "none", True, "sbh(34/t + 5as/(ht))"),
    ("tensor parallel + selective activation recomputation", "selective", False,
     "sbh(10 + 24/t)"),
    ("tensor parallel + sequence parallel + selective activation recomputation",
     "selective", True, "sbh(34/t)"),
    ("full activation recomputation", "full", False, "sbh(2)"),
)


def activation_table(seq_len: int, micro_batch: int, d_model: int, n_heads: int,
                     tp: int) -> list[dict]:
    """Korthikanti et al.'s Table 2 ("Activations memory, in bytes, per transformer layer
    for different techniques", §5) evaluated at these shapes: one dict per row, in the
    paper's order, with "label", "expression" (as printed there) and "bytes" (per layer,
    16-bit values and 1-byte masks, from ``activation_memory``). The first row has no
    parallelism (t = 1); full recomputation keeps 2 s b h whatever t (the paper does not
    split it)."""
    s = check_int("seq_len", seq_len)
    b = check_int("micro_batch", micro_batch)
    h = check_int("d_model", d_model)
    a = check_int("n_heads", n_heads)
    t = check_int("tp", tp)
    if a % t:
        raise ValueError(f"tp={t} must divide n_heads={a}")
    return [{"label": label, "expression": expr,
             "bytes": activation_memory(s, b, h, a, 1, recompute, 1 if i == 0 else t, sp)}
            for i, (label, recompute, sp, expr) in enumerate(_TABLE2)]


# --- "does it fit?": model presets and a per-GPU memory plan ----------------------------

@dataclass(frozen=True)
class ModelPreset:
    name: str
    n_params: int  # all parameters, embeddings included
    n_layers: int
    d_model: int
    n_heads: int
    seq_len: int  # the context length the model was trained with
    source: str
    n_active_params: int | None = None  # per token (MoE: top-k experts); None = n_params
    # the layer's shape, for its activations: GPT's (GeLU, 4h, dropout) unless given
    mlp: str = "gelu"
    d_ff: int | None = None             # per token: the MLP width (MoE: top-k experts')
    dropout: bool = True
    n_kv_heads: int | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name={self.name!r} must be a non-empty string")
        for field in ("n_params", "n_layers", "d_model", "n_heads", "seq_len"):
            check_int(field, getattr(self, field))
        if not isinstance(self.source, str):
            raise ValueError(f"source={self.source!r} must be a string")
        if self.n_active_params is None:
            object.__setattr__(self, "n_active_params", self.n_params)
        check_int("n_active_params", self.n_active_params, 1, self.n_params)
        check_choice("mlp", self.mlp, ("gelu", "swiglu"))
        check_bool("dropout", self.dropout)
        for field in ("d_ff", "n_kv_heads"):
            if getattr(self, field) is not None:
                check_int(field, getattr(self, field))
        if self.n_kv_heads is not None and self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads}")

    @property
    def layer(self):
        """Its layer for ``activation_memory``: "korthikanti" for GPT's (GeLU 4h MLP, dropout;
        its heads need not divide d_model, GPT-3 XL's do not), else a LayerShape of these
        widths."""
        if (self.mlp, self.d_ff, self.dropout, self.n_kv_heads) == ("gelu", None, True, None):
            return "korthikanti"
        return LayerShape(self.d_model, self.n_heads, self.n_kv_heads, d_ff=self.d_ff,
                          mlp=self.mlp, dropout=self.dropout)


# n_params: exact counts of the released LLaMA checkpoints, which follow from the shapes
# (tests/parlab/cost/test_cost.py recomputes them): per layer 4 d^2 attention (2 d^2 + 2 d d_kv with
# grouped-query attention, 70B) + 3 d d_ff SwiGLU MLP + 2 d RMSNorm; plus untied input and
# output embeddings 2 V d (V = 32000) and a final norm. GPT-3 XL: 12 L d^2 + V d (tied) +
# T d positions, biases and LayerNorms left out (the paper quotes "1.3B").
# GPT-3 XL's heads: Table 2.1 prints n_heads = 24 and d_head = 128, which do not multiply
# to its d_model = 2048 (24 x 128 = 3072); the 1.3B count needs an attention width of 2048,
# so one of the two numbers is off. n_heads here is the table's 24: it only enters
# activation_memory, through the a s^2 attention scores.
# Activations: GPT-3 XL and Switch are GPT/T5 layers (GeLU 4h MLP, dropout), Korthikanti
# et al.'s count as printed (layer "korthikanti"); the LLaMA family has a SwiGLU MLP of
# width d_ff, no dropout and (70B, Mixtral) grouped-query attention, and is counted with
# those widths (a LayerShape). Mixtral's d_ff is its two routed experts' 2 x 14336 per
# token, as a dense MLP (their permuted inputs left out).
MODEL_PRESETS = {p.name: p for p in [
    ModelPreset("1.3B", 1_315_080_192, 24, 2048, 24, 2048,
                "GPT-3 XL: Brown et al., 'Language Models are Few-Shot Learners', 2020, Table 2.1 "
                "(24 heads of size 128 as printed, although 24 x 128 != d_model 2048)"),
    ModelPreset("7B", 6_738_415_616, 32, 4096, 32, 2048,
                "LLaMA-7B: Touvron et al., 'LLaMA: Open and Efficient Foundation Language "
                "Models', 2023, Table 2 (d_ff 11008)", mlp="swiglu", d_ff=11008, dropout=False),
    ModelPreset("13B", 13_015_864_320, 40, 5120, 40, 2048,
                "LLaMA-13B: Touvron et al. 2023, Table 2 (d_ff 13824)", mlp="swiglu", d_ff=13824,
                dropout=False),
    ModelPreset("70B", 68_976_648_192, 80, 8192, 64, 4096,
                "Llama 2 70B: Touvron et al., 'Llama 2: Open Foundation and Fine-Tuned Chat "
                "Models', 2023, Table 1 (grouped-query attention, 8 KV heads; d_ff 28672)",
                mlp="swiglu", d_ff=28672, dropout=False, n_kv_heads=8),
    # MoE: n_params counts every expert (all of them are stored and trained), active
    # the top-k experts a token uses. Mixtral from its shapes by cost.moe_params.
    ModelPreset("mixtral-8x7b", 46_702_792_704, 32, 4096, 32, 32768,
                "Mixtral 8x7B: Jiang et al., 'Mixtral of Experts', 2024, Table 1 (8 SwiGLU "
                "experts of d_ff 14336, top-2, 8 KV heads, vocab 32000; 46.7B total, 12.9B "
                "active)", n_active_params=12_879_925_248, mlp="swiglu", d_ff=2 * 14336,
                dropout=False, n_kv_heads=8),
    # Switch-Base-8: T5-Base (12 + 12 layers, d 768, d_ff 3072, 12 heads, vocab 32128,
    # tied embeddings) with every other FFN a Switch layer of 8 experts, top-1: attention
    # 36 x 4 d^2 (encoder self, decoder self + cross), 12 dense FFNs and 12 MoE FFNs of
    # 8 x 2 d d_ff + d x 8 router, V d, 62 LayerNorm weights, 2 x 32 x 12 relative
    # position biases (tests/parlab/cost/test_cost_ep.py recomputes it).
    ModelPreset("switch-base-8", 619_339_008, 24, 768, 12, 512,
                "Switch-Base-8: Fedus et al., 'Switch Transformers', 2021, §2-§3 (T5-Base "
                "shapes, Raffel et al. 2020; experts every other FFN layer), top-1",
                n_active_params=222_977_280),
]}


def memory_plan(model="7B", n_gpus: int = 4, gpu_memory_gb: float = 80.0, stage: int = 0,
                recompute: str = "none", micro_batch: int = 1, seq_len: int | None = None,
                param_bytes: float = 2, grad_bytes: float = 2, optimizer_bytes: float = 12) -> dict:
    """Per-GPU memory of data-parallel training over ``n_gpus`` GPUs with ZeRO ``stage``:
    model states (``zero_memory``, mixed-precision Adam by default) plus activations
    (``activation_memory``, 16-bit, ``recompute`` "none" / "selective" / "full"), against
    ``gpu_memory_gb`` (decimal GB, as GPUs are marketed).

    Attention is counted materialized: without recomputation each layer keeps its s x s
    scores, as Korthikanti et al. count them (``activation_memory``'s default). The
    planner (``parlab.planner.plan``) assumes a fused kernel instead (FlashAttention: no
    scores kept), so its memory for the same layout is lower: for 7B at s = 2048, 17.2 GB
    of activations per sequence here against 8.6 GB fused (no recomputation). The
    ``verdict`` says which.

    ``model``: a key of MODEL_PRESETS or a ModelPreset. Left out, so "fits" is optimistic:
    temporary buffers (communication buckets; under ZeRO-3 the gathered parameters of
    the layer running), the allocator's fragmentation, the CUDA context (~1 GB), and the
    logits (b x s x vocab). Returns bytes under "params", "grads", "optimizer",
    "activations", "total" and "gpu", with "fits" (bool) and a one-line "verdict".
    """
    if isinstance(model, str) and model in MODEL_PRESETS:
        model = MODEL_PRESETS[model]
    elif not isinstance(model, ModelPreset):
        raise ValueError(f"model={model!r} must be one of {sorted(MODEL_PRESETS)} or a ModelPreset")
    n_gpus = check_int("n_gpus", n_gpus)
    gpu_memory_gb = check_float("gpu_memory_gb", gpu_memory_gb, 0.0)
    stage = _check_stage(stage)
    recompute = check_choice("recompute", recompute, RECOMPUTE)
    micro_batch = check_int("micro_batch", micro_batch)
    seq_len = model.seq_len if seq_len is None else check_int("seq_len", seq_len)
    states = zero_memory(model.n_params, n_gpus, stage, param_bytes, grad_bytes, optimizer_bytes)
    act = activation_memory(seq_len, micro_batch, model.d_model, model.n_heads, model.n_layers,
                            recompute, layer=model.layer)
    plan = {"model": model.name, "n_gpus": n_gpus, "stage": stage, "recompute": recompute,
            "micro_batch": micro_batch, "seq_len": seq_len, "params": states["params"],
            "grads": states["grads"], "optimizer": states["optimizer"], "activations": act,
            "gpu": gpu_memory_gb * 1e9}
    plan["total"] = states["total"] + act
    plan["fits"] = plan["total"] <= plan["gpu"]
    gb = lambda b: f"{b / 1e9:.1f} GB"  # noqa: E731
    margin = (f"fits, {gb(plan['gpu'] - plan['total'])} spare" if plan["fits"]
              else f"does NOT fit, {gb(plan['total'] - plan['gpu'])} short")
    plan["verdict"] = (f"{model.name}, {ZERO_STAGE_NAMES[stage]} on {n_gpus} GPUs, micro-batch "
                       f"{micro_batch} x {seq_len} tokens, recompute={recompute}, "
                       "materialized attention: "
                       f"{gb(states['total'])} model states + {gb(act)} activations = "
                       f"{gb(plan['total'])} of {gb(plan['gpu'])} per GPU: {margin}")
    return plan


def max_micro_batch(model="7B", n_gpus: int = 4, gpu_memory_gb: float = 80.0, stage: int = 0,
                    recompute: str = "none", seq_len: int | None = None, **bytes_kw) -> int:
    """Largest micro-batch per GPU for which ``memory_plan`` fits (0: not even one
    sequence). Activations grow linearly with the micro-batch; model states do not.
    ``bytes_kw``: ``param_bytes``, ``grad_bytes``, ``optimizer_bytes`` of ``memory_plan``."""
    unknown = set(bytes_kw) - {"param_bytes", "grad_bytes", "optimizer_bytes"}
    if unknown:
        raise ValueError(f"{sorted(unknown)}: max_micro_batch takes only param_bytes, "
                         f"grad_bytes and optimizer_bytes as extra arguments")
    one = memory_plan(model, n_gpus, gpu_memory_gb, stage, recompute, 1, seq_len, **bytes_kw)
    spare = one["gpu"] - (one["total"] - one["activations"])
    return max(0, math.floor(spare / one["activations"]))
