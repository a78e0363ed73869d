"""FSDP beside ZeRO-3 (notebook 01 §6): reshard_after_forward True / False, forward and
backward prefetch, and HSDP on a 2 x 2 mesh -- each equal to one device, with its peak of
gathered parameters and its bytes per rank equal to parlab.cost's formulas, and planted
bugs (a prefetch of the wrong unit, a forgotten or mis-scaled cross-replica all-reduce)
caught."""

import pytest

import parlab
from parlab import cost, zero
from parlab.model import GPT, GPTConfig, max_differences, reference_train
from parlab.zero import ZeroRun
from lessons.l01_data_parallel import experiments_zero as ze

CFG = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16)
STEPS, LR, WD = 2, 1e-3, 0.1
N_PARAMS = GPT(CFG).num_params()
TOL = 2e-6  # losses, gradients and weights (fp32, AdamW: sums in another order)


@pytest.fixture(scope="module", params=[2, 4])
def modes(request):
    return request.param, ze.fsdp_modes(CFG, request.param, STEPS)


@pytest.fixture(scope="module")
def reference():
    return reference_train(CFG, STEPS, 8, lr=LR, weight_decay=WD)


def zrun(world_size, **fields):
    return zero.run(ZeroRun(CFG, steps=STEPS, batch_size=8, lr=LR, weight_decay=WD,
                            zero_stage=3, **fields), world_size)


# --- 1. reshard_after_forward: memory against traffic --------------------------------------

def test_every_mode_equals_one_device(modes):
    _, res = modes
    for r in res["rows"]:
        assert r["max diff"] < TOL, r


def test_peak_and_bytes_equal_the_formulas(modes):
    dp, res = modes
    blocks, root = ze.unit_bytes(CFG)
    for r in res["rows"]:
        assert r["peaks equal on every rank"], r
        assert r["peak measured"] == r["peak formula"], r
        assert r["all-gather measured"] == r["all-gather formula"], r
        assert r["reduce-scatter measured"] == r["reduce-scatter formula"], r
    by = {r["mode"]: r for r in res["rows"]}
    psi = N_PARAMS * 4
    # reshard: 3 Psi (dp-1)/dp, ZeRO-3's; keep: 2 Psi, plain DP's volume, for Psi held
    assert by["reshard (ZeRO-3)"]["all-gather measured"] + by["reshard (ZeRO-3)"][
        "reduce-scatter measured"] == cost.zero_comm_volume(N_PARAMS, dp, 3, grad_bytes=4)
    assert by["keep (no reshard)"]["all-gather measured"] * 2 == \
        by["reshard (ZeRO-3)"]["all-gather measured"]
    assert by["keep (no reshard)"]["peak measured"] == psi  # every unit full at once
    assert by["reshard (ZeRO-3)"]["peak measured"] == root + max(blocks) < psi / 2
    assert by["reshard + prefetch"]["peak measured"] == root + 2 * max(blocks)


# --- 2. prefetch on the trace ------------------------------------------------------------------

def test_prefetch_issues_the_next_gather_before_this_unit_computes(modes):
    _, res = modes
    for label, (reshard, prefetch) in ze.FSDP_MODES.items():
        rows = ze.gather_issue(res["events"][label], CFG.n_layers)
        forward = [r for r in rows if r["pass"] == "forward"]
        backward = [r for r in rows if r["pass"] == "backward"]
        assert len(forward) == CFG.n_layers - 1 and len(backward) == (CFG.n_layers - 1) * reshard
        for r in rows:
            assert r["async"] == prefetch, (label, r)
            if not prefetch:  # issued only once the unit before it has finished computing
                assert r["after"] >= 0, (label, r)
            elif r["pass"] == "forward":  # issued before the unit before it starts computing
                assert r["lead"] > 0, (label, r)
            else:  # issued while the unit before it (in backward order) still computes
                assert r["after"] < 0, (label, r)


def prefetch_frees_everything():
    import time
    import torch
    probe = zero.MemoryProbe()
    z = zero.FullyShard(GPT(CFG), probe=probe, prefetch=True)
    x = torch.randint(0, CFG.vocab_size, (2, CFG.seq_len))
    _, loss = z(x, x)
    loss.backward()
    assert not z.finish_grad_sync()  # the backward finished the round: nothing left
    del loss
    deadline = time.monotonic() + 2.0  # gloo drops its reference on its own thread
    while probe.alive("gathered") and time.monotonic() < deadline:
        time.sleep(0.01)
    return probe.alive("gathered"), probe.live["gathered"], len(z.prefetcher.pending)


def test_prefetched_buffers_are_all_taken_and_freed():
    for alive, live, pending in parlab.launch(prefetch_frees_everything, 2):
        assert (alive, live, pending) == (0, 0, 0)


