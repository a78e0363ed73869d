"""What the planner plans for: GPUs by preset name or alias, model shapes by name, and the
one set of constants every estimate uses.

GPUs: any key of ``hardware.GPU_PRESETS`` ("A100-SXM4-80GB", "H100-SXM5-80GB", ...) or an
alias of GPU_ALIASES ("A100-80GB" -> "A100-SXM4-80GB", "H100-80GB" -> "H100-SXM5-80GB":
the SXM parts, whose NVLink the big training runs use). Models: a key of MODELS (GPT-3
175B, Narayanan et al.'s Table 1 GPTs "megatron-1.7B" ... "megatron-1T", and every
``cost.MODEL_PRESETS`` entry with its vocabulary), or a dict of the shape keys.
"""

from __future__ import annotations

from ..cost import MODEL_PRESETS
from ..hardware import GPU_PRESETS, LINK_PRESETS, GPUSpec, LinkSpec
from ..validate import check_int

GPU_ALIASES = {
    "A100-80GB": "A100-SXM4-80GB", "A100": "A100-SXM4-80GB", "A100-40GB": "A100-SXM4-40GB",
    "H100-80GB": "H100-SXM5-80GB", "H100": "H100-SXM5-80GB", "H100-PCIe": "H100-PCIe-80GB",
    "H200": "H200-SXM-141GB", "H200-141GB": "H200-SXM-141GB", "V100": "V100-SXM2-32GB",
    "V100-32GB": "V100-SXM2-32GB",
}

# The one set of constants (see CONSTANTS_NOTE). Links are hardware presets; alpha is the
# preset's latency_us, which hardware.py marks as a rough order of magnitude.
CONSTANTS = {
    "matmul_efficiency": 0.65,   # share of bf16 peak a training step's GEMMs reach
    "traffic_factor": 7.0,       # memory-bound bytes moved per activation byte kept
    "dtype": "bf16",             # peak used (fp16 and bf16 peaks are equal on A100/H100)
    "inter_link": "IB-HDR",      # one 200 Gb/s HDR port per GPU (DGX A100 / Selene)
    "gpus_per_node": 8,
}
CONSTANTS_NOTE = (
    "One set for every row and every plan: matmul_efficiency 0.65 of the bf16 dense peak and "
    "traffic_factor 7 (bytes the memory-bound kernels move per activation byte kept) at the "
    "preset's HBM bandwidth; NVLink / InfiniBand at their preset per-direction bandwidths "
    "and latencies. The two kernel constants were chosen once, by hand, so that the 10 rows "
    "of Narayanan et al.'s Table 1 are predicted without bias (they move every row the same "
    "way; a grid over 0.62-0.68 x 4-8 keeps every row within 10% for 0.64-0.66 x 6-8); nothing "
    "is set per row.")


def resolve_gpu(gpu) -> GPUSpec:
    """A GPUSpec from a GPUSpec, a GPU_PRESETS key or a GPU_ALIASES key."""
    if isinstance(gpu, GPUSpec):
        return gpu
    name = GPU_ALIASES.get(gpu, gpu) if isinstance(gpu, str) else gpu
    if not isinstance(name, str) or name not in GPU_PRESETS:
        raise ValueError(f"gpu={gpu!r} must be one of {sorted(GPU_PRESETS)} or an alias in "
                         f"{sorted(GPU_ALIASES)}")
    return GPU_PRESETS[name]


def resolve_link(link, field: str = "inter_link") -> LinkSpec:
    if isinstance(link, LinkSpec):
        return link
    if not isinstance(link, str) or link not in LINK_PRESETS:
        raise ValueError(f"{field}={link!r} must be one of {sorted(LINK_PRESETS)}")
    return LINK_PRESETS[link]


_NARAYANAN = ("Narayanan et al., 'Efficient Large-Scale Language Model Training on GPU "
              "Clusters Using Megatron-LM', SC 2021, Table 1 (shapes as in Megatron-LM's "
              "examples/sc21/run_table_1.sh; vocabulary 51,200, sequence 2048)")
_GPT3 = ("GPT-3 175B: Brown et al., 'Language Models are Few-Shot Learners', 2020, Table 2.1 "
         "(96 layers, d_model 12288, 96 heads, context 2048; GPT-2's BPE vocabulary, 50257)")


def _shape(n_layers, d_model, n_heads, seq_len, vocab_size, source):
    return {"n_layers": n_layers, "d_model": d_model, "n_heads": n_heads, "seq_len": seq_len,
            "vocab_size": vocab_size, "source": source}


MODELS = {
    "175B": _shape(96, 12288, 96, 2048, 50257, _GPT3),
    "gpt3-175B": _shape(96, 12288, 96, 2048, 50257, _GPT3),
    **{f"megatron-{name}": _shape(l, h, a, 2048, 51200, _NARAYANAN) for name, a, h, l in [
        ("1.7B", 24, 2304, 24), ("3.6B", 32, 3072, 30), ("7.5B", 32, 4096, 36),
        ("18B", 48, 6144, 40), ("39B", 64, 8192, 48), ("76B", 80, 10240, 60),
        ("145B", 96, 12288, 80), ("310B", 128, 16384, 96), ("530B", 128, 20480, 105),
        ("1T", 160, 25600, 128)]},
    # cost.MODEL_PRESETS, as GPT layers (4d MLP): LLaMA's SwiGLU / GQA are approximated
    **{name: _shape(p.n_layers, p.d_model, p.n_heads, p.seq_len,
                    50257 if name == "1.3B" else 32000,
                    p.source + " (planned as a GPT layer: 4d MLP, full attention)")
       for name, p in MODEL_PRESETS.items()},
}
_SHAPE_KEYS = ("n_layers", "d_model", "n_heads", "seq_len", "vocab_size")


def resolve_model(model) -> dict:
    """{"name", "n_layers", "d_model", "n_heads", "seq_len", "vocab_size", "source"} from a
    MODELS key or a dict with the shape keys (vocab_size defaults to 51200)."""
    if isinstance(model, str):
        if model not in MODELS:
            raise ValueError(f"model={model!r} must be one of {sorted(MODELS)} or a dict with "
                             f"keys {_SHAPE_KEYS}")
        return {"name": model, **MODELS[model]}
    if not isinstance(model, dict):
        raise ValueError(f"model={model!r} must be a name in MODELS or a dict of {_SHAPE_KEYS}")
    missing = [k for k in _SHAPE_KEYS[:4] if k not in model]
    if missing:
        raise ValueError(f"model={model!r} must have the keys {missing}")
    out = {k: check_int(k, model[k]) for k in _SHAPE_KEYS[:4]}
    out["vocab_size"] = check_int("vocab_size", model.get("vocab_size", 51200))
    out["name"] = str(model.get("name", f"{out['n_layers']}x{out['d_model']}"))
    out["source"] = str(model.get("source", "given shape"))
    return out
