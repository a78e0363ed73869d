"""PyTorch's own tensor parallelism (``tensor_parallel.peers``: parallelize_module with
Colwise/Rowwise/SequenceParallel and loss_parallel, over a DeviceMesh of the group) on
the same model computes what the single device and what ours compute: losses, last-step
gradients and final parameters after 3 AdamW steps in fp32, at tp 2 and 4, with and
without sequence parallelism, on the world and on sub-groups."""

from __future__ import annotations

import dataclasses
import sys

import pytest
import workers_tp_peer

from parlab import launch
from parlab import tensor_parallel as tp
from parlab.model import GPTConfig, max_differences, reference_train
from parlab.tensor_parallel import TPRun, collect, peers

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
STEPS, BATCH = 3, 8
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}  # as test_tensor_parallel.py


@pytest.fixture(scope="module")
def reference():
    return reference_train(CFG, STEPS, BATCH)


def within(diff):
    return all(diff[k] < TOL[k] for k in TOL)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("t", [2, 4])
@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_peer_matches_the_reference_and_ours(reference, t, sequence_parallel):
    run = TPRun(CFG, steps=STEPS, batch_size=BATCH, sequence_parallel=sequence_parallel)
    peer = tp.run(dataclasses.replace(run, peer="dtensor"), t)
    diff = max_differences(peer, reference)
    assert within(diff), diff
    # under the reference's names and shapes: q, k and v glued back into qkv
    assert {n: p.shape for n, p in peer.state_dict.items()} == \
        {n: p.shape for n, p in reference["state_dict"].items()}
    assert set(peer.grads) == set(reference["grads"])
    ours_vs_peer = max_differences(tp.run(run, t), peer)
    assert within(ours_vs_peer), ours_vs_peer
    # each rank holds 1/t of the split weights (vocabulary, heads, MLP columns), not all
    full = sum(p.numel() * 4 for p in reference["state_dict"].values())
    assert all(m["params"] < full * (1 + t) / (2 * t) for m in peer.memory), peer.memory


@pytest.mark.timeout(120)
def test_peer_with_selective_recomputation_keeps_the_numbers(reference):
    run = TPRun(CFG, steps=STEPS, batch_size=BATCH, sequence_parallel=True,
                recompute="selective")
    diff = max_differences(tp.run(dataclasses.replace(run, peer="dtensor"), 2), reference)
    assert within(diff), diff


def test_the_plan_is_torchtitans():
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   SequenceParallel)
    plain, sp = peers.tp_plan(CFG, False), peers.tp_plan(CFG, True)
    for plan in (plain, sp):
        assert all(isinstance(plan[f"blocks.1.attn.{x}"], ColwiseParallel) for x in "qkv")
        assert isinstance(plan["blocks.1.mlp.fc2"], RowwiseParallel)
        assert plan["lm_head"].output_layouts == (Shard(-1),)
        assert not plan["lm_head"].use_local_output          # a DTensor for loss_parallel
    assert "blocks.0.ln1" not in plain and plain["wte"].output_layouts == (Replicate(),)
    assert all(isinstance(sp[n], SequenceParallel)
               for n in ("blocks.0.ln1", "blocks.0.ln2", "ln_f", "wpe"))
    assert sp["wte"].output_layouts == (Shard(1),) == sp["blocks.0.attn.proj"].output_layouts
    assert sp["lm_head"].input_layouts == (Shard(1),)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("second", [{"sequence_parallel": True}, {"data_seed": 1}])
def test_two_peers_on_sub_groups_of_one_launch(reference, second):
    """Ranks {0, 1} and {2, 3} each run their own peer over a DeviceMesh of their
    2-rank group; a group trained on other data (planted) must differ."""
    runs = [TPRun(CFG, steps=STEPS, batch_size=BATCH),
            TPRun(CFG, steps=STEPS, batch_size=BATCH, **second)]
    out = launch(workers_tp_peer.torch_tp_on_subgroups, 4, runs, timeout=90)
    assert [(r["world_rank"], r["group"], r["rank"]) for r in out] == \
        [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)]
    first, other = (max_differences(collect(r, ranks), reference)
                    for r, ranks in zip(runs, [out[:2], out[2:]]))
    assert within(first), first
    if "data_seed" in second:
        assert other["loss"] > 1e-3, other
    else:
        assert within(other), other


@pytest.mark.parametrize("run, t, match", [
    (TPRun(CFG), 3, "tp=3 must divide n_heads=4"),
    (TPRun(GPTConfig(seq_len=18), sequence_parallel=True), 4,
     "tp=4 must divide seq_len=18"),
    ("not a run", 2, "run must be a TPRun"),
])
def test_bad_input_is_refused_before_any_rank_starts(run, t, match, monkeypatch):
    monkeypatch.setattr(sys.modules["parlab.launch"], "launch",
                        lambda *a, **k: pytest.fail("a rank started"))
    with pytest.raises(ValueError, match=match):
        tp.run(dataclasses.replace(run, peer="dtensor") if isinstance(run, TPRun) else run, t)