class _WrongOrder(zero.Prefetcher):
    """Backward prefetch in the forward's order: block i+1 instead of block i-1."""

    def __init__(self, fsdp):
        super().__init__(fsdp)
        self.next["backward"] = {**self.next["forward"], **{
            u: v for u, v in self.next["backward"].items() if u.module is fsdp.module}}


class _WrongOrderFifo(_WrongOrder):
    """...and each unit takes the oldest gather in flight, whichever unit it was for."""

    def take(self, unit, why):
        if not self.pending:
            return None
        key = next(iter(self.pending))
        self.pending[(unit, why)] = self.pending.pop(key)
        return super().take(unit, why)


def planted_prefetch(bug, run):
    from parlab.zero import fully_shard
    saved = fully_shard.Prefetcher
    fully_shard.Prefetcher = {"wrong_order": _WrongOrder, "fifo": _WrongOrderFifo}[bug]
    try:
        return zero.train_worker(run)
    finally:
        fully_shard.Prefetcher = saved


@pytest.mark.timeout(120)
def test_a_prefetch_of_the_wrong_unit_is_caught(reference):
    run = ZeroRun(CFG, steps=STEPS, batch_size=8, lr=LR, weight_decay=WD, zero_stage=3,
                  prefetch=True)
    formula = cost.fsdp_comm_volume(N_PARAMS, 2, True, param_bytes=4)["all_gather"]
    # keyed by unit: still right, but every backward gather is fetched twice -- the bytes
    # tell (one wasted gather per block but the last, drained unused)
    res = zero.collect(run, parlab.launch(planted_prefetch, 2, "wrong_order", run, timeout=90))
    assert max(max_differences(res, reference).values()) < TOL
    sent = ze.step_bytes(res.events, 0, STEPS - 1)["all_gather"]
    assert sent > formula, (sent, formula)
    # taken first-in first-out: a block computes its backward with another block's weights
    res = zero.collect(run, parlab.launch(planted_prefetch, 2, "fifo", run, timeout=90))
    assert max_differences(res, reference)["grad"] > 1e-4


# --- 3. HSDP on a 2 x 2 mesh ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def hsdp():
    return ze.hsdp_traffic(CFG, STEPS)


def test_hsdp_equals_one_device_and_its_bytes_the_formula(hsdp):
    by = {r["run"]: r for r in hsdp["rows"]}
    for r in hsdp["rows"]:
        assert r["max diff"] < TOL, r
        assert r["shard-group measured"] == r["shard-group formula"], r
        assert r["replicate measured"] == r["replicate formula"], r
    h, flat, psi = by["HSDP 2 x 2"], by["ZeRO-3 over 4"], hsdp["psi"]
    assert h["params per rank"] == psi / 2 and flat["params per rank"] == psi / 4
    assert h["replicate measured"] == psi / 2  # 2 (Psi / 2)(2 - 1)/2: the gradient shard
    assert h["shard-group measured"] == cost.zero_comm_volume(N_PARAMS, 2, 3, grad_bytes=4)


class _NoAllReduce(zero.HybridShard):
    """Forgets the cross-replica all-reduce: each replica keeps its own half's gradient."""

    def _finish(self):
        zero.FullyShard._finish(self)


class _AveragedOverTheWorld(zero.HybridShard):
    """Divides the replicas' sum by every rank (R x S) instead of the R replicas."""

    def _finish(self):
        zero.FullyShard._finish(self)
        shards = [s for s in self.shards if s.requires_grad]
        from parlab import comm
        comm.all_reduce_grads(shards, self.replicate, 1.0 / 4, axis="replicate")


def planted_hsdp(bug, run):
    saved = zero.stages.HybridShard
    zero.stages.HybridShard = {"no_all_reduce": _NoAllReduce, "world": _AveragedOverTheWorld}[bug]
    try:
        return zero.train_worker(run)
    finally:
        zero.stages.HybridShard = saved


@pytest.mark.timeout(120)
@pytest.mark.parametrize("bug", ["no_all_reduce", "world"])
def test_hsdp_planted_bugs_are_caught(bug, reference):
    run = ZeroRun(CFG, steps=STEPS, batch_size=8, lr=LR, weight_decay=WD, zero_stage=3,
                  replicate=2)
    res = zero.collect(run, parlab.launch(planted_hsdp, 4, bug, run, timeout=90))
    diff = max_differences(res, reference)
    # (averaged over the world: every gradient halved; AdamW's update is nearly blind to
    # the scale, so the gradients, not the weights, show it)
    assert diff["grad"] > 1e-4, (bug, diff)


# --- a model that is not ours: tied, frozen and unused parameters ---------------------------------

