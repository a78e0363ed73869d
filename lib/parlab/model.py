"""A tiny GPT: the single-device reference for every parallel strategy in the lab.

Data, tensor, pipeline, context and expert parallelism and ZeRO are all checked against
this file: same loss, same gradients, same parameters after a few AdamW steps (fp32).
Hence three design rules:

* Deterministic initialisation that does not depend on the global RNG nor on how the
  model is later cut up: ``init_tensor(name, ...)`` returns the full initial value of a
  parameter from (seed, name, shape) alone. Every strategy builds the whole model from
  the seed and then shards it, so results do not depend on the layout.
* Stable, addressable names: wte, wpe, blocks.{i}.{ln1,attn.qkv,attn.proj,ln2,mlp.fc1,
  mlp.fc2}, ln_f, lm_head; a MoE block (``GPTConfig(n_experts=...)``, layer in
  ``parlab.moe``) has blocks.{i}.moe.router and blocks.{i}.moe.experts.{e}.{fc1,fc2}
  (and blocks.{i}.moe.shared.{j}.{fc1,fc2} with shared experts).
* Pieces the strategies swap from outside, never special cases inside: an attention's
  ``core`` (context parallelism puts ring attention there), the model's ``loss_fn``
  (tensor parallelism puts the vocabulary-parallel loss there), and ``layers()``, the
  model as an ordered list of modules that a pipeline cuts into stages.

Architecture: GPT-2 (Radford et al. 2019): pre-LayerNorm blocks, learned positions, GELU
MLP, no dropout. ``llama_config`` gives the Llama-style variant (Touvron et al. 2023,
§2.2): RMSNorm (Zhang & Sennrich 2019), SwiGLU MLP (Shazeer 2020), rotary positions (Su
et al. 2021) and grouped-query attention with ``n_kv_heads`` (Ainslie et al. 2023).
"""

from __future__ import annotations

import math
import zlib
import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import GPTConfig, llama_config  # noqa: F401  (the model's config)
from .moe import MoE, moe_layers

ADAMW_BETAS = (0.9, 0.95)  # every run's AdamW (GPT-3's, Brown et al. 2020, §C)


# ----------------------------------------------------------------------------- init

