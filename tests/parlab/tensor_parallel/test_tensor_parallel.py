"""Tensor parallelism (and sequence parallelism) against the single-device reference:
same losses, last-step gradients and final parameters after 3 AdamW steps in fp32, for
every degree that divides the heads, with each option; a planted bug must be caught;
the collectives each layer issues are the ones the papers list."""

from __future__ import annotations

from collections import Counter

import pytest
import workers_tp

import parlab
from parlab import tensor_parallel as tp
from parlab.model import GPTConfig, max_differences, reference_train
from parlab.tensor_parallel import TPRun

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
STEPS, BATCH = 3, 8
# Summation order differs from the single device (partial sums over ranks), so not
# bit-exact; AdamW's first steps move a weight by ~lr whatever the gradient's size, which
# amplifies tiny gradient differences in the parameters, hence the looser param bound.
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}


@pytest.fixture(scope="module")
def reference():
    return reference_train(CFG, STEPS, BATCH)


def within(diff):
    return all(diff[k] < TOL[k] for k in TOL)


@pytest.mark.parametrize("t", [1, 2, 4])
@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_matches_the_single_device_reference(reference, t, sequence_parallel):
    result = tp.run(TPRun(CFG, steps=STEPS, batch_size=BATCH,
                          sequence_parallel=sequence_parallel), t)
    diff = max_differences(result, reference)
    assert within(diff), diff
    assert set(result.state_dict) == set(reference["state_dict"])
    for name, p in reference["state_dict"].items():
        assert result.state_dict[name].shape == p.shape, name


@pytest.mark.parametrize("t, sequence_parallel, recompute", [
    (2, False, "selective"), (4, True, "selective")])
def test_options_keep_the_numbers(reference, t, sequence_parallel, recompute):
    for overlap in (False, True):
        result = tp.run(TPRun(CFG, steps=STEPS, batch_size=BATCH, overlap=overlap,
                              sequence_parallel=sequence_parallel, recompute=recompute), t)
        assert within(max_differences(result, reference)), (overlap, recompute)


def test_the_tolerances_are_tight(reference):
    # Training moved the weights by far more than the tolerance: a run that skipped an
    # update, or trained on the wrong data, could not pass.
    from parlab.model import GPT
    init = GPT(CFG).state_dict()
    moved = max((reference["state_dict"][k] - v).abs().max().item() for k, v in init.items())
    assert moved > 100 * TOL["param"]


@pytest.mark.parametrize("bug, sequence_parallel", [
    ("no_g", False), ("no_f", False), ("no_sp_grad_sync", True)])
def test_a_planted_bug_is_caught(reference, bug, sequence_parallel):
    run = TPRun(CFG, steps=STEPS, batch_size=BATCH, sequence_parallel=sequence_parallel)
    ranks = parlab.launch(workers_tp.buggy_worker, 2, run, bug)
    diff = max_differences(tp.collect(run, ranks), reference)
    assert diff["grad"] > 100 * TOL["grad"], diff
    if bug == "no_g":  # the forward itself is wrong
        assert diff["loss"] > 100 * TOL["loss"], diff


def test_two_groups_in_one_launch_each_match_the_reference(reference):
    runs = [TPRun(CFG, steps=STEPS, batch_size=BATCH),
            TPRun(CFG, steps=STEPS, batch_size=BATCH, sequence_parallel=True, overlap=True)]
    out = parlab.launch(workers_tp.tp_on_subgroups, 4, runs, timeout=90)
    assert [(r["world_rank"], r["group"]) for r in out] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    for run, ranks in zip(runs, (out[:2], out[2:])):
        assert within(max_differences(tp.collect(run, ranks), reference)), run


# --- the collectives, counted -------------------------------------------------------

def per_layer(result, layer="blocks.0"):
    return Counter((c["direction"], c["op"]) for c in result.ranks[0]["collectives"]
                   if c["step"] == 0 and (c["layer"] or "").startswith(layer))


@pytest.mark.parametrize("t", [2, 4])
def test_megatron_layer_is_two_all_reduces_each_way(t):
    result = tp.run(TPRun(CFG, steps=1, batch_size=BATCH), t)
    assert per_layer(result) == {("forward", "all_reduce"): 2, ("backward", "all_reduce"): 2}
    operators = Counter(c["operator"] for c in result.ranks[0]["collectives"]
                        if c["layer"].startswith("blocks.0"))
    assert operators == {"g": 2, "f": 2}
    # the loss: three all-reduces of one number per token, never the logits
    ce = [c for c in result.ranks[0]["collectives"] if c["operator"].startswith("ce_")]
    assert len(ce) == 3
    assert all(c["bytes_sent"] <= 2 * BATCH * CFG.seq_len * 4 for c in ce)


def test_sequence_parallel_layer_trades_each_all_reduce_for_a_pair():
    result = tp.run(TPRun(CFG, steps=1, batch_size=BATCH, sequence_parallel=True), 2)
    assert per_layer(result) == {("forward", "all_gather"): 2, ("forward", "reduce_scatter"): 2,
                                 ("backward", "reduce_scatter"): 2,
                                 # the row layers' g-bar, and the re-gather of the saved shard
                                 ("backward", "all_gather"): 4}
    sync = [c for c in result.ranks[0]["collectives"] if c["operator"] == "sp_param_grads"]
    assert len(sync) == 1  # one flat all-reduce per step


