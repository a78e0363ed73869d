"""Every strategy's parts on models that are not the lab's GPT (lessons.common.byom and small
modules here): differently seeded ranks end up equal, frozen / tied / unused parameters
behave as on one device, and planted bugs -- a missing broadcast, a split tie, a frozen
parameter trained -- are caught."""

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
import workers_parts

import parlab
from lessons.common import byom
from parlab.data_parallel import BucketedDP, NaiveDP
from parlab.zero import FullyShard, ShardedOptimizer

TOL = 2e-6  # AdamW, fp32, 3 steps: the sums differ only in order
# MLPStack under TP (and dp.pp.tp): each matmul's sum is split over ranks and micro-batches,
# so more terms change order; how far that moves AdamW's steps depends on the CPU's kernels
# (one CPU: 2.3e-6 TP, 4.9e-6 composed; another stayed under 2e-6). Parameters are ~0.5.
TOL_SPLIT = 1e-5


@pytest.fixture(scope="module")
def reference():
    return byom.reference(byom.TiedNet, lambda s: byom.tokens(s), 3)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["naive", "bucketed", "zero1", "zero2", "fsdp"])
def test_parts_on_a_model_with_ties_frozen_and_unused_parameters(reference, kind):
    out = parlab.launch(byom.data_parallel_worker, 2, kind, 3, timeout=90)
    for rank in out:  # the ranks started from different weights (seed = rank)
        assert byom.max_difference(rank["state"], reference) < TOL, kind
        assert rank["tied"] and rank["frozen_kept"] and rank["unused_kept"], (kind, rank)
    assert set(out[0]["state"]) == set(reference)


def test_the_comparison_can_fail(reference):
    # another seed's model differs far beyond the tolerance: equality above means something
    other = byom.reference(lambda: byom.TiedNet(seed=1), lambda s: byom.tokens(s), 3)
    assert byom.max_difference(other, reference) > 1e3 * TOL


@pytest.mark.timeout(120)
@pytest.mark.parametrize("bug, what", [("no_broadcast", "replicas"), ("untie", "tie"),
                                       ("train_frozen", "frozen")])
def test_planted_bugs_are_caught(reference, bug, what):
    out = parlab.launch(workers_parts.buggy_parts, 2, bug, timeout=90)
    if what == "replicas":  # each rank trained its own initialisation
        assert byom.max_difference(out[1]["state"], out[0]["state"]) > 1e-3
    elif what == "tie":  # the two copies of the tied weight drift apart
        assert (out[0]["state"]["out.weight"] - out[0]["state"]["embed.weight"]).abs().max() > 1e-4
    else:
        assert byom.max_difference(out[0]["state"], reference) > 1e-4


@pytest.mark.timeout(120)
@pytest.mark.parametrize("part", ["naive", "bucketed"])
def test_an_unused_parameter_without_the_option_is_named(part):
    # DDP's rule: without find_unused_parameters a parameter that got no gradient is an
    # error (naming it), not a hang. ZeRO's parts need no option: they always check.
    with pytest.raises(parlab.LaunchError, match=r"got no gradient.*unused\.weight"):
        parlab.launch(workers_parts.unused_without_option, 2, part, timeout=60)


@pytest.mark.timeout(120)
def test_sharded_optimizer_steps_any_elementwise_optimizer():
    # SGD with momentum and weight decay, and Adam (L2): each as on one device
    for name in ("sgd", "adam"):
        out = parlab.launch(workers_parts.sharded_with, 2, name, timeout=60)
        ref = byom.reference(byom.TiedNet, lambda s: byom.tokens(s), 3,
                             workers_parts.OPTIMIZERS[name])
        assert byom.max_difference(out[0], ref) < TOL, name


def test_non_elementwise_optimizers_and_bad_arguments_are_refused():
    net = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="LBFGS.*elementwise"):
        ShardedOptimizer(net.parameters(), torch.optim.LBFGS)
    with pytest.raises(ValueError, match="stage=3"):
        ShardedOptimizer(net.parameters(), torch.optim.AdamW, stage=3)
    with pytest.raises(ValueError, match="group=4"):
        NaiveDP(net, group=4)
    with pytest.raises(ValueError, match="module must be a torch.nn.Module"):
        BucketedDP(net.weight)
    with pytest.raises(ValueError, match="compute_dtype"):
        FullyShard(net, compute_dtype=torch.int8)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_fully_shard_compute_dtype_equals_one_device_with_the_same_casts(dtype):
    out = parlab.launch(workers_parts.fsdp_mixed, 2, dtype, timeout=60)
    ref = workers_parts.mixed_reference(getattr(torch, dtype))
    assert byom.max_difference(out[0]["state"], ref) < 1e-5  # measured: bf16 0, fp16 8e-7
    # ... and the casts matter: fp32 training ends elsewhere (measured: 0.01-0.02)
    fp32 = byom.reference(byom.TiedNet, lambda s: byom.tokens(s), 3)
    assert byom.max_difference(out[0]["state"], fp32) > 1e-3
    assert out[0]["master_dtype"] == "torch.float32" and out[0]["gathered_dtype"] == f"torch.{dtype}"


def test_full_state_dict_names_every_alias():
    names = parlab.launch(workers_parts.fsdp_names, 2, timeout=60)[0]
    assert names == sorted(byom.TiedNet().state_dict())  # out.weight and embed.weight both


@pytest.mark.timeout(120)
def test_tensor_parallel_by_plan_on_an_mlp():
    d = byom.tensor_parallel_demo(tp=2)
    assert d["max |diff|"] < TOL_SPLIT
    assert d["rank 0 holds"]["blocks.0.fc1.weight"] == (32, 16)  # half of (64, 16)
    assert d["full shapes"]["blocks.0.fc2.weight"] == (16, 64)


@pytest.mark.timeout(240)
def test_dp_pp_tp_composed_on_an_mlp():
    d = byom.composed_demo(2, 2, 2)
    assert d["max |diff|"] < TOL_SPLIT and d["parameters"]


def test_the_mlp_comparison_can_fail():
    # another seed's MLPStack ends far beyond TOL_SPLIT: equality above means something
    ref = byom.reference(byom.MLPStack, byom.regression, 3)
    other = byom.reference(lambda: byom.MLPStack(seed=1), byom.regression, 3)
    assert byom.max_difference(other, ref) > 1e4 * TOL_SPLIT


def test_a_plan_entry_that_names_nothing_is_an_error():
    from parlab.tensor_parallel import Colwise, apply_tensor_parallel
    with pytest.raises(ValueError, match="'blocks.\\*.fc9' names no submodule"):
        apply_tensor_parallel(byom.MLPStack(), {"blocks.*.fc9": Colwise()})


@pytest.mark.timeout(120)
def test_expert_parallelism_over_any_experts():
    # a MoE layer built by hand -- a router and four nn.Sequential experts -- on 2 ranks
    out = parlab.launch(workers_parts.moe_by_hand, 2, timeout=60)
    want = workers_parts.moe_by_hand_reference()
    for r, got in enumerate(out):
        torch.testing.assert_close(got["y"], want["y"][r], atol=1e-6, rtol=0)
        assert got["experts"] == [[0, 1], [2, 3]][r]
    assert max(abs(g - w) for g, w in zip(out[0]["router_grad"], want["router_grad"])) < 1e-6
