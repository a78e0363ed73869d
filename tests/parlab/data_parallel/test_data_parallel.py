"""Data parallelism: every variant against the single-device reference, against torch's
DDP, and the compressors, the traces and the bad inputs.

Worker functions defined here run on the ranks (they import this module by name)."""

import math

import pytest
import torch
import torch.distributed as dist

import parlab
from parlab.data_parallel import compression
from lessons.l01_data_parallel import experiments as dp_demos
from parlab import data_parallel as dp
from parlab.data_parallel import DPRun
from parlab.model import GPT, GPTConfig, max_differences, reference_train

CFG = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16)
STEPS, BATCH = 3, 8
# fp32, 3 AdamW steps: what we measure is ~1e-7 (summation order differs from one device)
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 2e-6}


@pytest.fixture(scope="module")
def reference():
    return reference_train(CFG, STEPS, BATCH, lr=1e-3)


differences = max_differences


def assert_matches(out: dict, ref: dict) -> None:
    diff = differences(out, ref)
    assert all(diff[k] <= TOL[k] for k in TOL), diff
    # the replicas stay identical: every rank applied the same averaged gradient
    for r in out["ranks"][1:]:
        for k, v in r["state_dict"].items():
            assert torch.equal(v, out["ranks"][0]["state_dict"][k]), (r["rank"], k)


def test_the_comparison_is_not_trivial(reference):
    # training moved the parameters far beyond the tolerance, and the gradients are large
    init = GPT(CFG, 0).state_dict()
    moved = max((reference["state_dict"][k] - init[k]).abs().max().item() for k in init)
    assert moved > 1000 * TOL["param"]
    assert max(g.abs().max().item() for g in reference["grads"].values()) > 1000 * TOL["grad"]


CASES = [  # (variant, world_size, extra DPRun fields)
    ("naive", 2, {}),
    ("naive", 4, {}),
    ("bucketed", 2, {"bucket_bytes": 4096}),  # 18 buckets
    ("bucketed", 4, {"bucket_bytes": 1}),  # one parameter per bucket
    ("bucketed", 2, {"bucket_bytes": 25 << 20}),  # one bucket for everything
    ("ddp", 2, {"bucket_bytes": 4096}),
    ("ddp", 4, {"bucket_bytes": 4096}),
    ("ddp-python", 2, {"bucket_bytes": 4096}),  # torch's Python all-reduce hook per bucket
    ("naive", 2, {"micro_batches": 2}),
    ("bucketed", 2, {"bucket_bytes": 4096, "micro_batches": 4}),  # micro-batch of 1
    ("bucketed", 4, {"bucket_bytes": 4096, "micro_batches": 2}),
    ("ddp", 2, {"bucket_bytes": 4096, "micro_batches": 2}),
    ("naive", 2, {"compression": "topk", "topk_ratio": 1.0}),  # top-100% = exact, via all-gather
    ("naive", 4, {"compression": "topk", "topk_ratio": 1.0, "error_feedback": False}),
]


@pytest.mark.parametrize("variant,world_size,extra", CASES,
                         ids=[f"{v}-{n}-{'-'.join(f'{k}={x}' for k, x in e.items())}"
                              for v, n, e in CASES])
def test_variant_matches_reference(reference, variant, world_size, extra):
    run = DPRun(CFG, steps=STEPS, batch_size=BATCH, variant=variant, **extra)
    assert_matches(dp.run(run, world_size), reference)


def test_bucketed_equals_ddp():
    runs = {v: dp.run(DPRun(CFG, steps=STEPS, batch_size=BATCH, variant=v, bucket_bytes=4096), 2)
            for v in ("bucketed", "ddp")}
    diff = differences(runs["bucketed"], runs["ddp"])
    assert all(diff[k] <= TOL[k] for k in TOL), diff


