"""The reference GPT (``parlab.model``) with its sequence sharded over one process group.

Every parameter is replicated: a context-parallel rank holds the whole model and a shard
of every sequence in the batch (``layout.py``). Everything but attention works per
position, so a rank runs embeddings, LayerNorms, MLPs and the head on its positions
alone; only attention needs the other ranks' keys and values (``ring.py`` or
``ulysses.py``). Two details make the shards add up to the single-device model:

* positions: each token is embedded with its *global* position (``shard_positions``),
  so the zigzag layout's second chunk gets rows late in ``wpe``;
* the loss: each rank sums the cross-entropy of its tokens and divides by the number of
  tokens in the *global* batch, so the ranks' losses add up to the reference's mean,
  and so do their gradients -- which ``sync_grads`` sums over the group after backward
  (one flat all-reduce, as Megatron-LM reduces gradients over its context-parallel
  ranks together with the data-parallel ones).
"""

from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F

from .. import comm
from ..model import GPT, CausalSelfAttention, GPTConfig
from . import ring, ulysses

ATTENTIONS = ("ring", "ulysses")


class CPSelfAttention(nn.Module):
    """The reference attention layer (same ``qkv`` and ``proj`` modules, so the same
    parameter names) with its core replaced by a context-parallel one."""

    def __init__(self, attn: CausalSelfAttention, group, layout: str, attention: str,
                 layer: str):
        super().__init__()
        self.qkv, self.proj, self.n_heads = attn.qkv, attn.proj, attn.n_heads
        self.group, self.layout, self.attention, self.layer = group, layout, attention, layer

    def forward(self, x):
        B, T, _ = x.shape              # T: this rank's positions
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
        # looked up at call time, so a test can plant a bug in the module
        core = ring.ring_attention if self.attention == "ring" else ulysses.ulysses_attention
        y = core(q, k, v, causal=True, group=self.group, layout=self.layout, layer=self.layer)
        return self.proj(y.transpose(1, 2).reshape(B, T, -1))


class CPGPT(GPT):
    """One rank of the reference GPT under context parallelism over ``group``."""

    def __init__(self, config: GPTConfig, seed: int = 0, group=None, layout: str = "zigzag",
                 attention: str = "ring"):
        super().__init__(config, seed)
        self.group = group
        for i, block in enumerate(self.blocks):
            block.attn = CPSelfAttention(block.attn, group, layout, attention,
                                         f"blocks.{i}.attn")

    def forward(self, idx, targets, positions, n_tokens: int):
        """Local loss of this rank's shard: idx, targets (B, s/cp), positions (s/cp,)
        the global positions they hold; ``n_tokens``: tokens in the global batch."""
        x = self.wte(idx) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        logits = self.head(x)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1),
                               reduction="sum") / n_tokens


def sync_grads(model: CPGPT, group=None) -> None:
    """Sum every gradient over the context-parallel group: one flat, traced all-reduce."""
    comm.all_reduce_grads(model.parameters(), group, label="cp grads", layer="all",
                          direction="backward", operator="cp_grad_sync")