def test_tp1_issues_no_collective():
    for sp in (False, True):
        result = tp.run(TPRun(CFG, steps=1, batch_size=BATCH, sequence_parallel=sp), 1)
        assert result.ranks[0]["collectives"] == []


def test_activations_shrink_with_t_and_more_with_sequence_parallelism():
    per = {}
    for t in (1, 2, 4):
        for sp in (False, True):
            r = tp.run(TPRun(CFG, steps=1, batch_size=BATCH, sequence_parallel=sp), t)
            layers = r.ranks[0]["activations"]["per_layer"]
            assert len(layers) == CFG.n_layers and len(set(layers)) == 1
            per[t, sp] = layers[0]
    assert per[1, False] == per[1, True]
    assert per[1, False] > per[2, False] > per[4, False]
    assert per[2, True] < per[2, False] and per[4, True] < per[4, False]
    # with sequence parallelism (nearly) everything is divided by t
    assert per[4, True] == pytest.approx(per[1, False] / 4, rel=0.01)


def test_selective_recomputation_drops_the_attention_scores():
    full = tp.run(TPRun(CFG, steps=1, batch_size=BATCH), 2).ranks[0]["activations"]["per_layer"][0]
    sel = tp.run(TPRun(CFG, steps=1, batch_size=BATCH, recompute="selective"), 2
                 ).ranks[0]["activations"]["per_layer"][0]
    # the softmax output: a (B, heads/t, T, T) fp32 tensor, and the causal mask (T, T) bools
    scores = BATCH * (CFG.n_heads // 2) * CFG.seq_len ** 2 * 4 + CFG.seq_len ** 2
    assert full - sel == scores


# --- bad input --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, t, field", [
    ({}, 3, "n_heads"),
    ({"config": GPTConfig(vocab_size=66, seq_len=16, d_model=32, n_heads=4)}, 4, "vocab_size"),
    ({"config": GPTConfig(vocab_size=64, seq_len=18, d_model=32, n_heads=4),
      "sequence_parallel": True}, 4, "seq_len"),
    ({"config": GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, d_ff=66)}, 4, "d_ff"),
    ({"recompute": "full"}, 2, "recompute"),
    ({"overlap": 1}, 2, "overlap"),
    ({"sequence_parallel": "yes"}, 2, "sequence_parallel"),
])
def test_bad_input_is_refused_before_any_rank_starts(kwargs, t, field):
    with pytest.raises(ValueError, match=field):
        tp.run(TPRun(**{"config": CFG, **kwargs}), t)


def test_run_wants_a_tprun():
    with pytest.raises(ValueError, match="TPRun"):
        tp.run(object(), 2)


@pytest.mark.parametrize("t", [1, 2, 4])
@pytest.mark.parametrize("sequence_parallel", [False, True])
@pytest.mark.parametrize("recompute", ["none", "selective"])
def test_activation_bytes_equal_the_formula(t, sequence_parallel, recompute):
    # What autograd saved for backward in one block (saved-tensor hooks, weights left
    # out, each storage once) is exactly Korthikanti's count for a layer without
    # dropout, in fp32, plus LayerNorm's mean/rstd and the causal mask.
    from parlab import cost
    r = tp.run(TPRun(CFG, steps=1, batch_size=BATCH, sequence_parallel=sequence_parallel,
                     recompute=recompute), t)
    predicted = cost.activation_memory(CFG.seq_len, BATCH, CFG.d_model, CFG.n_heads, tp=t,
                                       sequence_parallel=sequence_parallel, recompute=recompute,
                                       bytes_per_value=4, layer="lab")
    assert r.ranks[0]["activations"]["per_layer"] == [predicted] * CFG.n_layers


def test_collectives_counted_equal_the_formula():
    from parlab import cost
    for t in (2, 4):
        for sp in (False, True):
            r = tp.run(TPRun(CFG, steps=1, batch_size=BATCH, sequence_parallel=sp), t)
            mine = [c for c in r.ranks[0]["collectives"] if c["layer"].startswith("blocks.0")]
            formula = cost.tp_comm_per_layer(BATCH, CFG.seq_len, CFG.d_model, t, sp,
                                             bytes_per_value=4)
            assert len(mine) == formula["collectives"]
            assert sum(c["bytes_sent"] for c in mine) == pytest.approx(formula["bytes"])
            for direction in ("forward", "backward"):
                assert Counter(c["op"] for c in mine if c["direction"] == direction) \
                    == formula[direction]


def test_recompute_attention_names_what_it_wrapped_and_refuses_a_model_without_cores():
    import torch.nn as nn

    from parlab.model import GPT
    from parlab.tensor_parallel import recompute_attention
    assert recompute_attention(GPT(CFG)) == [f"blocks.{i}.attn" for i in range(CFG.n_layers)]
    with pytest.raises(ValueError, match="recompute_attention found no attention core in Sequential"):
        recompute_attention(nn.Sequential(nn.Linear(2, 2)))