def bucket_layouts(bucket_bytes):
    """Bucket sizes (bytes) of ours and of DDP after one step (DDP rebuilds its buckets
    from the order gradients arrived in during the first backward)."""
    from torch.nn.parallel import DistributedDataParallel
    model = GPT(CFG)
    ddp = DistributedDataParallel(model, bucket_cap_mb=bucket_bytes / 2 ** 20)
    x = torch.randint(0, CFG.vocab_size, (2, CFG.seq_len))
    for _ in range(2):
        ddp(x, x)[1].backward()
    theirs = [b.buffer().numel() * 4 for b in ddp.reducer._get_zeros_like_grad_buckets()]
    ours = [b.buffer.numel() * 4 for b in dp.BucketedDP(GPT(CFG), bucket_bytes=bucket_bytes).buckets]
    return ours, theirs


@pytest.mark.parametrize("bucket_bytes", [4096, 40_000])
def test_buckets_are_ddps_buckets(bucket_bytes):
    ours, theirs = parlab.launch(bucket_layouts, 2, bucket_bytes)[0]
    assert len(ours) > 1 and ours == theirs


# --- a deliberately wrong data-parallel step is caught ---------------------------------

def buggy_run(run, bug):
    """train_worker with a classic bug planted in NaiveDP (restored afterwards: the ranks
    are reused by later tests)."""
    original = dp.NaiveDP._finish

    def no_division(self):
        for p in self.module.parameters():
            dist.all_reduce(p.grad)

    def forgets_one(self):
        for p in list(self.module.parameters())[1:]:
            dist.all_reduce(p.grad)
            p.grad.div_(self.world)

    dp.NaiveDP._finish = {"no_division": no_division, "forgets_one": forgets_one}[bug]
    try:
        return dp.train_worker(run)
    finally:
        dp.NaiveDP._finish = original


@pytest.mark.parametrize("bug", ["no_division", "forgets_one"])
def test_a_wrong_sync_is_caught(reference, bug):
    run = DPRun(CFG, steps=STEPS, batch_size=BATCH, variant="naive")
    ranks = parlab.launch(buggy_run, 2, run, bug)
    out = {"losses": [sum(r["local_losses"][s] for r in ranks) / 2 for s in range(STEPS)],
           "grads": ranks[0]["grads"], "state_dict": ranks[0]["state_dict"]}
    diff = differences(out, reference)
    assert diff["grad"] > 100 * TOL["grad"], diff
    if bug == "forgets_one":  # the replicas drift apart, and the parameters show it
        assert diff["param"] > 100 * TOL["param"], diff
    # (no_division: AdamW is nearly invariant to scaling the gradient, so the parameters
    # barely notice -- which is why the gradients are compared directly)


# --- traces: overlap, accumulation, bytes ------------------------------------------------

def test_bucketed_launches_during_backward_naive_after():
    traced = {v: dp.run(DPRun(CFG, steps=2, batch_size=BATCH, variant=v, bucket_bytes=4096,
                              trace=True), 2)
              for v in ("naive", "bucketed")}
    for r in traced["bucketed"]["ranks"]:
        events = [e for e in traced["bucketed"].events if e["rank"] == r["rank"]]
        backward = [e for e in events if e["name"] == "backward"]
        comm = [e for e in events if e["kind"] == "comm"]
        assert len(comm) == 2 * len(r["buckets"]) == 2 * 18
        # all but the last bucket are launched before backward returns
        early = [c for c in comm if any(b["start"] <= c["start"] < b["end"] for b in backward)]
        assert len(early) >= len(comm) - 2
        assert sum(e["bytes_sent"] for e in comm) == r["bytes_sent"]
    assert dp.overlap_fraction(traced["naive"].events) == 0.0
    assert dp.overlap_fraction(traced["bucketed"].events) > 0
    # same bytes either way: bucketing changes when, not how much
    assert traced["naive"]["ranks"][0]["bytes_sent"] == traced["bucketed"]["ranks"][0]["bytes_sent"]


