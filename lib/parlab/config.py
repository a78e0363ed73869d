"""The reference model's configuration: ``GPTConfig`` (GPT-2's shape by default, dense or
Mixture-of-Experts) and ``llama_config``, its Llama-style variant. Every field is checked
when the config is made: a bad value is a ValueError naming the field.

A config is frozen: ``cfg.d_ff = 0`` raises ``dataclasses.FrozenInstanceError`` (an
AttributeError), so a config cannot drift after it was checked. A changed copy is
``dataclasses.replace(cfg, d_ff=512)``, which checks every field again. A default that
is derived (``d_ff`` = 4 d_model, ``n_kv_heads`` = n_heads) is derived again by
``replace``: ``replace(GPTConfig(), n_heads=8)`` has 8 KV heads, not 4 (which would
silently be grouped-query attention); a value given explicitly is kept."""

from __future__ import annotations

from dataclasses import dataclass

from .validate import check_bool, check_choice, check_float, check_int


class _Derived(int):
    """An int that ``GPTConfig`` derived from other fields (d_ff from d_model, n_kv_heads
    from n_heads) rather than was given. It is an int in every use; the mark only lets
    ``validate`` derive it again when ``dataclasses.replace`` copies it into a config
    whose d_model or n_heads changed (replace passes every stored field back in)."""
    __slots__ = ()

    def __reduce__(self):  # pickles (to the ranks) as itself, marked
        return _Derived, (int(self),)


