"""Compute: parameters of a GPT stack, FLOPs per token, and model FLOPs utilisation.

Domains: layer counts, widths and sequence lengths are integers >= 1; a parameter
count is a whole number >= 0 (an int, or a float such as 7.5e9); rates and FLOP
counts are finite and >= 0, ``peak_flops`` > 0.
"""

from __future__ import annotations

from ..validate import check_bool, check_float, check_int, check_whole


def transformer_params(n_layers: int, d_model: int, d_ff: int | None = None) -> int:
    """Non-embedding parameters of a GPT-style stack: L (4 d^2 + 2 d d_ff) weights
    (attention qkv + proj, MLP in + out), i.e. 12 L d^2 for d_ff = 4d (Kaplan et
    al., "Scaling Laws for Neural Language Models", 2020, Table 1). Biases and
    LayerNorms are ignored, as there."""
    n_layers, d_model = check_int("n_layers", n_layers), check_int("d_model", d_model)
    d_ff = 4 * d_model if d_ff is None else check_int("d_ff", d_ff)
    return n_layers * (4 * d_model * d_model + 2 * d_model * d_ff)


def flops_per_token(n_params: int, n_layers: int, seq_len: int, d_model: int,
                    training: bool = True) -> float:
    """Matmul FLOPs per token: 6 N + 12 L T d for training (forward + backward).

    6N: each weight does one multiply-add (2 FLOPs) per token forward and two in
    backward (gradients w.r.t. input and weight). 12 L T d: the attention scores
    QK^T and their product with V, 2 x 2 T d per layer forward, times 3. This is
    PaLM's accounting (Chowdhery et al. 2022, Appendix B); Kaplan et al. 2020 count
    one of the two attention matmuls (6 N + 6 L T d). ``training=False``: forward
    only, one third. ``n_params``: non-embedding parameters (``transformer_params``
    or ``GPT.num_params(include_embeddings=False)``).
    """
    n_params = check_whole("n_params", n_params)
    n_layers, seq_len = check_int("n_layers", n_layers), check_int("seq_len", seq_len)
    d_model, training = check_int("d_model", d_model), check_bool("training", training)
    total = 6 * n_params + 12 * n_layers * seq_len * d_model
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
