"""Forward overlap by chunking (collective_matmul; Wang et al. ASPLOS 2023, §3): SP runs
with overlap_chunks > 1 equal the single device and the unchunked SP run (losses, grads,
params after 3 AdamW steps, fp32); planted chunking bugs are caught; the cost model's
exposed share is 1/c while the GEMM is the longer stage."""

from __future__ import annotations

import pytest
import workers_tp_overlap

import parlab
from parlab import cost
from parlab import tensor_parallel as tp
from parlab.model import GPTConfig, max_differences, reference_train
from parlab.tensor_parallel import TPRun

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
STEPS, BATCH = 3, 8
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}  # as tests/parlab/tensor_parallel/test_tensor_parallel.py


@pytest.fixture(scope="module")
def reference():
    return reference_train(CFG, STEPS, BATCH)


def as_ref(result):
    return {"losses": result.losses, "state_dict": result.state_dict, "grads": result.grads}


@pytest.mark.parametrize("t, chunks", [(2, 4), (4, 2)])
def test_chunked_equals_one_device_and_unchunked(reference, t, chunks):
    plain = tp.run(TPRun(CFG, steps=STEPS, batch_size=BATCH, sequence_parallel=True), t)
    chunked = tp.run(TPRun(CFG, steps=STEPS, batch_size=BATCH, sequence_parallel=True,
                           overlap_chunks=chunks), t)
    for diff in (max_differences(chunked, reference), max_differences(chunked, as_ref(plain))):
        assert all(diff[k] < TOL[k] for k in TOL), diff
    # chunked forward issues `chunks` collectives where the plain one issues one
    fwd = [c for c in chunked.ranks[0]["collectives"] if c["step"] == 0
           and c["direction"] == "forward" and c["layer"] == "blocks.0.mlp.fc1"]
    assert len(fwd) == chunks


@pytest.mark.parametrize("bug", ["chunk_order", "rank_offset"])
def test_a_planted_chunking_bug_is_caught(reference, bug):
    run = TPRun(CFG, steps=STEPS, batch_size=BATCH, sequence_parallel=True, overlap_chunks=2)
    ranks = parlab.launch(workers_tp_overlap.buggy_worker, 2, run, bug)
    diff = max_differences(tp.collect(run, ranks), reference)
    assert diff["loss"] > 100 * TOL["loss"] and diff["grad"] > 100 * TOL["grad"], diff


@pytest.mark.parametrize("kwargs, field", [
    (dict(overlap_chunks=0, sequence_parallel=True), "overlap_chunks"),
    (dict(overlap_chunks=2), "sequence_parallel"),
    (dict(overlap_chunks=3, sequence_parallel=True), "overlap_chunks=3 must divide")])
def test_bad_chunks_are_refused_before_any_rank_starts(kwargs, field):
    with pytest.raises(ValueError, match=field):
        TPRun(CFG, steps=1, batch_size=BATCH, **kwargs).check(2)


def test_pipeline_model():
    # GEMM the longer stage: exactly one piece (1/c) of the collective stays exposed
    for c in (1, 2, 4, 8):
        r = cost.chunked_overlap(1.0 / c, 2.0 / c, c)
        assert r["exposed_s"] == pytest.approx(1.0 / c) and r["exposed_fraction"] == pytest.approx(1 / c)
    # link the longer stage: c (m - p) + p exposed
    assert cost.chunked_overlap(1.0, 0.5, 4)["exposed_s"] == pytest.approx(4 * 0.5 + 0.5)
    gpt3 = dict(n_layers=96, d_model=12288, n_heads=96, seq_len=2048, micro_batch=1, tp=8,
                peak_flops=312e12, bandwidth=300e9, alpha=5e-6)
    rows = [cost.tp_forward_overlap(**gpt3, chunks=c) for c in (1, 2, 4, 8)]
    assert rows[0]["exposed_share"] == pytest.approx(1.0)
    assert rows[0]["gain"] == pytest.approx(rows[0]["gain_backward"])
    shares = [r["exposed_share"] for r in rows]
    assert shares == sorted(shares, reverse=True)
    for r in rows[1:]:
        assert 1 / r["chunks"] <= r["exposed_share"] < 1  # proj's thin GEMM hides less
        assert rows[0]["gain"] < r["gain"] < r["full_gain"]
    with pytest.raises(ValueError, match="chunks"):
        cost.tp_forward_overlap(**gpt3, chunks=0)


def test_interview_g_quotes_the_chunked_model_not_a_backward_only_bound():
    from parlab import hardware
    from lessons.l02_tensor_parallel import experiments as demos
    g = demos.interview(comm=[dict(tp=2, sequence_parallel=False, measured={})])["g"]
    spec = hardware.GPU_PRESETS["A100-SXM4-80GB"]
    link = hardware.LINK_PRESETS[spec.link]
    want = cost.tp_forward_overlap(**demos.GPU_MODELS["GPT-3 175B"], micro_batch=1, tp=8, chunks=4,
                                   peak_flops=hardware.peak_flops(spec, "bf16"),
                                   alpha=link.latency_us * 1e-6,
                                   bandwidth=link.gb_per_s_per_direction * 1e9)
    assert g["sp_chunked_gain"][4] == pytest.approx(want["gain"])
    assert g["sp_backward_gain"] == pytest.approx(want["gain_backward"])
    # no SP, backward only < SP backward only < chunked c=4 < c=8 < all hidden
    assert (g["best_gain"] < g["sp_backward_gain"] < g["sp_chunked_gain"][4]
            < g["sp_chunked_gain"][8] < g["sp_full_gain"])
