"""Hierarchical all-reduce: the ring inside a node, a smaller ring across nodes.

A flat ring over n = m x g ranks (m nodes of g GPUs) crosses the network wherever two
neighbours sit on different nodes. Inside a node the GPUs share a fast fabric (NVLink,
hundreds of GB/s per GPU); between nodes each GPU has its own network card (tens of
GB/s). Two-level all-reduce uses each for what it is good at (Jia et al. 2018, "Highly
scalable deep learning training system with mixed-precision", arXiv 1807.11205, its
hierarchical all-reduce; NCCL's tree and its NVLS/CollNet variants are production forms):

  1. reduce-scatter inside the node      each GPU ends with 1/g of the node's sum
  2. all-reduce across nodes              the g GPUs with the same local index, one ring
                                          per index, each on its own card (multi-rail)
  3. all-gather inside the node           every GPU ends with the whole sum

Bytes per rank with buffer S: inside 2 (g-1)/g S, across 2 (m-1)/m S/g. Across the
network a rank sends 1/g of what a flat ring's boundary rank sends, and the g rails of a
node carry those pieces at the same time (``cost.hierarchical_all_reduce_bytes``).

Every phase runs the hand-written rings of ``parlab.comm``, so every message is traced;
the phase name is tagged on the events (``level``: "node" or "network").
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm, trace
from ..validate import check_int


def node_groups(gpus_per_node: int):
    """(this rank's node group, this rank's cross-node group) for nodes of
    ``gpus_per_node`` consecutive ranks; the cross-node group holds the ranks with the same
    local index on every node (one rail). Every rank must call it: ``new_group`` is a
    collective over the world."""
    g = check_int("gpus_per_node", gpus_per_node)
    world = dist.get_world_size()
    if world % g:
        raise ValueError(f"gpus_per_node={g} must divide the world size {world}")
    rank = dist.get_rank()
    mine = {}
    for node in range(world // g):
        ranks = list(range(node * g, (node + 1) * g))
        group = dist.new_group(ranks)
        if rank in ranks:
            mine["node"] = group
    for local in range(g):
        ranks = list(range(local, world, g))
        group = dist.new_group(ranks)
        if rank in ranks:
            mine["network"] = group
    return mine["node"], mine["network"]


def hierarchical_all_reduce(tensor: torch.Tensor, node_group, network_group) -> torch.Tensor:
    """Sum ``tensor`` over every rank in place, in three phases (module docstring);
    returns it. Equal to a flat all-reduce up to the order of the additions."""
    flat = tensor.reshape(-1)
    g = dist.get_world_size(node_group)
    sizes = [b - a for a, b in comm.chunk_bounds(flat.numel(), g)]
    with trace.tagged(level="node"):
        shard = comm.ring_reduce_scatter(flat, node_group)       # 1/g of the node's sum
    with trace.tagged(level="network"):
        comm.ring_all_reduce(shard, network_group)               # ... summed over the nodes
    with trace.tagged(level="node"):
        full = comm.ring_all_gather(shard, node_group, sizes)    # every piece, everywhere
    tensor.copy_(full.view_as(tensor))
    return tensor
