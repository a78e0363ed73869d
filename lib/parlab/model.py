"""A tiny GPT: the single-device reference for every parallel strategy in the lab.

Data, tensor, pipeline and expert parallelism and ZeRO are all checked against
this file: same loss, same gradients, same parameters after a few AdamW steps
(fp32).  Hence three design rules:

* Deterministic initialisation that does not depend on the global RNG nor on how
  the model is later cut up: `init_tensor(name, ...)` returns the full initial
  value of a parameter from (seed, name, shape) alone, so a pipeline stage that
  builds only blocks 2..3, or a tensor-parallel rank that keeps a slice of a
  weight, gets exactly the reference numbers.
* Stable, addressable names: wte, wpe, blocks.{i}.{ln1,attn.qkv,attn.proj,ln2,
  mlp.fc1,mlp.fc2}, ln_f, lm_head; a MoE block (``GPTConfig(n_experts=...)``, layer
  in ``parlab.moe``) has blocks.{i}.moe.router and blocks.{i}.moe.experts.{e}.{fc1,fc2}
  in place of its mlp.
* Composable pieces: embed(idx) -> blocks -> head(x) -> loss_fn, which is what
  pipeline stages run one part of.

Architecture: GPT-2 style pre-LayerNorm transformer (Radford et al. 2019), with
learned positions, GELU MLP and no dropout anywhere.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .moe import MoE, moe_layers
from .validate import check_bool, check_choice, check_float, check_int


@dataclass
class GPTConfig:
    vocab_size: int = 64
    seq_len: int = 64        # maximum context length (size of the position table)
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int | None = None  # MLP hidden width; None -> 4 * d_model
    bias: bool = True        # biases in Linear and LayerNorm layers (never in lm_head)
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

    def __post_init__(self):
        if self.d_ff is None:
            self.d_ff = 4 * self.d_model
        for name in ("vocab_size", "seq_len", "d_model", "n_heads", "n_layers", "d_ff"):
            check_int(name, getattr(self, name))
        check_bool("bias", self.bias)
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"n_heads={self.n_heads} must divide d_model={self.d_model}")
        self._check_moe()

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
        if self.moe_layers is not None:
            if not isinstance(self.moe_layers, (tuple, list)):
                raise ValueError(f"moe_layers={self.moe_layers!r} must be None or a tuple "
                                 "of block indices")
            self.moe_layers = tuple(check_int("moe_layers", i, 0, self.n_layers - 1)
                                    for i in self.moe_layers)
            if len(set(self.moe_layers)) != len(self.moe_layers):
                raise ValueError(f"moe_layers={self.moe_layers} lists a block twice")

    def is_moe_layer(self, i: int) -> bool:
        """Whether block ``i`` has a MoE layer instead of the MLP."""
        return self.n_experts > 0 and (self.moe_layers is None or i in self.moe_layers)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


# ----------------------------------------------------------------------------- init

def init_tensor(name: str, shape, seed: int, n_layers: int) -> torch.Tensor:
    """Full initial value (fp32, CPU) of the parameter called `name` (as in
    `GPT.named_parameters()`), from (seed, name, shape) only -- GPT-2 rules
    (Radford et al. 2019, §2.3):

    * LayerNorm: weight 1, bias 0;  other biases: 0;
    * residual output projections (attn.proj.weight, mlp.fc2.weight):
      N(0, 0.02 / sqrt(2 * n_layers)), since 2 * n_layers of them add up on
      the residual stream;
    * every other Linear / Embedding weight: N(0, 0.02).
    """
    shape = tuple(shape)
    module, _, kind = name.rpartition(".")
    if module.rpartition(".")[2].startswith("ln"):  # ln1, ln2, ln_f
        return torch.ones(shape) if kind == "weight" else torch.zeros(shape)
    if kind == "bias":
        return torch.zeros(shape)
    if kind != "weight":
        raise ValueError(f"init_tensor: don't know how to initialise parameter {name!r}")
    std = 0.02
    if name.endswith(("attn.proj.weight", "mlp.fc2.weight")) or (
            ".moe.experts." in name and name.endswith(".fc2.weight")):  # an expert's fc2
        std = 0.02 / math.sqrt(2 * n_layers)
    # A private generator seeded from a stable hash (Python's hash() is salted
    # per process): same numbers in every process, whatever the global RNG.
    g = torch.Generator().manual_seed(zlib.crc32(f"{seed}/{name}".encode()))
    return torch.randn(shape, generator=g) * std


@torch.no_grad()
def init_module_(module: nn.Module, prefix: str, seed: int, n_layers: int) -> nn.Module:
    """Fill every parameter of `module` from init_tensor(prefix + its name).
    E.g. a pipeline stage: init_module_(Block(cfg), "blocks.2.", seed, cfg.n_layers)."""
    for name, p in module.named_parameters():
        p.copy_(init_tensor(prefix + name, p.shape, seed, n_layers))
    return module


# ----------------------------------------------------------------------------- modules

def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(head_dim) + causal mask) v, for (B, H, T, head_dim) inputs."""
    T = q.size(-2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))            # (B, H, T, T)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))  # position t sees 0..t only
    return scores.softmax(dim=-1) @ v


