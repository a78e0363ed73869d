"""Compute: parameters of a GPT stack, FLOPs per token (every paper's count, one
function), model FLOPs utilisation, and training time.

Domains: layer counts, widths and sequence lengths are integers >= 1; a parameter
count is a whole number >= 0 (an int, or a float such as 7.5e9); ``count`` one of
FLOP_COUNTS, ``recompute`` one of RECOMPUTE_KINDS; rates and FLOP counts are finite and >= 0,
``peak_flops`` > 0.
"""

from __future__ import annotations

from ..validate import check_bool, check_choice, check_float, check_int, check_whole
from .kernels import ATTENTION
from .memory import RECOMPUTE_KINDS
from .transformer import LayerShape, layer_gemms, layer_params, op_recomputed


def transformer_params(n_layers: int, d_model: int, d_ff: int | None = None) -> int:
    """Non-embedding parameters of a GPT-style stack: L (4 d^2 + 2 d d_ff) weights
    (attention qkv + proj, MLP in + out), i.e. 12 L d^2 for d_ff = 4d (Kaplan et
    al., "Scaling Laws for Neural Language Models", 2020, Table 1). Biases and
    LayerNorms are ignored, as there."""
    n_layers = check_int("n_layers", n_layers)
    d_model = check_int("d_model", d_model)
    d_ff = 4 * d_model if d_ff is None else check_int("d_ff", d_ff)
    return n_layers * (4 * d_model * d_model + 2 * d_model * d_ff)


# the conventions ``flops_per_token`` knows, and the attention term each counts per layer,
# per token, per unit of context x attention width, in training (forward + backward)
FLOP_COUNTS = ("kaplan", "palm", "megatron")
_ATTENTION = {"kaplan": 6, "palm": 12, "megatron": 12}


def flops_per_token(model, n_layers: int, seq_len: int, d_model: int | None = None, *,
                    vocab_size: int | None = None, count: str = "palm", causal: bool = False,
                    recompute: str = "none", training: bool = True,
                    attention: str = "materialized") -> float:
    """Matmul FLOPs per token of a decoder-only transformer: 6 N + c L T d (+ 6 h V).

    6 N: each weight a token's matmuls use does one multiply-add (2 FLOPs) forward and two
    backward (the gradients of the input and of the weight). c L T d: the attention
    scores, whose cost grows with the context T rather than with the weights. How the
    papers count the two terms is ``count``:

    "kaplan"    6 N + 6 L T d (Kaplan et al., "Scaling Laws for Neural Language Models",
                2020, §2.1, Table 1: forward 2 N + 2 L n_ctx d_attn, one of the two score
                matmuls). ``model``: N, the non-embedding parameters; ``d_model``: d_attn.
    "palm"      6 N + 12 L T d (Chowdhery et al., "PaLM", 2022, Appendix B: 6 N + 12 L H Q T,
                QK^T and the product with V, 2 x 2 T d per layer forward). ``model`` and
                ``d_model`` as for "kaplan" (``transformer_params`` or
                ``GPT.num_params(include_embeddings=False)``; an output layer's weights
                count when they are in N).
    "megatron"  counted over a layer's shape (Megatron-LM's
                ``num_floating_point_operations``, training.py at commit f2e5db4, 2024-07-15;
                Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
                Clusters Using Megatron-LM", SC 2021, §5.1 and Appendix): N = L x the
                weights one token's matmuls pass through (Q, K, V and the output
                projection; the MLP, or the top_k routed and the shared experts: Switch §2,
                Mixtral §2.1 -- not all E; no router, norms or biases), the attention
                12 L T q (q = the query width), and the logits 6 h V. ``model``: a
                LayerShape; ``vocab_size``: V. For a GPT layer 72 h^2 + 12 T h per layer,
                i.e. Narayanan et al.'s 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) / (B s).

    A Mixture of Experts is counted by its active parameters: N of the top_k experts for
    "kaplan" and "palm", an MoE LayerShape for "megatron". (One MoE layer's router and
    capacity-padded experts: ``expert_parallel.moe_flops_per_token``.)

    ``causal``: count only the unmasked half of the s x s scores (what a fused kernel
    computes, as some newer reports count it): the attention term halves.
    ``recompute``: "none" gives model FLOPs, the useful work of MFU (PaLM, §4.1);
    "selective" and "full" give hardware FLOPs, what the GPU executes with activation
    recomputation (Narayanan et al. §5.1 report their teraFLOP/s this way): "full" runs
    every layer's forward again, a third of the weights' and the attention's FLOPs (not
    the logits'); "selective" the attention core's forward again (Korthikanti et al.
    2022, §5), a third of the attention term -- with ``attention="fused"`` (no scores kept)
    "selective" recomputes the norms and the activation function instead (``step.layer_time``,
    ``memory.activation_memory``): no matmul FLOPs; "op" (torchtitan's per-operator policy,
    count="megatron" only) the forward of the matmuls ``transformer.op_recomputed`` names.
    For a GPT layer with "full" that is
    Narayanan et al.'s 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) / (B s).
    ``training=False``: the forward only, one third (and no recomputation).
    """
    count = check_choice("count", count, FLOP_COUNTS)
    n_layers = check_int("n_layers", n_layers)
    seq_len = check_int("seq_len", seq_len)
    causal = check_bool("causal", causal)
    training = check_bool("training", training)
    recompute = check_choice("recompute", recompute, RECOMPUTE_KINDS)
    fused = check_choice("attention", attention, ATTENTION) == "fused"
    if recompute == "op" and count != "megatron":
        raise ValueError(f"recompute='op' needs count='megatron' (a LayerShape): which "
                         f"matmuls it redoes depends on the layer, not on N")
    if recompute != "none" and not training:
        raise ValueError(f"recompute={recompute!r} needs training=True (recomputation "
                         f"repeats a forward for the backward pass)")
    if count == "megatron":
        if not isinstance(model, LayerShape):
            raise ValueError(f"model={model!r} must be a cost.LayerShape for count='megatron'")
        if d_model is not None and check_int("d_model", d_model) != model.d_model:
            raise ValueError(f"d_model={d_model} must be None or the shape's {model.d_model}")
        vocab_size = check_int("vocab_size", vocab_size)
        # the weights one token's matmuls use: attention's, the dense MLP's (or the shared
        # experts'), and its top_k routed experts' -- not all E, not the router
        p = layer_params(model)
        routed = model.top_k * model.matrices * model.d_model * model.expert_d_ff \
            if model.moe else 0
        n = n_layers * (p["attention"] + p["mlp"] + routed)
        d_attn = model.q
        logits = 6 * model.d_model * vocab_size
    else:
        if isinstance(model, LayerShape):
            raise ValueError(f"model={model!r} must be a parameter count N for count={count!r} "
                             f"(a LayerShape is counted by count='megatron')")
        if vocab_size is not None:
            raise ValueError(f"vocab_size={vocab_size!r} must be None for count={count!r}: "
                             f"N counts the output layer's weights if it is to count")
        n = check_whole("model", model)
        d_attn = check_int("d_model", d_model)
        logits = 0
    weights = 6 * n
    attention = _ATTENTION[count] * n_layers * seq_len * d_attn
    if causal:
        attention /= 2
    total = weights + attention + logits
    if recompute == "full":        # every layer's forward again; the logits are not recomputed
        total += (weights + attention) / 3
    elif recompute == "selective" and not fused:  # the attention core's forward again
        total += attention / 3
    elif recompute == "op":         # some of the matmuls' forward again (2 FLOPs a weight)
        share = op_recomputed(model)
        total += 2 * n_layers * sum(share[name] * n * k * c
                                    for name, _, n, k, c in layer_gemms(model, 1))
    return float(total if training else total / 3)


