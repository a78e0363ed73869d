"""Memory: ZeRO's model states and traffic, activations (one function: Korthikanti et
al.'s GPT layer, the lab's own, or any LayerShape); "does it fit?" per GPU is ``fit``.

Domains: ``n_params`` a whole number >= 0 (an int, or a float such as 7.5e9); ``dp``
and ``n_gpus`` integers >= 1; ``stage`` one of ZERO_STAGES; bytes per element finite
and >= 0 (``bytes_per_value`` > 0); shapes (``seq_len``, ``micro_batch``, ``d_model``,
``n_heads``, ``n_layers``, ``tp``, ``cp``) integers >= 1, with ``tp`` dividing ``n_heads``;
``layer`` one of LAYERS or a LayerShape, ``recompute`` one of RECOMPUTE (``activation_memory``:
RECOMPUTE_KINDS, "op" for a dense LayerShape), ``attention``
one of ATTENTION; ``sequence_parallel`` and ``dropout`` bools.
"""

from __future__ import annotations

import numbers

from ..validate import check_bool, check_choice, check_float, check_int, check_whole
from .kernels import ATTENTION
from .transformer import LayerShape, layer_gemms, op_recomputed

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
    parallel reduce-scatters, and recomputes the rest (``transformer.op_recomputed``): the
    outputs of the matmuls it keeps -- Q, V, the MLP's first and, with SwiGLU, the down
    projection's, a full-width partial sum on every TP rank before its reduce-scatter --,
    the layer's input, attention's output and statistics and the reduce-scatters'
    outputs; dense LayerShapes only). ``attention``: "materialized" (the scores above) or "fused" (a
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
    rest. Not used with "op", which keeps matmul outputs. Q, K, V (attention runs in 16
    bit), norm inputs and the layer input stay.
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
        # the outputs of the matmuls op keeps, one rank's widths (a row-parallel output is
        # full width there, before its reduce-scatter)
        share = op_recomputed(shape)
        saved = sum(2 * (1 - share[name]) * n for name, _, n, _, _ in layer_gemms(shape, 1, t))
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
