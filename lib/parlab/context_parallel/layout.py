"""Which positions of the sequence each rank of a context-parallel group holds.

Context parallelism cuts every activation along the sequence: rank r of cp ranks holds
s/cp positions of q, k, v and of the residual stream. Two ways to cut:

  contiguous  rank r holds positions [r s/cp, (r+1) s/cp). Simple, but with a causal
              mask the last rank's queries see the whole sequence and the first rank's
              see only themselves: rank r computes r+1 of the cp blocks of its row
              of the attention matrix, so the last rank works ~2x the mean.
  zigzag      the sequence is cut into 2 cp chunks of s/(2 cp) positions and rank r
              holds chunks r and 2 cp - 1 - r: an early chunk with little to attend
              to and a late one with much, so every rank does the same causal work.
              This is Megatron-LM's context-parallel layout (megatron/training/utils.py,
              ``get_batch_on_this_cp_rank``: "we split sequence into 2*CP ranks ...
              chunk_0 and chunk_3 are assigned to GPU0, chunk_1 and chunk_2 are
              assigned to GPU1"), also used by zig-zag ring attention.

Within a shard positions always increase (chunk r comes before chunk 2 cp - 1 - r), so
a causal mask between a shard's own queries and keys is the ordinary lower triangle.
"""

from __future__ import annotations

import torch

from ..validate import check_choice, check_int

LAYOUTS = ("contiguous", "zigzag")


def _chunks(seq_len: int, world_size: int, layout: str) -> int:
    """How many equal chunks the sequence is cut into (refusing lengths that do not cut)."""
    check_choice("layout", layout, LAYOUTS)
    check_int("world_size", world_size)
    n = world_size if layout == "contiguous" else 2 * world_size
    if seq_len % n:
        what = "cp" if layout == "contiguous" else "2*cp"
        raise ValueError(f"seq_len={seq_len} must be divisible by {what}={n} for the "
                         f"{layout} layout (equal shards of whole positions)")
    return n


def rank_chunks(world_size: int, rank: int, layout: str) -> list[int]:
    """The chunk indices rank ``rank`` holds, in the order it holds them."""
    check_int("rank", rank, low=0, high=world_size - 1)
    return [rank] if layout == "contiguous" else [rank, 2 * world_size - 1 - rank]


def shard_positions(seq_len: int, world_size: int, rank: int,
                    layout: str = "contiguous") -> torch.Tensor:
    """The global positions (int64) rank ``rank`` holds, in its local order: what it
    feeds the position embedding, so that every token keeps its place in the sequence."""
    check_int("seq_len", seq_len)
    c = seq_len // _chunks(seq_len, world_size, layout)
    return torch.cat([torch.arange(i * c, (i + 1) * c)
                      for i in rank_chunks(world_size, rank, layout)])


def shard_sequence(x: torch.Tensor, seq_dim: int, world_size: int, rank: int,
                   layout: str = "contiguous") -> torch.Tensor:
    """Rank ``rank``'s shard of ``x`` along ``seq_dim`` (a new tensor for zigzag, a view
    for contiguous)."""
    n = _chunks(x.size(seq_dim), world_size, layout)
    c = x.size(seq_dim) // n
    parts = [x.narrow(seq_dim, i * c, c) for i in rank_chunks(world_size, rank, layout)]
    return parts[0] if len(parts) == 1 else torch.cat(parts, seq_dim)


def unshard_sequence(shards, seq_dim: int, layout: str = "contiguous") -> torch.Tensor:
    """The whole sequence, in position order, from every rank's shard (in rank order):
    the inverse of ``shard_sequence``."""
    shards = list(shards)
    check_choice("layout", layout, LAYOUTS)
    n = len(shards)
    if n == 0 or any(s.shape != shards[0].shape for s in shards):
        raise ValueError(f"shards must be a non-empty list of equal shapes, got "
                         f"{[tuple(s.shape) for s in shards]}")
    if layout == "contiguous":
        return torch.cat(shards, seq_dim)
    if shards[0].size(seq_dim) % 2:
        raise ValueError(f"a zigzag shard holds two equal chunks: its length "
                         f"{shards[0].size(seq_dim)} along seq_dim={seq_dim} must be even")
    chunks = [None] * (2 * n)
    for r, s in enumerate(shards):
        chunks[r], chunks[2 * n - 1 - r] = s.chunk(2, seq_dim)
    return torch.cat(chunks, seq_dim)