def test_accumulation_syncs_once_per_step():
    run = DPRun(CFG, steps=2, batch_size=BATCH, variant="bucketed", bucket_bytes=4096,
                micro_batches=4, trace=True)
    res = dp.run(run, 2)
    for r in res["ranks"]:
        events = [e for e in res.events if e["rank"] == r["rank"]]
        for step in range(2):
            backward = [e for e in events if e["name"] == "backward"
                        and e["meta"]["step"] == step]
            assert [b["meta"]["mb"] for b in backward] == [0, 1, 2, 3]
            last = backward[-1]
            comm = [e for e in events if e["kind"] == "comm"
                    and backward[0]["start"] <= e["start"] and
                    (step == 1 or e["start"] < [f for f in events if f["name"] == "forward"
                                                and f["meta"]["step"] == 1][0]["start"])]
            assert len(comm) == len(r["buckets"])  # one all-reduce per bucket, not four
            assert all(c["start"] >= last["start"] for c in comm)  # all in the last micro-step


def unused_parameter():
    model = torch.nn.ModuleDict({"used": torch.nn.Linear(3, 3), "unused": torch.nn.Linear(3, 3)})
    dp.BucketedDP(model, bucket_bytes=1)
    model["used"](torch.ones(2, 3)).sum().backward()  # the sync at its end names them


def test_unused_parameter_is_an_error_not_a_hang():
    with pytest.raises(parlab.LaunchError,
                       match=r"2 parameter\(s\) got no gradient .*: unused\.weight, unused\.bias"):
        parlab.launch(unused_parameter, 2, timeout=30)


def test_overlap_fraction_definition():
    ev = lambda rank, kind, name, s, e: {"rank": rank, "kind": kind, "name": name,  # noqa: E731
                                         "start": s, "end": e}
    events = [ev(0, "compute", "backward", 0.0, 10.0), ev(0, "comm", "a", 8.0, 12.0),
              ev(1, "compute", "backward", 0.0, 10.0), ev(1, "comm", "a", 10.0, 14.0),
              ev(1, "compute", "forward", 12.0, 14.0)]  # not backward: does not count
    assert dp.overlap_fraction(events) == pytest.approx(2.0 / 8.0)
    assert dp.overlap_fraction(events[:1]) == 0.0
    # buckets in flight at the same time count once: the union [8, 13] of rank 0's comm
    nested = events[:2] + [ev(0, "comm", "b", 9.0, 13.0)]
    assert dp.overlap_fraction(nested) == pytest.approx(2.0 / 5.0)


def test_assign_buckets():
    assert dp.assign_buckets([4, 4, 4], 8) == [[0, 1], [2]]
    assert dp.assign_buckets([4, 4, 4], 1) == [[0], [1], [2]]
    assert dp.assign_buckets([4, 20, 4], 8) == [[0, 1], [2]]  # closes once >= the cap
    assert dp.assign_buckets([4, 4, 4], 10 ** 9) == [[0, 1, 2]]
    with pytest.raises(ValueError, match="bucket_bytes"):
        dp.assign_buckets([4], 0)


# --- compressors ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 7, 8, 9, 64, 1001])
def test_pack_bits_roundtrip(n):
    bits = torch.rand(n, generator=torch.Generator().manual_seed(n)) > 0.5
    packed = compression.pack_bits(bits)
    assert packed.dtype == torch.uint8 and packed.numel() == math.ceil(n / 8)
    assert torch.equal(compression.unpack_bits(packed, n), bits)
    np = pytest.importorskip("numpy")
    assert packed.tolist() == np.packbits(bits.numpy()).tolist()


@pytest.mark.parametrize("kind", ["fp16", "topk", "sign"])
@pytest.mark.parametrize("numel", [1, 10, 1000])
def test_compressors(kind, numel):
    x = torch.randn(numel, generator=torch.Generator().manual_seed(numel))
    payload = compression.compress(x, kind, topk_ratio=0.1)
    assert payload.dtype == torch.uint8 and payload.numel() == compression.payload_bytes(numel, kind, 0.1)
    y = compression.decompress(payload, kind, numel, topk_ratio=0.1)
    assert y.shape == (numel,) and y.dtype == torch.float32
    if kind == "fp16":
        assert torch.equal(y, x.half().float())
    elif kind == "topk":
        k = compression.topk_count(numel, 0.1)
        kept = y != 0
        assert kept.sum() == k and torch.equal(y[kept], x[kept])
        assert x[~kept].abs().max().item() <= x[kept].abs().min().item() if k < numel else True
    else:
        assert torch.equal(y.abs(), torch.full_like(y, x.abs().mean().item()))
        assert torch.equal(y > 0, x >= 0)


