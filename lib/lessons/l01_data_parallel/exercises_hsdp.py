"""Notebook 01's exercise on hybrid sharding (§6, "FSDP vs ZeRO-3, side by side"): HSDP's
gradient sync, written with torch's collectives on the two groups of a 2 x 2 mesh.

``my_hsdp_grad_sync(grad, shard_group, replicate_group)`` gets this rank's full local
gradient (flat) and returns this rank's *shard* of the gradient averaged over all ranks,
as ``zero.HybridShard`` leaves it (Zhao et al., *PyTorch FSDP*, VLDB 2023, hybrid
sharding): a reduce-scatter inside the shard group (a node), an all-reduce of that shard
across the replicate group (the ranks holding the same shard on the other nodes), divided
by the world size. The groups are ``zero.hsdp_groups``'; a rank keeps chunk
``dist.get_rank(shard_group)`` of the gradient (``zero.flat``'s layout).

Notebook 00's two-level all-reduce (``hierarchical.py``, whose test inputs this reuses)
takes the same first two steps and then all-gathers inside the node; HSDP stops before
that: each rank keeps its gradient shard for its optimizer, and the next forward
all-gathers the updated *parameters*. The checker compares every rank's shard with the
mean's, and reads which collective ran on which group with how many elements
(``watch.DistWatch``): only Psi / S may cross the nodes (``cost.hsdp_comm_volume``)."""

from __future__ import annotations

import itertools

import torch
import torch.distributed as dist

from parlab.validate import check_int
from parlab.zero.flat import ShardLayout
from lessons.common.checkers import core
from lessons.common.i18n import t
from lessons.l00_collectives.exercises_hierarchical import NUMEL, inputs
from lessons.common.checkers.watch import DistWatch
from .text import TEXT
from lessons.common import record


