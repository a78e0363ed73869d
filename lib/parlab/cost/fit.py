"""Does it fit? Model presets (ModelPreset, MODEL_PRESETS, each with its source) and a
per-GPU memory plan: ZeRO's model states (``memory.zero_memory``) plus activations
(``memory.activation_memory``) against a GPU's memory, and the largest micro-batch that
fits.

Domains as in ``memory``: ``n_gpus`` an integer >= 1, ``stage`` one of ZERO_STAGES,
``recompute`` one of RECOMPUTE, bytes per element finite and >= 0, ``gpu_memory_gb``
finite and > 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..validate import check_bool, check_choice, check_float, check_int
from .memory import RECOMPUTE, ZERO_STAGE_NAMES, _check_stage, activation_memory, zero_memory
from .transformer import LayerShape


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
