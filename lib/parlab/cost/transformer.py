"""One decoder layer of today's transformers, counted: parameters, and the GEMMs and
elementwise operators one GPU runs for it -- for GPT (GeLU MLP, LayerNorm, biases, dropout)
and Llama-style layers (SwiGLU, RMSNorm, grouped-query attention, RoPE), dense or
Mixture-of-Experts. The FLOPs per token of a stack of them is ``compute.flops_per_token``
(count="megatron"), the activations they keep ``memory.activation_memory`` (layer=a
LayerShape).

A ``LayerShape`` holds the widths: h = d_model, a query heads of d_head (q = a d_head, which
is h except in models such as Qwen3), g key/value heads (grouped-query attention, Ainslie
et al. 2023: kv = g d_head), the MLP width f, and for MoE E experts of width f_e of which
each token uses top_k (plus shared experts always on, DeepSeekMoE, Dai et al. 2024, §3.2).

Parameters per layer: attention h (q + 2 kv) + q h (Q, K, V, output projection); MLP 2 h f
(GeLU) or 3 h f (SwiGLU: gate, up, down; Shazeer 2020); MoE E such experts + the router
h E; norms, and biases where the model has them. A GPT layer (biases, 2 LayerNorms,
f = 4h): 12 h^2 + 13 h (Narayanan et al. 2021, §5.1, Eq. 2).

Domains: widths, heads and counts integers >= 1 (``n_experts`` >= 0, 0 = dense); g divides
a; top_k <= E; tp divides the heads; ``mlp`` in MLPS.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..validate import check_bool, check_choice, check_int
from .kernels import EAGER_OPS

MLPS = ("gelu", "swiglu")
NORMS = ("layernorm", "rmsnorm")


@dataclass(frozen=True)
class LayerShape:
    d_model: int
    n_heads: int
    n_kv_heads: int | None = None   # None: n_heads (multi-head attention)
    head_dim: int | None = None     # None: d_model // n_heads
    d_ff: int | None = None         # None: 4 d_model (GeLU) or the MoE expert width
    mlp: str = "gelu"
    n_experts: int = 0              # 0: a dense MLP
    top_k: int = 1
    expert_d_ff: int | None = None  # None: d_ff
    n_shared_experts: int = 0
    biases: bool = True             # GPT's linear and LayerNorm biases (Llama has none)
    dropout: bool = True            # GPT-3 / Megatron's dropout (Llama and most 2023+ runs: none)
    rope: bool = False              # rotary embeddings on q and k (Llama; GPT learns positions)
    norm: str = "layernorm"         # GPT's LayerNorm or Llama's RMSNorm (NORMS)

    def __post_init__(self):
        h = check_int("d_model", self.d_model)
        a = check_int("n_heads", self.n_heads)
        g = a if self.n_kv_heads is None else check_int("n_kv_heads", self.n_kv_heads)
        if a % g:
            raise ValueError(f"n_kv_heads={g} must divide n_heads={a}")
        if self.head_dim is None and h % a:
            raise ValueError(f"n_heads={a} must divide d_model={h} (or give head_dim)")
        d = h // a if self.head_dim is None else check_int("head_dim", self.head_dim)
        mlp = check_choice("mlp", self.mlp, MLPS)
        check_choice("norm", self.norm, NORMS)
        f = 4 * h if self.d_ff is None else check_int("d_ff", self.d_ff)
        e = check_int("n_experts", self.n_experts, 0)
        k = check_int("top_k", self.top_k, 1, max(e, 1))
        fe = f if self.expert_d_ff is None else check_int("expert_d_ff", self.expert_d_ff)
        check_int("n_shared_experts", self.n_shared_experts, 0)
        for flag in ("biases", "dropout", "rope"):
            check_bool(flag, getattr(self, flag))
        for name, value in (("n_kv_heads", g), ("head_dim", d), ("d_ff", f), ("mlp", mlp),
                            ("top_k", k), ("expert_d_ff", fe)):
            object.__setattr__(self, name, value)

    @property
    def q(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def matrices(self) -> int:
        """Weight matrices of one MLP: 2 (GeLU: in, out) or 3 (SwiGLU: gate, up, down)."""
        return 3 if self.mlp == "swiglu" else 2

    @property
    def moe(self) -> bool:
        return self.n_experts > 0


def check_shape(shape) -> LayerShape:
    """``shape`` if it is a LayerShape, else a ValueError naming it."""
    if not isinstance(shape, LayerShape):
        raise ValueError(f"shape={shape!r} must be a cost.LayerShape")
    return shape


def layer_params(shape: LayerShape) -> dict:
    """Parameters of one layer: {"attention", "mlp" (dense or shared experts), "experts"
    (all E), "router", "other" (norms, biases), "total", "dense" (all but the experts)}."""
    s = check_shape(shape)
    h = s.d_model
    q = s.q
    kv = s.kv
    m = s.matrices
    attention = h * (q + 2 * kv) + q * h
    dense_f = s.d_ff if not s.moe else s.n_shared_experts * s.expert_d_ff
    mlp = m * h * dense_f
    experts = s.n_experts * m * h * s.expert_d_ff
    router = h * s.n_experts
    # GPT: qkv and proj biases (q + 2 kv + h), MLP biases (f + h), 2 LayerNorms (2 x 2h);
    # Llama: 2 RMSNorm weights
    other = (q + 2 * kv + h + dense_f + h + 4 * h) if s.biases else 2 * h
    dense = attention + mlp + router + other
    return {"attention": attention, "mlp": mlp, "experts": experts, "router": router,
            "other": other, "dense": dense, "total": dense + experts}


def embedding_params(vocab_size: int, d_model: int, seq_len: int = 0,
                     tied: bool = True) -> int:
    """Embedding parameters: V h for the input table (and V h more for an untied output
    layer), plus ``seq_len`` x h learned positions (GPT; 0 with RoPE)."""
    V = check_int("vocab_size", vocab_size)
    h = check_int("d_model", d_model)
    return V * h * (1 if check_bool("tied", tied) else 2) + check_int("seq_len", seq_len, 0) * h


def layer_gemms(shape: LayerShape, tokens: int, tp: int = 1, ep: int = 1,
                capacity_factor: float = 1.0) -> list[tuple]:
    """The GEMMs of one layer's forward on one GPU of a TP group of ``tp`` (and, for MoE,
    an expert-parallel group of ``ep``), as (name, m, n, k, count): ``tokens`` rows (b s /
    cp) through Q/K/V, the output projection and the dense MLP, each split over tp
    (Megatron's column- then row-parallel pair). MoE (experts whole on a rank, the MoE input
    sequence-sharded over tp): the router, and E/ep local experts each seeing tokens/tp x
    ep x top_k / E routed rows (x ``capacity_factor`` when capacity buffers are padded)."""
    s = check_shape(shape)
    T = check_int("tokens", tokens)
    t = check_int("tp", tp)
    ep = check_int("ep", ep)
    if s.n_heads % t or s.n_kv_heads % t and t % s.n_kv_heads:
        raise ValueError(f"tp={t} must divide n_heads={s.n_heads} (and n_kv_heads="
                         f"{s.n_kv_heads}, or be a multiple of it)")
    h = s.d_model
    q = s.q
    kv = s.kv
    kv_local = max(kv // t, s.head_dim)  # g < tp: each rank keeps a copy of its K/V head
    out = [("qkv", T, q // t + 2 * kv_local, h, 1), ("proj", T, h, q // t, 1)]
    m = s.matrices
    dense_f = s.d_ff if not s.moe else s.n_shared_experts * s.expert_d_ff
    if dense_f:
        out += [("fc1", T, (m - 1) * dense_f // t, h, 1), ("fc2", T, h, dense_f // t, 1)]
    if s.moe:
        if s.n_experts % ep:
            raise ValueError(f"ep={ep} must divide n_experts={s.n_experts}")
        local = max(1, T // t)
        rows = max(1, round(local * ep * s.top_k * capacity_factor / s.n_experts))
        count = s.n_experts // ep
        out += [("router", local, s.n_experts, h, 1),
                ("expert_fc1", rows, (m - 1) * s.expert_d_ff, h, count),
                ("expert_fc2", rows, h, s.expert_d_ff, count)]
    return out


def op_recomputed(shape: LayerShape) -> dict:
    """torchtitan's per-operator selective checkpointing ("op", ``memory.RECOMPUTE_KINDS``)
    as shares of ``layer_gemms``' forward GEMMs recomputed in backward. Its policy
    (_apply_ac_to_transformer_block at 9dec370) counts a block's matmuls afresh in each
    forward and saves the odd-numbered ones: of Q, K, V, the output projection and the MLP's
    it recomputes K, the projection and the second MLP matmul (SwiGLU's up projection,
    GeLU's fc2) -- for Llama 3 8B 36.5% of the forward's matmul FLOPs. Attention's output is
    saved (not recomputed); every elementwise operator is. Dense layers only: an MoE
    layer's grouped GEMMs are not matmuls to that counter."""
    s = check_shape(shape)
    if s.moe:
        raise ValueError(f"shape={s!r}: recompute='op' is modelled for dense layers only")
    swiglu = s.mlp == "swiglu"
    return {"qkv": s.kv / (s.q + 2 * s.kv), "proj": 1.0,
            "fc1": 0.5 if swiglu else 0.0, "fc2": 0.0 if swiglu else 1.0}


def layer_elementwise(shape: LayerShape, tokens: int, tp: int = 1,
                      sequence_parallel: bool = False, eager: bool = False) -> list[tuple]:
    """The memory-bound operators of one layer's forward on one GPU as (ELEMENTWISE op,
    elements): the h-wide ones (norms, residual adds) on every TP rank's full tokens unless
    ``sequence_parallel`` shards them (Korthikanti et al. §4.2.2), the rest split over tp;
    rotary embeddings on q and k where the shape has them. ``eager``: RMSNorm, RoPE and
    SwiGLU as eager PyTorch runs them, an op at a time (``kernels.EAGER_OPS``). Attention's
    scores are not here (``kernels.attention_time``)."""
    s = check_shape(shape)
    T = check_int("tokens", tokens)
    t = check_int("tp", tp)
    hw = T * s.d_model / (t if check_bool("sequence_parallel", sequence_parallel) else 1)
    swap = EAGER_OPS if check_bool("eager", eager) else {}  # (LayerNorm: one kernel either way)
    residual = "bias_dropout_add" if s.dropout else "residual_add"
    act = swap.get("swiglu", "swiglu") if s.mlp == "swiglu" else "bias_gelu"
    norm = swap.get(s.norm, "norm")
    f_tokens = T * s.d_ff / t if not s.moe else \
        T / t * (s.top_k * s.expert_d_ff + s.n_shared_experts * s.expert_d_ff)
    out = [(norm, hw), (residual, hw), (norm, hw), (residual, hw), (act, f_tokens)]
    if s.rope:
        out.append((swap.get("rope", "rope"), T * (s.q + s.kv) / t))
    if s.moe:
        out.append(("moe_permute", T / t * s.top_k * s.d_model))
    return out


def logits_gemm(tokens: int, d_model: int, vocab_size: int, tp: int = 1) -> tuple:
    """The output layer's forward GEMM on one GPU as (name, m, n, k, count): tokens x h
    against this rank's V / tp vocabulary columns (Megatron's vocab-parallel output)."""
    T = check_int("tokens", tokens)
    h = check_int("d_model", d_model)
    V = check_int("vocab_size", vocab_size)
    t = check_int("tp", tp)
    return ("logits", T, -(-V // t), h, 1)
