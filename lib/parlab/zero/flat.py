"""How ZeRO lays out what it shards, two ways.

``ShardLayout`` (ZeRO-3): every tensor flattened, padded to a multiple of the n ranks,
and cut into n equal chunks; rank r keeps chunk r of every tensor. This is FSDP2's
choice ("per-parameter sharding", PyTorch's ``fully_shard`` documentation): a rank's
shard of a parameter is a tensor of its own, so an optimizer sees one shard per
parameter, steps it with that parameter's gradient and skips it when it has none --
frozen, tied and unused parameters behave as on one device -- and a unit's gathered
tensors are each their own, freed one by one.

One collective still moves a whole group of tensors (an FSDP unit): the group's buffer
is *rank-major*, block j holding chunk j of each tensor in turn,

    [ t0[chunk 0] t1[chunk 0] ... | t0[chunk 1] t1[chunk 1] ... | ... ]   n blocks

so that a reduce-scatter leaves each rank exactly its block and an all-gather of the
blocks rebuilds every tensor. Packing and unpacking are copies (FSDP2 copies in and out
of its all-gather buffer too).

``FlatLayout`` (ZeRO-1/2): the tensors of a group end to end in one buffer cut in n
(DeepSpeed's flat partitions),

    [ t0 t1 t2 | t2 t3 ... | ... ]   n blocks; t2 straddles ranks 0 and 1

Rank r keeps block r: whole tensors, and a piece of at most two. ZeRO-1/2 keep every
parameter whole between steps, so the parameters can *live* in the buffer, as views of
it: the all-gather of the blocks lands straight in them, with no copy (as
``ZeroRedundancyOptimizer(parameters_as_bucket_view=True)`` and DDP's
``gradient_as_bucket_view``), and a rank's optimizer steps only the pieces in its block.
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


class FlatLayout:
    """``shapes`` (one group of tensors) end to end in a buffer of ``parts`` rows of
    ``block`` elements (the last padded), rank ``index`` owning row ``index``. Tensor i
    is elements ``offsets[i]`` to ``offsets[i] + numels[i]``; ``mine``: the tensors with
    elements in this rank's row, ``pieces[i]`` their range there (flat indices)."""

    def __init__(self, shapes, parts: int, index: int):
        self.shapes = [torch.Size(s) for s in shapes]
        self.numels = [math.prod(s) for s in self.shapes]
        self.offsets = [sum(self.numels[:i]) for i in range(len(self.numels))]
        self.parts = parts
        self.index = index
        self.block = -(-sum(self.numels) // parts)
        lo, hi = index * self.block, (index + 1) * self.block
        self.pieces = [(max(o, lo), min(o + n, hi)) for o, n in zip(self.offsets, self.numels)]
        self.mine = [i for i, (a, b) in enumerate(self.pieces) if a < b]

    def tensor(self, flat: torch.Tensor, i: int) -> torch.Tensor:
        """Tensor ``i`` in a whole buffer ``flat`` (any shape): a view, in its own shape."""
        o = self.offsets[i]
        return flat.view(-1)[o:o + self.numels[i]].view(self.shapes[i])

    def piece(self, row: torch.Tensor, i: int) -> torch.Tensor:
        """This rank's piece of tensor ``i`` in ``row`` (its block of a buffer, or a
        reduce-scatter's output): a view, flat."""
        a, b = self.pieces[i]
        start = self.index * self.block
        return row[a - start:b - start]

    def place(self, rows: torch.Tensor, i: int, t: torch.Tensor) -> None:
        """Copy tensor ``i`` to its place in ``rows`` (parts, at least block): the ranks'
        blocks side by side, each row perhaps followed by more (a bucket's counts)."""
        flat = t.reshape(-1)
        q, end = self.offsets[i], self.offsets[i] + self.numels[i]
        while q < end:  # one contiguous copy per row the tensor touches (at most a few)
            r, col = divmod(q, self.block)
            n = min(end - q, self.block - col)
            rows[r, col:col + n].copy_(flat[q - self.offsets[i]:q - self.offsets[i] + n])
            q += n
