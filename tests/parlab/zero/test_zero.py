"""ZeRO stages 0-3 against the single-device reference and against FSDP2; memory and
traffic measured against the ZeRO paper's formulas; bad input."""

import time

import pytest
import torch
import torch.distributed as dist

import parlab
from parlab import cost, zero
from lessons.l01_data_parallel import experiments_zero as zero_peers
from parlab.data import local_batch
from parlab.model import GPT, GPTConfig, reference_train
from parlab.data_parallel import assign_buckets as zero_assign_buckets
from parlab.zero import ZeroRun
from parlab.zero.flat import FlatLayout

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


def zrun(stage, dp, steps=STEPS, batch_size=8, **kw):
    """zero.run of stage (or peer) on dp ranks, with this file's model, lr and weight decay."""
    return zero.run(ZeroRun(CFG, steps=steps, batch_size=batch_size, lr=LR, weight_decay=WD,
                            zero_stage=stage, **kw), dp)


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
    assert_matches(zrun(stage, 2), reference[8])


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_stage_matches_reference_with_padding(stage, reference):
    # dp = 3 divides none of the buffers' sizes: every flat buffer is padded
    assert_matches(zrun(stage, 3, batch_size=6), reference[6])


@pytest.mark.parametrize("stage", [0, 1, 2])
def test_small_buckets_match_reference(stage, reference):
    # 4 KiB buckets: 18 of them, each reduced while backward goes on; dp = 3 pads each
    assert_matches(zrun(stage, 3, batch_size=6, bucket_bytes=4096), reference[6])


def test_zero3_equals_fsdp2(reference):
    ours = zrun(3, 2)
    theirs = zrun("fsdp2", 2)
    assert_matches(theirs, reference[8])
    assert ours["losses"] == pytest.approx(theirs["losses"], abs=1e-6)
    for name, p in theirs["state_dict"].items():
        torch.testing.assert_close(ours["state_dict"][name], p, atol=2e-6, rtol=0, msg=name)
        torch.testing.assert_close(ours["grads"][name], theirs["grads"][name], atol=1e-7,
                                   rtol=0, msg=name)


@pytest.mark.parametrize("dp", [2, 4])
def test_memory_per_rank_equals_formula(dp):
    # Every parameter's size is a multiple of 4 here, so no padding: the measured bytes are
    # the formula's exactly, plus AdamW's step counter (one 4-byte scalar per tensor it
    # steps: every parameter, its shard of each (stage 3), or the pieces in its block of
    # the one bucket (stages 1-2: whole parameters and at most two straddling ones)),
    # plus -- stage 1 -- the averaged gradient of the rank's own block beside the full
    # gradients it holds until the step.
    shapes = [p.shape for p in GPT(CFG).parameters()]
    for stage in range(4):
        res = zrun(stage, dp, steps=2)
        f = cost.zero_memory(N_PARAMS, dp, stage, **FP32)
        own = N_PARAMS * 4 // dp if stage == 1 else 0
        for rank, m in enumerate(res["memory"]):
            tensors = (len(FlatLayout(shapes[::-1], dp, rank).mine) if stage in (1, 2)
                       else len(shapes))
            assert (m["params"], m["grads"] - own, m["optimizer"] - 4 * tensors) == \
                (f["params"], f["grads"], f["optimizer"]), (stage, m, f)
            # stage 3 gathers a block at a time while the root unit (embeddings, final
            # norm, head: FSDP's default units) stays gathered for the whole pass
            block = sum(p.numel() for p in GPT(CFG).blocks[0].parameters()) * 4
            root = N_PARAMS * 4 - CFG.n_layers * block
            assert m["gathered_peak"] == (block + root if stage == 3 else 0)


