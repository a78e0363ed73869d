"""The two-level all-reduce (collectives.hierarchical) on real ranks: equal to torch's
all-reduce, bytes per level counted = cost.hierarchical_all_reduce_bytes, and a planted
version without the cross-node step is caught."""
import pytest
import torch
import torch.distributed as dist

from parlab import comm, cost, launch
from lessons.l00_collectives import experiments as demos
from parlab.collectives.hierarchical import node_groups


@pytest.mark.parametrize("nodes, per_node", [(2, 2), (3, 2), (1, 4)])
def test_equal_to_torch_and_bytes_as_counted(nodes, per_node):
    rows = demos.hierarchical_rows(nodes, per_node, numel=2 * 3 * 64)
    assert len(rows) == nodes * per_node
    for r in rows:
        assert r["error"] == 0 and r["flat_error"] == 0, r
        assert r["intra"] == r["formula_intra"] and r["inter"] == r["formula_inter"], r
        assert r["flat"] == r["formula_flat"], r
    # a flat ring sends the network bytes from one rank per node; the two-level form from all
    boundary = [r for r in rows if r["flat_inter"]]
    assert len(boundary) == (nodes if nodes > 1 else 0)


def without_the_network_step(numel, per_node):
    """Planted: reduce-scatter and all-gather inside the node, no all-reduce across."""
    node, _ = node_groups(per_node)
    x = torch.arange(numel, dtype=torch.float64) * (dist.get_rank() + 1)
    want = x.clone()
    dist.all_reduce(want)
    g = dist.get_world_size(node)
    sizes = [b - a for a, b in comm.chunk_bounds(numel, g)]
    got = comm.ring_all_gather(comm.ring_reduce_scatter(x, node), node, sizes)
    return float((got - want).abs().max())


def test_a_missing_network_step_is_caught():
    errors = launch(without_the_network_step, 4, 64, 2)
    assert min(errors) > 0  # only the node's sum: every rank is wrong


def test_gpu_scale_prediction():
    big = demos.hierarchical_at_scale(13.48e9, nodes=64, per_node=8)
    b = big["bytes"]
    assert b["inter"] == pytest.approx(b["flat"] / 8 * (63 / 64) / (511 / 512))
    assert big["hierarchical_s"] < big["flat_s"] / 4 and big["nvls_s"] < big["hierarchical_s"]
    inn = cost.in_network_all_reduce_bytes(100.0, 8)
    assert inn == {"sent": 100.0, "ring": 175.0}


def test_bad_input_before_any_rank_starts():
    with pytest.raises(ValueError, match="per_node"):
        demos.hierarchical_rows(2, 0)
    with pytest.raises(ValueError, match="nodes"):
        cost.hierarchical_all_reduce_bytes(1.0, 1.5, 2)