def test_payload_bytes_and_errors():
    assert compression.payload_bytes(1000, None) == 4000
    assert compression.payload_bytes(1000, "fp16") == 2000
    assert compression.payload_bytes(1000, "topk", 0.01) == 80  # 10 x (fp32 value + int32 index)
    assert compression.payload_bytes(1000, "sign") == 125 + 4
    for bad in (lambda: compression.payload_bytes(10, "int8"), lambda: compression.compress(torch.ones(3), "int8"),
                lambda: compression.decompress(torch.ones(3, dtype=torch.uint8), "int8", 3)):
        with pytest.raises(ValueError, match="compression"):
            bad()


def error_feedback_step(kind):
    """One CompressedDP exchange on one rank: what was sent, what is kept back."""
    torch.manual_seed(0)
    model = torch.nn.Linear(50, 20)
    sync = compression.CompressedDP(model, kind=kind, topk_ratio=0.1)
    grads = [torch.randn_like(p) for p in sync.params]
    sum((p * g).sum() for p, g in zip(sync.params, grads)).backward()  # gradients = grads
    return grads, [p.grad for p in sync.params], sync.residual


@pytest.mark.parametrize("kind", ["fp16", "topk", "sign"])
def test_error_feedback_residual(kind):
    grads, sent, residual = parlab.launch(error_feedback_step, 1, kind)[0]
    for g, s, e in zip(grads, sent, residual):
        expected = compression.decompress(compression.compress(g, kind, 0.1), kind, g.numel(), 0.1).view_as(g)
        assert torch.equal(s, expected)  # one rank: the average is its own message
        assert torch.allclose(e, g - s, atol=0)  # residual = input - decompressed
        assert e.abs().max() > 0


@pytest.mark.parametrize("world_size", [2, 4])
def test_traced_bytes_are_the_payloads(world_size):
    sizes = [p.numel() for p in GPT(CFG).parameters()]
    for kind in (None, "fp16", "topk", "sign"):
        if kind == "fp16" and world_size == 4:
            continue  # uneven ring chunks: ranks differ by a few bytes
        run = DPRun(CFG, steps=2, batch_size=BATCH, variant="naive", compression=kind,
                    topk_ratio=0.05)
        res = dp.run(run, world_size)
        for r in res["ranks"]:
            assert r["bytes_sent"] == 2 * dp_demos.exchange_bytes(sizes, world_size, kind, 0.05)


def test_wire_bytes_rows():
    rows = dp_demos.wire_bytes(world_sizes=(2,))
    assert len(rows) == 3 and all(r["bytes"] == r["formula"] > 0 for r in rows)


def test_compressed_training_still_learns():
    run = DPRun(CFG, steps=12, batch_size=BATCH, lr=3e-3, variant="naive", compression="sign")
    losses = dp.run(run, 2)["losses"]
    assert losses[-1] < losses[0] - 0.3


# --- bad input: ValueError before any rank starts -------------------------------------------

