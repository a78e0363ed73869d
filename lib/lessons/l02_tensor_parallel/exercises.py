"""Notebook 02's "Your turn": checkers and reference solutions (tensor parallelism).

Coding exercises, run on real ranks (``core.run_learner``):

* ``check_tp_mlp_forward(fn)``: ``fn(x, w1_shard, w2_shard, rank, world_size)`` is
  Megatron's MLP forward on t ranks, ``GeLU(x W1_r) W2_r`` summed over the ranks by
  exactly one collective (Shoeybi et al. 2019, §3). Checked: every rank's output
  against the single-device MLP, and how many collectives the forward called.
* ``check_tp_mlp(fn)``: the same with gradients, f and g written as
  ``torch.autograd.Function``s inside ``fn`` (f: identity forward, all-reduce backward;
  g: the reverse). Checked: output, and the gradients of x, W1_r and W2_r on each rank.
* ``check_chunked_all_gather_matmul(fn)`` (§8, in ``tp_overlap``): SP's all-gather -> GEMM
  in chunks, pipelined.

Numeric exercises compare with ``parlab.cost`` (``check_number``). Every checker
returns ``{"ok", "message"}`` and never raises on a wrong or missing answer.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import warnings

import torch
import torch.distributed as dist
import torch.nn.functional as F

from parlab import cost
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.i18n import t as say
from .hints import HINTS
from .text import TEXT
from lessons.common.checkers.watch import DistWatch

__all__ = ["check_tp_mlp_forward", "check_tp_mlp", "check_chunked_all_gather_matmul",
           "check_block_collectives", "check_activation_bytes", "check_where_f",
           "check_layer_bytes", "WHERE_F", "solution_tp_mlp_forward", "solution_tp_mlp",
           "solution_chunked_all_gather_matmul", "show_solution", "hints", "mlp_inputs"]

FP32 = 4
ROWS, HIDDEN = 4, 8                    # x is (ROWS, HIDDEN); W1 (HIDDEN, 4 HIDDEN); W2 back


# --- reference solutions (shown on demand; the tests run every checker on them) ---------------

def solution_tp_mlp_forward(x, w1_shard, w2_shard, rank, world_size):
    # column-parallel: this rank's hidden features, from the whole input (no communication)
    y = torch.nn.functional.gelu(x @ w1_shard)
    # row-parallel: this rank's term of the sum; g = one all-reduce adds the t terms
    z = y @ w2_shard
    dist.all_reduce(z)
    return z


def solution_tp_mlp(x, w1_shard, w2_shard, rank, world_size):
    class MyF(torch.autograd.Function):
        """f: identity forward; backward all-reduces the input gradient (each rank
        holds one term of dL/dx, from its own column slice)."""
        @staticmethod
        def forward(ctx, a):
            return a.view_as(a)

        @staticmethod
        def backward(ctx, grad):
            grad = grad.clone()
            dist.all_reduce(grad)
            return grad

    class MyG(torch.autograd.Function):
        """g: all-reduce forward (add the partial sums); identity backward (the
        output gradient is already whole on every rank)."""
        @staticmethod
        def forward(ctx, a):
            a = a.clone()
            dist.all_reduce(a)
            return a

        @staticmethod
        def backward(ctx, grad):
            return grad

    y = torch.nn.functional.gelu(MyF.apply(x) @ w1_shard)
    return MyG.apply(y @ w2_shard)


from .exercises_overlap import check_chunked_all_gather_matmul, solution_chunked_all_gather_matmul  # noqa
from lessons.common import record

SOLUTIONS = {"my_tp_mlp_forward": solution_tp_mlp_forward, "my_tp_mlp": solution_tp_mlp,
             "my_chunked_all_gather_matmul": solution_chunked_all_gather_matmul}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution of a coding exercise, each behind a click
    ("my_tp_mlp_forward", "my_tp_mlp", "my_chunked_all_gather_matmul")."""
    return core.hints(SOLUTIONS, HINTS, name)


def show_solution(name: str) -> None:
    """Print the reference solution of exercise ``name`` (one of ``SOLUTIONS``)."""
    core.show_solution(SOLUTIONS, name)


# --- the coding exercises: harness on the ranks, comparison here -------------------------------

