"""Notebook 02's "Your turn" (``lessons.l02_tensor_parallel.exercises``): every checker passes
the reference solution, fails a planted wrong one with a message naming what is wrong
(rank, element, gradient), and says "not answered" for the placeholder without raising.
The coding exercises run on real ranks (2 and 4)."""

import pytest
import torch
import torch.distributed as dist

from parlab import cost
from lessons.l02_tensor_parallel import exercises as ex


# --- learner functions as a notebook cell would hold them (module level: sent by source) ---

def placeholder(x, w1_shard, w2_shard, rank, world_size):
    raise NotImplementedError  # your code


def skeleton(x, w1_shard, w2_shard, rank, world_size):
    class MyF(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            raise NotImplementedError  # your code
    return MyF.apply(x)


def no_g(x, w1_shard, w2_shard, rank, world_size):
    return torch.nn.functional.gelu(x @ w1_shard) @ w2_shard        # g forgotten


def all_reduce_twice(x, w1_shard, w2_shard, rank, world_size):
    z = torch.nn.functional.gelu(x @ w1_shard) @ w2_shard
    dist.all_reduce(z)
    dist.all_reduce(torch.zeros(1))
    return z


def plain_all_reduce(x, w1_shard, w2_shard, rank, world_size):
    z = torch.nn.functional.gelu(x @ w1_shard) @ w2_shard
    dist.all_reduce(z)                                               # invisible to autograd
    return z


def f_backward_not_reduced(x, w1_shard, w2_shard, rank, world_size):
    class MyG(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a = a.clone()
            dist.all_reduce(a)
            return a

        @staticmethod
        def backward(ctx, grad):
            return grad
    return MyG.apply(torch.nn.functional.gelu(x @ w1_shard) @ w2_shard)   # no f


def g_backward_reduces(x, w1_shard, w2_shard, rank, world_size):
    class MyF(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.view_as(a)

        @staticmethod
        def backward(ctx, grad):
            grad = grad.clone()
            dist.all_reduce(grad)
            return grad

    class MyG(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a = a.clone()
            dist.all_reduce(a)
            return a

        @staticmethod
        def backward(ctx, grad):
            grad = grad.clone()
            dist.all_reduce(grad)                                    # t times too large
            return grad
    y = torch.nn.functional.gelu(MyF.apply(x) @ w1_shard)
    return MyG.apply(y @ w2_shard)


@pytest.mark.parametrize("t", [2, 4])
def test_reference_solutions_pass(t):
    assert ex.check_tp_mlp_forward(ex.solution_tp_mlp_forward, t)["ok"]
    v = ex.check_tp_mlp(ex.solution_tp_mlp, t)
    assert v["ok"], v["message"]


def test_placeholders_say_not_answered():
    for check in (ex.check_tp_mlp_forward, ex.check_tp_mlp):
        v = check(placeholder)
        assert not v["ok"] and v.get("missing") and "Not answered" in v["message"]
    v = ex.check_tp_mlp(skeleton)                       # a half-written cell: ranks started
    assert not v["ok"] and v.get("missing")


def test_forward_without_g_names_rank_and_element():
    v = ex.check_tp_mlp_forward(no_g)
    assert not v["ok"]
    assert "rank 0, output: element [0, 0]" in v["message"] and "expected" in v["message"]
    assert "off by" in v["message"] and "g" in v["message"]


def test_forward_with_two_collectives_is_refused():
    v = ex.check_tp_mlp_forward(all_reduce_twice)
    assert not v["ok"] and "2 collectives" in v["message"] and "all_reduce x2" in v["message"]


def test_backward_mistakes_name_the_gradient():
    v = ex.check_tp_mlp(f_backward_not_reduced, 2)
    assert not v["ok"] and "rank 0, gradient of x: element" in v["message"]
    assert "f's backward must all-reduce" in v["message"]
    v = ex.check_tp_mlp(plain_all_reduce, 2)
    assert not v["ok"] and "gradient of x" in v["message"]
    v = ex.check_tp_mlp(g_backward_reduces, 2)
    assert not v["ok"] and "rank 0, gradient of w2_shard" in v["message"] and "identity" in v["message"]


def test_show_solution_prints_the_learner_name(capsys):
    ex.show_solution("my_tp_mlp")
    out = capsys.readouterr().out
    assert out.startswith("def my_tp_mlp(") and "class MyF" in out and "class MyG" in out
    ex.show_solution("nope")
    assert "no solution" in capsys.readouterr().out


def test_numeric_checkers():
    v = ex.check_block_collectives(None, None)
    assert not v["ok"] and v.get("missing")
    right = ({"all_gather": 2, "reduce_scatter": 2}, {"all_gather": 4, "reduce_scatter": 2})
    assert ex.check_block_collectives(*right)["ok"]
    v = ex.check_block_collectives({"all_reduce": 2}, {"all_reduce": 2})
    assert not v["ok"] and "forward and backward" in v["message"]
    assert not ex.check_block_collectives("x", {})["ok"]
    assert ex.check_block_collectives({"all_reduce": 2}, {"all_reduce": 2}, tp=2,
                                      sequence_parallel=False)["ok"]
    want = cost.activation_memory(64, 2, 128, 4, 1, "none", 2, True, 4, layer="lab")
    assert ex.check_activation_bytes(want)["ok"]
    v = ex.check_activation_bytes(want * 2)
    assert not v["ok"] and "factor 2" in v["message"]
    assert ex.check_activation_bytes(None).get("missing")
    assert ex.check_where_f("A")["ok"] and ex.check_where_f("a")["ok"]
    v = ex.check_where_f("B")
    assert not v["ok"] and "g goes" in v["message"]
    assert not any(ex.check_where_f(x)["ok"] for x in ("C", "D", "E", None, 3.0))
    assert ex.check_layer_bytes(352_321_536)["ok"]
    assert not ex.check_layer_bytes(96 * 2 ** 20)["ok"] and ex.check_layer_bytes(None).get("missing")
