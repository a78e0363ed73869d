"""The reference GPT cut by layers into pipeline stages (Huang et al. 2019, "GPipe",
§2.2): ``p`` stages, one per rank, or ``v`` chunks per rank for interleaved schedules.
The first stage also holds the embeddings, the last the final LayerNorm, ``lm_head``."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint as _checkpoint

from ..model import GPT, Block, GPTConfig, init_module_, loss_fn


def split_layers(n_layers: int, n_stages: int) -> list[range]:
    """Blocks of each virtual stage, balanced: sizes differ by at most one, the
    larger stages first (the last stage also carries the head and the loss)."""
    base, extra = divmod(n_layers, n_stages)
    bounds = [0]
    for s in range(n_stages):
        bounds.append(bounds[-1] + base + (s < extra))
    return [range(a, b) for a, b in zip(bounds, bounds[1:])]


class Stage(nn.Module):
    """Blocks ``layers`` of the reference GPT; with the embeddings if ``first``, with
    ln_f + lm_head if ``last``. Parameter names are the reference's (``blocks.2.ln1.
    weight``...), so ``init_module_`` gives the reference's initial values and the
    stages' state_dicts merge into the reference's."""

    def __init__(self, config: GPTConfig, layers: range, first: bool, last: bool,
                 seed: int = 0, checkpoint: bool = False):
        super().__init__()
        self.config, self.first, self.last, self.checkpoint = config, first, last, checkpoint
        c = config
        with torch.device("meta"):
            if first:
                self.wte = nn.Embedding(c.vocab_size, c.d_model)
                self.wpe = nn.Embedding(c.seq_len, c.d_model)
            self.blocks = nn.ModuleDict({str(i): Block(c) for i in layers})
            if last:
                self.ln_f = nn.LayerNorm(c.d_model, bias=c.bias)
                self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.to_empty(device="cpu")
        init_module_(self, "", seed, c.n_layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.first:
            x = GPT.embed(self, x)  # the reference's own code: token ids -> residual stream
        for block in self.blocks.values():
            # Activation checkpointing keeps only each block's input and recomputes
            # the block during backward (Chen et al. 2016, "Training deep nets with
            # sublinear memory cost").
            x = _checkpoint(block, x, use_reentrant=False) if self.checkpoint else block(x)
        return GPT.head(self, x) if self.last else x

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The last stage's loss on its logits (a stage that splits the vocabulary, as
        3D's tensor-parallel stage does, brings its own)."""
        return loss_fn(logits, targets)


def build_stages(config: GPTConfig, p: int, rank: int, v: int = 1, seed: int = 0,
                 checkpoint: bool = False) -> list[Stage]:
    """The v model chunks of ``rank``: chunk c is virtual stage c * p + rank."""
    layers = split_layers(config.n_layers, p * v)
    return [Stage(config, layers[c * p + rank], c * p + rank == 0, c * p + rank == p * v - 1,
                  seed, checkpoint) for c in range(v)]
