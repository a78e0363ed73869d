"""What the planner plans for: GPUs by preset name or alias, clusters (a GPU and its node),
and model shapes by name -- GPT (GPT-3, Narayanan et al.'s Table 1), Llama-3-style (GQA,
SwiGLU, RoPE, no biases or dropout) and Mixture-of-Experts (Mixtral-style top-2 of 8,
DeepSeek-style fine-grained experts with shared ones, Qwen3's 128 of top-8).

GPUs: any key of ``hardware.GPU_PRESETS`` or an alias of GPU_ALIASES ("A100-80GB" ->
"A100-SXM4-80GB": the SXM parts, whose NVLink the big training runs use). A cluster's node
comes from ``hardware.node_for`` (A100: 8 GPUs, 8 HDR cards; H100/H200: 8, 8 NDR; GB200: a
72-GPU NVLink rack), each figure overridable.
"""

from __future__ import annotations

from .. import cost
from ..hardware import GPU_PRESETS, LINK_PRESETS, NODE_PRESETS, GPUSpec, LinkSpec, node_for
from ..validate import check_int
from .spec import Cluster, ModelSpec

GPU_ALIASES = {
    "A100-80GB": "A100-SXM4-80GB", "A100": "A100-SXM4-80GB", "A100-40GB": "A100-SXM4-40GB",
    "H100-80GB": "H100-SXM5-80GB", "H100": "H100-SXM5-80GB", "H100-PCIe": "H100-PCIe-80GB",
    "H200": "H200-SXM-141GB", "H800": "H800-SXM5-80GB", "H800-80GB": "H800-SXM5-80GB", "H200-141GB": "H200-SXM-141GB", "V100": "V100-SXM2-32GB",
    "V100-32GB": "V100-SXM2-32GB",
}


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