def init_tensor(name: str, shape, seed: int, n_layers: int) -> torch.Tensor:
    """Full initial value (fp32, CPU) of the parameter called `name` (as in
    `GPT.named_parameters()`), from (seed, name, shape) only -- GPT-2 rules
    (Radford et al. 2019, §2.3):

    * norms (ln1, ln2, ln_f): weight 1, bias 0;  other biases: 0;
    * residual output projections (attn.proj, mlp.fc2, an expert's fc2):
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
            (".moe.experts." in name or ".moe.shared." in name)
            and name.endswith(".fc2.weight")):  # an expert's fc2
        std = 0.02 / math.sqrt(2 * n_layers)
    # A private generator seeded from a stable hash (Python's hash() is salted
    # per process): same numbers in every process, whatever the global RNG.
    g = torch.Generator().manual_seed(zlib.crc32(f"{seed}/{name}".encode()))
    return torch.randn(shape, generator=g) * std


@torch.no_grad()
def init_module_(module: nn.Module, prefix: str, seed: int, n_layers: int) -> nn.Module:
    """Fill every parameter of `module` from init_tensor(prefix + its name)."""
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


def rotary(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """RoPE (Su et al. 2021, §3.4.2) in the rotate-half layout of GPT-NeoX and Llama: channel
    pair (i, i + hd/2) of the token at position p turns by p * theta^(-2i/hd)."""
    half = x.size(-1) // 2
    freqs = theta ** (-torch.arange(half, dtype=torch.float32, device=x.device) / half)
    angles = positions.to(x.device, torch.float32)[:, None] * freqs      # (T, hd/2)
    cos = angles.cos().to(x.dtype)
    sin = angles.sin().to(x.dtype)
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def norm(config: GPTConfig) -> nn.Module:
    if config.norm == "rmsnorm":
        return nn.RMSNorm(config.d_model, eps=1e-5)
    return nn.LayerNorm(config.d_model, bias=config.bias)


class CausalSelfAttention(nn.Module):
    # Megatron-LM tensor parallelism (Shoeybi et al. 2019, §3) splits ``qkv`` by columns
    # (each rank owns whole heads: a slice of q, of k and of v) and ``proj`` by rows, so
    # one all-reduce after proj completes the layer. Head counts are read off the tensors,
    # so a rank holding a slice of the heads runs this very code.
    def __init__(self, config: GPTConfig):
        super().__init__()
        c = config
        hd = config.head_dim
        self.head_dim = hd
        self.q_per_kv = c.n_heads // c.n_kv_heads
        self.rope_theta = c.rope_theta if c.positions == "rope" else None
        # output laid out [q | k | v]: n_heads, n_kv_heads and n_kv_heads heads of hd each
        self.qkv = nn.Linear(c.d_model, (c.n_heads + 2 * c.n_kv_heads) * hd, bias=c.bias)
        self.proj = nn.Linear(c.n_heads * hd, c.d_model, bias=c.bias)
        self.core = causal_attention  # (B, H, T, hd) q, k, v -> output; CP swaps it

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        qkv = self.qkv(x)
        B, T = qkv.shape[:2]  # the whole sequence, even where x is a sequence shard (SP)
        qkv = qkv.view(B, T, -1, self.head_dim)
        kv_heads = qkv.size(2) // (self.q_per_kv + 2)
        q, k, v = qkv.split([self.q_per_kv * kv_heads, kv_heads, kv_heads], dim=2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                # (B, heads, T, hd)
        if self.rope_theta is not None:
            positions = torch.arange(T, device=q.device) if positions is None else positions
            q = rotary(q, positions, self.rope_theta)
            k = rotary(k, positions, self.rope_theta)
        if self.q_per_kv > 1:  # grouped-query attention: each KV head serves q_per_kv heads
            k, v = (t.repeat_interleave(self.q_per_kv, dim=1) for t in (k, v))
        y = self.core(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(B, T, -1))          # heads side by side


class MLP(nn.Module):
    # Megatron: fc1 column-split, fc2 row-split (GELU and SwiGLU's product act element by
    # element, so nothing is exchanged between them). SwiGLU's fc1 is [gate | up].
    def __init__(self, config: GPTConfig):
        super().__init__()
        c = config
        self.swiglu = c.mlp == "swiglu"
        self.fc1 = nn.Linear(c.d_model, (2 if self.swiglu else 1) * c.d_ff, bias=c.bias)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(c.d_ff, c.d_model, bias=c.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        if self.swiglu:
            gate, up = h.chunk(2, dim=-1)
            return self.fc2(F.silu(gate) * up)
        return self.fc2(self.act(h))


def moe_layer(config: GPTConfig, layer: int) -> MoE:
    """Block ``layer``'s MoE layer: a router and ``n_experts`` MLPs (parlab.moe)."""
    c = config
    return MoE(nn.Linear(c.d_model, c.n_experts, bias=False),
               [MLP(c) for _ in range(c.n_experts)], top_k=c.top_k,
               capacity_factor=c.capacity_factor, aux_loss_coef=c.aux_loss_coef,
               z_loss_coef=c.z_loss_coef, balancer=c.balancer,
               bias_update_rate=c.bias_update_rate, renormalize=c.renormalize, layer=layer,
               shared=[MLP(c) for _ in range(c.n_shared_experts)], routing=c.router,
               expert_gemm=c.expert_gemm)


class Block(nn.Module):
    """Pre-norm residual block: x + attn(ln1(x)), then + mlp(ln2(x)); a MoE block has
    ``moe`` (parlab.moe) in place of ``mlp``."""

    def __init__(self, config: GPTConfig, layer: int = 0):
        super().__init__()
        self.ln1 = norm(config)
        self.attn = CausalSelfAttention(config)
        self.ln2 = norm(config)
        if config.is_moe_layer(layer):
            self.moe = moe_layer(config, layer)
        else:
            self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), positions)
        return x + (self.moe if hasattr(self, "moe") else self.mlp)(self.ln2(x))


