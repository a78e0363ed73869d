"""Notebook 00's exercise on §4's two levels: the all-reduce of a cluster of nodes, written
with torch's collectives on the two groups a rank belongs to (its node, and its rail: the
ranks with the same local index on every node).

``my_two_level_all_reduce(x, node_group, network_group)`` must return the sum of every
rank's ``x``. The checker runs it on 4 ranks as 2 "nodes" of 2, compares every rank's
result with the sum, and reads which collective ran on which group with how many
elements (``watch.DistWatch``): the network step must carry 1/g of the buffer (the
reduce-scatter inside the node comes first), which a flat all-reduce over everyone, or
one over the rail with the whole buffer, does not."""

from __future__ import annotations

import torch
import torch.distributed as dist

from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.checkers.watch import DistWatch
from lessons.common.i18n import t

from .text import TEXT
from lessons.common import record

NUMEL = 8  # elements per rank's x: 2 chunks of 4 inside a node of 2


def solution_two_level_all_reduce(x, node_group, network_group):
    """Reduce-scatter inside the node, all-reduce each piece across the nodes (on the
    rail), all-gather inside the node."""
    g = dist.get_world_size(node_group)
    pieces = list(x.chunk(g))
    mine = torch.empty_like(pieces[0])
    dist.reduce_scatter(mine, pieces, group=node_group)  # 1/g of the node's sum
    dist.all_reduce(mine, group=network_group)           # ... summed over the nodes
    out = [torch.empty_like(p) for p in pieces]
    dist.all_gather(out, mine, group=node_group)          # every piece, on every GPU
    return torch.cat(out)


def inputs(rank: int, numel: int = NUMEL) -> torch.Tensor:
    """Rank r's x: 100 (r + 1) + [0, 1, ...], so a wrong sum says whose part is off."""
    return torch.arange(numel, dtype=torch.float32) + 100.0 * (rank + 1)


def harness(source: str, name: str, gpus_per_node: int, numel: int):
    """On a rank: its node and rail groups (``collectives.hierarchical.node_groups``), the
    learner's call on this rank's x, what it returned and which collectives it ran where."""
    from parlab.collectives.hierarchical import node_groups
    fn = core.load_learner(source, name)
    node, network = node_groups(gpus_per_node)
    with DistWatch() as watch:
        out = fn(inputs(dist.get_rank(), numel), node, network)
    if isinstance(out, torch.Tensor):
        out = out.detach().clone().reshape(-1)
    return dict(out=out, collectives=watch.collectives, p2p=len(watch.messages),
                node=tuple(dist.get_process_group_ranks(node)),
                network=tuple(dist.get_process_group_ranks(network)))


def check_two_level_all_reduce(fn, nodes: int = 2, gpus_per_node: int = 2,
                               timeout: float = 30.0) -> dict:
    """Run ``fn(x, node_group, network_group)`` on nodes x gpus_per_node real ranks."""
    m = check_int("nodes", nodes, 2, 4)
    g = check_int("gpus_per_node", gpus_per_node, 2, 4)
    core.check_timeout(timeout)
    numel = NUMEL if NUMEL % g == 0 else g * 4
    results, bad = core.run_learner(harness, fn, m * g, g, numel, timeout=timeout)
    if bad is not None:
        return bad
    total = torch.stack([inputs(r, numel) for r in range(m * g)]).sum(0)
    for rank, res in enumerate(results):
        msg = core.compare_tensors(res["out"], total, where=f"rank {rank}")
        if msg is None:
            continue
        node_sum = torch.stack([inputs(r, numel) for r in res["node"]]).sum(0)
        if isinstance(res["out"], torch.Tensor) and torch.equal(res["out"], node_sum):
            msg += t(TEXT, "node_only")
        return core.verdict(False, t(TEXT, "two_level_wrong", msg=msg, n=m * g))
    res = results[0]
    across = [(op, n) for op, ranks, n in res["collectives"] if ranks == res["network"]]
    world = [op for op, ranks, _ in res["collectives"] if ranks is not None and len(ranks) == m * g]
    if world:
        return core.verdict(False, t(TEXT, "two_level_flat", op=world[0], n=m * g))
    if not across:
        return core.verdict(False, t(TEXT, "two_level_no_network"))
    carried = sum(n for _, n in across)
    if carried != numel // g:
        return core.verdict(False, t(TEXT, "two_level_carried", carried=carried, numel=numel,
                                     g=g, piece=numel // g))
    return core.verdict(True, t(TEXT, "two_level_right", n=m * g, carried=carried, numel=numel,
                                g=g, ops=", ".join(op for op, ranks, _ in res["collectives"])))


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
