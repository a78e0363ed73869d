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
            msg += (": that is the sum over its own node only; the step across the nodes "
                    "(on network_group) is missing")
        return core.verdict(False, f"{msg}. Every rank must end with the sum of all "
                            f"{m * g} ranks' x.")
    res = results[0]
    across = [(op, n) for op, ranks, n in res["collectives"] if ranks == res["network"]]
    world = [op for op, ranks, _ in res["collectives"] if ranks is not None and len(ranks) == m * g]
    if world:
        return core.verdict(False, f"right sums, but through dist.{world[0]} over all {m * g} "
                            "ranks: a flat collective sends the whole buffer across the network. "
                            "Use node_group and network_group")
    if not across:
        return core.verdict(False, "right sums, but no collective ran on network_group: the "
                            "checker reads torch.distributed's collectives with the groups given")
    carried = sum(n for _, n in across)
    if carried != numel // g:
        return core.verdict(False, f"right sums, but the network step carried {carried} of the "
                            f"{numel} elements; reduce-scatter inside the node first, so each GPU "
                            f"sends only its 1/{g} ({numel // g} elements) across")
    return core.verdict(True, f"every rank holds the sum of all {m * g}; across the network "
                        f"each rank all-reduced {carried} of {numel} elements (1/{g}), inside the "
                        f"node the rest: {', '.join(op for op, ranks, _ in res['collectives'])}.")
