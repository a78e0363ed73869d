"""Emulated compute for composed runs: pipeline_parallel's EmulatedCompute (sleeps instead
of math) plus the TP collectives a stage's layers really issue, with real bytes. So the
step times of different (dp, pp, tp) layouts of one world show the schedule and the
communication, not how many ranks share a core (notebook 06's sweep)."""

from __future__ import annotations

import torch

from .. import comm, trace
from ..pipeline_parallel.compute import EmulatedCompute
from ..tensor_parallel import mappings


class EmulatedTPCompute(EmulatedCompute):
    """Each op sleeps its duration (``EmulatedCompute``), then issues the collectives its
    layers would over the TP group, on real buffers of the real size: per block, 2
    all-reduces of the (B/m, T, d) stream each way (Megatron's g forward, f backward), or
    with sequence parallelism 2 all-gathers + 2 reduce-scatters. So step times show the
    schedule and the communication, not how many ranks share a core."""

    def __init__(self, durations: dict, shape: tuple, n_stages: int, group,
                 blocks_per_chunk: list[int], sequence_parallel: bool):
        super().__init__(durations, shape, n_stages)
        self.group = group
        self.blocks = blocks_per_chunk
        self.sp = sequence_parallel
        self.tp = mappings.tp_size(group)

    def forward(self, a, stage: int, inp, target):
        out = super().forward(a, stage, inp, target)
        self._tp_traffic(a.chunk, "forward")
        return out

    def backward(self, a, stage: int, stash, grad, whole: bool = False):
        out = super().backward(a, stage, stash, grad, whole)
        self._tp_traffic(a.chunk, "backward")
        return out

    def _tp_traffic(self, chunk: int, direction: str) -> None:
        if self.tp == 1:
            return
        B, T, d = self.shape
        full = torch.zeros(B, T * self.tp if self.sp else T, d)
        for _ in range(2 * self.blocks[chunk]):  # attention and MLP of each block
            with trace.tagged(direction=direction):
                if self.sp:
                    shard = torch.zeros(B, T, d)
                    comm.all_gather(full.view(-1), shard.view(-1), group=self.group,
                                    label="emulated")
                    comm.reduce_scatter(shard.view(-1), full.view(-1), group=self.group,
                                        label="emulated")
                else:
                    comm.all_reduce(full, group=self.group, label="emulated")