def loss_fn(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over all (batch, position) tokens."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


class Embed(nn.Module):
    """Token ids -> residual stream: wte (+ wpe, learned positions). ``positions``: the
    global positions of the columns of ``idx`` (default 0..T-1; under context
    parallelism a rank's tokens sit elsewhere). The first layer of ``GPT.layers()``."""

    def __init__(self, model: "GPT"):
        super().__init__()
        self.config = model.config
        self.wte = model.wte
        self.wpe = model.wpe

    def forward(self, idx: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        if positions is None:
            T = idx.size(1)
            if T > self.config.seq_len:
                raise ValueError(f"sequence length {T} exceeds seq_len={self.config.seq_len}")
            positions = torch.arange(T, device=idx.device)
        x = self.wte(idx)
        return x if self.wpe is None else x + self.wpe(positions)


class Head(nn.Module):
    """The final norm and the vocabulary projection: the last layer of ``GPT.layers()``."""

    def __init__(self, model: "GPT"):
        super().__init__()
        self.ln_f = model.ln_f
        self.lm_head = model.lm_head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.ln_f(x))


class GPT(nn.Module):
    """The reference model."""

    def __init__(self, config: GPTConfig, seed: int = 0):
        super().__init__()
        self.config = config
        self.seed = seed
        c = config
        # Built on the meta device: no memory and no default init (which would
        # consume the global RNG); then materialised and filled from init_tensor.
        with torch.device("meta"):
            self.wte = nn.Embedding(c.vocab_size, c.d_model)     # token embeddings
            self.wpe = nn.Embedding(c.seq_len, c.d_model) if c.positions == "learned" else None
            self.blocks = nn.ModuleList(Block(c, i) for i in range(c.n_layers))
            self.ln_f = norm(c)
            # Not tied to wte (GPT-2 ties them): with pipeline parallelism wte lives on
            # the first stage and lm_head on the last, and tying would force an extra
            # all-reduce of their gradients between those two stages.
            self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.to_empty(device="cpu")
        init_module_(self, "", seed, c.n_layers)
        for m in self.moe_layers():  # to_empty left the buffers uninitialised
            m.expert_bias.zero_()
        self.loss_fn = loss_fn  # tensor parallelism swaps in the vocabulary-parallel loss

    embed = Embed.forward
    head = Head.forward

    def layers(self) -> list[nn.Module]:
        """The model as an ordered list of modules, each feeding the next: what a
        pipeline cuts into stages (their parameters are this model's own)."""
        return [Embed(self), *self.blocks, Head(self)]

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None,
                positions: torch.Tensor | None = None):
        x = self.embed(idx, positions)
        for block in self.blocks:
            x = block(x, positions)
        logits = self.head(x)
        loss = None if targets is None else self.loss_fn(logits, targets)
        if loss is not None and self.config.n_experts:
            # Switch / ST-MoE auxiliary losses: their gradients enter at each MoE layer
            # (parlab.moe); here they are only added to the value reported.
            loss = loss + sum(m.aux_loss.detach() for m in self.moe_layers())
        return logits, loss

    def moe_layers(self) -> list:
        return moe_layers(self)

    def num_params(self, include_embeddings: bool = True) -> int:
        """Parameter count; include_embeddings=False leaves out the wte and wpe lookup
        tables (lm_head is a real matmul and always counts)."""
        n = sum(p.numel() for p in self.parameters())
        if not include_embeddings:
            n -= sum(e.weight.numel() for e in (self.wte, self.wpe) if e is not None)
        return n


# ----------------------------------------------------------------------------- reference loop

def reference_optimizer(params, lr: float, weight_decay: float = 0.0) -> torch.optim.AdamW:
    """The optimizer of every run: AdamW(lr, betas=ADAMW_BETAS, weight_decay)."""
    return torch.optim.AdamW(params, lr=lr, betas=ADAMW_BETAS, weight_decay=weight_decay)


def reference_train(config: GPTConfig, steps: int, batch_size: int, lr: float = 1e-3,
                    seed: int = 0, data_seed: int = 0, weight_decay: float = 0.0,
                    device: str | torch.device = "cpu", max_grad_norm: float | None = None) -> dict:
    """The single-device training loop every strategy must reproduce.

    Step s trains on the global batch parlab.data.get_batch(s, batch_size, ...) with
    ``reference_optimizer``. Returns {"losses": [float per step], "state_dict": final
    parameters, "grads": {name: gradient of the last step}}, tensors cloned to the CPU.
    A MoE config adds "moe": per step, {layer name: {"routed": assignments per expert
    (before capacity), "kept": per expert, "capacity": int or None, "dropped": [(token,
    choice)] in the global batch's row-major token order}}; DeepSeek-V3's bias balancer
    moves its biases after each step. ``max_grad_norm``: clip by the global norm before
    each step (``torch.nn.utils.clip_grad_norm_``); the norms before clipping are returned
    as "grad_norms".
    """
    from parlab.data import check_vocab, get_batch
    from parlab.validate import check_float, check_int

    # The same checks as a run's (runs.TrainRun.check), so a bad argument is named here
    # too rather than surfacing as NaN losses or an error inside the data.
    if not isinstance(config, GPTConfig):
        raise ValueError(f"config must be a GPTConfig, got {type(config).__name__}")
    check_vocab(config.validate().vocab_size)
    check_int("steps", steps, 0)
    check_int("batch_size", batch_size)
    check_float("lr", lr)
    check_float("weight_decay", weight_decay, strict=False)
    model = GPT(config, seed).to(device)
    opt = reference_optimizer(model.parameters(), lr, weight_decay)
    if max_grad_norm is not None:
        check_float("max_grad_norm", max_grad_norm)
    losses = []
    moe = []
    norms = []
    for step in range(steps):
        x, y = get_batch(step, batch_size, config.seq_len, config.vocab_size, seed=data_seed)
        _, loss = model(x.to(device), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if max_grad_norm is not None:
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)))
        opt.step()
        losses.append(loss.item())
        if config.n_experts:
            moe.append({f"blocks.{m.layer}.moe": dict(m.stats) for m in model.moe_layers()})
            for m in model.moe_layers():
                m.update_bias_()
    extra = {"moe": moe} if config.n_experts else {}
    if max_grad_norm is not None:
        extra["grad_norms"] = norms
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
