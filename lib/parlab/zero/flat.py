"""How ZeRO lays out what it shards: every tensor flattened, padded to a multiple of the n
ranks, and cut into n equal chunks; rank r keeps chunk r of every tensor.

Sharding each tensor (rather than one long buffer cut in n: DeepSpeed's flat partitions,
FSDP1's FlatParameter) is FSDP2's choice ("per-parameter sharding", PyTorch's
``fully_shard`` documentation): a rank's shard of a parameter is a tensor of its own, so
an optimizer sees one shard per parameter, steps it with that parameter's gradient and
skips it when it has none -- frozen, tied and unused parameters behave as on one device.

One collective still moves a whole group of tensors (a gradient bucket, an FSDP unit):
the group's buffer is *rank-major*, block j holding chunk j of each tensor in turn,

    [ t0[chunk 0] t1[chunk 0] ... | t0[chunk 1] t1[chunk 1] ... | ... ]   n blocks

so that a reduce-scatter leaves each rank exactly its block and an all-gather of the
blocks rebuilds every tensor. Packing and unpacking are copies (FSDP2 copies in and out
of its all-gather buffer too).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


class ShardLayout:
    """The chunks of ``shapes`` (one group of tensors) over ``parts`` ranks, for rank
    ``index``: tensor i is padded to ``parts * chunks[i]`` elements; in a block it sits
    at ``offsets[i]``; a block has ``block`` elements; ``sizes[i]`` of this rank's chunk
    are real elements (the rest is padding; a tensor smaller than ``parts`` leaves some
    ranks nothing of it)."""

    def __init__(self, shapes, parts: int, index: int):
        self.shapes = [torch.Size(s) for s in shapes]
        self.numels = [math.prod(s) for s in self.shapes]
        self.parts = parts
        self.index = index
        self.chunks = [-(-n // parts) for n in self.numels]
        self.offsets = [sum(self.chunks[:i]) for i in range(len(self.chunks))]
        self.block = sum(self.chunks)
        self.sizes = [max(0, min(c, n - index * c)) for c, n in zip(self.chunks, self.numels)]

    def view(self, full: torch.Tensor, i: int) -> torch.Tensor:
        """This rank's real elements of tensor ``i``: a view into ``full`` (contiguous)."""
        start = self.index * self.chunks[i]
        return full.view(-1)[start:start + self.sizes[i]]

    def chunk(self, full: torch.Tensor, i: int) -> torch.Tensor:
        """This rank's chunk of tensor ``i`` as a new tensor, zero padded to full length."""
        out = full.new_zeros(self.chunks[i])
        out[:self.sizes[i]] = self.view(full, i)
        return out

    def pack(self, tensors, dtype, device) -> torch.Tensor:
        """The rank-major buffer of full ``tensors`` (None: zeros), as a reduce-scatter's
        input: block j = chunk j of each."""
        buf = torch.zeros(self.parts, self.block, dtype=dtype, device=device)
        for i, t in enumerate(tensors):
            if t is not None:
                self.place(buf, i, t)
        return buf.view(-1)

    def place(self, buf: torch.Tensor, i: int, t: torch.Tensor) -> None:
        """Copy full tensor ``i`` into its chunks of a rank-major ``buf`` (parts, block)."""
        c = self.chunks[i]
        n = self.numels[i]
        flat = t.reshape(-1)
        whole, rest = divmod(n, c)
        cols = buf[:, self.offsets[i]:self.offsets[i] + c]
        cols[:whole].copy_(flat[:whole * c].view(whole, c))
        if rest:
            cols[whole, :rest].copy_(flat[whole * c:])

    def own(self, shards, dtype=None, out=None) -> torch.Tensor:
        """This rank's block from its shards (an all-gather's input; short ones padded);
        ``out``: written there (e.g. this rank's row of the all-gather's output)."""
        if out is None:
            return torch.cat([F.pad(s.reshape(-1).to(dtype or s.dtype), (0, c - s.numel()))
                              for s, c in zip(shards, self.chunks)])
        for s, o, c in zip(shards, self.offsets, self.chunks):
            n = s.numel()
            out[o:o + n].copy_(s.reshape(-1))
            if n < c:
                out[o + n:o + c].zero_()  # padding
        return out

    def split(self, block: torch.Tensor, real: bool = False) -> list[torch.Tensor]:
        """A block cut back into its per-tensor chunks (views); ``real``: without padding."""
        pieces = block.split(self.chunks)
        return [p[:n] for p, n in zip(pieces, self.sizes)] if real else list(pieces)

    def unpack_into(self, gathered: torch.Tensor, tensors) -> None:
        """Copy every full tensor out of a rank-major buffer into ``tensors`` (in place)."""
        rows = gathered.view(self.parts, self.block)
        for i, t in enumerate(tensors):
            c = self.chunks[i]
            n = self.numels[i]
            flat = t.view(-1)
            whole, rest = divmod(n, c)
            cols = rows[:, self.offsets[i]:self.offsets[i] + c]
            flat[:whole * c].view(whole, c).copy_(cols[:whole])
            if rest:
                flat[whole * c:].copy_(cols[whole, :rest])

    def unpack(self, gathered: torch.Tensor) -> list[torch.Tensor]:
        """Every full tensor from a rank-major buffer (an all-gather's output), each a new
        tensor of its own (never a view of ``gathered``)."""
        rows = gathered.view(self.parts, self.block)
        out = []
        for o, c, n, s in zip(self.offsets, self.chunks, self.numels, self.shapes):
            t = torch.empty(s, dtype=gathered.dtype, device=gathered.device)
            t.view(-1).copy_(rows[:, o:o + c].reshape(-1)[:n])
            out.append(t)
        return out