def mfu(tokens_per_second: float, flops_per_token_: float, peak_flops: float) -> float:
    """Model FLOPs utilisation: useful FLOP/s over the hardware's peak (PaLM, §4.1).

    Recomputation (activation checkpointing) does not count as useful, so MFU is
    at most the hardware FLOPs utilisation (HFU)."""
    tokens_per_second = check_float("tokens_per_second", tokens_per_second, 0.0, strict=False)
    flops_per_token_ = check_float("flops_per_token_", flops_per_token_, 0.0, strict=False)
    peak_flops = check_float("peak_flops", peak_flops, 0.0)
    return tokens_per_second * flops_per_token_ / peak_flops


def mfu_from_hfu(hfu: float, model_flops: float, hardware_flops: float) -> float:
    """Model FLOPs utilisation from hardware FLOPs utilisation: HFU counts every FLOP the
    GPU executes, recomputation included (Narayanan et al. 2021, §5.1, report their
    teraFLOP/s this way); MFU counts only the model's (PaLM, Chowdhery et al. 2022, §4.1
    and App. B). With full recomputation a GPT layer executes 4 forwards' worth for the
    model's 3, so MFU ~ 3/4 HFU: Narayanan's 52% on the 1T model is ~39% MFU."""
    hfu = check_float("hfu", hfu, 0.0, high=1.0)
    model_flops = check_float("model_flops", model_flops, 0.0)
    hardware_flops = check_float("hardware_flops", hardware_flops, 0.0)
    if model_flops > hardware_flops:
        raise ValueError(f"model_flops={model_flops:g} must be <= hardware_flops={hardware_flops:g}")
    return hfu * model_flops / hardware_flops


def training_time(total_flops: float, n_gpus: int, peak_flops: float, utilisation: float) -> float:
    """Seconds to execute ``total_flops`` on ``n_gpus`` GPUs each reaching ``utilisation``
    (MFU, or HFU if ``total_flops`` counts recomputation) of ``peak_flops``:
    total_flops / (n_gpus x peak_flops x utilisation).

    Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters
    Using Megatron-LM", SC 2021, §5.1) estimate end-to-end training time this way, as
    8 T P / (n X) with full recomputation (8 = 2 x (1 + 2 + 1) FLOPs per parameter per
    token); with ``total_flops`` = tokens x ``flops_per_token`` (6N + 12 L T d) it is the
    same estimate without recomputation. ``utilisation`` in (0, 1]."""
    total_flops = check_float("total_flops", total_flops, 0.0, strict=False)
    n_gpus = check_int("n_gpus", n_gpus)
    peak_flops = check_float("peak_flops", peak_flops, 0.0)
    utilisation = check_float("utilisation", utilisation, 0.0, high=1.0)
    return total_flops / (n_gpus * peak_flops * utilisation)