def solution_hsdp_grad_sync(grad, shard_group, replicate_group):
    """Reduce-scatter inside the node, all-reduce that shard across the replicas, divide by
    the number of ranks. No all-gather: the shard is what this rank's optimizer steps."""
    s = dist.get_world_size(shard_group)
    mine = torch.empty(grad.numel() // s)
    dist.reduce_scatter(mine, list(grad.chunk(s)), group=shard_group)  # my shard, node's sum
    dist.all_reduce(mine, group=replicate_group)                        # ... summed over nodes
    return mine / (s * dist.get_world_size(replicate_group))            # the mean of all ranks


def harness(source: str, name: str, replicate: int, numel: int) -> dict:
    """On a rank: its shard and replicate groups (``zero.hsdp_groups``), the learner's call
    on this rank's gradient, what it returned and which collectives it ran where."""
    from parlab.zero.hybrid import hsdp_groups
    fn = core.load_learner(source, name)
    shard, rep = hsdp_groups(replicate)
    with DistWatch() as watch:
        out = fn(inputs(dist.get_rank(), numel), shard, rep)
    if isinstance(out, torch.Tensor):
        out = out.detach().clone().reshape(-1)
    return dict(out=out, collectives=watch.collectives, position=dist.get_rank(shard),
                shard=tuple(dist.get_process_group_ranks(shard)),
                replicate=tuple(dist.get_process_group_ranks(rep)))


def wanted_shard(full: torch.Tensor, shard: int, position: int) -> torch.Tensor:
    """Chunk ``position`` of ``full`` over ``shard`` ranks, as HybridShard's FullyShard
    keeps it (``zero.flat.ShardLayout``)."""
    return ShardLayout([full.shape], shard, position).chunk(full, 0)


def check_hsdp_grad_sync(fn, shard: int = 2, replicate: int = 2, timeout: float = 30.0) -> dict:
    """Run ``fn(grad, shard_group, replicate_group)`` on ``replicate`` x ``shard`` ranks
    (consecutive ranks form a shard group); every rank must return its shard of the mean
    gradient, with only its shard crossing the replicate group."""
    s = check_int("shard", shard, 2, 4)
    r = check_int("replicate", replicate, 2, 4)
    core.check_timeout(timeout)
    world, numel = s * r, NUMEL if NUMEL % s == 0 else s * 4
    results, bad = core.run_learner(harness, fn, world, r, numel, timeout=timeout)
    if bad is not None:
        return bad
    grads = torch.stack([inputs(k, numel) for k in range(world)])
    mean = grads.mean(0)
    for rank, res in enumerate(results):
        want = wanted_shard(mean, s, res["position"])
        msg = core.compare_tensors(res["out"], want, where=t(TEXT, "hsdp_where", rank=rank))
        if msg is not None:
            return core.verdict(False, msg + _value_hint(res["out"], grads, results, rank, s, r))
    for rank, res in enumerate(results):
        msg = _traffic_problem(res, s, world, numel)
        if msg is not None:
            return core.verdict(False, t(TEXT, "hsdp_traffic", rank=rank, problem=msg))
    ops = t(TEXT, "list_sep").join(
        t(TEXT, "hsdp_op", op=op, group="shard_group" if ranks == results[0]["shard"] else "replicate_group")
        for op, ranks, _ in results[0]["collectives"])
    return core.verdict(True, t(TEXT, "hsdp_ok", world=world, part=numel // s, numel=numel, shard=s,
                                ops=ops))


def _value_hint(got, grads, results: list, rank: int, s: int, r: int) -> str:
    """Why rank ``rank``'s shard is wrong, when it is one of the typical mistakes."""
    world, mean, position = s * r, grads.mean(0), results[rank]["position"]
    if not isinstance(got, torch.Tensor):
        return ""
    if got.numel() == mean.numel():
        return t(TEXT, "hsdp_whole", shard=s)
    if got.numel() == mean.numel() // world:
        return t(TEXT, "hsdp_too_small", world=world, shard=s, replicas=r, part=mean.numel() // s)
    if got.numel() != mean.numel() // s:
        return ""
    want = wanted_shard(mean, s, position)

    def near(x):
        return torch.allclose(got.double(), x.double(), rtol=1e-5, atol=1e-6)

    if near(world * want):
        return t(TEXT, "hsdp_sum", world=world)
    for k, group in ((r, "shard_group"), (s, "replicate_group")):
        if near(k * want):
            group = group if s != r else t(TEXT, "hsdp_one_group")
            return t(TEXT, "hsdp_divided_by_group", factor=k, size=world // k, group=group,
                     shard=s, replicas=r, world=world)
    node = wanted_shard(grads[list(results[rank]["shard"])].sum(0), s, position)
    if any(near(node / d) for d in (1, s, world)):
        return t(TEXT, "hsdp_node_only")
    # the shard at another place, on every replica alike or each its own
    members = results[rank]["replicate"]
    nodes = [grads[list(results[m]["shard"])].sum(0) for m in members]
    for places in itertools.product(range(s), repeat=len(members)):
        if near(sum(wanted_shard(n, s, q) for n, q in zip(nodes, places)) / world):
            took = t(TEXT, "list_sep").join(t(TEXT, "hsdp_took", rank=m, shard=q)
                                            for m, q in zip(members, places))
            keeps = t(TEXT, "list_sep").join(t(TEXT, "hsdp_keeps", rank=m, shard=results[m]["position"])
                                             for m, q in zip(members, places)
                                             if q != results[m]["position"])
            return t(TEXT, "hsdp_misplaced", took=took, keeps=keeps)
    return ""


def _traffic_problem(res: dict, s: int, world: int, numel: int) -> str | None:
    """What is wrong with how a right shard was made ("rank k <this>"), or None."""
    calls = res["collectives"]
    flat = [op for op, ranks, _ in calls if ranks is not None and len(ranks) == world]
    if flat:
        return t(TEXT, "hsdp_flat", op=flat[0], world=world)
    inside = [op for op, ranks, _ in calls if ranks == res["shard"]]
    if any(op.startswith("all_gather") for op in inside):
        return t(TEXT, "hsdp_gathered")
    across = sum(n for _, ranks, n in calls if ranks == res["replicate"])
    if not across:
        return t(TEXT, "hsdp_no_replicate")
    if across != numel // s:
        return t(TEXT, "hsdp_too_much_across", across=across, numel=numel,
                 times=across / (numel // s), part=numel // s)
    if not any(op.startswith("reduce_scatter") for op in inside):
        return t(TEXT, "hsdp_no_reduce_scatter",
                 ops=t(TEXT, "list_sep").join(inside) or t(TEXT, "hsdp_nothing"))
    return None


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
