"""Every exercise checker answers, whatever the learner wrote or typed, and the caller
(the notebook's kernel) survives it:

- learner code never runs in the caller: a function that sleeps, calls ``os._exit`` or
  ``sys.exit``, raises KeyboardInterrupt or any exception gets a verdict that says
  which, and the next check works as before;
- a numeric answer of any type gets a verdict (10**400, NaN, inf, a numpy array,
  ``['a', 1]``, None, "3.0", True), never an exception;
- a checker's own parameters are refused with a ValueError naming them, before any
  rank starts.
"""

from __future__ import annotations

import decimal
import fractions
import importlib
import inspect
import linecache
import numbers
import pkgutil

import numpy as np
import pytest
import torch

import lessons
from lessons.common.drills import generate
from lessons.common.drills.bank import templates
from lessons.l00_collectives import exercises as ex_coll
from lessons.l05_context_parallel import exercises as ex_cp
from lessons.common.checkers import core
from lessons.l01_data_parallel import exercises as ex_dp
from lessons.l04_expert_parallel import exercises as ex_ep
from lessons.common.checkers import learner
from lessons.l06_3d_parallel import exercises as ex_3d
from lessons.l03_pipeline_parallel import exercises as ex_pp
from lessons.l07_mixed_precision import exercises as ex_prec
from lessons.l08_checkpoints_and_failures import exercises as ex_rel
from lessons.l02_tensor_parallel import exercises as ex_tp

# --- learner functions that misbehave (each is sent to a child as source) ------------------

def sleeps(n_layers, n_stages):
    import time
    time.sleep(60)  # the checker's timeout (3 s below) stops it long before


def exits_hard(n_layers, n_stages):
    import os
    os._exit(7)


def calls_sys_exit(n_layers, n_stages):
    import sys
    sys.exit(3)


def interrupts(n_layers, n_stages):
    raise KeyboardInterrupt


