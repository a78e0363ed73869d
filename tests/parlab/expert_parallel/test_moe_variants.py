"""The MoE variants under expert parallelism against the single-device reference (same
losses, last-step gradients, final parameters, drops, tokens without an expert), each
with planted bugs caught, and their counts against ``parlab.cost``:
shared + fine-grained experts (DeepSeekMoE), expert choice routing (Zhou et al. 2022),
dropless MoE with a padded batched GEMM (MegaBlocks' dense stand-in)."""

from __future__ import annotations

import pytest
import workers_moe_variants

import parlab
from parlab import cost
from parlab import expert_parallel as ep
from parlab.expert_parallel import EPRun, variants
from lessons.l04_expert_parallel import experiments
from parlab.model import GPT, GPTConfig, max_differences, reference_train

STEPS, BATCH = 3, 8
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}
TOKENS = BATCH * 16


def base(**kw):
    return GPTConfig(**{**dict(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2,
                               n_experts=4, d_ff=64), **kw})


DEEPSEEK = variants.deepseek_moe(base(top_k=2, capacity_factor=1.0), segments=2, n_shared=1)
CHOICE = variants.expert_choice(base(), 1.0)
DROPLESS = variants.dropless(base(top_k=2))
_REFS = {}


def reference(cfg):
    if repr(cfg) not in _REFS:
        _REFS[repr(cfg)] = reference_train(cfg, STEPS, BATCH)
    return _REFS[repr(cfg)]


def within(diff):
    return all(diff[k] < TOL[k] for k in TOL)


def gathered(result, key, step, layer="blocks.0.moe"):
    return sorted(t for r in result.ranks for t in r["moe_stats"][step][layer][key])


# --- 1. shared + fine-grained experts ---------------------------------------------------

def test_deepseek_config_keeps_the_flops_and_names_the_shared_experts():
    assert (DEEPSEEK.n_experts, DEEPSEEK.top_k, DEEPSEEK.d_ff, DEEPSEEK.n_shared_experts) == \
        (8, 3, 32, 1)
    f = cost.fine_grained_experts(4, 2, 64, 2, 1)
    assert f["active_width"] == 2 * 64 and f["combinations"] == 56      # C(8, 3)
    assert cost.fine_grained_experts(16, 2, 1024)["combinations"] == 120  # DeepSeekMoE §3.1
    assert cost.fine_grained_experts(16, 2, 1024, 4)["combinations"] == 4_426_165_368
    names = set(GPT(DEEPSEEK).state_dict())
    assert "blocks.0.moe.shared.0.fc1.weight" in names and "blocks.0.moe.experts.7.fc2.bias" in names
    # (that the shared experts are synced as replicated parameters, not as the EP layer's
    # experts, is test_deepseek_planted_bugs_are_caught's "shared_as_expert")


@pytest.mark.parametrize("world, ep_", [(2, None), (4, 2), (4, None)])
def test_deepseek_moe_matches_the_reference(world, ep_):
    ref = reference(DEEPSEEK)
    result = ep.run(EPRun(DEEPSEEK, steps=STEPS, batch_size=BATCH, ep=ep_), world)
    assert within(max_differences(result, ref)), max_differences(result, ref)
    for s in range(STEPS):
        for layer, stats in ref["moe"][s].items():
            assert gathered(result, "dropped", s, layer) == sorted(stats["dropped"])
            # drops are what the capacity formula says from the counts per expert
            rows = cost.grouped_gemm_rows(stats["routed"], stats["capacity"])
            assert len(stats["dropped"]) == rows["dropped"] > 0
    assert ref["moe"][0]["blocks.0.moe"]["capacity"] == cost.expert_capacity(TOKENS, 8, 1.0, 3)


def test_deepseek_bytes_follow_the_rows_per_token():
    result = ep.run(EPRun(DEEPSEEK, steps=1, batch_size=BATCH), 2)
    rows = experiments.a2a_check(result, DEEPSEEK, BATCH)
    assert all(x["measured"] == x["counted"] for x in rows)
    for layer in {x["layer"] for x in rows}:
        mine = [x for x in rows if x["layer"] == layer]
        assert sum(x["measured"] for x in mine) == pytest.approx(sum(x["formula"] for x in mine))
    # balanced: fine-grained top-4 sends 2x top-2's rows; the shared expert takes one back
    b = [cost.moe_all_to_all_bytes(64, 32, k, 2)["total"] for k in (2, 4, 3)]
    assert b[1] == 2 * b[0] and b[2] == 1.5 * b[0]


def test_deepseek_planted_bugs_are_caught():
    run = EPRun(DEEPSEEK, steps=STEPS, batch_size=BATCH)
    bugs = ["shared_dropped", "shared_twice", "shared_as_expert"]
    out = parlab.launch(workers_moe_variants.buggy_runs, 2, run, bugs, timeout=120)
    ref = reference(DEEPSEEK)
    for i, bug in enumerate(bugs):
        result = ep.collect(run, [r[i] for r in out])
        if bug == "shared_dropped":  # the shared experts never get a gradient
            assert {n for n in ref["grads"] if n not in result.grads} == \
                {n for n in ref["grads"] if ".shared." in n}
            result.grads = {n: result.grads.get(n, 0 * g) for n, g in ref["grads"].items()}
        diff = max_differences(result, ref)
        assert diff["grad"] > 100 * TOL["grad"] and diff["param"] > 100 * TOL["param"], (bug, diff)
        if bug != "shared_as_expert":  # a wrong forward, not only a wrong sync
            assert diff["loss"] > 100 * TOL["loss"], (bug, diff)