def mlp_inputs(seed: int = 0, rows: int = ROWS, h: int = HIDDEN):
    """(x, W1, W2, dZ): the whole MLP's input, weights and an output gradient, from a seed."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, h, generator=g)
    w1 = torch.randn(h, 4 * h, generator=g) / h ** 0.5
    w2 = torch.randn(4 * h, h, generator=g) / (2 * h)
    dz = torch.randn(rows, h, generator=g)
    return x, w1, w2, dz


def _tp_harness(source, name, seed, with_grads):
    fn = core.load_learner(source, name)
    r, t = dist.get_rank(), dist.get_world_size()
    x, w1, w2, dz = mlp_inputs(seed)
    x = x.clone().requires_grad_(with_grads)
    w1s = w1.chunk(t, dim=1)[r].clone().requires_grad_(with_grads)
    w2s = w2.chunk(t, dim=0)[r].clone().requires_grad_(with_grads)
    # watched on torch.distributed itself: counted however the learner imports it
    with DistWatch() as fwd:
        out = fn(x, w1s, w2s, r, t)
    res = dict(out=out.detach().clone() if isinstance(out, torch.Tensor) else out,
               forward_calls=fwd.calls)
    if with_grads and isinstance(out, torch.Tensor):
        if not out.requires_grad:
            res["no_graph"] = True
            return res
        with DistWatch() as bwd, warnings.catch_warnings():
            # a plain dist.all_reduce in the graph warns; the checker says what is wrong
            warnings.filterwarnings("ignore", message=".*autograd kernel was not registered")
            (out * dz).sum().backward()
        res.update(backward_calls=bwd.calls,
                   grads={k: (v.grad.clone() if v.grad is not None else None)
                          for k, v in (("x", x), ("w1_shard", w1s), ("w2_shard", w2s))})
    return res


def _reference(seed: int, t: int):
    x, w1, w2, dz = mlp_inputs(seed)
    x, w1, w2 = (a.clone().requires_grad_(True) for a in (x, w1, w2))
    z = F.gelu(x @ w1) @ w2
    (z * dz).sum().backward()
    return z.detach(), [dict(x=x.grad, w1_shard=w1.grad.chunk(t, dim=1)[r],
                             w2_shard=w2.grad.chunk(t, dim=0)[r]) for r in range(t)]


def _is_placeholder(fn) -> bool:
    """True when ``fn``'s body is only ``raise NotImplementedError`` (and a docstring):
    no need to start ranks to say "not answered yet"."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = [s for s in tree.body[0].body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None
            and "NotImplementedError" in ast.unparse(body[0].exc))


def _ops(calls) -> str:
    return ", ".join(f"{op} x{calls.count(op)}" for op in dict.fromkeys(calls)) or say(TEXT, "none")


def _output_hint(out, want, t: int) -> str:
    """Why a right-shaped output is wrong: the mean of the t terms (an all-reduce then a
    division by t), one rank's term only (no all-reduce), or something else."""
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(want.shape):
        return ""
    out = out.detach()
    if torch.allclose(out * t, want, atol=1e-5, rtol=1e-4):
        return say(TEXT, "mean_not_sum", t=t)
    if torch.allclose(out / t, want, atol=1e-5, rtol=1e-4):
        return say(TEXT, "summed_t_times", t=t)
    return say(TEXT, "one_term")


def _check_mlp(fn, world_size: int, seed: int, with_grads: bool) -> dict:
    core.check_ranks("world_size", world_size, 2)
    check_int("seed", seed, 0)
    name = getattr(fn, "__name__", "your function")
    if _is_placeholder(fn):
        return core.missing(say(TEXT, "still_placeholder", name=name))
    results, bad = core.run_learner(_tp_harness, fn, world_size, seed, with_grads)
    if bad:
        return bad
    want, want_grads = _reference(seed, world_size)
    for r, res in enumerate(results):
        wrong = core.compare_tensors(res["out"], want, where=f"rank {r}, output", atol=1e-5, rtol=1e-4)
        if wrong:
            return core.verdict(False, wrong + "." + _output_hint(res["out"], want, world_size))
        n = len(res["forward_calls"])
        if n != 1:
            return core.verdict(False, say(TEXT, "forward_collectives", r=r, n=n,
                                           ops=_ops(res["forward_calls"])))
    if not with_grads:
        return core.verdict(True, say(TEXT, "forward_ok", world_size=world_size))
    for r, res in enumerate(results):
        if res.get("no_graph"):
            return core.verdict(False, say(TEXT, "no_graph", r=r))
        for k in ("w2_shard", "w1_shard", "x"):  # in the order backward reaches them
            wrong = core.compare_tensors(res["grads"][k], want_grads[r][k],
                                         where=f"rank {r}, gradient of {k}", atol=1e-5, rtol=1e-4)
            if wrong:
                return core.verdict(False, wrong + "." + say(TEXT, f"grad_{k}"))
        ops = _ops(res["backward_calls"])
        if len(res["backward_calls"]) != 1:
            return core.verdict(False, say(TEXT, "backward_calls", r=r, ops=ops))
    return core.verdict(True, say(TEXT, "mlp_ok", world_size=world_size))


