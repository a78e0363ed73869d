"""A pipeline stage whose blocks are tensor-parallel: PTD-P's unit of work.

Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM" (SC21), compose the three strategies (§2, §3): the layers are cut
into ``pp`` pipeline stages (§2.2), each stage's layers are sliced over a ``tp``-rank
tensor-parallel group (§2.3, Megatron's f/g blocks), and the whole pipeline is
replicated ``dp`` times (§2.1). So one rank holds *one TP slice of one stage*:

  TPStage           blocks ``layers`` of the reference GPT as ``tensor_parallel``'s
                    TPBlocks over the TP group; the first stage also holds the
                    vocab-parallel embedding (+ the position table), the last the final
                    LayerNorm and the vocab-parallel ``lm_head``, whose loss is
                    ``vocab_parallel_cross_entropy`` (logits never gathered).
  EmulatedTPCompute pipeline_parallel's EmulatedCompute (sleeps instead of math), plus
                    the TP collectives a stage's layers really issue, with real bytes.

Between stages. The executor sends over the PP group, and the PP group of a rank is
the ranks with its own (dp, tp) coordinates: TP rank j of stage s sends to TP rank j of
stage s+1 (as Megatron does). Without sequence parallelism every TP rank holds the same
(replicated) activation after g, so each sends a full copy -- the t-fold redundancy that
Megatron's scatter/gather optimisation (§4.1) removes by sending 1/t and all-gathering
over NVLink. With sequence parallelism (Korthikanti et al. 2022) the stream between
blocks already *is* a sequence shard: each TP rank sends its own 1/t, so sending it to
the wrong TP rank of the next stage silently shuffles positions (a test plants this).

Every weight is the reference's full initial value (``model.init_tensor``) sliced, so
results do not depend on (dp, pp, tp).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .. import comm
from ..model import GPTConfig
from ..pipeline_parallel.compute import EmulatedCompute
from ..pipeline_parallel.stages import split_layers
from ..tensor_parallel import mappings
from ..tensor_parallel.layers import (ColumnParallelLinear, VocabParallelEmbedding, _param,
                                      vocab_parallel_cross_entropy)
from ..tensor_parallel.model import TPBlock, _Builder


class TPStage(nn.Module):
    """Blocks ``layers`` (reference names: ``blocks.2.attn.qkv.weight`` ...), sliced over
    ``group``; with the embeddings if ``first``, with ln_f + lm_head if ``last``. Input:
    token ids (first) or the residual stream -- whole, or this rank's sequence shard
    with ``sequence_parallel``; output: the stream, or (last) this rank's (B, T, V/t)
    logit slice. ``group`` and ``sequence_parallel_params`` make it usable by
    tensor_parallel's ``sync_sequence_parallel_grads`` and ``full_tensors``."""

    def __init__(self, config: GPTConfig, layers: range, first: bool, last: bool,
                 seed: int = 0, group=None, sequence_parallel: bool = False):
        super().__init__()
        c, sp = config, sequence_parallel
        self.config, self.first, self.last = config, first, last
        self.group, self.sequence_parallel = group, sp
        b = _Builder(config, seed, group, sp, overlap=False)
        if first:
            self.wte = VocabParallelEmbedding(b.full("wte.weight", c.vocab_size, c.d_model),
                                              group, "wte", sp)
            self.wpe = nn.Embedding(c.seq_len, c.d_model)
            self.wpe.weight = _param(b.full("wpe.weight", c.seq_len, c.d_model), sp)
        self.blocks = nn.ModuleDict({str(i): TPBlock(b, i, "none") for i in layers})
        if last:
            self.ln_f = b.layer_norm("ln_f")
            self.lm_head = ColumnParallelLinear(b.full("lm_head.weight", c.vocab_size,
                                                       c.d_model), None, group, "lm_head", sp)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.first:
            pos = torch.arange(x.size(1), device=x.device)
            if self.sequence_parallel:  # the position rows of this rank's shard
                pos = mappings.split_sequence(pos.unsqueeze(0), self.group)[0]
            x = self.wte(x) + self.wpe(pos)
        for block in self.blocks.values():
            x = block(x)
        return self.lm_head(self.ln_f(x)) if self.last else x

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return vocab_parallel_cross_entropy(logits, targets, self.group)

    def sequence_parallel_params(self):
        return [p for p in self.parameters() if getattr(p, "sequence_parallel", False)]


def build_tp_stage(config: GPTConfig, pp: int, stage: int, seed: int, group,
                   sequence_parallel: bool) -> TPStage:
    """Stage ``stage`` of ``pp`` (pipeline_parallel's balanced layer split), sliced over
    the TP ``group``."""
    layers = split_layers(config.n_layers, pp)[stage]
    return TPStage(config, layers, stage == 0, stage == pp - 1, seed, group, sequence_parallel)


class EmulatedTPCompute(EmulatedCompute):
    """Each op sleeps its duration (``EmulatedCompute``), then issues the collectives its
    layers would over the TP group, on real buffers of the real size: per block, 2
    all-reduces of the (B/m, T, d) stream each way (Megatron's g forward, f backward), or
    with sequence parallelism 2 all-gathers + 2 reduce-scatters. So step times show the
    schedule and the communication, not how many ranks share a core."""

    def __init__(self, durations: dict, shape: tuple, n_stages: int, group,
                 blocks_per_chunk: list[int], sequence_parallel: bool):
        super().__init__(durations, shape, n_stages)
        self.group, self.blocks, self.sp = group, blocks_per_chunk, sequence_parallel
        self.tp = mappings.tp_size(group)

    def forward(self, a, stage: int, inp, target):
        out = super().forward(a, stage, inp, target)
        self._tp_traffic(a.chunk, "forward")
        return out

    def backward(self, a, stage: int, stash, grad):
        out = super().backward(a, stage, stash, grad)
        self._tp_traffic(a.chunk, "backward")
        return out

    def _tp_traffic(self, chunk: int, direction: str) -> None:
        if self.tp == 1:
            return
        B, T, d = self.shape
        full = torch.zeros(B, T * self.tp if self.sp else T, d)
        for _ in range(2 * self.blocks[chunk]):  # attention and MLP of each block
            if self.sp:
                shard = torch.zeros(B, T, d)
                comm.all_gather(full.view(-1), shard.view(-1), group=self.group,
                                label="emulated", direction=direction)
                comm.reduce_scatter(shard.view(-1), full.view(-1), group=self.group,
                                    label="emulated", direction=direction)
            else:
                comm.all_reduce(full, group=self.group, label="emulated", direction=direction)