def divides_by_zero(n_layers, n_stages):
    return [n_layers // 0]


def prints_forever(n_layers, n_stages):
    while True:
        print("still thinking")


def prints_a_lot_then_answers(n_layers, n_stages):
    for i in range(150):
        print("step", i)
    base, extra = divmod(n_layers, n_stages)
    return [base + (s < extra) for s in range(n_stages)]


def uses_an_undefined_name(n_layers, n_stages):
    return [n_layers // n_stages] * n_stages + undefined_helper()  # noqa: F821


def returns_a_generator(n_layers, n_stages):
    return (n_layers // n_stages for _ in range(n_stages))


def notebook_cell(code: str) -> dict:
    """Run ``code`` the way Jupyter runs a cell: in ``__main__``, its lines in linecache
    (which is where ``inspect.getsource`` finds a notebook function's source)."""
    filename = f"<notebook cell {abs(hash(code))}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    exec(compile(code, filename, "exec"), namespace)
    return namespace


NOTEBOOK = notebook_cell("""
import math
LAYERS_PER_STAGE = 2  # a constant from another cell

def stage_size(n_layers, n_stages, s):
    return math.floor(n_layers / n_stages) + (s < n_layers % n_stages)

def my_partition(n_layers, n_stages):
    assert LAYERS_PER_STAGE == 2
    return [stage_size(n_layers, n_stages, s) for s in range(n_stages)]

halves = lambda n_layers, n_stages: [n_layers // n_stages] * n_stages
""")


MISBEHAVING = [
    (sleeps, "did not finish within 3 s in its process: it was still running", "line 3 of sleeps"),
    (exits_hard, "ended the process it ran in (exit code 7)", "this notebook is fine"),
    (calls_sys_exit, "my_partition(8, 4) called sys.exit(3)", "returns its answer"),
    (interrupts, "my_partition(8, 4) raised KeyboardInterrupt", "line 2 of interrupts"),
    (divides_by_zero, "my_partition(8, 4) raised ZeroDivisionError", "return [n_layers // 0]"),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fn, said, where", MISBEHAVING, ids=[m[0].__name__ for m in MISBEHAVING])
def test_partition_checker_survives_and_names_what_happened(fn, said, where):
    v = ex_pp.check_partition(fn, timeout=3.0)
    assert v["ok"] is False and said in v["message"] and where in v["message"], v["message"]
    # the caller is alive, and the next check (on a fresh child if the last one died) works
    assert ex_pp.check_partition(ex_pp.solution_partition)["ok"]


@pytest.mark.timeout(120)
def test_1f1b_and_groups_run_the_learner_in_a_child_too():
    def sleeps_1f1b(stage, n_stages, n_micro):
        import time
        time.sleep(60)

    def dies_groups(rank, dp, pp, tp):
        import os
        os._exit(7)

    def exits_groups(rank, dp, pp, tp):
        import sys
        sys.exit(3)

    v = ex_pp.check_1f1b(sleeps_1f1b, timeout=3.0)
    assert not v["ok"] and "my_1f1b did not finish within 3 s" in v["message"], v["message"]
    v = ex_3d.check_groups(dies_groups)
    assert not v["ok"] and "my_groups ended the process it ran in (exit code 7)" in v["message"]
    v = ex_3d.check_groups(exits_groups)
    assert not v["ok"] and "my_groups(0, 2, 2, 2) called sys.exit(3)" in v["message"]
    v = ex_pp.check_1f1b(lambda s, p, m: (_ for _ in ()).throw(KeyboardInterrupt))
    assert not v["ok"] and "raised KeyboardInterrupt" in v["message"]
    assert ex_pp.plan_1f1b(ex_pp.solution_1f1b, 4, 8)["ok"]


@pytest.mark.timeout(120)
def test_a_function_that_prints_forever_is_told_how_much_it_printed(capsys):
    v = ex_pp.check_partition(prints_forever, timeout=2.0)
    assert not v["ok"] and "did not finish within 2 s" in v["message"]
    assert "line 3 of prints_forever" in v["message"]  # its loop, not the pipe it printed to
    assert "It printed" in v["message"] and "lines before that" in v["message"], v["message"]
    out = capsys.readouterr().out
    assert out.count("still thinking") == learner._RankOutput.SHOWN  # the rest was not shown
    assert "more lines printed by your function were not shown" in out


@pytest.mark.timeout(120)
def test_a_correct_function_that_prints_still_passes(capsys):
    v = ex_pp.check_partition(prints_a_lot_then_answers)
    assert v["ok"], v["message"]
    out = capsys.readouterr().out
    assert "[rank 0] step 0" in out and "were not shown" in out  # 5 cases x 150 lines > 200


@pytest.mark.timeout(120)
def test_notebook_globals_travel_and_a_missing_one_is_explained():
    assert ex_pp.check_partition(NOTEBOOK["my_partition"])["ok"]
    v = ex_pp.check_partition(NOTEBOOK["halves"])
    assert not v["ok"] and "my_partition(10, 4) = [2, 2, 2, 2]" in v["message"], v["message"]
    v = ex_pp.check_partition(uses_an_undefined_name)
    assert not v["ok"] and "NameError" in v["message"] and "separate process" in v["message"]
    assert "undefined_helper" in v["message"]
    v = ex_pp.check_partition(returns_a_generator)
    assert not v["ok"] and "(a generator)" in v["message"] and "expected a list" in v["message"]


def test_learner_source_puts_the_context_after_the_function():
    source, name = core.learner_source(NOTEBOOK["my_partition"])
    assert name == "my_partition"
    assert source.startswith("def my_partition(")  # its line numbers are the learner's own
    assert "LAYERS_PER_STAGE = 2" in source and "def stage_size(" in source
    assert "import math as math" in source  # stage_size's import, found through it
    # a function from an importable module travels as an import
    source, _ = core.learner_source(divides_by_zero)
    assert source.rstrip().endswith("return [n_layers // 0]")
    source, _ = core.learner_source(lambda n: ex_pp.solution_partition(n, 2))
    assert "import lessons.l03_pipeline_parallel.exercises as ex_pp" in source
    source, name = core.learner_source(lambda n, s: [n // s] * s)
    assert name == learner.LAMBDA_NAME and source.startswith(f"{name} = (lambda n, s: [n // s] * s)")


# --- numeric answers: any input gets a verdict ---------------------------------------------

class Raises(Exception):
    pass


class BadNumber:
    """A learner's own number type whose every conversion raises."""
    def __float__(self):
        raise Raises("__float__")

    def __repr__(self):
        raise Raises("__repr__")

    __str__ = __int__ = __index__ = __repr__

    def __eq__(self, other):
        raise Raises("__eq__")

    __hash__ = object.__hash__


numbers.Real.register(BadNumber)  # it claims to be a real number


class BadArray:
    """Looks like numpy/torch (shape, item, tolist), but each of them raises."""
    @property
    def shape(self):
        raise Raises("shape")

    def item(self):
        raise Raises("item")

    tolist = item


class OddShape:
    shape = ("a", None)  # not a shape at all

    def item(self):
        return 1.0


class BadList(list):
    def __iter__(self):
        raise Raises("__iter__")

    def __len__(self):
        raise Raises("__len__")


def nested(depth, make=lambda x: [x]):
    x = 1
    for _ in range(depth):
        x = make(x)
    return x


HUGE = 2 ** 20000  # past Python's 4,300-digit limit: str() and repr() of it raise ValueError
ODD_ANSWERS = [10 ** 400, -10 ** 400, float("nan"), float("inf"), -float("inf"),
               np.array([1.0, 2.0]), np.float64(3.0), np.int64(4), np.array(2.0), torch.tensor(2.0),
               ["a", 1], [float("nan"), 1], [10 ** 400], None, "", "3.0", "abc", "nan", True,
               {"a": 1}, {1, 2}, (1, 2), b"x", 1j, object(),
               # ints and fractions whose digits cannot be printed, in every container
               HUGE, -(10 ** 5000), [HUGE], [HUGE, HUGE], (HUGE, 1, 2), {"dp": HUGE, "pp": 0, "tp": 1},
               fractions.Fraction(HUGE, 3), np.array(HUGE, dtype=object), np.array([HUGE], dtype=object),
               "9" * 5000, "1e99999", "2**20000", "(" * 500, "[" * 100_000, b"9" * 6000,
               # notations and formulas a learner types, and ones meant to hang or eat memory
               "2^-14", "1/16384", "70e9*12/64", "(8-1)/(8-1+32)", "13.5 GB", "250 us", "1 GiB",
               "1,5", "12.5%", "9**9**9**9", "10**10**10", "2^2^2^2^2^2^2", "1" * 100_000,
               "1+" * 5000 + "1", "-" * 5000 + "1", "(-8)^(1/3)", "0^-1", "1e308*10",
               "__import__('os').system('true')", "(1).real", "x*2", "7 % 3",
               # floats and numbers at their edges
               1e308, 5e-324, -0.0, complex(float("inf"), float("nan")), decimal.Decimal("1e99999"),
               decimal.Decimal("sNaN"), np.longdouble("1e4000"), np.complex128(1j),
               # arrays and tensors of every shape, and ones that cannot give a value
               np.array([]), np.zeros((2, 3)), np.ones((1, 1, 1)), np.array(None, dtype=object),
               torch.zeros(0), torch.zeros(2, 3), torch.ones(1, 1), torch.tensor(2.0, requires_grad=True),
               torch.tensor(1j), torch.tensor(True), torch.empty(3, device="meta"),
               torch.empty((), device="meta"),
               # a learner's own types that raise, and structures too deep to print
               BadNumber(), BadArray(), OddShape(), BadList([1]), nested(5000), nested(5000, lambda x: {"a": x}),
               print, int, ..., range(10 ** 30), (i for i in range(3))]


def _answer_checkers():
    """Every checker that takes a typed answer (not a learner's function) and returns a
    verdict, in every exercises module of every lesson (a new one is covered without
    being listed here)."""
    for info in pkgutil.walk_packages(lessons.__path__, "lessons."):
        if not info.name.rsplit(".", 1)[1].startswith("exercises"):
            continue
        mod = importlib.import_module(info.name)
        for name, f in sorted(vars(mod).items()):
            if name.startswith("check_") and inspect.isfunction(f) and f.__module__ == mod.__name__ \
                    and next(iter(inspect.signature(f).parameters)) != "fn" \
                    and inspect.signature(f).return_annotation in (dict, "dict"):
                yield pytest.param(f, id=f"{info.name.split('.')[1][:3]}.{info.name.rsplit('.', 1)[1]}.{name}")


MODULES = [ex_coll, ex_cp, ex_dp, ex_ep, ex_3d, ex_pp, ex_tp, ex_prec, ex_rel]


@pytest.mark.parametrize("check", list(_answer_checkers()))
def test_every_answer_checker_gives_a_verdict_for_any_input(check):
    two = len([p for p in inspect.signature(check).parameters.values()
               if p.default is inspect.Parameter.empty or p.name in ("active", "backward")]) > 1
    wrong = []
    for i, answer in enumerate(ODD_ANSWERS):  # by index: repr(HUGE) itself raises
        try:
            v = check(answer, answer) if two else check(answer)
        except Exception as e:
            wrong.append(f"ODD_ANSWERS[{i}] ({type(answer).__name__}): raised {type(e).__name__}")
            continue
        if not (isinstance(v, dict) and isinstance(v.get("message"), str) and v.get("ok") in (True, False)):
            wrong.append(f"ODD_ANSWERS[{i}] ({type(answer).__name__}): no verdict")
    assert not wrong, "\n".join(wrong)


HOSTILE = [
    (HUGE, "an integer of about 6,021 digits is too large to be right"),
    (-(10 ** 5000), "a negative integer of about 5,001 digits is too large"),
    ([HUGE], "must be one number, got a list of 1 items"),
    (np.array(HUGE, dtype=object), "an integer of about 6,021 digits is too large"),
    (fractions.Fraction(HUGE, 3), "cannot be shown> is too large to be right"),
    (np.longdouble("1e4000"), "is infinity"),
    (decimal.Decimal("sNaN"), "is NaN"),
    (BadNumber(), "= <a BadNumber that cannot be shown> could not be read as a number (Raises)"),
    (BadArray(), "could not be read as a number (Raises)"),
    (OddShape(), "could not be read as a number (ValueError)"),
    (torch.empty((), device="meta"), "could not be read as a number"),
    (nested(5000), "must be one number, got a list of 1 items"),
]


# ids by type: pytest's own str() of 2**20000 raises
@pytest.mark.parametrize("answer, said", HOSTILE, ids=[f"{i}-{type(a).__name__}"
                                                       for i, (a, _) in enumerate(HOSTILE)])
def test_unprintable_and_hostile_answers_are_named(answer, said):
    v = ex_pp.check_bubble(answer)
    assert not v["ok"] and said in v["message"], v["message"]
    assert ex_pp.check_bubble(decimal.Decimal(7) / 31)["ok"]  # a Decimal is a number too


@pytest.mark.parametrize("answer, said", [
    (10 ** 400, "too large to be right"),
    (float("nan"), "is NaN"),
    (float("inf"), "is infinity"),
    (-float("inf"), "is minus infinity"),
    (np.array([1.0, 2.0]), "must be one number, got an array of 2 values"),
    (["a", 1], "must be one number, got a list of 2 items"),
    (True, "a yes/no value, not a number"),
    ("abc", "must be a number, got 'abc'"),
    (1j, "must be a real number"),
    ("9**9**9**9", "too large to be right"),
    ("1" * 100_000, "is 100,000 characters long"),
    ("pi/2", "uses the name 'pi'"),
    ("1/0", "divides by zero"),
    ("1 GB", "this answer is a plain number, without a unit"),
])
def test_number_answers_name_what_is_wrong(answer, said):
    v = ex_pp.check_bubble(answer)
    assert not v["ok"] and said in v["message"], v["message"]


def test_number_answers_accept_numpy_torch_and_text():
    right = 7 / 31
    for answer in (right, np.float64(right), np.array(right), np.array([right]), torch.tensor(right),
                   f"{right}", "7/31"):
        assert ex_pp.check_bubble(answer)["ok"], answer
    assert ex_pp.check_bubble(None).get("missing") and ex_pp.check_bubble("  ").get("missing")
    assert ex_pp.check_min_m(np.int64(63))["ok"] and ex_pp.check_min_m("63")["ok"]
    assert "must be a whole number, got 62.5" in ex_pp.check_min_m(62.5)["message"]


def test_list_answers_name_the_bad_item():
    assert ex_3d.check_tp_group(np.array([6, 7]), rank=6)["ok"]
    v = ex_3d.check_tp_group(["a", 1], rank=6)
    assert not v["ok"] and "(item 0) must be a number, got 'a'" in v["message"], v["message"]
    v = ex_cp.check_zigzag_positions([float("nan"), 1])
    assert not v["ok"] and "(item 0) is NaN" in v["message"]
    v = ex_ep.check_dropped(np.array([1.0, 2.0]))
    assert not v["ok"] and "pair 0 of your list must be a list of 2 numbers" in v["message"]
    v = ex_3d.check_coords({"dp": 10 ** 400, "pp": 0, "tp": 1})
    assert not v["ok"] and "dp = 1000" in v["message"] and "too large" in v["message"]


def test_drill_questions_never_raise_on_an_odd_answer():
    q = generate(seed=1)
    for i, answer in enumerate(ODD_ANSWERS):
        assert q.check(answer) in (True, False), i
    for t in templates():  # every template's question reads every odd answer
        q_t = generate(template=t, seed=1)
        for i, answer in enumerate(ODD_ANSWERS):
            assert q_t.check(answer) in (True, False), (t, i)
    for answer in (10 ** 400, float("nan"), float("inf"), True, ["a", 1], np.array([1.0, 2.0]), "1e400"):
        assert q.check(answer) is False, answer
    assert q.check(q.answer) and q.check(np.float64(q.answer)) and q.check(torch.tensor(q.answer))


# --- the checkers' own parameters ----------------------------------------------------------

BAD_PARAMETERS = [
    (ex_coll.check_reduce_scatter, ex_coll.solution_reduce_scatter, dict(per_chunk=0), "per_chunk=0"),
    (ex_coll.check_reduce_scatter, ex_coll.solution_reduce_scatter, dict(per_chunk=-1), "per_chunk=-1"),
    (ex_coll.check_ring_all_reduce, ex_coll.solution_ring_all_reduce, dict(world_size=1), "world_size=1"),
    (ex_coll.check_ring_all_reduce, ex_coll.solution_ring_all_reduce, dict(world_size=0), "world_size=0"),
    (ex_coll.check_reduce_scatter, ex_coll.solution_reduce_scatter, dict(timeout=0), "timeout=0"),
    (ex_coll.check_reduce_scatter, ex_coll.solution_reduce_scatter, dict(timeout=-1), "timeout=-1"),
    (ex_pp.check_1f1b, ex_pp.solution_1f1b, dict(p=1), "p=1"),
    (ex_pp.check_1f1b, ex_pp.solution_1f1b, dict(m=0), "m=0"),
    (ex_pp.check_1f1b, ex_pp.solution_1f1b, dict(p=4.0), "p=4.0"),
    (ex_pp.check_1f1b, ex_pp.solution_1f1b, dict(timeout=float("nan")), "timeout=nan"),
    (ex_pp.check_pipeline_forward, ex_pp.solution_pipeline_forward, dict(m=-2), "m=-2"),
    (ex_pp.check_partition, ex_pp.solution_partition, dict(cases=[(2, 3)]), "n_layers=2"),
    (ex_pp.check_partition, ex_pp.solution_partition, dict(cases=[(8, 0)]), "n_stages=0"),
    (ex_pp.check_partition, ex_pp.solution_partition, dict(cases=5), "cases=5"),
    (ex_pp.check_partition, ex_pp.solution_partition, dict(timeout=0), "timeout=0"),
    (ex_3d.check_groups, ex_3d.solution_groups, dict(dp=0), "dp=0"),
    (ex_3d.check_groups, ex_3d.solution_groups, dict(pp=-1), "pp=-1"),
    (ex_3d.check_groups, ex_3d.solution_groups, dict(tp=True), "tp=True"),
    (ex_3d.check_groups, ex_3d.solution_groups, dict(dp=8, pp=4, tp=2), "dp * pp * tp = 64"),
    (ex_3d.check_grad_sync, ex_3d.solution_grad_sync, dict(tp=0), "tp=0"),
    (ex_cp.check_zigzag_shard, ex_cp.solution_zigzag_shard, dict(cp=1), "cp=1"),
    (ex_cp.check_zigzag_shard, ex_cp.solution_zigzag_shard, dict(seq_len=10), "seq_len=10"),
    (ex_cp.check_ring_attention, ex_cp.solution_ring_attention, dict(n_heads=0), "n_heads=0"),
    (ex_dp.check_dp_exchange, ex_dp.solution_dp_exchange, dict(world_size=1), "world_size=1"),
    (ex_dp.check_zero1_step, ex_dp.solution_zero1_step, dict(steps=0), "steps=0"),
    (ex_dp.check_zero1_step, ex_dp.solution_zero1_step, dict(lr=-0.1), "lr=-0.1"),
    (ex_ep.check_route, ex_ep.solution_route, dict(world_size=0), "world_size=0"),
    (ex_ep.check_route, ex_ep.solution_route, dict(seed=-1), "seed=-1"),
    (ex_tp.check_tp_mlp, ex_tp.solution_tp_mlp, dict(world_size=1), "world_size=1"),
    (ex_prec.check_scaled_step, ex_prec.solution_scaled_step, dict(steps=1), "steps=1"),
    (ex_prec.check_scaled_step, ex_prec.solution_scaled_step, dict(overflow_at=8), "overflow_at=8"),
    (ex_prec.check_scaled_step, ex_prec.solution_scaled_step, dict(growth_interval=0),
     "growth_interval=0"),
    (ex_rel.check_resume, ex_rel.solution_resume, dict(ranks=0), "ranks=0"),
    (ex_rel.check_resume, ex_rel.solution_resume, dict(ranks=3), "ranks=3"),
    (ex_rel.check_resume, ex_rel.solution_resume, dict(at=0), "at=0"),
    (ex_rel.check_resume, ex_rel.solution_resume, dict(timeout=-1), "timeout=-1"),
]


@pytest.mark.parametrize("check, fn, kwargs, named", BAD_PARAMETERS,
                         ids=[f"{c.__name__}-{n}" for c, _, _, n in BAD_PARAMETERS])
def test_bad_checker_parameters_are_refused_before_any_rank_starts(check, fn, kwargs, named,
                                                                  monkeypatch):
    def no_ranks(*args, **kwargs):
        raise AssertionError("a rank was started before the parameters were checked")
    monkeypatch.setattr(learner, "launch", no_ranks)
    with pytest.raises(ValueError, match=named.replace("*", r"\*").replace(".", r"\.")):
        check(fn, **kwargs)


def test_every_coding_checker_is_in_the_parameter_table():
    covered = {c for c, _, _, _ in BAD_PARAMETERS} | {ex_coll.check_reduce_scatter,
                                                      ex_ep.check_global_route,
                                                      ex_tp.check_tp_mlp_forward}
    for mod in MODULES:
        for name, f in vars(mod).items():
            if name.startswith("check_") and inspect.isfunction(f) and f.__module__ == mod.__name__ \
                    and next(iter(inspect.signature(f).parameters)) == "fn":
                assert f in covered, name