def cluster_for(gpu, gpus_per_node=None, nics_per_node=None, inter_link=None,
                nvlink_domain=None, node=None) -> Cluster:
    """A Cluster of ``gpu`` in its usual node (or ``node``, a NODE_PRESETS key), with any of
    its figures replaced. Changing gpus_per_node keeps the cards per GPU, and the NVLink
    domain a node (unless the node's fabric spans more, as in an NVL72 rack)."""
    spec = resolve_gpu(gpu)
    if node is not None and node not in NODE_PRESETS:
        raise ValueError(f"node={node!r} must be one of {sorted(NODE_PRESETS)}")
    base = NODE_PRESETS[node] if node is not None else node_for(spec)
    gpn = base.gpus_per_node if gpus_per_node is None else check_int("gpus_per_node", gpus_per_node)
    nics = (max(1, gpn * base.nics_per_node // base.gpus_per_node) if nics_per_node is None
            else check_int("nics_per_node", nics_per_node))
    rack = base.nvlink_domain > base.gpus_per_node and gpus_per_node is None
    domain = (base.nvlink_domain if rack else gpn) if nvlink_domain is None else \
        check_int("nvlink_domain", nvlink_domain)
    return Cluster(spec, resolve_link(spec.link, "gpu link"),
                   resolve_link(base.inter_link if inter_link is None else inter_link),
                   gpn, nics, domain)


_NARAYANAN = ("Narayanan et al., 'Efficient Large-Scale Language Model Training on GPU "
              "Clusters Using Megatron-LM', SC 2021, Table 1 (shapes as in Megatron-LM's "
              "examples/sc21/run_table_1.sh; vocabulary 51,200, sequence 2048)")
_GPT3 = ("GPT-3 175B: Brown et al., 'Language Models are Few-Shot Learners', 2020, Table 2.1 "
         "(96 layers, d_model 12288, 96 heads, context 2048; GPT-2's BPE vocabulary, 50257)")
_LLAMA3 = ("Llama 3: Dubey et al., 'The Llama 3 Herd of Models', 2024, Table 3 (GQA with 8 KV "
           "heads, SwiGLU, RoPE, vocabulary 128,000 -- 128,256 in the released tokenizer)")
_MIXTRAL = "Mixtral: Jiang et al., 'Mixtral of Experts', 2024, Table 1 (8 experts, top-2, GQA)"
_DEEPSEEK = ("DeepSeekMoE 16B: Dai et al., 'DeepSeekMoE', 2024, §5.1.2 (64 fine-grained "
             "experts of a quarter FFN, top-6, 2 shared; the width 1408 from its released "
             "config.json; its first layer dense, here all MoE)")
_QWEN3 = ("Qwen3-235B-A22B: its Megatron-LM config in yanring/Megatron-MoE-ModelZoo "
          "model_configs/benchmarking/Qwen3-235B-A22B.yaml (94 layers, 64 heads of 128, 4 KV "
          "heads, 128 experts of 1536, top-8)")


def gpt(name, n_layers, d_model, n_heads, seq_len, vocab_size, source, **kw) -> ModelSpec:
    """A GPT-style model: GeLU MLP of 4 d_model, LayerNorm, biases, dropout, learned
    positions, tied embeddings (Radford et al. 2019; GPT-3; Megatron-LM)."""
    return ModelSpec(name, n_layers, seq_len, vocab_size, cost.LayerShape(d_model, n_heads, **kw),
                     source=source)


def llama(name, n_layers, d_model, n_heads, n_kv_heads, d_ff, seq_len, vocab_size, source,
          **kw) -> ModelSpec:
    """A Llama-style model: SwiGLU, RMSNorm, RoPE, grouped-query attention, no biases or
    dropout, untied embeddings (Touvron et al. 2023; Dubey et al. 2024); ``kw``: MoE fields."""
    shape = cost.LayerShape(d_model, n_heads, n_kv_heads, kw.pop("head_dim", None), d_ff,
                            "swiglu", biases=False, dropout=False, rope=True, norm="rmsnorm",
                            **kw)
    return ModelSpec(name, n_layers, seq_len, vocab_size, shape, tied_embeddings=False,
                     learned_positions=False, source=source)


MODELS = {m.name: m for m in [
    gpt("175B", 96, 12288, 96, 2048, 50257, _GPT3),
    gpt("gpt3-175B", 96, 12288, 96, 2048, 50257, _GPT3),
    *[gpt(f"megatron-{name}", l, h, a, 2048, 51200, _NARAYANAN) for name, a, h, l in [
        ("1.7B", 24, 2304, 24), ("3.6B", 32, 3072, 30), ("7.5B", 32, 4096, 36),
        ("18B", 48, 6144, 40), ("39B", 64, 8192, 48), ("76B", 80, 10240, 60),
        ("145B", 96, 12288, 80), ("310B", 128, 16384, 96), ("530B", 128, 20480, 105),
        ("1T", 160, 25600, 128)]],
    # GPT-3 XL: Table 2.1's 24 heads x 128 do not make its d_model 2048; 16 heads of 128 do
    gpt("1.3B", 24, 2048, 16, 2048, 50257, cost.MODEL_PRESETS["1.3B"].source
        + "; planned with 16 heads of 128"),
    llama("7B", 32, 4096, 32, 32, 11008, 2048, 32000, cost.MODEL_PRESETS["7B"].source),
    llama("13B", 40, 5120, 40, 40, 13824, 2048, 32000, cost.MODEL_PRESETS["13B"].source),
    llama("70B", 80, 8192, 64, 8, 28672, 4096, 32000, cost.MODEL_PRESETS["70B"].source),
    llama("llama3-8B", 32, 4096, 32, 8, 14336, 8192, 128256, _LLAMA3),
    llama("llama3-70B", 80, 8192, 64, 8, 28672, 8192, 128256, _LLAMA3),
    llama("llama3-405B", 126, 16384, 128, 8, 53248, 8192, 128256, _LLAMA3),
    llama("mixtral-8x7B", 32, 4096, 32, 8, 14336, 4096, 32000, _MIXTRAL, n_experts=8, top_k=2),
    llama("mixtral-8x22B", 56, 6144, 48, 8, 16384, 4096, 32768, _MIXTRAL, n_experts=8, top_k=2),
    llama("deepseekmoe-16B", 28, 2048, 16, 16, 10944, 4096, 102400, _DEEPSEEK, n_experts=64,
          top_k=6, expert_d_ff=1408, n_shared_experts=2),
    llama("qwen3-235B-A22B", 94, 4096, 64, 4, 12288, 4096, 151936, _QWEN3, head_dim=128,
          n_experts=128, top_k=8, expert_d_ff=1536),
]}


def resolve_model(model) -> ModelSpec:
    """A ModelSpec from a ModelSpec, a MODELS key, or a dict with n_layers, d_model, n_heads,
    seq_len (and vocab_size, default 51200; a GPT layer)."""
    if isinstance(model, ModelSpec):
        return model
    if isinstance(model, str):
        if model not in MODELS:
            raise ValueError(f"model={model!r} must be one of {sorted(MODELS)} or a dict with "
                             "keys n_layers, d_model, n_heads, seq_len")
        return MODELS[model]
    keys = ("n_layers", "d_model", "n_heads", "seq_len")
    if not isinstance(model, dict):
        raise ValueError(f"model={model!r} must be a name in MODELS, a ModelSpec or a dict of {keys}")
    missing = [k for k in keys if k not in model]
    if missing:
        raise ValueError(f"model={model!r} must have the keys {missing}")
    # a key such as n_kv_heads would otherwise be dropped without a word: the dict makes a
    # GPT layer; other shapes are ModelSpecs (presets.llama, or ModelSpec(shape=...))
    unknown = sorted(set(model) - set(keys) - {"vocab_size", "name", "source"})
    if unknown:
        raise ValueError(f"model: {unknown} not understood; a model dict has {keys}, "
                         "vocab_size, name and source (other shapes: a ModelSpec)")
    return gpt(str(model.get("name", f"{model['n_layers']}x{model['d_model']}")),
               *(check_int(k, model[k]) for k in ("n_layers", "d_model", "n_heads", "seq_len")),
               check_int("vocab_size", model.get("vocab_size", 51200)),
               str(model.get("source", "given shape")))