@pytest.mark.parametrize("fields,world_size,match", [
    ({"bucket_bytes": 0}, 2, "bucket_bytes"),
    ({"bucket_bytes": -5}, 2, "bucket_bytes"),
    ({"batch_size": 6}, 4, "batch_size=6 must be a positive multiple of dp=4"),
    ({"batch_size": 8, "micro_batches": 3}, 2, "micro_batches=3"),
    ({"micro_batches": 0}, 2, "micro_batches"),
    ({"variant": "async"}, 2, "variant"),
    ({"compression": "int8"}, 2, "compression"),
    ({"compression": "topk", "variant": "bucketed"}, 2, "variant='naive'"),
    ({"compression": "topk", "variant": "naive", "topk_ratio": 0.0}, 2, "topk_ratio"),
    ({"topk_ratio": 1.5}, 2, "topk_ratio"),
    ({"steps": -1}, 2, "steps"),
    ({}, 0, "world_size"),
    ({"steps": 1.5}, 2, r"steps=1\.5"),
    ({"batch_size": 8.0}, 2, r"batch_size=8\.0"),
    ({"lr": float("nan")}, 2, "lr=nan"),
    ({"seed": "x"}, 2, "seed='x'"),
    ({"bucket_bytes": 4096.0}, 2, r"bucket_bytes=4096\.0"),
    ({"micro_batches": 2.0}, 2, r"micro_batches=2\.0"),
    ({"compression": "topk", "variant": "naive", "topk_ratio": float("nan")}, 2, "topk_ratio=nan"),
    ({"error_feedback": 1}, 2, "error_feedback=1"),
    ({"trace": "yes"}, 2, "trace='yes'"),
    ({"variant": None}, 2, "variant=None"),
    ({"config": {"n_layers": 2}}, 2, "config must be a GPTConfig"),
])
def test_bad_input_raises_value_error(fields, world_size, match):
    before = parlab.pool_info()
    with pytest.raises(ValueError, match=match):
        dp.run(DPRun(**{"config": CFG, **fields}), world_size)
    assert parlab.pool_info() == before


def test_run_takes_a_dp_run():
    with pytest.raises(ValueError, match="run must be a DPRun"):
        dp.run({"variant": "naive"}, 2)
    assert not hasattr(dp, "run_data_parallel")


def test_bad_demo_input():
    with pytest.raises(ValueError, match="per_rank_batch"):
        dp_demos.compare_step_times(2, {"a": {"variant": "naive"}}, CFG, per_rank_batch=0)
    with pytest.raises(ValueError, match="bucket_bytes"):
        dp_demos.compare_step_times(2, {"a": {"variant": "bucketed", "bucket_bytes": 0}}, CFG)
    with pytest.raises(ValueError, match="variant"):
        dp_demos.compare_step_times(2, {"a": {"variant": "zero"}}, CFG)


# --- the notebook's experiments, small ----------------------------------------------------

def test_compare_step_times_and_metrics():
    specs = {"naive": {"variant": "naive"},
             "bucketed": {"variant": "bucketed", "bucket_bytes": 4096},
             "ddp": {"variant": "ddp", "bucket_bytes": 4096}}
    res = dp_demos.compare_step_times(2, specs, CFG, per_rank_batch=2, steps=3, warmup=1,
                                      record=True)
    assert set(res) == set(specs)
    for label, r in res.items():
        assert len(r["steps"]) == 3 and r["median"] > 0 and r["tokens_per_s"] > 0
        assert {e["meta"]["step"] for e in r["events"]} == {0, 1, 2}
        assert r["exposed"] >= 0
    assert res["ddp"]["overlap"] is None and res["naive"]["overlap"] == 0.0
    assert 0 < res["bucketed"]["overlap"] <= 1
    step = dp_demos.one_step(res["bucketed"]["events"])
    assert len({e["meta"]["step"] for e in step}) == 1 and {e["rank"] for e in step} == {0, 1}
    assert "18 all-reduces" in dp_demos.sweep_caption("b", {**res["bucketed"], "buckets": 18})


def test_accumulation_check_is_exact():
    out = dp_demos.accumulation_check(world_size=2, micro_batches=4, steps=2,
                                      config=CFG, batch_size=BATCH)
    for a in (1, 4):
        assert out[a]["loss"] <= TOL["loss"] and out[a]["param"] <= TOL["param"]
    assert out[4]["bytes_per_step"] == out[1]["bytes_per_step"] > 0
    assert out[4]["all_reduces_per_step"] == out[1]["all_reduces_per_step"]


