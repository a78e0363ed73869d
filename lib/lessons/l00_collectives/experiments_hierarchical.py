"""Notebook 00's section on two-level all-reduce (``collectives.hierarchical``): a rank
worker and the pure functions over it; ``experiments`` re-exports them."""

from __future__ import annotations

import torch
import torch.distributed as dist

from parlab import comm, cost, trace
from parlab.launch import launch
from parlab.validate import check_int


def hierarchical_worker(numel: int, per_node: int) -> dict:
    """One two-level all-reduce (``collectives.hierarchical``) and one flat ring, of a
    tensor that differs per rank: the largest difference from torch's own all-reduce, and
    the bytes this rank sent at each level, counted by the trace."""
    from parlab.collectives.hierarchical import hierarchical_all_reduce, node_groups
    node, network = node_groups(per_node)
    # whole numbers: every order of the additions gives the same sum, so "equal" is exact
    x = torch.arange(numel, dtype=torch.float64) * (dist.get_rank() + 1)
    want = x.clone()
    dist.all_reduce(want)
    trace.start()
    got = hierarchical_all_reduce(x.clone(), node, network)
    events = trace.stop()
    sent = {lvl: sum(e["bytes_sent"] for e in events if e["meta"].get("level") == lvl)
            for lvl in ("node", "network")}
    trace.start()
    flat = comm.ring_all_reduce(x.clone())
    flat_sent = sum(e["bytes_sent"] for e in trace.stop())
    return {"error": float((got - want).abs().max()), "flat_error": float((flat - want).abs().max()),
            "intra": sent["node"], "inter": sent["network"], "flat": flat_sent}


def hierarchical_rows(nodes: int = 2, per_node: int = 2, numel: int = 1 << 12) -> list[dict]:
    """Per rank of a ``nodes`` x ``per_node`` launch: counted bytes at each level beside
    ``cost.hierarchical_all_reduce_bytes``, and whether the sum equals torch's."""
    nodes, per_node = check_int("nodes", nodes), check_int("per_node", per_node)
    numel = check_int("numel", numel)
    S = 8 * numel  # float64
    f = cost.hierarchical_all_reduce_bytes(S, nodes, per_node)
    rows = []
    for r, res in enumerate(launch(hierarchical_worker, nodes * per_node, numel, per_node)):
        boundary = nodes > 1 and r % per_node == per_node - 1  # its right neighbour: next node
        rows.append({"rank": r, "node": r // per_node, **res,
                     "formula_intra": f["intra"], "formula_inter": f["inter"],
                     "formula_flat": f["flat"],
                     "flat_inter": res["flat"] if boundary else 0.0})
    return rows


def hierarchical_at_scale(nbytes: float, nodes: int, per_node: int, intra: str = "NVLink4",
                          inter: str = "IB-NDR") -> dict:
    """Bandwidth-only times of one all-reduce at GPU scale (``cost``'s byte counts over
    ``hardware.LINK_PRESETS``, one network card per GPU): a flat ring, whose boundary rank
    of each node pushes its 2 (n-1)/n S through one card; the two-level form, S-sized
    phases on the node's fabric and 1/g pieces on every card at once; and in-network
    reduction on the node's switch (NVLS) before the two-level step across."""
    from parlab.hardware import LINK_PRESETS
    b_in = LINK_PRESETS[intra].gb_per_s_per_direction * 1e9
    b_out = LINK_PRESETS[inter].gb_per_s_per_direction * 1e9
    h = cost.hierarchical_all_reduce_bytes(nbytes, nodes, per_node)
    nvls = cost.in_network_all_reduce_bytes(nbytes, per_node)["sent"]
    return {"bytes": h, "intra": intra, "inter": inter,
            "flat_s": h["flat_inter"] / b_out,
            "hierarchical_s": h["intra"] / b_in + h["inter"] / b_out,
            "nvls_s": nvls / b_in + h["inter"] / b_out}
