"""Expert parallelism against the single-device MoE reference: same losses, last-step
gradients, final parameters AND the same dropped tokens, for ep 1/2/4, top-1 and top-2,
capacity factors 0.5 / 1.0 / 1.25 / none; with data parallelism on the same ranks;
planted bugs caught; the peers equal the reference; the bytes each all-to-all moves."""

from __future__ import annotations

import pytest
import workers_ep

import parlab
from parlab import cost
from parlab import expert_parallel as ep
from parlab.expert_parallel import EPRun, runner
from parlab.model import GPTConfig, max_differences, reference_train

STEPS, BATCH = 3, 8
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}
FACTORS = [0.5, 1.0, 1.25, None]


def config(top_k=1, capacity_factor=None, **kw):
    return GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2,
                     n_experts=4, top_k=top_k, capacity_factor=capacity_factor, **kw)


_REFS = {}


def reference(cfg):
    key = repr(cfg)
    if key not in _REFS:
        _REFS[key] = reference_train(cfg, STEPS, BATCH)
    return _REFS[key]


def within(diff):
    return all(diff[k] < TOL[k] for k in TOL)


def dropped(result, step, layer):
    return sorted(t for r in result.ranks for t in r["dropped"][step][layer])


def same_drops(result, ref):
    return all(dropped(result, s, layer) == sorted(ref["moe"][s][layer]["dropped"])
               for s in range(STEPS) for layer in ref["moe"][s])


@pytest.mark.parametrize("capacity_factor", FACTORS)
@pytest.mark.parametrize("top_k", [1, 2])
@pytest.mark.parametrize("world", [1, 2, 4])
def test_matches_the_single_device_reference(world, top_k, capacity_factor):
    cfg = config(top_k, capacity_factor)
    ref = reference(cfg)
    result = ep.run(EPRun(cfg, steps=STEPS, batch_size=BATCH), world)
    assert within(max_differences(result, ref)), max_differences(result, ref)
    assert set(result.state_dict) == set(ref["state_dict"])
    assert same_drops(result, ref)
    # every rank holds E / ep experts and counts what they received
    per = [set(r["tokens_per_expert"][0]["blocks.0.moe"]) for r in result.ranks]
    assert sorted(e for s in per for e in s) == list(range(4))
    kept = ref["moe"][0]["blocks.0.moe"]["kept"]
    assert {e: n for r in result.ranks for e, n in r["tokens_per_expert"][0]["blocks.0.moe"]
            .items()} == dict(enumerate(kept))


def test_capacity_drops_what_the_formula_says():
    for k in (1, 2):
        for cf in FACTORS:
            moe = reference(config(k, cf))["moe"][0]["blocks.0.moe"]
            n = BATCH * 16
            if cf is None:
                assert moe["capacity"] is None and moe["dropped"] == []
                continue
            cap = cost.expert_capacity(n, 4, cf, k)
            assert moe["capacity"] == cap
            assert moe["kept"] == [min(r, cap) for r in moe["routed"]]
            assert len(moe["dropped"]) == sum(moe["routed"]) - sum(moe["kept"])


def test_data_times_expert_parallel():
    # 4 ranks: 2 EP groups of 2, each expert on 2 ranks; the batch over all 4
    for cfg in (config(2, 1.0), config(1, 0.5, balancer="bias", aux_loss_coef=0.0,
                                       moe_layers=(1,))):
        ref = reference(cfg)
        result = ep.run(EPRun(cfg, steps=STEPS, batch_size=BATCH, ep=2), 4)
        assert within(max_differences(result, ref)), max_differences(result, ref)
        assert same_drops(result, ref)


def test_the_bias_balancer_moves_the_same_biases():
    cfg = config(2, 1.25, balancer="bias", bias_update_rate=0.01)
    ref = reference(cfg)
    assert ref["state_dict"]["blocks.0.moe.expert_bias"].abs().max() > 0
    result = ep.run(EPRun(cfg, steps=STEPS, batch_size=BATCH), 2)
    assert within(max_differences(result, ref))


def test_two_groups_in_one_launch():
    runs = [EPRun(config(1, 1.0), steps=STEPS, batch_size=BATCH),
            EPRun(config(2, None), steps=STEPS, batch_size=BATCH)]
    out = parlab.launch(workers_ep.ep_on_subgroups, 4, runs, timeout=120)
    for run, ranks in zip(runs, (out[:2], out[2:])):
        result = ep.collect(run, ranks)
        assert within(max_differences(result, reference(run.config)))
        assert same_drops(result, reference(run.config))


@pytest.mark.parametrize("bug", ["split_order", "no_combine_grad"])
def test_a_planted_bug_is_caught(bug):
    cfg = config(2, 1.0)
    run = EPRun(cfg, steps=STEPS, batch_size=BATCH)
    result = ep.collect(run, parlab.launch(workers_ep.buggy_worker, 2, run, bug))
    ref = reference(cfg)
    if bug == "no_combine_grad":  # the experts never get a gradient, so never train
        assert {n for n in ref["grads"] if n not in result.grads} == \
            {n for n in ref["grads"] if ".experts." in n}
        result.grads = {n: result.grads.get(n, 0 * g) for n, g in ref["grads"].items()}
    diff = max_differences(result, ref)
    assert diff["grad"] > 100 * TOL["grad"] and diff["param"] > 100 * TOL["param"], diff
    if bug == "split_order":  # the forward itself is wrong
        assert diff["loss"] > 100 * TOL["loss"], diff


