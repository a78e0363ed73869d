"""Collectives that scale (NCCL's latency model, its choice of algorithm, the bus bandwidth
across nodes) and ZeRO-3 / FSDP unit by unit (cost.collectives, cost.network, cost.fsdp)."""

import math

import pytest

from parlab import cost

NV, CARD = 234e9, 24e9  # a DGX A100's NVLink bus bandwidth and one HDR card, achieved


def test_ring_latency_grows_with_the_ranks_and_the_tree_with_log2_of_the_nodes():
    hop_in, hop_net = 3.4e-6, 9.6e-6
    ring = [cost.nccl_latency("all_reduce", 8 * m, m, "ring", hop_in, hop_net)
            for m in (2, 4, 8, 16)]
    tree = [cost.nccl_latency("all_reduce", 8 * m, m, "tree", hop_in, hop_net)
            for m in (2, 4, 8, 16)]
    # ring: 2 (n - 1) steps, 2 (m - 1) of them between nodes (NCCL's tuning.cc)
    assert ring[0] == pytest.approx(2 * (16 - 2) * hop_in + 2 * (2 - 1) * hop_net)
    assert [b - a for a, b in zip(ring, ring[1:])] == pytest.approx(
        [14 * dm * hop_in + 2 * dm * hop_net for dm in (2, 4, 8)])  # linear in the ranks
    # tree: 2 ((8 - 1) hop_in + log2(m) hop_net): one more network level per doubling
    assert [b - a for a, b in zip(tree, tree[1:])] == pytest.approx([2 * hop_net] * 3)
    assert cost.nccl_latency("all_gather", 64, 8, "ring", hop_in, hop_net) == pytest.approx(
        (63 - 7) * hop_in + 7 * hop_net)


def test_nccl_picks_the_tree_for_small_all_reduces_across_many_nodes_the_ring_for_large():
    n, nodes = 1024, 128
    small = cost.nccl_collective_time("all_reduce", 1e5, n, nodes, 8 * CARD)
    large = cost.nccl_collective_time("all_reduce", 4e9, n, nodes, 8 * CARD)
    assert small[1] == "tree" and large[1] == "ring"
    # inside a node the ring's few hops beat the tree's chunk latency even for small messages
    assert cost.nccl_collective_time("all_reduce", 1e5, 8, 1, NV)[1] == "ring"
    # all-gather and reduce-scatter have only the ring; asking for a tree is a ValueError
    assert cost.nccl_collective_time("all_gather", 1e5, n, nodes, 8 * CARD)[1] == "ring"
    with pytest.raises(ValueError, match="algorithm"):
        cost.nccl_collective_time("all_gather", 1e5, n, nodes, 8 * CARD, algorithm="tree")
    with pytest.raises(ValueError, match="nodes"):
        cost.nccl_collective_time("all_reduce", 1e5, 12, 8, 8 * CARD)
    # the chosen one is the faster of the two
    for S in (1e3, 1e6, 1e8, 1e10):
        t, algo = cost.nccl_collective_time("all_reduce", S, n, nodes, 8 * CARD)
        assert t == min(cost.nccl_collective_time("all_reduce", S, n, nodes, 8 * CARD, algorithm=a)[0]
                        for a in ("ring", "tree"))


def test_bus_bandwidth_falls_as_the_ring_spans_more_nodes_as_measured():
    assert cost.network_scaling(1) == cost.network_scaling(2) == 1.0
    assert cost.network_scaling(248) == pytest.approx(350 / 400 / 0.96)  # nccl-tests#283
    assert cost.network_scaling(10_000) == cost.network_scaling(248)
    f = [cost.network_scaling(m) for m in (2, 8, 32, 128, 248)]
    assert all(a > b for a, b in zip(f, f[1:]))


def test_a_dp_group_slows_down_as_it_grows_at_fixed_bytes():
    # 1 GB all-gathered over DP groups of one GPU per node, 8 ... 1024 nodes: more steps, each
    # a network hop, and less bus bandwidth -- where the old model stayed flat
    times = [cost.group_collective_time("all_gather", 1e9, n, 8, 8, NV, 1e-6, CARD, 9.6e-6)
             for n in (8, 64, 512, 1024)]
    assert all(a < b for a, b in zip(times, times[1:]))
    flat = 1e9 * (1023 / 1024) / CARD
    assert times[-1] > flat + 1023 * 9.6e-6


def test_fsdp2_hides_the_gather_behind_compute_deepspeed_2021_waits_for_it():
    g, r, f, b = 0.2, 0.2, 0.5, 1.0
    fsdp2 = cost.fsdp_unit_exposed(g, r, f, b, "fsdp2")
    ds = cost.fsdp_unit_exposed(g, r, f, b, "deepspeed2021")
    assert fsdp2 == {"forward": 0.0, "backward": 0.0}
    # DeepSpeed 2021 synchronizes the device at every gather: the reduce-scatter it issued
    # on a side stream finishes before the next gather, hidden behind nothing
    assert ds == {"forward": g, "backward": g + r}
    assert cost.fsdp_unit_exposed(g, r, f, b, "deepspeed2021", reduce=False)["backward"] == g
    # compute too short to hide it: only the excess shows under FSDP2
    short = cost.fsdp_unit_exposed(g, r, 0.05, 0.1, "fsdp2")
    assert short == pytest.approx({"forward": 0.15, "backward": 0.3})
    # parameters kept from the forward: no second gather
    kept = cost.fsdp_unit_exposed(g, r, 0.05, 0.1, "fsdp2", backward_gather=False)
    assert kept["backward"] == pytest.approx(0.1)
    assert cost.fsdp_unit_messages("fsdp2", 4) == 1
    assert cost.fsdp_unit_messages("deepspeed2021", 4) == 4
    with pytest.raises(ValueError, match="impl"):
        cost.fsdp_unit_exposed(g, r, f, b, "zero3")


def test_gradient_accumulation_reshard_or_keep():
    u, L, m = 1e9, 8, 4
    reshard = cost.fsdp_accumulation(u, L, m, keep_unsharded=False)
    keep = cost.fsdp_accumulation(u, L, m, keep_unsharded=True)
    assert (reshard["gathers"], reshard["reduces"], reshard["extra_bytes"]) == (8, 4, 0.0)
    assert (keep["gathers"], keep["reduces"]) == (1, 1)
    assert keep["extra_bytes"] == pytest.approx(L * u * 2)  # the stage's params and grads whole
    assert math.isclose(cost.fsdp_accumulation(u, L, m, True, 2, 4)["extra_bytes"], L * u * 3)