def check_tp_mlp_forward(fn, world_size: int = 2, seed: int = 0) -> dict:
    """Coding exercise 1: the forward of Megatron's MLP on ``world_size`` ranks."""
    return _check_mlp(fn, world_size, seed, with_grads=False)


def check_tp_mlp(fn, world_size: int = 2, seed: int = 0) -> dict:
    """Coding exercise 2: forward and backward, f and g as autograd functions."""
    return _check_mlp(fn, world_size, seed, with_grads=True)


# --- numeric exercises (answer_box) -----------------------------------------------------------

# the choices as the notebook lists them (English); the checker says them in the session's
# language (TEXT's "where_f.A", ...)
WHERE_F = {k: TEXT[f"where_f.{k}"]["en"] for k in "ABCD"}


def check_block_collectives(forward, backward=None, tp: int = 4, sequence_parallel: bool = True) -> dict:
    """One block's collectives in one training step, as {op: count} per pass
    (``cost.tp_comm_per_layer``)."""
    if forward is None or backward is None:
        return core.missing(say(TEXT, "give_passes", example="{'all_reduce': 2}"))
    want = cost.tp_comm_per_layer(1, tp, 1, tp, sequence_parallel)  # counts only: any shape
    wrong = []
    for d, got in (("forward", forward), ("backward", backward)):
        if not isinstance(got, dict):
            return core.verdict(False, say(TEXT, "pass_not_dict", d=d, example="{'all_gather': 1}",
                                           got=core.shown(got)))
        counts = {}
        for op, n in got.items():
            n, why = core.as_number(n, whole=True)
            if why:
                return core.verdict(False, say(TEXT, "count_why", d=d, op=repr(op), why=why))
            if n:
                counts[op] = n
        if counts != want[d]:
            wrong.append(d)
    if not wrong:
        return core.verdict(True, say(TEXT, "collectives_ok", fwd=want["forward"], bwd=want["backward"]))
    passes = say(TEXT, "and").join(say(TEXT, d) for d in wrong)
    return core.verdict(False, say(TEXT, "passes_off", passes=passes))


def check_activation_bytes(answer, seq_len: int = 64, micro_batch: int = 2, d_model: int = 128,
                           n_heads: int = 4, tp: int = 2, sequence_parallel: bool = True) -> dict:
    """Bytes one of our fp32 blocks saves per rank (``cost.activation_memory``, layer "lab")."""
    want = cost.activation_memory(seq_len, micro_batch, d_model, n_heads, 1, "none", tp,
                                  sequence_parallel, FP32, layer="lab")
    return core.check_number(answer, want, unit="bytes", hint=say(TEXT, "activation_hint"))


def check_where_f(answer) -> dict:
    """Where does f go? One of ``WHERE_F``'s keys."""
    if core.blank(answer):
        return core.missing(say(TEXT, "answer_one_of", letters=", ".join(WHERE_F)))
    answer = core.as_letter(answer)
    if answer not in WHERE_F:
        return core.verdict(False, say(TEXT, "answer_with_one_of", letters=", ".join(WHERE_F)))
    if answer == "A":
        return core.verdict(True, say(TEXT, "where_f_ok"))
    return core.verdict(False, say(TEXT, "where_f_wrong", place=say(TEXT, f"where_f.{answer}"),
                                   why=say(TEXT, f"where_f_why.{answer}")))


def check_layer_bytes(answer, micro_batch: int = 1, seq_len: int = 2048, d_model: int = 12288,
                      tp: int = 8, sequence_parallel: bool = False) -> dict:
    """Bytes one rank sends for one layer in one training step (fp16, ring),
    ``cost.tp_comm_per_layer``."""
    want = cost.tp_comm_per_layer(micro_batch, seq_len, d_model, tp, sequence_parallel)["bytes"]
    return core.check_number(answer, want, unit="bytes", hint=say(TEXT, "layer_bytes_hint"))


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