@pytest.mark.parametrize("peer", ["dense", "torch_a2a"])
@pytest.mark.parametrize("world, ep_", [(2, None), (4, 2)])
def test_peers_equal_the_reference(peer, world, ep_):
    cfg = config(2, 1.0)
    run = EPRun(cfg, steps=STEPS, batch_size=BATCH, ep=ep_, peer=peer)
    out = parlab.launch(runner.train_worker, world, run, timeout=120)
    result = ep.collect(run, out)
    assert within(max_differences(result, reference(cfg)))
    assert same_drops(result, reference(cfg))
    if peer == "dense":  # no all-to-all at all
        assert not [c for r in out for c in r["collectives"] if c["op"] == "all_to_all"]


# --- the bytes ----------------------------------------------------------------------

@pytest.mark.parametrize("world, top_k", [(2, 1), (4, 2)])
def test_balanced_routing_bytes_equal_the_formula(world, top_k):
    tokens, d = 32, 16
    out = parlab.launch(workers_ep.balanced_bytes, world, tokens, d, top_k, 4)
    want = cost.moe_all_to_all_bytes(tokens, d, top_k, world, bytes_per_value=4)
    for sent in out:
        assert sent == {"forward": want["forward"], "backward": want["backward"]}


@pytest.mark.parametrize("world", [2, 4])
def test_counted_bytes_are_the_rows_that_leave_the_rank(world):
    # A rank's dispatch sends its assignments to remote experts; its combine sends back
    # the rows it received, so per rank forward = (out + in) rows. Summed over the
    # ranks that is twice the rows that travel: the formula at each rank's measured
    # remote fraction, summed.
    cfg, tokens = config(2, 1.25), BATCH // world * 16
    result = ep.run(EPRun(cfg, steps=1, batch_size=BATCH), world)
    for layer in ("blocks.0.moe", "blocks.1.moe"):
        counted, want = 0, 0
        for r in result.ranks:
            per = r["a2a_bytes"][0][layer]
            assert per["forward"] == per["backward"] > 0
            counted += per["forward"]
            out = sum(c["payload_sent"] for c in r["collectives"] if c["layer"] == layer
                      and c["operator"] == "dispatch" and c["direction"] == "forward")
            want += cost.moe_all_to_all_bytes(tokens, cfg.d_model, 2, world, remote_fraction=
                                              out / (tokens * 2 * cfg.d_model * 4))["forward"]
        assert counted == pytest.approx(want)
    ops = {(c["operator"], c["direction"]) for c in result.ranks[0]["collectives"]}
    assert {("counts", "forward"), ("global_counts", "forward"), ("dispatch", "forward"),
            ("dispatch", "backward"), ("combine", "forward"), ("combine", "backward")} <= ops


def test_ep1_sends_no_payload():
    result = ep.run(EPRun(config(2, 1.0), steps=1, batch_size=BATCH), 1)
    assert all(v == {"forward": 0, "backward": 0}
               for v in result.ranks[0]["a2a_bytes"][0].values())


# --- bad input --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, world, field", [
    ({"config": GPTConfig()}, 2, "n_experts"),
    ({"ep": 3}, 6, "ep=3 must divide n_experts"),
    ({"ep": 4}, 6, "ep=4 must divide world_size"),
    ({"ep": 0}, 2, "ep"),
    ({"ep": 2.0}, 2, "ep"),
    ({"batch_size": 6}, 4, "batch_size"),
    ({"trace": 1}, 2, "trace"),
])
def test_bad_input_is_refused_before_any_rank_starts(kwargs, world, field):
    run = EPRun(**{"config": config(), "batch_size": BATCH, **kwargs})
    with pytest.raises(ValueError, match=field):
        ep.run(run, world)


@pytest.mark.parametrize("kwargs, field", [
    ({"n_experts": -1}, "n_experts"), ({"n_experts": 4, "top_k": 5}, "top_k"),
    ({"n_experts": 4, "capacity_factor": 0.0}, "capacity_factor"),
    ({"n_experts": 4, "aux_loss_coef": -1.0}, "aux_loss_coef"),
    ({"n_experts": 4, "z_loss_coef": float("nan")}, "z_loss_coef"),
    ({"n_experts": 4, "moe_layers": (0, 7)}, "moe_layers"),
    ({"n_experts": 4, "moe_layers": (1, 1)}, "moe_layers"),
    ({"n_experts": 4, "moe_layers": 1}, "moe_layers"),
    ({"n_experts": 4, "balancer": "loss"}, "balancer"),
    ({"n_experts": 4, "bias_update_rate": -0.1}, "bias_update_rate"),
    ({"n_experts": 4, "renormalize": 1}, "renormalize"),
])
def test_moe_config_is_validated(kwargs, field):
    with pytest.raises(ValueError, match=field):
        GPTConfig(n_layers=2, **kwargs)
