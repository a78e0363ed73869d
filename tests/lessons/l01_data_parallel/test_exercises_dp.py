"""Notebook 01's exercise checkers (lessons.l01_data_parallel.exercises): each passes the
reference solution, fails a planted wrong one with a message naming where and why, and
says "not answered" for the notebook's placeholder (without raising)."""

import pytest
import torch
import torch.distributed as dist

from parlab import cost
from lessons.l01_data_parallel import exercises as ex


# --- planted answers (module level: the checker sends their source to the ranks) ----------

def placeholder(*args):
    raise NotImplementedError  # your code


def exchange_sum(grads, rank, world_size):
    for g in grads:
        dist.all_reduce(g)  # forgot to divide by world_size


def exchange_skips_last(grads, rank, world_size):
    for g in grads[:-1]:  # the last tensor is never exchanged
        dist.all_reduce(g)
        g.div_(world_size)


def zero1_no_all_gather(params, grads, state, rank, world_size, lr):
    shard = params.numel() // world_size
    g = torch.empty(shard)
    dist.reduce_scatter(g, list(grads.chunk(world_size)))
    g /= world_size
    m = state.setdefault("m", torch.zeros(shard))
    m.mul_(0.9).add_(g)
    params[rank * shard:(rank + 1) * shard] -= lr * m  # the other shards go stale


def zero1_summed(params, grads, state, rank, world_size, lr):
    shard = params.numel() // world_size
    g = torch.empty(shard)
    dist.reduce_scatter(g, list(grads.chunk(world_size)))  # not divided by world_size
    m = state.setdefault("m", torch.zeros(shard))
    m.mul_(0.9).add_(g)
    mine = params[rank * shard:(rank + 1) * shard]
    mine -= lr * m
    dist.all_gather(list(params.chunk(world_size)), mine.clone())


def zero1_plain_dp(params, grads, state, rank, world_size, lr):
    dist.all_reduce(grads)  # right numbers, but the whole momentum on every rank
    grads /= world_size
    m = state.setdefault("m", torch.zeros_like(params))
    m.mul_(0.9).add_(grads)
    params -= lr * m


def zero1_hangs(params, grads, state, rank, world_size, lr):
    if rank != 0:  # a collective only some ranks call
        dist.all_reduce(grads)


# --- coding exercises -----------------------------------------------------------------------

def test_dp_exchange_reference_passes():
    v = ex.check_dp_exchange(ex.solution_dp_exchange)
    assert v["ok"], v["message"]
    assert v["message"].startswith("Correct.")


def test_dp_exchange_sum_names_rank_tensor_element_and_factor():
    v = ex.check_dp_exchange(exchange_sum)
    assert not v["ok"]
    m = v["message"]
    assert "rank 0" in m and "gradient of wte.weight" in m and "element [" in m
    assert "off by" in m and "4x the mean" in m and "divide by world_size" in m


def test_dp_exchange_skipped_tensor_is_named():
    v = ex.check_dp_exchange(exchange_skips_last)
    assert not v["ok"]
    assert "gradient of lm_head.weight" in v["message"]
    assert "still this rank's own gradient" in v["message"]


def test_dp_exchange_placeholder_not_answered():
    v = ex.check_dp_exchange(placeholder)
    assert not v["ok"] and v.get("missing")
    assert "Not answered yet" in v["message"]


def test_zero1_reference_passes():
    v = ex.check_zero1_step(ex.solution_zero1_step)
    assert v["ok"], v["message"]
    assert "1/4 of the optimizer state" in v["message"]


def test_zero1_missing_all_gather_names_step_rank_element():
    v = ex.check_zero1_step(zero1_no_all_gather)
    assert not v["ok"]
    m = v["message"]
    assert "step 0, rank 0" in m and "element [12]" in m and "all-gather" in m


def test_zero1_summed_gradient_is_4x_too_large():
    v = ex.check_zero1_step(zero1_summed)
    assert not v["ok"]
    assert "step 0" in v["message"] and "4x too large" in v["message"]


def test_zero1_full_momentum_is_not_zero1():
    v = ex.check_zero1_step(zero1_plain_dp)
    assert not v["ok"]
    assert "holds 48 numbers and its shard has 12" in v["message"]


def test_zero1_placeholder_and_hang():
    v = ex.check_zero1_step(placeholder)
    assert not v["ok"] and v.get("missing")
    v = ex.check_zero1_step(zero1_hangs, timeout=5)
    assert not v["ok"] and "did not finish" in v["message"]


def test_zero1_reference_matches_a_hand_computed_first_step():
    p0, batches = ex._zero1_data(4, 1)
    X, y = batches[0]
    want = p0 - ex.ZERO1_LR * 2 * X.T @ (X @ p0 - y) / X.shape[0]
    torch.testing.assert_close(ex.zero1_reference(4, 1)[0], want)


# --- numeric exercises ----------------------------------------------------------------------

N13, N13B = cost.MODEL_PRESETS["13B"].n_params, cost.MODEL_PRESETS["1.3B"].n_params


@pytest.mark.parametrize("check, right, wrong, words", [
    (ex.check_zero_memory, cost.zero_memory(N13, 8, 2)["total"] / 1e9,
     cost.zero_memory(N13, 8, 0)["total"] / 1e9, "plain DP"),
    (ex.check_zero3_traffic, cost.zero_comm_volume(N13, 8, 3) / 1e9,
     cost.zero_comm_volume(N13, 8, 0) / 1e9, "2 Psi"),
    (ex.check_dp_allreduce_bytes, 2 * 15 / 16 * 2 * N13B / 1e9, 4 * N13B / 1e9, "2(N-1)/N"),
])
def test_numeric_checkers(check, right, wrong, words):
    assert check(right)["ok"]
    assert check(f"{right:.4g}")["ok"]
    v = check(wrong)
    assert not v["ok"] and words in v["message"]
    assert check(None).get("missing") and check("")["ok"] is False
    assert not check("lots")["ok"]


def test_show_solution_prints_source(capsys):
    ex.show_solution("my_zero1_step")
    assert "reduce_scatter" in capsys.readouterr().out
    ex.show_solution("nope")
    assert "no solution named" in capsys.readouterr().out
