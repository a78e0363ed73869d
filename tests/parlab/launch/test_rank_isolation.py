"""A library run's result does not depend on what ran before it on the same ranks
(issue 25): learner code that changes torch for the whole process, launched like an
exercise checker does or run as a %%ranks cell, leaves a later tensor-parallel run
bit for bit what it is on fresh ranks; and with the reset planted out, it would not."""

from __future__ import annotations

import pytest
import torch
import workers_isolation as w

import parlab
from parlab import tensor_parallel as tp
from parlab.model import GPTConfig
from parlab.tensor_parallel import TPRun

pytestmark = pytest.mark.timeout(120)

T = 2  # ranks: the library run and the learner code share this pool
RUN = TPRun(GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2),
            steps=2, batch_size=4)
# What tensor parallelism's model runs through: a default dtype, grad mode, nn.GELU
# (F.gelu), residual additions (Tensor.__add__) and attention (q @ k). (Its linear
# layers are its own, so a patched nn.Linear.forward shows only in the probe test.)
PLANTED = ("float64", "no_grad", "gelu", "tensor_add", "matmul")


@pytest.fixture(scope="module")
def fresh():
    """The run on ranks that ran nothing else."""
    parlab.shutdown()
    result = tp.run(RUN, T)
    parlab.shutdown()
    return result


@pytest.fixture
def poisoned_pool_closed():
    """Ranks that were left poisoned (the planted-bug tests) serve no later test."""
    yield
    parlab.shutdown()


def identical(a, b) -> bool:
    return a.losses == b.losses and all(
        a[part].keys() == b[part].keys() and all(torch.equal(a[part][k], t)
                                                for k, t in b[part].items())
        for part in ("state_dict", "grads"))


def run_after(learner_code):
    """``learner_code()`` (which returns the ranks' pids), then the library run, on the
    same ranks; the run's result, or the exception it raised (fresh ranks would not).
    If the pool was restarted in between (another edit of parlab's sources restarts
    it), the test would pass for the wrong reason: try again."""
    for _ in range(3):
        pids = learner_code()
        try:
            result = tp.run(RUN, T)
        except parlab.LaunchError as e:
            return e
        if [p["pid"] for p in parlab.launch(w.probe, T)] == pids:
            return result
    pytest.fail("the ranks were restarted between the learner code and the run, 3 times")


def cell(code: str) -> list:
    results = parlab.run_on_ranks(code, T)
    assert all(r["error"] is None for r in results), results
    return [r["value"] for r in results]


def test_the_run_is_reproducible_on_fresh_ranks(fresh):
    # what the other tests rely on: without learner code, a run repeats bit for bit
    parlab.shutdown()
    assert identical(tp.run(RUN, T), fresh)


def test_a_launched_learner_function_does_not_change_a_later_run(fresh):
    assert identical(run_after(lambda: parlab.launch(w.poison, T)), fresh)


def test_a_ranks_cell_does_not_change_a_later_run(fresh):
    result = run_after(lambda: [int(p) for p in cell("import workers_isolation as w\n"
                                                     "w.poison()")])
    assert identical(result, fresh)


@pytest.mark.parametrize("poison", PLANTED)
def test_without_the_reset_each_poison_would_change_the_run(fresh, poison,
                                                            poisoned_pool_closed):
    # The planted bug: the ranks' reset is a no-op. Each poison alone must then show,
    # or the tests above could not fail.
    def learner_code():
        parlab.launch(w.disable_reset, T)
        return parlab.launch(w.poison, T, poison)
    result = run_after(learner_code)
    if poison == "no_grad":
        assert isinstance(result, parlab.LaunchError), "a run without grad should fail"
    else:
        assert not isinstance(result, Exception), result
        assert not identical(result, fresh)


def test_every_listed_setting_is_reset():
    parlab.shutdown()
    before = parlab.launch(w.probe, T)
    parlab.launch(w.poison, T, *w.POISONS, "settings")
    after = parlab.launch(w.probe, T)
    for b, a in zip(before, after):
        assert b["pid"] == a["pid"]  # the same ranks
        assert {k: v for k, v in a.items() if v != b[k]} == {}


def test_a_library_run_alone_restores_nothing():
    # The reset must not fight state that torch itself sets as it goes (lazy imports
    # that rebind a function, say): after a plain library run it finds nothing to undo.
    parlab.shutdown()
    parlab.launch(w.record_resets, T)
    tp.run(RUN, T)
    parlab.launch(w.poison, T, "gelu", "tensor_add")
    restored = parlab.launch(w.resets, T)
    for per_rank in restored:
        assert per_rank[:-1] == [[]] * (len(per_rank) - 1)
        assert per_rank[-1] == ["torch.nn.functional.gelu", "Tensor.__add__"]


def test_cells_keep_what_earlier_cells_set():
    # a %%ranks namespace and torch's settings carry from cell to cell; only a library
    # run starts afresh
    parlab.shutdown()
    cell("torch.set_default_dtype(torch.float64)")
    assert cell("torch.get_default_dtype()") == ["torch.float64"] * T
    assert parlab.launch(w.probe, T)[0]["dtype"] == torch.float32