class CausalSelfAttention(nn.Module):
    # Megatron-LM tensor parallelism (Shoeybi et al. 2019, §3) splits `qkv` by
    # columns (each rank owns whole heads: a slice of q, of k and of v) and
    # `proj` by rows, so one all-reduce after proj completes the layer.
    def __init__(self, d_model: int, n_heads: int, bias: bool = True):
        super().__init__()
        self.n_heads = n_heads
        # output laid out [q | k | v], each d_model wide, head h at [h*hd, (h+1)*hd)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        # (B, T, H*hd) -> (B, H, T, hd); sizes read from the tensors so that a
        # tensor-parallel shard with fewer heads could reuse this code.
        q, k, v = (t.view(B, T, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
        y = causal_attention(q, k, v)
        y = y.transpose(1, 2).reshape(B, T, -1)                          # heads side by side
        return self.proj(y)


class MLP(nn.Module):
    # Megatron: fc1 column-split, fc2 row-split (the GELU is elementwise, so no
    # communication between them).
    def __init__(self, d_model: int, d_ff: int, bias: bool = True):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff, bias=bias)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """Pre-LayerNorm residual block: x + attn(ln1(x)), then + mlp(ln2(x)); with ``moe``
    (a MoE layer, parlab.moe) that replaces the MLP, named ``moe``."""

    def __init__(self, config: GPTConfig, moe: nn.Module | None = None):
        super().__init__()
        c = config
        self.ln1 = nn.LayerNorm(c.d_model, bias=c.bias)
        self.attn = CausalSelfAttention(c.d_model, c.n_heads, c.bias)
        self.ln2 = nn.LayerNorm(c.d_model, bias=c.bias)
        if moe is None:
            self.mlp = MLP(c.d_model, c.d_ff, c.bias)
        else:
            self.moe = moe

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + (self.moe if hasattr(self, "moe") else self.mlp)(self.ln2(x))


def loss_fn(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over all (batch, position) tokens."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


class GPT(nn.Module):
    """The reference model. ``moe_factory(config, i)``: the MoE layer of block i (default
    ``moe.MoE``); expert parallelism passes one that holds only this rank's experts."""

    def __init__(self, config: GPTConfig, seed: int = 0, moe_factory=None):
        super().__init__()
        moe_factory = moe_factory or (lambda c, i: MoE(c, i, mlp=MLP))
        self.config, self.seed = config, seed
        c = config
        # Built on the meta device: no memory and no default init (which would
        # consume the global RNG); then materialised and filled from init_tensor.
        with torch.device("meta"):
            self.wte = nn.Embedding(c.vocab_size, c.d_model)   # token embeddings
            self.wpe = nn.Embedding(c.seq_len, c.d_model)      # learned positions
            self.blocks = nn.ModuleList(
                Block(c, moe_factory(c, i) if c.is_moe_layer(i) else None)
                for i in range(c.n_layers))
            self.ln_f = nn.LayerNorm(c.d_model, bias=c.bias)
            # Not tied to wte (GPT-2 ties them): with pipeline parallelism wte
            # lives on the first stage and lm_head on the last, and tying would
            # force an extra all-reduce of their gradients between those two
            # stages.  Megatron-LM has an option to untie them too.
            self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.to_empty(device="cpu")
        init_module_(self, "", seed, c.n_layers)
        for name, buf in self.named_buffers():  # to_empty left them uninitialised
            if name.endswith("expert_bias"):
                buf.zero_()

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, d_model) residual stream."""
        T = idx.size(1)
        if T > self.config.seq_len:
            raise ValueError(f"sequence length {T} exceeds seq_len={self.config.seq_len}")
        pos = torch.arange(T, device=idx.device)
        return self.wte(idx) + self.wpe(pos)

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d_model) -> (B, T, vocab_size) logits."""
        return self.lm_head(self.ln_f(x))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        logits = self.head(x)
        loss = None if targets is None else loss_fn(logits, targets)
        if loss is not None and self.config.n_experts:  # Switch / ST-MoE auxiliary losses
            loss = loss + sum(m.aux_loss for m in self.moe_layers())
        return logits, loss

    def moe_layers(self) -> list:
        return moe_layers(self)

    def num_params(self, include_embeddings: bool = True) -> int:
        """Parameter count; include_embeddings=False leaves out the wte and wpe
        lookup tables (lm_head is a real matmul and always counts)."""
        n = sum(p.numel() for p in self.parameters())
        if not include_embeddings:
            n -= self.wte.weight.numel() + self.wpe.weight.numel()
        return n


# ----------------------------------------------------------------------------- reference loop

def reference_train(config: GPTConfig, steps: int, batch_size: int, lr: float = 1e-3,
                    seed: int = 0, data_seed: int = 0, weight_decay: float = 0.0,
                    device: str | torch.device = "cpu") -> dict:
    """The single-device training loop every strategy must reproduce.

    Step s trains on the global batch parlab.data.get_batch(s, batch_size, ...)
    with AdamW(lr, betas=(0.9, 0.95), weight_decay).  Returns {"losses": [float
    per step], "state_dict": final parameters, "grads": {name: gradient of the
    last step}}, tensors cloned to the CPU. A MoE config adds "moe": per step,
    {layer name: {"routed": assignments per expert (before capacity), "kept": per
    expert, "capacity": int or None, "dropped": [(token, choice)] in the global batch's
    row-major token order}}; DeepSeek-V3's bias balancer moves its biases after each step.
    """
    from parlab.data import get_batch

    if steps < 0 or batch_size < 1:
        raise ValueError(f"need steps >= 0 and batch_size >= 1, got steps={steps}, batch_size={batch_size}")
    model = GPT(config, seed).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=weight_decay)
    losses, moe = [], []
    for step in range(steps):
        x, y = get_batch(step, batch_size, config.seq_len, config.vocab_size, seed=data_seed)
        _, loss = model(x.to(device), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if config.n_experts:
            moe.append({f"blocks.{m.layer}.moe": dict(m.stats) for m in model.moe_layers()})
            for m in model.moe_layers():
                m.update_bias_()
    extra = {"moe": moe} if config.n_experts else {}
    return {**extra,
        "losses": losses,
        "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        "grads": {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()
                  if p.grad is not None},
    }


def max_differences(run: dict, ref: dict) -> dict:
    """How far a training run is from another (usually ``reference_train``'s): the largest
    |difference| of the per-step losses, the last step's gradients and the final
    parameters, as {"loss", "grad", "param"}. Both dicts have reference_train's keys
    "losses", "grads" and "state_dict"."""
    def worst(a: dict, b: dict) -> float:  # (a RunResult works too: it indexes like a dict)
        return max((a[k] - t).abs().max().item() for k, t in b.items())
    return {"loss": max(abs(p - q) for p, q in zip(run["losses"], ref["losses"])),
            "grad": worst(run["grads"], ref["grads"]),
            "param": worst(run["state_dict"], ref["state_dict"])}
