"""cost.planning (and Narayanan et al.'s FLOP count, cost.flops_per_token count="megatron"):
pipeline p2p, the DP gradient sync
(exposed vs overlapped, and chunk by chunk under interleaving), interleaved peak activations. (A layer's time: test_cost_step.py.)"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parlab import cost

FAST = settings(max_examples=40, deadline=None, database=None)


def test_megatron_count_is_the_papers_formula():
    B, s, l, h, V = 512, 2048, 24, 2304, 51200

    def megatron(recompute):  # one iteration of B sequences
        return cost.flops_per_token(cost.LayerShape(h, 24), l, s, vocab_size=V, count="megatron",
                                    recompute=recompute) * (B * s)

    paper = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))  # §5.1
    assert megatron("full") == pytest.approx(paper, rel=1e-12)
    none = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))
    assert megatron("none") == pytest.approx(none, rel=1e-12)
    # PaLM's 6N + 12 L T d per token, N = 12 l h^2 + V h (the logits' matmul): the same
    palm = cost.flops_per_token(12 * l * h * h + V * h, l, s, h) * B * s
    assert megatron("none") == palm
    assert megatron("selective") - megatron("none") == l * 4 * B * s * s * h


@FAST
@given(st.integers(1, 64), st.integers(1, 256), st.integers(1, 4), st.sampled_from([1, 8]))
def test_pipeline_p2p_time(p, m, v, tp):
    t = cost.pipeline_p2p_time(1, 2048, 4096, p, m, 1e-6, 25e9, v, tp)
    S = 2048 * 4096 * 2 / tp
    assert t == (0.0 if p == 1 else pytest.approx(2 * (v * m + p - 1) * (1e-6 + S / 25e9)))
    if p > 1:
        assert cost.pipeline_p2p_time(1, 2048, 4096, p, m, 1e-6, 25e9, v, tp, False) >= t


@FAST
@given(st.integers(0, 10 ** 10), st.integers(1, 1024), st.sampled_from(cost.ZERO_STAGES),
       st.floats(0, 10))
def test_dp_grad_sync_exposed_vs_overlapped(n, dp, stage, backward):
    over = cost.dp_grad_sync(n, dp, 1e-6, 25e9, stage, 2, backward, True)
    after = cost.dp_grad_sync(n, dp, 1e-6, 25e9, stage, 2, backward, False)
    assert over["bytes"] == cost.zero_comm_volume(n, dp, stage, 2)
    assert after["exposed_s"] == pytest.approx(after["time_s"])
    assert 0 <= over["exposed_s"] <= after["exposed_s"] + 1e-12
    assert over["exposed_s"] == pytest.approx(max(0.0, over["time_s"] - backward), abs=1e-12)
    if dp == 1:
        assert over["time_s"] == 0 and over["bytes"] == 0


def test_dp_grad_sync_by_hand():
    # 1e9 fp16 gradients, dp=4 ring: 2 * 3/4 * 2e9 = 3e9 bytes at 1e10 B/s + 6 alpha
    r = cost.dp_grad_sync(10 ** 9, 4, 1e-3, 1e10, 0, 2, backward_s=0.1)
    assert r["bytes"] == 3e9 and r["time_s"] == pytest.approx(0.3 + 0.006)
    assert r["exposed_s"] == pytest.approx(0.206)


def test_chunked_sync_by_hand():
    # 12 s of sync over 4 chunks of a stage whose backward takes 4 s, p = 2: shares of 3 s,
    # chunk slots of 1 s; the chunk k from the end ends its last backward 2k slots early,
    # so shares start at -1, -3, -5, -7 (and 0 s is the stage's end): the queue of four
    # 3 s shares from -7 ends at 5 -- k = 3: 4 x 3 - (3 x 2 + 1) x 1 = 5
    assert cost.chunked_sync_exposed(12.0, 4.0, v=4, p=2) == pytest.approx(5.0)
    # without interleaving the last backward hides 4 of the 12
    assert cost.chunked_sync_exposed(12.0, 4.0) == pytest.approx(8.0)
    # short shares: only the last chunk's share less its own backward shows
    assert cost.chunked_sync_exposed(2.0, 4.0, v=4, p=8) == 0.0
    assert cost.chunked_sync_exposed(8.0, 4.0, v=4, p=8) == pytest.approx(1.0)


@FAST
@given(st.floats(0, 100), st.floats(0, 100), st.integers(1, 16), st.integers(1, 64))
def test_chunked_sync_never_shows_more_than_one_backward_hides(sync, stage, v, p):
    """Interleaving only moves shares earlier: never more exposed than v = 1, which is
    dp_grad_sync's rule; and never more than the whole sync, never below zero."""
    x = cost.chunked_sync_exposed(sync, stage, v, p)
    assert 0.0 <= x <= cost.chunked_sync_exposed(sync, stage, 1, p) + 1e-9 <= sync + 1e-9
    assert cost.chunked_sync_exposed(sync, stage, 1, p) == pytest.approx(max(0.0, sync - stage))
    assert cost.chunked_sync_exposed(sync, stage, v, 1) >= x - 1e-9  # fewer slots between


@FAST
@given(st.integers(1, 64), st.integers(1, 512), st.integers(1, 8))
def test_interleaved_peak_activations(p, m, v):
    x = cost.interleaved_peak_activations(p, m, v)
    if v == 1:
        assert x == cost.pipeline_peak_activations("1f1b", p, m, 0)
    else:
        assert x == min(m * v, (v + 1) * p - 1) / v and x <= p * (1 + 1 / v)
    assert 0 < x <= m
