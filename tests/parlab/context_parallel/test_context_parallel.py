"""Context parallelism against the single device: ring attention and DeepSpeed-Ulysses
equal full attention (forward and dQ/dK/dV, fp64), training with the sequence sharded
equals reference_train (fp32), planted bugs are caught, two groups share one launch,
and the bytes and attention work each rank counts are the formulas' (parlab.cost)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import workers_cp

import parlab
from parlab import context_parallel as cp
from parlab import cost
from parlab.context_parallel import CPRun, shard_positions, shard_sequence, unshard_sequence
from parlab.model import GPTConfig, max_differences, reference_train

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
STEPS, BATCH = 3, 8
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}  # as tests/parlab/tensor_parallel/test_tensor_parallel.py
SHAPE = (2, 4, 16, 8)  # batch, heads, whole sequence, head_dim
EXACT = 1e-10          # fp64


@pytest.fixture(scope="module")
def reference():
    return reference_train(CFG, STEPS, BATCH)


def within(diff):
    return all(diff[k] < TOL[k] for k in TOL)


def full_attention(causal):
    q, k, v, dout = workers_cp.full_inputs(SHAPE)
    for t in (q, k, v):
        t.requires_grad_()
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return dict(zip(("out", "dq", "dk", "dv"),
                    (out.detach(), *torch.autograd.grad(out, (q, k, v), dout))))


def gathered(ranks, layout):
    return {key: unshard_sequence([r[key] for r in ranks], 2, layout)
            for key in ("out", "dq", "dk", "dv")}


def worst(got, want):
    return max((got[k] - want[k]).abs().max().item() for k in want)


# --- layouts --------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_shards_put_back_together_and_know_their_positions(layout, n):
    x = torch.arange(2 * 24 * 3).view(2, 24, 3)
    shards = [shard_sequence(x, 1, n, r, layout) for r in range(n)]
    assert torch.equal(unshard_sequence(shards, 1, layout), x)
    for r, s in enumerate(shards):
        assert torch.equal(s[0, :, 0] // 3, shard_positions(24, n, r, layout))
        assert s.size(1) == 24 // n


def test_zigzag_pairs_an_early_chunk_with_a_late_one():
    # 4 ranks, 8 chunks of 2 positions: rank r holds chunks r and 7 - r
    assert [shard_positions(16, 4, r, "zigzag").tolist() for r in range(4)] == [
        [0, 1, 14, 15], [2, 3, 12, 13], [4, 5, 10, 11], [6, 7, 8, 9]]


@pytest.mark.parametrize("call, field", [
    (lambda: shard_sequence(torch.zeros(1, 10), 1, 4, 0), "seq_len"),
    (lambda: shard_sequence(torch.zeros(1, 12), 1, 4, 0, "zigzag"), "seq_len"),
    (lambda: shard_positions(16, 4, 4), "rank"),
    (lambda: shard_positions(16, 4, 0, "striped"), "layout"),
    (lambda: shard_positions(16, 0, 0), "world_size"),
    (lambda: unshard_sequence([torch.zeros(3)], 0, "zigzag"), "even"),
    (lambda: cp.ring_attention(torch.zeros(1, 2, 4, 8), torch.zeros(1, 2, 4, 4),
                               torch.zeros(1, 2, 4, 8)), "shape"),
    (lambda: cp.ring_attention(*[torch.zeros(1, 2, 4, 8)] * 3, causal=1), "causal"),
    (lambda: cp.ring_attention(*[torch.zeros(2, 4, 8)] * 3), "4-d"),
    (lambda: cp.ulysses_attention(*[torch.zeros(1, 2, 3, 8)] * 3, layout="zigzag"), "even"),
])
def test_bad_input_is_refused(call, field):
    with pytest.raises(ValueError, match=field):
        call()


# --- attention equals full attention (fp64) -------------------------------------------

@pytest.mark.parametrize("kind", ["ring", "ulysses"])
@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
@pytest.mark.parametrize("causal", [True, False])
def test_attention_equals_full_attention(kind, n, layout, causal):
    ranks = parlab.launch(workers_cp.attention_worker, n, kind, SHAPE, causal, layout,
                          timeout=60)
    assert worst(gathered(ranks, layout), full_attention(causal)) < EXACT


def test_one_rank_is_plain_attention():
    for kind in ("ring", "ulysses"):
        ranks = parlab.launch(workers_cp.attention_worker, 1, kind, SHAPE, True, "zigzag",
                              timeout=60)
        assert worst(gathered(ranks, "zigzag"), full_attention(True)) < EXACT


@pytest.mark.parametrize("kind", ["ring", "ulysses"])
def test_attention_on_two_groups_in_one_launch(kind):
    ranks = parlab.launch(workers_cp.attention_worker, 4, kind, SHAPE, True, "zigzag", 0, 2,
                          timeout=60)
    want = full_attention(True)
    for group in (ranks[:2], ranks[2:]):
        assert worst(gathered(group, "zigzag"), want) < EXACT


@pytest.mark.parametrize("bug", ["wrong_merge", "missing_block"])
@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_a_planted_attention_bug_is_caught(bug, layout):
    ranks = parlab.launch(workers_cp.buggy_attention_worker, 4, bug, SHAPE, True, layout,
                          timeout=60)
    assert worst(gathered(ranks, layout), full_attention(True)) > 1e-3


def test_ring_saves_only_shards_for_backward():
    # q, k, v, the output and the log-sum-exp: nothing of size s^2 (Ulysses keeps the
    # (s, s) probabilities of its heads, which is why it is larger)
    B, H, S, D = SHAPE
    for n in (2, 4):
        ranks = parlab.launch(workers_cp.saved_bytes_worker, n, "ring", SHAPE, "zigzag")
        shard = ranks[0]["shard"]
        assert [r["saved"] for r in ranks] == [4 * shard + shard // D] * n
        uly = parlab.launch(workers_cp.saved_bytes_worker, n, "ulysses", SHAPE, "zigzag")
        assert uly[0]["saved"] >= B * (H // n) * S * S * 8


def test_ulysses_refuses_a_degree_that_does_not_divide_the_heads():
    msgs = parlab.launch(workers_cp.refusal_worker, 3, (1, 4, 6, 8))
    assert all(m and "n_heads=4" in m and "cp=3" in m for m in msgs)


# --- training equals reference_train (fp32) -------------------------------------------

@pytest.mark.parametrize("attention", ["ring", "ulysses"])
@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_training_matches_the_single_device_reference(reference, attention, n, layout):
    result = cp.run(CPRun(CFG, steps=STEPS, batch_size=BATCH, layout=layout,
                          attention=attention), n)
    diff = max_differences(result, reference)
    assert within(diff), diff
    assert set(result.state_dict) == set(reference["state_dict"])
    # one flat all-reduce of the gradients per step, and nothing else outside attention
    sync = [c for c in result.ranks[0]["comm"] if c["operator"] == "cp_grad_sync"]
    assert len(sync) == (STEPS if n > 1 else 0)
    assert all(c["layer"] == "all" or c["layer"].endswith(".attn")
               for c in result.ranks[0]["comm"])


def test_the_tolerances_are_tight(reference):
    from parlab.model import GPT
    init = GPT(CFG).state_dict()
    moved = max((reference["state_dict"][k] - v).abs().max().item() for k, v in init.items())
    assert moved > 100 * TOL["param"]


@pytest.mark.parametrize("bug", ["wrong_merge", "missing_block"])
def test_a_planted_bug_is_caught_in_training(reference, bug):
    run = CPRun(CFG, steps=STEPS, batch_size=BATCH, layout="zigzag", attention="ring")
    diff = max_differences(cp.collect(run, parlab.launch(workers_cp.buggy_train_worker, 2,
                                                         run, bug)), reference)
    assert diff["loss"] > 100 * TOL["loss"] and diff["grad"] > 100 * TOL["grad"], diff


def test_two_groups_in_one_launch_each_match_the_reference(reference):
    runs = [CPRun(CFG, steps=STEPS, batch_size=BATCH, layout="zigzag", attention="ring"),
            CPRun(CFG, steps=STEPS, batch_size=BATCH, layout="contiguous",
                  attention="ulysses")]
    out = parlab.launch(workers_cp.cp_on_subgroups, 4, runs, timeout=90)
    assert [(r["world_rank"], r["group"]) for r in out] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    for run, ranks in zip(runs, (out[:2], out[2:])):
        assert within(max_differences(cp.collect(run, ranks), reference)), run


# --- counted = formula ------------------------------------------------------------------

@pytest.mark.parametrize("attention", ["ring", "ulysses"])
@pytest.mark.parametrize("n", [2, 4])
def test_bytes_per_layer_equal_the_formula(attention, n):
    r = cp.run(CPRun(CFG, steps=1, batch_size=BATCH, attention=attention), n)
    f = cost.cp_comm_per_layer(BATCH, CFG.seq_len, CFG.d_model, n, attention,
                               bytes_per_value=4)
    for rank in r.ranks:
        lc = rank["layer_comm"]
        assert lc["forward"] == {"messages": sum(f["forward"].values()),
                                 "bytes": f["forward_bytes"]}
        assert lc["backward"] == {"messages": sum(f["backward"].values()),
                                  "bytes": f["backward_bytes"]}
        assert lc["bytes"] == f["bytes"]
        layer = [c for c in rank["comm"] if c["layer"] == "blocks.0.attn" and c["step"] == 0]
        assert {c["op"] for c in layer} == set(f["forward"]) | set(f["backward"])
        # ring's point-to-point bytes are counted, not modelled
        assert all(c["bytes_modelled"] == (attention == "ulysses") for c in layer)


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_attention_work_per_rank_equals_the_formula(n, layout):
    r = cp.run(CPRun(CFG, steps=1, batch_size=BATCH, layout=layout), n)
    block = CFG.n_heads * (CFG.seq_len // n) ** 2   # one (s/cp)^2 block, every head
    f = cost.causal_work_per_rank(n, layout)
    for direction in ("forward", "backward"):  # backward recomputes the same blocks
        assert [x["attention_work"][direction] / block for x in r.ranks] == f["blocks"]


def test_zigzag_balances_the_work_contiguous_does_not():
    work = {layout: [x["attention_work"]["forward"] for x in
                     cp.run(CPRun(CFG, steps=1, batch_size=BATCH, layout=layout), 4).ranks]
            for layout in ("contiguous", "zigzag")}
    assert max(work["contiguous"]) / (sum(work["contiguous"]) / 4) == pytest.approx(1.6)
    assert len(set(work["zigzag"])) == 1
    assert sum(work["zigzag"]) == sum(work["contiguous"])


def test_ring_transfers_overlap_the_block_computation():
    r = cp.run(CPRun(CFG, steps=1, batch_size=BATCH, layout="zigzag", trace=True), 4)
    for rank in range(4):
        mine = [e for e in r.events if e["rank"] == rank and e["meta"].get("layer")
                == "blocks.0.attn" and e["meta"].get("direction") == "forward"]
        hops = [e for e in mine if e["kind"] == "comm"]
        blocks = [e for e in mine if e["name"] == "ring block"]
        assert len(hops) == 3 and len(blocks) == 4
        for hop in hops:  # posted before the step's block started, waited after it ended
            step = hop["meta"]["ring_step"]
            block = next(b for b in blocks if b["meta"]["ring_step"] == step)
            assert hop["start"] <= block["start"] and block["end"] <= hop["end"]


# --- bad input --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, n, field", [
    ({"config": GPTConfig(vocab_size=64, seq_len=18, d_model=32, n_heads=4)}, 4, "seq_len"),
    ({"layout": "contiguous", "config": GPTConfig(vocab_size=64, seq_len=18, d_model=32,
                                                  n_heads=4)}, 4, "seq_len"),
    ({"attention": "ulysses", "layout": "contiguous",
      "config": GPTConfig(vocab_size=64, seq_len=24, d_model=36, n_heads=6)}, 4, "n_heads"),
    ({"attention": "ulysses"}, 8, "n_heads"),
    ({"layout": "striped"}, 2, "layout"),
    ({"attention": "flash"}, 2, "attention"),
    ({"trace": 1}, 2, "trace"),
])
def test_bad_run_is_refused_before_any_rank_starts(kwargs, n, field):
    with pytest.raises(ValueError, match=field):
        cp.run(CPRun(**{"config": CFG, **kwargs}), n)


def test_run_wants_a_cprun():
    with pytest.raises(ValueError, match="CPRun"):
        cp.run(object(), 2)