@dataclass(frozen=True, repr=False)
class GPTConfig:
    vocab_size: int = 64
    seq_len: int = 64        # maximum context length (size of the position table)
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int | None = None  # MLP hidden width; None -> 4 * d_model
    bias: bool = True        # biases in Linear and LayerNorm layers (never in lm_head)
    # The Llama-style variant (llama_config); the defaults are GPT-2's.
    n_kv_heads: int | None = None          # grouped-query attention; None = n_heads
    norm: str = "layernorm"                # or "rmsnorm"
    mlp: str = "gelu"                      # or "swiglu"
    positions: str = "learned"             # or "rope"
    rope_theta: float = 10000.0
    # Mixture of Experts (parlab.moe has the papers): 0 experts = the dense model.
    n_experts: int = 0
    top_k: int = 1                         # experts per token (Switch 1, GShard/Mixtral 2)
    capacity_factor: float | None = None   # None: no capacity, nothing dropped
    aux_loss_coef: float = 0.01            # Switch load-balancing alpha (Switch §2.2)
    z_loss_coef: float = 0.001             # ST-MoE router z-loss (Zoph et al. §3.1)
    moe_layers: tuple | None = None        # which blocks are MoE; None = all
    balancer: str = "aux_loss"             # or "bias": DeepSeek-V3's loss-free balancer
    bias_update_rate: float = 0.001        # DeepSeek-V3's gamma
    renormalize: bool = False              # True: Mixtral's gates; False: Switch's
    n_shared_experts: int = 0              # DeepSeekMoE §3.2: experts every token goes through
    router: str = "top_k"                  # or "expert_choice" (Zhou et al. 2022, §3)
    expert_gemm: str = "loop"              # or "padded": one batched GEMM (MegaBlocks §2.2-3)

    def __post_init__(self):
        self.validate()

    def validate(self) -> "GPTConfig":
        """Check every field (a ValueError naming the first broken one) and fill in the
        derived defaults; returns the config. Idempotent, so a run's ``check`` calls it
        again: a config made some other way (``object.__setattr__``, unpickled from an
        older version) is caught before any rank starts, not inside one."""
        for name in ("vocab_size", "seq_len", "d_model", "n_heads", "n_layers"):
            check_int(name, getattr(self, name))
        # The derived defaults are written past the frozen guard, once the sizes they
        # are derived from are known to be integers (None * 4 would be a TypeError).
        if self.d_ff is None or isinstance(self.d_ff, _Derived):
            object.__setattr__(self, "d_ff", _Derived(4 * self.d_model))
        if self.n_kv_heads is None or isinstance(self.n_kv_heads, _Derived):
            object.__setattr__(self, "n_kv_heads", _Derived(self.n_heads))
        check_int("d_ff", self.d_ff)
        check_int("n_kv_heads", self.n_kv_heads, 1, self.n_heads)
        check_bool("bias", self.bias)
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"n_heads={self.n_heads} must divide d_model={self.d_model}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads} "
                             "(each KV head serves a whole group of query heads)")
        check_choice("norm", self.norm, ("layernorm", "rmsnorm"))
        check_choice("mlp", self.mlp, ("gelu", "swiglu"))
        check_choice("positions", self.positions, ("learned", "rope"))
        check_float("rope_theta", self.rope_theta)
        if self.positions == "rope" and self.head_dim % 2:
            raise ValueError(f"positions='rope' rotates pairs of channels: head_dim="
                             f"{self.head_dim} (d_model / n_heads) must be even")
        self._check_moe()
        return self

    def _check_moe(self):
        check_int("n_experts", self.n_experts, 0)
        check_int("top_k", self.top_k, 1, max(self.n_experts, 1))
        if self.capacity_factor is not None:
            check_float("capacity_factor", self.capacity_factor)
        check_float("aux_loss_coef", self.aux_loss_coef, strict=False)
        check_float("z_loss_coef", self.z_loss_coef, strict=False)
        check_choice("balancer", self.balancer, ("aux_loss", "bias"))
        check_float("bias_update_rate", self.bias_update_rate, strict=False)
        check_bool("renormalize", self.renormalize)
        check_int("n_shared_experts", self.n_shared_experts, 0)
        check_choice("router", self.router, ("top_k", "expert_choice"))
        check_choice("expert_gemm", self.expert_gemm, ("loop", "padded"))
        if self.router == "expert_choice" and self.n_experts and self.capacity_factor is None:
            raise ValueError("router='expert_choice' needs capacity_factor (the paper's c: "
                             "each expert takes n c / E tokens)")
        if self.moe_layers is not None:
            if not isinstance(self.moe_layers, (tuple, list)):
                raise ValueError(f"moe_layers={self.moe_layers!r} must be None or a tuple "
                                 "of block indices")
            # A tuple (a list is accepted and normalised), so the config stays hashable.
            object.__setattr__(self, "moe_layers", tuple(
                check_int("moe_layers", i, 0, self.n_layers - 1) for i in self.moe_layers))
            if len(set(self.moe_layers)) != len(self.moe_layers):
                raise ValueError(f"moe_layers={self.moe_layers} lists a block twice")

    def __repr__(self) -> str:
        """The shape, and only the fields that differ from their defaults."""
        shape = ("vocab_size", "seq_len", "d_model", "n_heads", "n_layers")
        derived = {"d_ff": 4 * self.d_model, "n_kv_heads": self.n_heads}
        rest = [f for f in self.__dataclass_fields__ if f not in shape
                and getattr(self, f) != derived.get(f, self.__dataclass_fields__[f].default)]
        return "GPTConfig(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in (*shape, *rest)) + ")"

    def is_moe_layer(self, i: int) -> bool:
        """Whether block ``i`` has a MoE layer instead of the MLP."""
        return self.n_experts > 0 and (self.moe_layers is None or i in self.moe_layers)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def llama_config(**fields) -> GPTConfig:
    """A Llama-style GPTConfig: RMSNorm, SwiGLU with a d_ff of about 8/3 d (rounded up to a
    multiple of 16), rotary positions, no biases, two query heads per KV head (GQA);
    ``fields`` override any of it (``n_kv_heads=1`` is multi-query attention)."""
    # The defaults below are computed from these two: check them first, so that
    # d_model=None is a ValueError naming d_model, not a TypeError in the arithmetic.
    d = check_int("d_model", fields.get("d_model", 64))
    heads = check_int("n_heads", fields.get("n_heads", 4))
    defaults = dict(norm="rmsnorm", mlp="swiglu", positions="rope", bias=False,
                    d_ff=-(-8 * d // 3 // 16) * 16, n_kv_heads=max(1, heads // 2))
    return GPTConfig(**{**defaults, **fields})
