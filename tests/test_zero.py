"""ZeRO stages 0-3 against the single-device reference and against FSDP2; memory and
traffic measured against the ZeRO paper's formulas; bad input."""

import time

import pytest
import torch
import torch.distributed as dist

import parlab
from parlab import cost, zero
from parlab.zero import experiments as zero_peers
from parlab.data import local_batch
from parlab.model import GPT, GPTConfig, reference_train

CFG = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16)
STEPS, LR, WD = 3, 1e-3, 0.1
N_PARAMS = GPT(CFG).num_params()  # 55,488
# fp32 training: 4-byte params and grads; AdamW keeps exp_avg + exp_avg_sq, 8 bytes (no
# fp32 master copy: the parameters already are fp32).
FP32 = dict(param_bytes=4, grad_bytes=4, optimizer_bytes=8)
N_UNITS = CFG.n_layers + 2  # embeddings, blocks, head


@pytest.fixture(scope="module")
def reference():
    return {bs: reference_train(CFG, STEPS, bs, lr=LR, weight_decay=WD) for bs in (6, 8)}


def assert_matches(res, ref, atol_params=1e-5):
    assert res["losses"] == pytest.approx(ref["losses"], abs=1e-6)
    for name, g in ref["grads"].items():
        torch.testing.assert_close(res["grads"][name], g, atol=1e-6, rtol=0, msg=name)
    for name, p in ref["state_dict"].items():
        torch.testing.assert_close(res["state_dict"][name], p, atol=atol_params, rtol=0, msg=name)


def test_the_tolerances_are_tight(reference):
    # Training moved every weight matrix by far more than the parameter tolerance, and
    # the gradients are far larger than theirs: a wrong strategy cannot hide below them
    # (test_a_wrong_reduction_is_caught shows one that does not).
    ref, init = reference[8]["state_dict"], GPT(CFG).state_dict()
    assert min((ref[n] - init[n]).abs().max().item() for n in ref if n.endswith("weight")) > 1e-3
    assert min(g.abs().max().item() for g in reference[8]["grads"].values()) > 1e-4


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_stage_matches_reference(stage, reference):
    assert_matches(zero.run(stage, 2, CFG, STEPS, 8, LR, weight_decay=WD), reference[8])


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_stage_matches_reference_with_padding(stage, reference):
    # dp = 3 divides none of the units' sizes: every flat buffer is padded
    assert_matches(zero.run(stage, 3, CFG, STEPS, 6, LR, weight_decay=WD), reference[6])


def test_zero3_equals_fsdp2(reference):
    ours = zero.run(3, 2, CFG, STEPS, 8, LR, weight_decay=WD)
    theirs = zero.run("fsdp2", 2, CFG, STEPS, 8, LR, weight_decay=WD)
    assert_matches(theirs, reference[8])
    assert ours["losses"] == pytest.approx(theirs["losses"], abs=1e-6)
    for name, p in theirs["state_dict"].items():
        torch.testing.assert_close(ours["state_dict"][name], p, atol=2e-6, rtol=0, msg=name)
        torch.testing.assert_close(ours["grads"][name], theirs["grads"][name], atol=1e-7,
                                   rtol=0, msg=name)


@pytest.mark.parametrize("dp", [2, 4])
def test_memory_per_rank_equals_formula(dp):
    # Every unit's size is a multiple of 4 here, so no padding: the measured bytes are
    # the formula's exactly, plus AdamW's step counter (one 4-byte scalar per shard).
    for stage in range(4):
        res = zero.run(stage, dp, CFG, 2, 8)
        f = cost.zero_memory(N_PARAMS, dp, stage, **FP32)
        for m in res["memory"]:
            assert (m["params"], m["grads"], m["optimizer"] - 4 * N_UNITS) == \
                (f["params"], f["grads"], f["optimizer"]), (stage, m, f)
            # stage 3 gathers one unit at a time: the largest is a block
            block = sum(p.numel() for p in GPT(CFG).blocks[0].parameters()) * 4
            assert m["gathered_peak"] == (block if stage == 3 else 0)


def test_memory_with_padding_is_exactly_the_padded_size():
    # dp=3: embeddings 2560 -> 2562 elements, each block 12704 -> 12705, head 2112 (ok)
    padded = N_PARAMS + 2 + 4
    m = zero.run(3, 3, CFG, 1, 6)["memory"][0]
    assert m["params"] == m["grads"] == padded // 3 * 4
    assert m["params"] > cost.zero_memory(N_PARAMS, 3, 3, **FP32)["params"]


@pytest.mark.parametrize("dp", [2, 4])
def test_traced_bytes_per_step_equal_formula(dp):
    for stage in range(4):
        res = zero.run(stage, dp, CFG, 2, 8)
        expect = cost.zero_comm_volume(N_PARAMS, dp, stage, grad_bytes=4)
        if stage == 3:
            # An embedding lookup's backward needs the token ids, not the table: nothing
            # saved for backward points into wte/wpe, so they are not gathered again.
            embed = (CFG.vocab_size + CFG.seq_len) * CFG.d_model * 4
            expect -= cost.collective_bytes("all_gather", embed, dp)
        assert all(b == expect for rank in res["comm_bytes"] for b in rank), \
            (stage, res["comm_bytes"])
        ops = {e["meta"]["op"] for e in res["events"][0] if e["kind"] == "comm"}
        assert ops == ({"all_reduce"} if stage == 0 else {"reduce_scatter", "all_gather"})


