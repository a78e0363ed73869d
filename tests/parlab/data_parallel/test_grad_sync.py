"""The data-parallel family's one gradient-sync interface (data_parallel/grad_sync.py):
every part -- NaiveDP, BucketedDP, CompressedDP, ShardedOptimizer (ZeRO-1/2), FullyShard
(ZeRO-3), HybridShard (HSDP) -- has averaged the gradients when ``loss.backward()``
returns, with nothing called after it; ``no_sync()`` holds them; ``finish_grad_sync()``
sends what was held and is a no-op (False) once a round is finished."""

import pytest
import workers_grad_sync as w

import parlab

TOL = 1e-6  # fp32 sums in another order (fp16 compression: its own tolerance below)


def _diff(got: dict, want: dict) -> float:
    """Largest |difference| of the gradients, inf if some are missing."""
    if set(got) != set(want):
        return float("inf")
    return max((got[i] - want[i]).abs().max().item() for i in want)


def _tol(kind):
    return 2e-3 if kind == "compressed" else TOL  # fp16 on the wire


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", w.PARTS)
def test_backward_alone_leaves_the_averaged_gradient(kind):
    world = 4 if kind == "hsdp" else 2
    want = w.reference(world)
    for r in parlab.launch(w.one_round, world, kind, timeout=120):
        assert _diff(r["grads"], want) < _tol(kind), kind
        assert r["left"] is False  # the round finished inside backward: nothing left


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", w.PARTS)
def test_no_sync_accumulates_and_the_last_backward_sends(kind):
    world = 4 if kind == "hsdp" else 2
    want = w.reference(world, micro_batches=3)
    for r in parlab.launch(w.one_round, world, kind, 3, timeout=120):
        assert _diff(r["grads"], want) < _tol(kind), kind
        assert r["left"] is False


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", ["bucketed", "zero2", "fsdp"])
def test_finish_grad_sync_sends_what_no_sync_held(kind):
    want = w.reference(2, micro_batches=2)
    for r in parlab.launch(w.held_then_finished, 2, kind, timeout=120):
        assert (r["inside"], r["finished"], r["again"]) == (False, True, False)
        assert _diff(r["grads"], want) < TOL


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", ["naive", "zero1", "fsdp"])
def test_a_part_that_does_not_finish_inside_backward_is_caught(kind):
    # without the end-of-backward callback the gradients stay each rank's own
    want = w.reference(2)
    for r in parlab.launch(w.one_round, 2, kind, 1, "no_callback", timeout=120):
        assert _diff(r["grads"], want) > 1e-3, kind