def test_memory_with_padding_is_exactly_the_padded_size():
    # dp=3: each parameter is padded to a multiple of 3 (FSDP2's per-parameter shards)
    padded = sum(-(-p.numel() // 3) for p in GPT(CFG).parameters())
    m = zrun(3, 3, steps=1, batch_size=6)["memory"][0]
    assert m["params"] == m["grads"] == padded * 4
    assert m["params"] > cost.zero_memory(N_PARAMS, 3, 3, **FP32)["params"]


def test_zero2_never_holds_every_full_gradient():
    # §5.2: each gradient is dropped once copied into its bucket, and each bucket freed
    # once reduce-scattered (at most two in flight besides the one filling): with 4 KiB
    # buckets the full gradients never exist all at once, and after the step only this
    # rank's shard of them is left. Stage 1 keeps them all (it partitions only P_os).
    sizes = [p.numel() * 4 for p in reversed(list(GPT(CFG).parameters()))]
    largest = max(sum(sizes[i] for i in b) for b in zero_assign_buckets(sizes, 4096))
    for stage, grads in ((1, N_PARAMS * 4 + N_PARAMS * 4 // 2), (2, N_PARAMS * 4 // 2)):
        for m in zrun(stage, 2, steps=1, bucket_bytes=4096).memory:
            assert m["grads"] == grads
            if stage == 2:  # (stage 1 keeps every full gradient anyway)
                assert 0 < m["buckets_peak"] <= 3 * largest < N_PARAMS * 4 / 2, m


@pytest.mark.parametrize("dp", [2, 4])
def test_traced_bytes_per_step_equal_formula(dp):
    for stage in range(4):
        for bucket_bytes in ((25 << 20, 4096) if stage < 3 else (25 << 20,)):
            res = zrun(stage, dp, steps=2, bucket_bytes=bucket_bytes)
            # (stage 3: every unit is gathered again for its backward -- the root too,
            # embeddings and all, since its head needs its weights -- so 3 Psi exactly)
            expect = cost.zero_comm_volume(N_PARAMS, dp, stage, grad_bytes=4)
            if stage in (1, 2):  # + the buckets' counts of the ranks that used each
                expect += (dp - 1) * 4 * len(list(GPT(CFG).parameters()))  # tensor
            # (4 KiB buckets: each bucket's bytes are a multiple of 4 -- no padding)
            assert all(b == expect for r in res.ranks for b in r["comm_bytes"]), \
                (stage, [r["comm_bytes"] for r in res.ranks])
            ops = {e["meta"]["op"] for e in res.events if e["rank"] == 0 and e["kind"] == "comm"}
            assert ops == ({"all_reduce"} if stage == 0 else {"reduce_scatter", "all_gather"})


def test_trace_shows_compute_between_the_collectives():
    # the timeline of a step: each unit's forward and backward compute and the optimizer
    # step as compute spans (no bytes), none overlapping a blocking collective on its
    # rank; the gradients' collectives are asynchronous and run beside backward
    units = ["embed"] + [f"block{i}" for i in range(CFG.n_layers)] + ["head"]
    for stage in (3, 2, 0):
        res = zrun(stage, 2, steps=1, bucket_bytes=4096)
        for rank in (0, 1):
            events = [e for e in res.events if e["rank"] == rank]
            compute = [e for e in events if e["kind"] == "compute"]
            comm = [e for e in events if e["kind"] == "comm"]
            names = {e["name"] for e in compute}
            assert {f"forward {u}" for u in units} <= names, (stage, names)
            assert {f"backward {u}" for u in units} - {"backward embed"} <= names
            assert {"forward loss", "backward loss", "optimizer"} <= names
            assert all(e["bytes_sent"] == e["bytes_recv"] == 0 for e in compute)
            blocking = [e for e in comm if not e["meta"].get("async_op")]
            assert not [(a["name"], b["name"]) for a in compute for b in blocking
                        if a["start"] < b["end"] - 1e-7 and b["start"] < a["end"] - 1e-7]
            grads = [e for e in comm if e["name"].endswith(" grads")]
            assert grads and all(e["meta"]["async_op"] for e in grads)
            backward_end = max(e["end"] for e in compute if e["name"].startswith("backward "))
            assert sum(e["start"] < backward_end for e in grads) >= len(grads) - 1
            if stage == 3:  # a block's backward runs between its all-gather and the
                # launch of its reduce-scatter (which that compute span ends with)
                at = {e["name"]: e for e in events}
                bwd = [e for e in compute if e["name"] == "backward block1"]
                gather = at["all_gather blocks.1 params (backward)"]
                scatter = at["reduce_scatter blocks.1 grads"]
                assert any(gather["end"] <= e["start"] < scatter["start"] <= e["end"]
                           for e in bwd)


# --- stage 3 really frees what it gathers (workers run on the ranks) ---------------------

def _wait_freed(probe, seconds=2.0):
    deadline = time.monotonic() + seconds  # gloo releases its reference on its own thread
    while probe.alive("gathered") and time.monotonic() < deadline:
        time.sleep(0.01)
    return probe.alive("gathered")


def gathered_after_forward(keep_weights_for_backward=False):
    torch.manual_seed(0)
    probe = zero.MemoryProbe()
    # without the saved-tensor hooks (FSDP2's reshard_after_forward=False) autograd keeps
    # the weights it needs for backward
    z = zero.FullyShard(GPT(CFG), probe=probe, reshard_after_forward=not keep_weights_for_backward)
    x = torch.randint(0, CFG.vocab_size, (2, CFG.seq_len))
    _, loss = z(x, x)
    after_forward = _wait_freed(probe)
    loss.backward()
    del loss
    return after_forward, _wait_freed(probe), dist.get_rank()


def test_zero3_frees_gathered_parameters():
    for after_forward, after_backward, _ in parlab.launch(gathered_after_forward, 2):
        assert after_forward == 0 and after_backward == 0
    # the check can fail: keep the weights autograd saves, and they stay alive -- exactly
    # the parameters a forward on one device saves for backward (not the embeddings: a
    # lookup saves only the ids; nor a Linear's bias: its gradient is a sum)
    model, saved = GPT(CFG), set()
    params = {p.untyped_storage().data_ptr(): p for p in model.parameters()}
    x = torch.randint(0, CFG.vocab_size, (2, CFG.seq_len))
    with torch.autograd.graph.saved_tensors_hooks(
            lambda t: saved.add(t.untyped_storage().data_ptr()) or t, lambda t: t):
        model(x, x)
    kept = sum(p.numel() for ptr, p in params.items() if ptr in saved)
    assert 0.5 * N_PARAMS < kept < N_PARAMS
    for after_forward, _, _ in parlab.launch(gathered_after_forward, 2, True):
        assert after_forward == kept * 4


class _NoReduceScatter(zero.FullyShard):
    """A wrong ZeRO-3: each rank keeps its own (unsummed) gradient shard."""

    def _launch(self, u, grads):
        flat = u.layout.pack(grads, torch.float32, "cpu")
        mine = flat.view(self.dp, -1)[self.rank].clone()
        u.waits.append((lambda: None, mine))


def wrong_zero3_grads():
    z = _NoReduceScatter(GPT(CFG))
    x, y = local_batch(0, 8, CFG.seq_len, CFG.vocab_size, dist.get_rank(), dist.get_world_size())
    _, loss = z(x, y)
    loss.backward()
    return z.full_grads()


def test_a_wrong_reduction_is_caught(reference):
    ref = reference_train(CFG, 1, 8)["grads"]
    grads = parlab.launch(wrong_zero3_grads, 2)[0]
    worst = max((grads[n] - ref[n]).abs().max().item() for n in ref)
    assert worst > 1e-4  # 100x the tolerance assert_matches uses


@pytest.mark.parametrize("peer, options", [
    ("zero_redundancy", {}), ("fsdp2", dict(reshard_after_forward=False)),
    # bench/zero.py gives every variant AdamW's fused kernel: theirs take it too
    ("zero_redundancy", dict(kernel="fused")),
    ("fsdp2", dict(reshard_after_forward=False, kernel="fused")), (1, dict(kernel="for-loop"))],
    ids=["zero_redundancy", "fsdp2-no-reshard", "zero_redundancy-fused",
         "fsdp2-no-reshard-fused", "zero1-for-loop"])
def test_zero1_and_zero2_peers_match_reference(peer, options, reference):
    # bench/zero.py's peers for ZeRO-1 (ZeroRedundancyOptimizer over DDP) and ZeRO-2
    # (FSDP2 keeping its parameters from forward to backward) train as one device does
    assert_matches(zrun(peer, 2, **options), reference[8])


def test_flat_layout_gives_every_element_to_exactly_one_rank():
    # ZeRO-1/2's parameters end to end, cut in n: tensors straddle ranks, the last block
    # is padded, a 1-element tensor sits in one rank's block only; place() puts a tensor
    # where tensor() and piece() find it
    shapes = [(3, 5), (7,), (1,), (2, 2, 2)]
    total = sum(torch.Size(s).numel() for s in shapes)  # 31
    for n in (1, 2, 3, 4, 40):
        layouts = [FlatLayout(shapes, n, r) for r in range(n)]
        assert layouts[0].block == -(-total // n)
        tensors = [torch.randn(s) for s in shapes]
        rows = torch.zeros(n, layouts[0].block + 2)  # + 2 columns that must stay untouched
        for i, t in enumerate(tensors):
            layouts[0].place(rows, i, t)
        assert not rows[:, -2:].any()
        flat = rows[:, :-2].contiguous()
        for i, t in enumerate(tensors):
            assert torch.equal(layouts[0].tensor(flat, i), t)
            pieces = [lay.piece(flat[r], i) for r, lay in enumerate(layouts) if i in lay.mine]
            assert torch.equal(torch.cat(pieces), t.reshape(-1))  # in order, each once
        assert sum(len(lay.mine) for lay in layouts) <= len(shapes) + n - 1


# --- peers and timing ---------------------------------------------------------------------

def test_step_times_runs_every_variant():
    res = zero_peers.step_times([3, "fsdp2", 0, "ddp"], 2, CFG, rounds=2, batch_size=8, warmup=1)
    assert set(res) == {3, "fsdp2", 0, "ddp"}
    assert all(len(r["times"]) == 2 and r["median"] > 0 for r in res.values())
    runs = {"zero2, 4 KiB buckets": ZeroRun(CFG, batch_size=8, zero_stage=2, bucket_bytes=4096)}
    res = zero_peers.step_times(runs, 2, rounds=2, warmup=0)
    assert list(res) == list(runs) and len(res["zero2, 4 KiB buckets"]["times"]) == 2
    with pytest.raises(ValueError, match="rounds=0"):
        zero_peers.step_times([3], 2, CFG, rounds=0)
    with pytest.raises(ValueError, match="at least one"):
        zero_peers.step_times([], 2, CFG)


# --- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("fields, world_size, match", [
    (dict(zero_stage=4), 2, "zero_stage=4 must be one of"),
    (dict(zero_stage="zero3"), 2, "zero_stage='zero3'"),
    (dict(zero_stage=True), 2, "zero_stage=True"),
    (dict(zero_stage=3.0), 2, r"zero_stage=3\.0"),
    (dict(batch_size=8), 3, "dp=world_size=3 must divide batch_size=8"),
    ({}, 0, "world_size=0"),
    (dict(steps=0), 2, "steps=0"),
    (dict(steps=1.5), 2, r"steps=1\.5"),
    (dict(batch_size=0), 2, "batch_size=0"),
    (dict(batch_size=8.0), 2, r"batch_size=8\.0"),
    (dict(lr=float("nan")), 2, "lr=nan"),
    (dict(seed="x"), 2, "seed='x'"),
    (dict(bucket_bytes=0), 2, "bucket_bytes=0"),
    (dict(bucket_bytes=4096.0), 2, r"bucket_bytes=4096\.0"),
    (dict(config={"n_layers": 2}), 2, "config must be a GPTConfig"),
    (dict(kernel="fast"), 2, "kernel='fast' must be one of"),
])
def test_bad_input_raises_before_any_rank_starts(fields, world_size, match):
    run = ZeroRun(**{"config": CFG, "steps": 1, "batch_size": 8, "zero_stage": 1, **fields})
    before = parlab.pool_info()
    with pytest.raises(ValueError, match=match):
        zero.run(run, world_size)
    with pytest.raises(ValueError, match=match):
        zero_peers.step_times({"bad": run}, world_size)
    assert parlab.pool_info() == before


def test_run_takes_a_zero_run():
    with pytest.raises(ValueError, match="run must be a ZeroRun"):
        zero.run(3, 2)


# --- gradient accumulation without no_sync -------------------------------------------------

def _every_micro_batch_exchanged(stage: int) -> dict:
    """Rank side: 3 backwards, none under ``no_sync`` (each exchanges its gradients), then
    the full averaged gradient, {parameter index: tensor}."""
    import workers_grad_sync as w
    torch.set_num_threads(1)
    model = w.Net()
    params = list(model.parameters())
    opt = zero.ShardedOptimizer(model.named_parameters(), torch.optim.SGD, stage=stage,
                                bucket_bytes=512, lr=0.1)
    for i in range(3):
        (model(*w.batch(dist.get_rank(), i)) / 3).backward()
    grads = opt.full_tensors(grads=True)
    return {i: grads[p] for i, p in enumerate(params) if p in grads}


@pytest.mark.parametrize("stage", [1, 2])
def test_every_micro_batch_exchanged_adds_up(stage):
    # stage 2 adds each exchange's shard to the last; stage 1 keeps the full gradients
    # adding up and each exchange replaces the shard with the sum so far: both the mean
    # over ranks and micro-batches
    import workers_grad_sync as w
    want = w.reference(2, micro_batches=3)
    for got in parlab.launch(_every_micro_batch_exchanged, 2, stage, timeout=120):
        assert set(got) == set(want)
        assert max((got[i] - want[i]).abs().max().item() for i in want) < 1e-6