def test_trace_shows_compute_between_the_collectives():
    # the timeline of a step: each unit's forward and backward compute and the optimizer
    # step as compute spans (no bytes), none overlapping a collective on its rank
    for stage in (3, 2, 0):
        res = zero.run(stage, 2, CFG, 1, 8)
        for events in res["events"]:
            compute = [e for e in events if e["kind"] == "compute"]
            comm = [e for e in events if e["kind"] == "comm"]
            names = {e["name"] for e in compute}
            units = ["embed"] + [f"block{i}" for i in range(CFG.n_layers)] + ["head"]
            assert {f"forward {u}" for u in units} <= names, (stage, names)
            assert {f"backward {u}" for u in units} - {"backward embed"} <= names
            assert {"forward loss", "backward loss", "optimizer"} <= names
            assert all(e["bytes_sent"] == e["bytes_recv"] == 0 for e in compute)
            assert not [(a["name"], b["name"]) for a in compute for b in comm
                        if a["start"] < b["end"] - 1e-7 and b["start"] < a["end"] - 1e-7]
            if stage == 3:  # a block's backward runs between its all-gather and reduce-scatter
                at = {e["name"]: e for e in events}
                bwd = [e for e in compute if e["name"] == "backward block1"]
                gather = at["all_gather block1 params (backward)"]
                scatter = at["reduce_scatter block1 grads"]
                assert any(gather["end"] <= e["start"] and e["end"] <= scatter["start"]
                           for e in bwd)


# --- stage 3 really frees what it gathers (workers run on the ranks) ---------------------

def _wait_freed(trainer, seconds=2.0):
    deadline = time.monotonic() + seconds  # gloo releases its reference on its own thread
    while trainer.gathered_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    return trainer.gathered_alive()


def gathered_after_forward(keep_weights_for_backward=False):
    torch.manual_seed(0)
    z = zero.ZeroDP(CFG, 3)
    if keep_weights_for_backward:  # without the saved-tensor hooks: autograd keeps them
        z._pack = lambda u, t: t
    x = torch.randint(0, CFG.vocab_size, (2, CFG.seq_len))
    logits = z.forward(x)
    after_forward = _wait_freed(z)
    logits.sum().backward()
    del logits
    return after_forward, _wait_freed(z), dist.get_rank()


def test_zero3_frees_gathered_parameters():
    for after_forward, after_backward, _ in parlab.launch(gathered_after_forward, 2):
        assert after_forward == 0 and after_backward == 0
    # the check can fail: keep the weights autograd saves, and the buffers stay alive
    for after_forward, _, _ in parlab.launch(gathered_after_forward, 2, True):
        # every unit's gathered buffer but the embeddings' (a lookup saves only the ids)
        assert after_forward == (N_PARAMS - (CFG.vocab_size + CFG.seq_len) * CFG.d_model) * 4


class _NoReduceScatter(zero.ZeroDP):
    """A wrong ZeRO-3: each rank keeps its own (unsummed) gradient slice."""

    def _reduce_scatter(self, grads, u):
        flat = torch.cat([g.flatten() for g in grads])
        return flat[u.lo:u.hi] / self.dp


def wrong_zero3_grads():
    z = _NoReduceScatter(CFG, 3)
    x, y = local_batch(0, 8, CFG.seq_len, CFG.vocab_size, dist.get_rank(), dist.get_world_size())
    z.train_step(x, y)
    return z.full_state()[1]


def test_a_wrong_reduction_is_caught(reference):
    ref = reference_train(CFG, 1, 8)["grads"]
    grads = parlab.launch(wrong_zero3_grads, 2)[0]
    worst = max((grads[n] - ref[n]).abs().max().item() for n in ref)
    assert worst > 1e-4  # 100x the tolerance assert_matches uses


# --- peers and timing ---------------------------------------------------------------------

def test_step_times_runs_every_variant():
    res = zero_peers.step_times([3, "fsdp2", 0, "ddp"], 2, CFG, rounds=2, batch_size=8, warmup=1)
    assert set(res) == {3, "fsdp2", 0, "ddp"}
    assert all(len(r["times"]) == 2 and r["median"] > 0 for r in res.values())
    with pytest.raises(ValueError, match="rounds=0"):
        zero_peers.step_times([3], 2, CFG, rounds=0)
    with pytest.raises(ValueError, match="at least one"):
        zero_peers.step_times([], 2, CFG)


# --- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(stage=4), "stage=4 must be one of"),
    (dict(stage="zero3"), "stage='zero3'"),
    (dict(stage=True), "stage=True"),
    (dict(world_size=3, batch_size=8), "dp=world_size=3 must divide batch_size=8"),
    (dict(world_size=0), "world_size=0"),
    (dict(steps=0), "steps=0"),
    (dict(batch_size=0), "batch_size=0"),
    (dict(config={"n_layers": 2}), "config must be a GPTConfig"),
])
def test_bad_input_raises_before_any_rank_starts(kwargs, match):
    args = dict(stage=1, world_size=2, config=CFG, steps=1, batch_size=8) | kwargs
    before = parlab.pool_info()
    with pytest.raises(ValueError, match=match):
        zero.run(**args)
    assert parlab.pool_info() == before
    if "steps" in kwargs:
        return  # step_times has no steps argument (rounds instead)
    with pytest.raises(ValueError, match=match):
        zero_peers.step_times([args["stage"]], args["world_size"], args["config"],
                              batch_size=args["batch_size"])
