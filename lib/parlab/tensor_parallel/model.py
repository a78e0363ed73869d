"""The reference GPT (``parlab.model``), tensor-parallel over one process group.

Per block (Shoeybi et al. 2019, §3, Fig. 3):

    x ── ln1 ── f ── qkv (column: whole heads) ── attention ── proj (row) ── g ── + ──
    x ── ln2 ── f ── fc1 (column) ── GELU ── fc2 (row) ── g ── + ──

so a block costs two all-reduces forward (the g's) and two backward (the f's). With
sequence parallelism (Korthikanti et al. 2022, §4.2.2, Fig. 5) the residual stream,
LayerNorms and residual adds live on sequence shards, f/g become all-gather /
reduce-scatter pairs, and the LayerNorm weights, the row layers' biases and the
position table -- replicated, but each rank sees only its positions -- have their
gradients summed over the group after backward (``sync_sequence_parallel_grads``).

``recompute="selective"`` (Korthikanti §5) keeps only q, k and v of the attention core
and recomputes the (T, T) scores and softmax in backward.

Every weight is the reference's full initial value (``model.init_tensor``), sliced.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .. import comm
from ..model import GPTConfig, causal_attention, init_tensor
from . import mappings
from .layers import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding, _param,
                     unshard, vocab_parallel_cross_entropy)
from .mappings import tp_size


class _RecomputedAttention(torch.autograd.Function):
    """causal_attention whose backward recomputes the scores and softmax from q, k, v:
    the 5 a s^2 b bytes of Korthikanti's layer are not kept (selective recomputation)."""

    @staticmethod
    def forward(ctx, q, k, v):
        ctx.save_for_backward(q, k, v)
        with torch.no_grad():
            return causal_attention(q, k, v)

    @staticmethod
    def backward(ctx, grad):
        q, k, v = (t.detach().requires_grad_() for t in ctx.saved_tensors)
        with torch.enable_grad():
            out = causal_attention(q, k, v)
        return torch.autograd.grad(out, (q, k, v), grad)


class _Builder:
    """Full initial weights by reference name, and the layer options, for one rank."""

    def __init__(self, config: GPTConfig, seed: int, group, sequence_parallel, overlap):
        self.c, self.seed, self.group = config, seed, group
        self.sp, self.overlap = sequence_parallel, overlap

    def full(self, name, *shape):
        return init_tensor(name, shape, self.seed, self.c.n_layers)

    def bias(self, name, n):
        return self.full(name, n) if self.c.bias else None

    def layer_norm(self, name):
        ln = nn.LayerNorm(self.c.d_model, bias=self.c.bias)
        ln.weight = _param(self.full(f"{name}.weight", self.c.d_model), self.sp)
        if self.c.bias:
            ln.bias = _param(self.full(f"{name}.bias", self.c.d_model), self.sp)
        return ln

    def column(self, name, n_out, n_in, parts=1):
        return ColumnParallelLinear(self.full(f"{name}.weight", n_out, n_in),
                                    self.bias(f"{name}.bias", n_out), self.group, name,
                                    self.sp, self.overlap, parts)

    def row(self, name, n_out, n_in):
        return RowParallelLinear(self.full(f"{name}.weight", n_out, n_in),
                                 self.bias(f"{name}.bias", n_out), self.group, name, self.sp)


class TPAttention(nn.Module):
    def __init__(self, b: _Builder, name: str, recompute: str):
        super().__init__()
        h, t = b.c.d_model, tp_size(b.group)
        self.local_heads = b.c.n_heads // t
        self.qkv = b.column(f"{name}.qkv", 3 * h, h, parts=3)   # each rank: whole heads
        self.proj = b.row(f"{name}.proj", h, h)
        self.recompute = recompute

    def forward(self, x):
        B, T = x.shape[0], None
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        T = q.size(1)                  # the whole sequence, even if x was a shard
        q, k, v = (z.view(B, T, self.local_heads, -1).transpose(1, 2) for z in (q, k, v))
        core = _RecomputedAttention.apply if self.recompute == "selective" else causal_attention
        y = core(q, k, v).transpose(1, 2).reshape(B, T, -1)
        return self.proj(y)


class TPMLP(nn.Module):
    def __init__(self, b: _Builder, name: str):
        super().__init__()
        self.fc1 = b.column(f"{name}.fc1", b.c.d_ff, b.c.d_model)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = b.row(f"{name}.fc2", b.c.d_model, b.c.d_ff)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TPBlock(nn.Module):
    def __init__(self, b: _Builder, i: int, recompute: str):
        super().__init__()
        self.ln1 = b.layer_norm(f"blocks.{i}.ln1")
        self.attn = TPAttention(b, f"blocks.{i}.attn", recompute)
        self.ln2 = b.layer_norm(f"blocks.{i}.ln2")
        self.mlp = TPMLP(b, f"blocks.{i}.mlp")

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TPGPT(nn.Module):
    """One rank's part of the reference GPT under tensor parallelism over ``group``."""

    def __init__(self, config: GPTConfig, seed: int = 0, group=None, sequence_parallel=False,
                 overlap=False, recompute: str = "none"):
        super().__init__()
        c, self.config, self.group, self.sequence_parallel = config, config, group, sequence_parallel
        b = _Builder(config, seed, group, sequence_parallel, overlap)
        self.wte = VocabParallelEmbedding(b.full("wte.weight", c.vocab_size, c.d_model), group,
                                          "wte", sequence_parallel)
        self.wpe = nn.Embedding(c.seq_len, c.d_model)
        self.wpe.weight = _param(b.full("wpe.weight", c.seq_len, c.d_model), sequence_parallel)
        self.blocks = nn.ModuleList(TPBlock(b, i, recompute) for i in range(c.n_layers))
        self.ln_f = b.layer_norm("ln_f")
        self.lm_head = ColumnParallelLinear(b.full("lm_head.weight", c.vocab_size, c.d_model),
                                            None, group, "lm_head", sequence_parallel, overlap)

    def forward(self, idx, targets):
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        if self.sequence_parallel:     # the position rows of this rank's shard
            pos = mappings.split_sequence(pos.unsqueeze(0), self.group)[0]
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))          # (B, T, V/t): never gathered
        return vocab_parallel_cross_entropy(logits, targets, self.group)

    def sequence_parallel_params(self):
        return [p for p in self.parameters() if getattr(p, "sequence_parallel", False)]


def sync_sequence_parallel_grads(model: TPGPT) -> None:
    """Sum, over the group, the gradients of parameters that saw only this rank's
    positions (LayerNorms, row-layer biases, the position table): one all-reduce of
    them all, flattened, once per step -- Megatron does the same after backward."""
    comm.all_reduce_grads(model.sequence_parallel_params(), model.group,
                          label="sequence-parallel grads", layer="all", direction="backward",
                          operator="sp_param_grads")


@torch.no_grad()
def full_tensors(model: TPGPT, grads: bool = False) -> dict:
    """{reference name: full parameter (or gradient)}, reassembled from every rank's
    slice. A collective over the group (untraced: it is bookkeeping, not training)."""
    import torch.distributed as dist
    t, out = tp_size(model.group), {}
    for name, p in model.named_parameters():
        value = (p.grad if grads else p).detach().contiguous()
        if p.tp_split is None or t == 1:
            out[name] = value.cpu().clone()
            continue
        shards = [torch.empty_like(value) for _ in range(t)]
        dist.all_gather(shards, value, group=model.group)
        out[name] = unshard([s.cpu() for s in shards], p.tp_split)
    return out