# --- 2. expert choice -----------------------------------------------------------------------

def test_expert_choice_fills_every_expert_and_counts_tokens_without_one():
    for c in (1.0, 2.0):
        stats = reference(variants.expert_choice(base(), c))["moe"][0]["blocks.0.moe"]
        cap = cost.expert_capacity(TOKENS, 4, c)
        assert stats["kept"] == [cap] * 4 and stats["dropped"] == []
        h = stats["experts_per_token"]
        assert sum(h) == TOKENS and sum(j * n for j, n in enumerate(h)) == 4 * cap
        assert len(stats["unrouted"]) == h[0] and (h[0] > 0 or c > 1)
        assert sum(variants.experts_per_token(stats).values()) == pytest.approx(1.0)
    p = cost.expert_choice_coverage(4, 1.0)
    assert p[0] == pytest.approx(0.75 ** 4) and sum(p) == pytest.approx(1.0)


@pytest.mark.parametrize("world, ep_", [(2, None), (4, 2)])
def test_expert_choice_matches_the_reference(world, ep_):
    ref = reference(CHOICE)
    result = ep.run(EPRun(CHOICE, steps=STEPS, batch_size=BATCH, ep=ep_), world)
    assert within(max_differences(result, ref)), max_differences(result, ref)
    for s in range(STEPS):
        for layer, stats in ref["moe"][s].items():
            assert gathered(result, "unrouted", s, layer) == stats["unrouted"]
            assert all(r["moe_stats"][s][layer]["experts_per_token"] == stats["experts_per_token"]
                       for r in result.ranks)


def test_expert_choice_planted_bug_is_caught():
    run = EPRun(CHOICE, steps=STEPS, batch_size=BATCH)
    out = parlab.launch(workers_moe_variants.buggy_runs, 2, run, ["local_choice"], timeout=120)
    diff = max_differences(ep.collect(run, [r[0] for r in out]), reference(CHOICE))
    assert diff["loss"] > 100 * TOL["loss"] and diff["param"] > 100 * TOL["param"], diff


# --- 3. dropless, padded GEMM ------------------------------------------------------------------

def test_padded_gemm_equals_the_loop_and_counts_its_padding():
    loop, padded = reference(base(top_k=2)), reference(DROPLESS)
    assert within(max_differences(padded, loop)), max_differences(padded, loop)
    for s in range(STEPS):
        for layer, stats in padded["moe"][s].items():
            rows = cost.grouped_gemm_rows(stats["routed"])
            assert stats["dropped"] == [] and stats["rows_computed"] == rows["padded"]
            assert loop["moe"][s][layer]["rows_computed"] == rows["loop"] == 2 * TOKENS


@pytest.mark.parametrize("world, ep_", [(2, None), (4, 2)])
def test_dropless_matches_the_reference(world, ep_):
    ref = reference(DROPLESS)
    result = ep.run(EPRun(DROPLESS, steps=STEPS, batch_size=BATCH, ep=ep_), world)
    assert within(max_differences(result, ref)), max_differences(result, ref)
    for r in result.ranks:  # each rank pads its own experts' groups to its busiest one
        local = list(r["tokens_per_expert"][0]["blocks.0.moe"].values())
        assert r["moe_stats"][0]["blocks.0.moe"]["rows_computed"] == \
            cost.grouped_gemm_rows(local)["padded"]


def test_dropless_planted_bug_is_caught():
    run = EPRun(DROPLESS, steps=STEPS, batch_size=BATCH)
    out = parlab.launch(workers_moe_variants.buggy_runs, 2, run, ["padded_misaligned"],
                        timeout=120)
    diff = max_differences(ep.collect(run, [r[0] for r in out]), reference(DROPLESS))
    assert diff["loss"] > 100 * TOL["loss"] and diff["param"] > 100 * TOL["param"], diff


# --- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, field", [
    ({"router": "expert_choice"}, "capacity_factor"),
    ({"router": "experts"}, "router"),
    ({"expert_gemm": "grouped"}, "expert_gemm"),
    ({"n_shared_experts": -1}, "n_shared_experts"),
    ({"n_shared_experts": 1.0}, "n_shared_experts"),
])
def test_variant_config_is_validated(kwargs, field):
    with pytest.raises(ValueError, match=field):
        base(**kwargs)


def test_bad_variant_arguments():
    with pytest.raises(ValueError, match="segments"):
        variants.deepseek_moe(base(d_ff=63), segments=2)
    with pytest.raises(ValueError, match="n_shared"):
        variants.deepseek_moe(base(top_k=1), segments=2, n_shared=2)
    import torch.nn as nn
    from parlab.moe import MoE
    with pytest.raises(ValueError, match="padded"):
        MoE(nn.Linear(4, 2, bias=False), [nn.Linear(4, 4), nn.Linear(4, 4)], expert_gemm="padded")


def test_notebook_experiments_build():
    from lessons.l04_expert_parallel import experiments_variants as xv
    ec, dl = xv.expert_choice_rows(factors=(1.0,)), xv.dropless_rows()
    assert ec[0]["none"] > 0 and ec[0]["max_diff"] < 1e-5
    assert all(r["computed"] == r["padded"] >= r["block"] >= r["loop"] for r in dl)
    pytest.importorskip("plotly")
    from lessons.l04_expert_parallel import figures
    assert "<table" in figures.variant_table(ec).data and "<table" in figures.variant_table(dl).data