def tiednet_worker(kind, steps=3):
    """byom.TiedNet seeded by the rank under FullyShard(prefetch=True) or HybridShard
    (2 x 2, prefetching too), trained as byom.data_parallel_worker trains it."""
    import torch
    import torch.distributed as dist
    from lessons.common import byom
    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    net = byom.TiedNet(seed=rank)
    model = (zero.FullyShard(net, prefetch=True) if kind == "prefetch" else
             zero.HybridShard(net, *zero.hsdp_groups(2), prefetch=True))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    for step in range(steps):
        loss = model(*byom.tokens(step, 8, rank, world))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return model.full_state_dict()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind, world_size", [("prefetch", 2), ("hsdp", 4)])
def test_prefetch_and_hsdp_on_a_model_that_is_not_ours(kind, world_size):
    from lessons.common import byom
    ref = byom.reference(byom.TiedNet, lambda s: byom.tokens(s), 3)
    for state in parlab.launch(tiednet_worker, world_size, kind, timeout=90):
        assert byom.max_difference(state, ref) < TOL, kind
        assert (state["out.weight"] == state["embed.weight"]).all()  # still tied


# --- against torch's FSDP2: the same options, the same numbers -----------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("fields, world_size", [(dict(reshard_after_forward=False), 2),
                                                (dict(replicate=2), 4)])
def test_ours_equal_fsdp2_with_the_same_options(fields, world_size, reference):
    ours, theirs = zrun(world_size, **fields), zero.run(ZeroRun(
        CFG, steps=STEPS, batch_size=8, lr=LR, weight_decay=WD, zero_stage="fsdp2", **fields),
        world_size)
    assert max(max_differences(theirs, reference).values()) < TOL
    diff = max_differences(ours, theirs)
    assert diff["loss"] < 1e-6 and diff["grad"] < 1e-7 and diff["param"] < TOL, diff


# --- bad input, and the formulas' own relations -------------------------------------------------

@pytest.mark.parametrize("fields, world_size, match", [
    (dict(zero_stage=2, prefetch=True), 2, "zero_stage=2 must be 3"),
    (dict(zero_stage="ddp", reshard_after_forward=False), 2, "zero_stage='ddp' must be 3"),
    (dict(zero_stage="fsdp2", prefetch=True), 2, "prefetch=True is FullyShard's"),
    (dict(replicate=3), 4, "replicate=3 must divide world_size=4"),
    (dict(replicate=0), 4, "replicate=0"),
    (dict(prefetch="yes"), 2, "prefetch='yes'"),
    (dict(reshard_after_forward=1), 2, "reshard_after_forward=1"),
])
def test_bad_fsdp_options_raise_before_any_rank_starts(fields, world_size, match):
    run = ZeroRun(**{"config": CFG, "steps": 1, "batch_size": 8, "zero_stage": 3, **fields})
    before = parlab.pool_info()
    with pytest.raises(ValueError, match=match):
        zero.run(run, world_size)
    assert parlab.pool_info() == before


def test_formulas_agree_with_zero_and_the_papers():
    for dp in (1, 2, 8):
        assert cost.fsdp_comm_volume(1e9, dp, True)["total"] == cost.zero_comm_volume(1e9, dp, 3)
        assert cost.fsdp_comm_volume(1e9, dp, False)["total"] == cost.zero_comm_volume(1e9, dp, 0)
        h = cost.hsdp_comm_volume(1e9, dp, 1)
        assert h["inter_node"] == 0 and h["total"] == cost.fsdp_comm_volume(1e9, dp)["total"]
    z = cost.zeropp_comm_volume(1e9)  # ZeRO++ §3: 3M -> 0.75M, "4x"
    assert z["zero3"]["total"] == 3 * 2e9 and z["zeropp"]["total"] == 0.75 * 2e9
    off = cost.zero_offload_traffic(13e9)  # ZeRO-Offload: 4 bytes per parameter over PCIe
    assert off["pcie_bytes_per_step"] == 4 * 13e9 and off["gpu_bytes"] == 26e9
    with pytest.raises(ValueError, match="unit_bytes"):
        cost.fsdp_gathered_peak([])


def test_the_hsdp_exercise_checker():
    from lessons.l01_data_parallel import exercises as ex
    n = cost.MODEL_PRESETS["70B"].n_params
    right = 2 * (2 * n / 8) * 7 / 8 / 1e9
    assert ex.check_hsdp_traffic(right)["ok"] and ex.check_hsdp_traffic(f"{right:.4g}")["ok"]
    v = ex.check_hsdp_traffic(cost.zero_comm_volume(n, 64, 3) / 1e9)
    assert not v["ok"] and "flat ZeRO-3" in v["message"]
    v = ex.check_hsdp_traffic(2 * 2 * n * 7 / 8 / 1e9)
    assert not v["ok"] and "whole gradient" in v["message"]
    assert ex.check_hsdp_traffic(None)["ok"] is False
