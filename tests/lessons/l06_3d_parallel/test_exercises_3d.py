"""Notebook 06's "Your turn" (``lessons.l06_3d_parallel.exercises``): every checker passes the
reference, fails a planted wrong answer with a message naming the rank and the group, and
says "not answered" for the notebook's placeholder."""

import pytest
import torch.distributed as dist  # noqa: F401  (the learner functions below run on the ranks)

from parlab import planner
from lessons.l06_3d_parallel import exercises as ex

pytestmark = pytest.mark.usefixtures("english")  # the messages' English words are read


def test_numeric_checkers():
    assert ex.check_coords({"dp": 1, "pp": 0, "tp": 1}, rank=5)["ok"]
    bad = ex.check_coords({"dp": 0, "pp": 1, "tp": 1}, rank=5)
    assert not bad["ok"] and "dp, pp wrong" in bad["message"]
    assert ex.check_coords(None).get("missing") and not ex.check_coords([1, 0, 1])["ok"]
    assert ex.check_tp_group([6, 7], rank=6)["ok"] and not ex.check_tp_group([2, 6], rank=6)["ok"]
    assert ex.check_tp_group(None).get("missing")
    assert ex.check_bubble(3 / 11)["ok"] and not ex.check_bubble(3 / 8)["ok"]
    assert not ex.check_bubble("x")["ok"] and ex.check_bubble(None).get("missing")
    m = planner.resolve_model("175B")
    est = planner.estimate(m["n_layers"], m["d_model"], m["n_heads"], m["seq_len"],
                           m["vocab_size"], 1024, 8, 16, 1536, 1, recompute="full")
    want = (est.memory_per_gpu.params + est.memory_per_gpu.grads + est.memory_per_gpu.optimizer) / 1e9
    assert abs(ex.memory_answer() - want) < 1e-9
    assert ex.check_memory(want)["ok"] and not ex.check_memory(want * 2)["ok"]
    assert ex.check_memory(None).get("missing")


def placeholder(rank, dp, pp, tp):
    raise NotImplementedError  # your code


def pp_fastest(rank, dp, pp, tp):
    """Planted: the pipeline axis innermost instead of TP."""
    t, rest = divmod(rank, dp * pp)
    d, p = divmod(rest, pp)
    return {"pp": [t * dp * pp + d * pp + i for i in range(pp)],
            "dp": [t * dp * pp + i * pp + p for i in range(dp)],
            "tp": [i * dp * pp + d * pp + p for i in range(tp)]}


def dp_wrong_stride(rank, dp, pp, tp):
    """Planted: right TP and PP groups, DP stride forgets the pipeline."""
    good = ex.solution_groups(rank, dp, pp, tp)
    d, rest = divmod(rank, pp * tp)
    return dict(good, dp=[(rank - d * pp * tp) + i * tp for i in range(dp)])


def test_groups_checker():
    v = ex.check_groups(ex.solution_groups)
    assert v["ok"] and [s["tp"] for s in v["sums"]] == [1, 1, 5, 5, 9, 9, 13, 13], v
    v = ex.check_groups(pp_fastest)
    assert not v["ok"] and "rank 0, TP group: [0, 4], expected [0, 1]" in v["message"]
    v = ex.check_groups(dp_wrong_stride)
    assert not v["ok"] and "rank 0, DP group: [0, 2], expected [0, 4]" in v["message"], v
    assert ex.check_groups(placeholder).get("missing")
    assert "must return a dict" in ex.check_groups(lambda r, d, p, t: [r])["message"]
    # other shapes work too: 4 ranks as 1 x 2 x 2, checked against the mesh
    assert ex.check_groups(ex.solution_groups, dp=1, pp=2, tp=2)["ok"]


def test_show_solution(capsys):
    ex.show_solution("my_groups")
    assert capsys.readouterr().out.startswith("def my_groups(rank, dp, pp, tp):")


def sync_placeholder(grad, groups):
    raise NotImplementedError  # your code


def sync_over_world(grad, groups):
    """Planted: averages over every rank, not the DP group."""
    dist.all_reduce(grad)
    return grad / dist.get_world_size()


def sync_no_divide(grad, groups):
    """Planted: sums over the DP group."""
    dist.all_reduce(grad, group=groups["dp"])
    return grad


def test_grad_sync_checker():
    assert ex.check_grad_sync(ex.solution_grad_sync)["ok"]
    v = ex.check_grad_sync(sync_over_world)
    assert not v["ok"] and "rank 0 (stage 0, TP slice 0): element [0]" in v["message"] and "all ranks" in v["message"], v
    v = ex.check_grad_sync(sync_no_divide)
    assert not v["ok"] and "sum over the DP group [0, 4]" in v["message"], v
    assert ex.check_grad_sync(sync_placeholder).get("missing")