def test_compression_model():
    n_params, alpha = 10 ** 8, 5e-6
    # exact: one ring all-reduce of the fp32 gradients, as cost.collective_time says
    exact = dp_demos.compression_step_time(None, n_params, 8, alpha, 10e9, 0.1)
    assert exact == pytest.approx(0.1 + 14 * alpha + 2 * 7 / 8 * 4e8 / 10e9)
    # top-k's all-gather grows with the ranks; the all-reduce does not
    grow = [dp_demos.exchange_bytes([n_params], n, "topk", 0.01) for n in (2, 8, 64)]
    assert grow[1] == 7 * grow[0] and grow[2] == 63 * grow[0]
    flat = [dp_demos.exchange_bytes([n_params], n, None) for n in (2, 8, 64)]
    assert flat[2] < 2 * flat[0]
    # slow link: 1-bit pays off; fast link and a costly codec: it does not
    assert (dp_demos.compression_step_time("sign", n_params, 8, alpha, 1e9, 0.1)
            < dp_demos.compression_step_time(None, n_params, 8, alpha, 1e9, 0.1))
    assert (dp_demos.compression_step_time("sign", n_params, 8, alpha, 100e9, 0.1, codec_s=0.05)
            > dp_demos.compression_step_time(None, n_params, 8, alpha, 100e9, 0.1))
    curves = dp_demos.compression_payoff(n_params, 8, alpha, 0.1, [1e9, 1e10],
                                         codec_s_per_param={"sign": 1e-9})
    assert set(curves) == {"exact fp32", "fp16", "top-1%", "sign (1 bit)"}
    assert curves["sign (1 bit)"][1][0] == pytest.approx(
        dp_demos.compression_step_time("sign", n_params, 8, alpha, 1e9, 0.1, codec_s=0.1))


def test_throughput_and_bucket_sweep_small():
    rows = dp_demos.throughput(world_sizes=(1, 2), config=CFG, per_rank_batch=2, steps=2)
    assert [(r["world_size"], r["variant"]) for r in rows] == [
        (n, v) for n in (1, 2) for v in ("naive", "bucketed", "ddp")]
    assert all(r["tokens_per_s"] > 0 for r in rows)
    assert [r["speedup"] for r in rows[:3]] == [1.0] * 3
    assert [r["vs_ddp"] for r in rows if r["variant"] == "ddp"] == [1.0, 1.0]
    sweep = dp_demos.bucket_sweep(2, bucket_sizes=(1, 1 << 20), steps=2, config=CFG,
                                  per_rank_batch=2)
    n_tensors = len(list(GPT(CFG).parameters()))
    assert [sweep[k]["buckets"] for k in ("naive", "bucketed 1 B", "bucketed 1 MiB")] == [
        n_tensors, n_tensors, 1]


def test_compression_runs_small():
    settings = {"exact": (None, 0.01, True), "sign": ("sign", 0.01, True)}
    res = dp_demos.compression_runs(2, steps=3, settings=settings, config=CFG, batch_size=BATCH)
    assert not res["exact"]["bytes_counted"] and res["sign"]["bytes_counted"]
    assert res["exact"]["codec_s"] == 0.0 < res["sign"]["codec_s"]
    assert res["sign"]["bytes_per_step"] < res["exact"]["bytes_per_step"] / 20
    assert len(res["sign"]["losses"]) == 3


def test_compression_pays_below_finds_the_crossing():
    from lessons.l01_data_parallel import experiments as demos

    def saved(kind, bw, n_p, n, c):
        exact = demos.compression_step_time(None, n_p, n, 5e-6, bw, c)
        return 1 - demos.compression_step_time(kind, n_p, n, 5e-6, bw, c) / exact

    b = demos.compression_pays_below("fp16", 10**8, 8, 5e-6, 0.1)
    assert saved("fp16", b * 0.99, 10**8, 8, 0.1) >= 0.10 > saved("fp16", b * 1.01, 10**8, 8, 0.1)
    # ten times the compute: the threshold falls about tenfold (latency is negligible here)
    b10 = demos.compression_pays_below("fp16", 10**8, 8, 5e-6, 1.0)
    assert b / b10 == pytest.approx(10, rel=0.02)
    # sign's all-gather grows with the ranks: at 64 it sends about what the exact
    # all-reduce does and never saves 10%
    assert demos.compression_pays_below("sign", 7 * 10**9, 64, 5e-6, 4.0) is None
    assert demos.compression_pays_below("sign", 10**8, 8, 5e-6, 0.1) > b  # 1 bit beats 16 at 8 ranks
