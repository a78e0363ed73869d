"""Every bad input is named before anything starts (hypothesis).

For each public entry point that takes a learner's or a user's values -- ``GPTConfig``,
every strategy's run, ``Mesh``, the planner's ``estimate``/``plan`` and the numeric
exercise checkers -- an input either works or raises a ``ValueError`` naming the field,
and a run refuses it before any rank starts (``launch`` is replaced by a sentinel here:
a bad run that reaches it fails the test). pytest-timeout bounds every test: nothing may
hang. tools/fuzz_inputs.py is the larger, slower catalogue a person runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parlab.mesh import Mesh
from parlab.model import GPTConfig

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

BAD = {  # values no field of that kind accepts
    "pos_int": [0, -1, 1.5, None, "2", True, float("nan"), 2.0],
    "nonneg_int": [-1, 1.5, None, "2", True, 1.0],
    "pos_float": [0, -1.0, None, "x", float("nan"), float("inf"), True],
    "nonneg_float": [-1.0, None, "x", float("nan"), float("inf"), True],
    "bool": [0, 1, None, "yes"],
    "choice": ["nope", None, 7, True],
}
COMMON = {"steps": "pos_int", "batch_size": "pos_int", "lr": "pos_float",
          "weight_decay": "nonneg_float", "seed": "nonneg_int", "data_seed": "nonneg_int",
          "trace": "bool"}
RUNS = {  # strategy module, run class, world size, a good run's fields, its own fields' kinds
    "tensor_parallel": ("TPRun", 2, {}, {"sequence_parallel": "bool", "overlap": "bool",
                                         "recompute": "choice"}),
    "context_parallel": ("CPRun", 2, {}, {"layout": "choice", "attention": "choice"}),
    "data_parallel": ("DPRun", 2, {}, {"variant": "choice", "bucket_bytes": "pos_int",
                                       "micro_batches": "pos_int", "topk_ratio": "pos_float",
                                       "error_feedback": "bool"}),
    "zero": ("ZeroRun", 2, {}, {"zero_stage": "choice", "bucket_bytes": "pos_int"}),
    "pipeline_parallel": ("PPRun", 2, {}, {"schedule": "choice", "p": "pos_int",
                                           "micro_batches": "pos_int", "v": "pos_int",
                                           "compute": "choice", "t_fwd": "pos_float",
                                           "t_bwd": "pos_float", "checkpoint": "bool"}),
    "expert_parallel": ("EPRun", 2, {}, {}),
    "parallel_nd": ("NDRun", 4, dict(dp=2, pp=1, tp=2),
                    {"dp": "pos_int", "pp": "pos_int", "cp": "pos_int", "tp": "pos_int",
                     "micro_batches": "pos_int", "schedule": "choice", "zero_stage": "choice",
                     "sequence_parallel": "bool", "compute": "choice"}),
}
SMALL = dict(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)


class RanksWouldStart(Exception):
    pass


@pytest.fixture
def no_ranks(monkeypatch):
    """``launch`` raises instead of starting ranks: what reaches it passed every check."""
    def refuse(*a, **k):
        raise RanksWouldStart
    monkeypatch.setattr(sys.modules["parlab.launch"], "launch", refuse)


def _config(module: str) -> GPTConfig:
    cfg = GPTConfig(**SMALL)
    return dataclasses.replace(cfg, n_experts=4, top_k=2) if module == "expert_parallel" else cfg


def _run(module: str, **fields):
    name, world, good, _ = RUNS[module]
    mod = importlib.import_module(f"parlab.{module}")
    cls = getattr(mod, name)
    return mod.run, cls(**{**dict(config=_config(module), steps=2, batch_size=8), **good, **fields}), world


CASES = [(m, f, v) for m, (_, _, _, own) in RUNS.items()
         for f, kind in {**COMMON, **own}.items() for v in BAD[kind]]
UNSET = object()


@pytest.mark.timeout(120)
def test_every_bad_run_field_is_named_before_any_rank_starts(no_ranks):
    """Exhaustive: each bad value of each field of each run, alone."""
    wrong = []
    for module, field, value in CASES:
        run, r, world = _run(module, **{field: value})
        try:
            run(r, world)
            wrong.append(f"{module} {field}={value!r}: accepted")
        except ValueError as e:
            if field not in str(e):
                wrong.append(f"{module} {field}={value!r}: {e}")
        except RanksWouldStart:
            wrong.append(f"{module} {field}={value!r}: reached the ranks")
    assert not wrong, "\n".join(wrong)


@st.composite
def run_fields(draw):
    """A strategy and, for each of its fields, either its default or a bad value."""
    module = draw(st.sampled_from(list(RUNS)))
    kinds = {**COMMON, **RUNS[module][3]}
    fields = draw(st.fixed_dictionaries({f: st.one_of(st.just(UNSET), st.sampled_from(BAD[k]))
                                         for f, k in kinds.items()}))
    return module, {f: v for f, v in fields.items() if v is not UNSET}


@pytest.mark.timeout(120)
@SETTINGS
@given(case=run_fields())
def test_runs_with_several_bad_fields_name_one_of_them(no_ranks, case):
    module, fields = case
    run, r, world = _run(module, **fields)
    if not fields:
        with pytest.raises(RanksWouldStart):
            run(r, world)
        return
    with pytest.raises(ValueError) as e:
        run(r, world)
    assert any(f in str(e.value) for f in fields), f"{module} {fields}: {e.value}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("module", list(RUNS))
def test_good_runs_reach_the_ranks_and_small_vocabularies_do_not(no_ranks, module):
    run, r, world = _run(module)
    with pytest.raises(RanksWouldStart):
        run(r, world)
    tiny = dataclasses.replace(r, config=dataclasses.replace(r.config, vocab_size=2))
    with pytest.raises(ValueError, match="vocab_size"):
        run(tiny, world)


def test_a_config_cannot_change_after_it_was_checked():
    cfg = GPTConfig(**SMALL)
    for field, value in (("d_ff", 0), ("n_heads", 3)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(cfg, field, value)
    with pytest.raises(ValueError, match="d_ff"):
        dataclasses.replace(cfg, d_ff=0)


SIZES = ("vocab_size", "seq_len", "d_model", "n_heads", "n_layers", "d_ff", "n_kv_heads")


@pytest.mark.timeout(60)
@SETTINGS
@given(field=st.sampled_from(SIZES), value=st.sampled_from(BAD["pos_int"] + ["abc", 1e300]))
def test_a_bad_config_size_is_named(field, value):
    if value is None and field in ("d_ff", "n_kv_heads"):
        return  # their default: 4 d_model, n_heads
    with pytest.raises(ValueError) as e:
        GPTConfig(**{**SMALL, field: value})
    assert field in str(e.value)


@pytest.mark.timeout(60)
@SETTINGS
@given(d_model=st.integers(1, 96), n_heads=st.integers(1, 12), n_kv_heads=st.integers(1, 12),
       d_ff=st.integers(1, 64))
def test_shapes_either_work_or_name_the_field(d_model, n_heads, n_kv_heads, d_ff):
    fields = dict(SMALL, d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, d_ff=d_ff)
    valid = d_model % n_heads == 0 and n_heads % n_kv_heads == 0
    if valid:
        GPTConfig(**fields)
    else:
        with pytest.raises(ValueError, match="n_heads|n_kv_heads"):
            GPTConfig(**fields)


AXES = ("dp", "pp", "cp", "tp", "ep")


@pytest.mark.timeout(60)
@SETTINGS
@given(axis=st.sampled_from(AXES), value=st.one_of(st.integers(-3, 4), st.sampled_from(
    [1.5, 2.0, True, False, None, "2"])))
def test_mesh_axes_are_integers(axis, value):
    kw = {axis: value, **({"dp": 4} if axis == "ep" else {})}  # experts fold over dp*cp ranks
    ok = type(value) is int and value >= 1 and (axis != "ep" or 4 % value == 0)
    if ok:
        Mesh(**kw)
    else:
        with pytest.raises(ValueError, match=axis):
            Mesh(**kw)


@pytest.mark.timeout(60)
@SETTINGS
@given(rank=st.one_of(st.integers(-4, 12), st.sampled_from([1.5, True, None, "1"])))
def test_mesh_coords_take_a_rank_in_range(rank):
    m = Mesh(dp=2, pp=2, tp=2)
    if type(rank) is int and 0 <= rank < 8:
        assert m.rank(**{k: v for k, v in m.coords(rank).items() if k in ("dp", "pp", "cp", "tp")}) == rank
    else:
        with pytest.raises(ValueError, match="rank"):
            m.coords(rank)


ESTIMATE = dict(n_layers=32, d_model=4096, n_heads=32, seq_len=2048, vocab_size=51200,
                n_gpus=64, tp=8, pp=2, global_batch=512)


@pytest.mark.timeout(120)
@SETTINGS
@given(field=st.sampled_from(list(ESTIMATE)), value=st.sampled_from([0, -1, 1.5, None, True, "8"]))
def test_a_bad_estimate_argument_is_named(field, value):
    from parlab.planner import estimate
    with pytest.raises(ValueError) as e:
        estimate(**{**ESTIMATE, field: value})
    assert field in str(e.value)


@pytest.mark.timeout(60)
def test_the_planner_answers_huge_batches_and_names_its_own_arguments():
    from parlab.planner import estimate, plan
    assert estimate(**{**ESTIMATE, "global_batch": 10 ** 12}).step_time.total > 0
    with pytest.raises(ValueError, match="n_heads"):
        estimate(**{**ESTIMATE, "d_model": 4100})
    for kw, field in ((dict(dp_overlap=0), "dp_overlap"), (dict(tps=()), "tps"),
                      (dict(tps=8.5), "tps"), (dict(n_gpus=0), "n_gpus")):
        with pytest.raises(ValueError, match=field):
            plan(**{**dict(model="13B", n_gpus=64, gpu="A100-80GB"), **kw})


def _answer_checkers() -> list[tuple[str, str]]:
    """(module, name) of every checker of a typed answer in every lesson's exercises
    modules: a check_* function whose first parameter is not a learner's function and
    that returns a verdict dict."""
    import inspect
    import pkgutil

    import lessons
    found = []
    for info in pkgutil.walk_packages(lessons.__path__, "lessons."):
        if not info.name.rsplit(".", 1)[1].startswith("exercises"):
            continue
        mod = importlib.import_module(info.name)
        for name, f in sorted(vars(mod).items()):
            if name.startswith("check_") and inspect.isfunction(f) and f.__module__ == mod.__name__:
                sig = inspect.signature(f)
                if next(iter(sig.parameters)) not in ("fn", "forward") \
                        and sig.return_annotation in (dict, "dict"):
                    found.append((info.name, name))
    return found


NUMERIC = _answer_checkers()


def _power(base, exponent, sign):
    """sign * base**exponent, built while the test runs: hypothesis prints its strategies,
    and repr() of an int past Python's 4,300-digit limit raises."""
    return sign * base ** exponent


SCALARS = st.one_of(
    st.integers(-10 ** 500, 10 ** 500),
    # past the 4,300-digit limit: 2**20000 and -(10**5000) always among the first tries
    st.builds(_power, st.sampled_from([2, 10]), st.sampled_from([20000, 5000]),
              st.sampled_from([1, -1])),
    st.builds(_power, st.just(10), st.integers(300, 9000), st.sampled_from([1, -1])),
    st.floats(allow_nan=True, allow_infinity=True), st.complex_numbers(allow_nan=True),
    st.fractions(), st.decimals(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.binary(max_size=8), st.none(), st.booleans(),
    # what a learner types into a box: formulas, units, and ones meant to hang
    st.text(alphabet="0123456789.,_eE+-*/^() %GBMiks", max_size=24),
    st.sampled_from(["2^-14", "70e9*12/64", "9**9**9**9", "10**10**10", "2^2^2^2^2^2^2",
                     "1" * 100_000, "(" * 100_000, "13.5 GiB", "1/0", "(-8)^(1/3)"]))


def _array(values, as_torch):
    import numpy as np
    import torch
    a = np.array(values, dtype=float)
    return torch.from_numpy(a) if as_torch else a


ANSWERS = st.one_of(
    SCALARS,
    st.recursive(SCALARS, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=3), inner, max_size=3)), max_leaves=8),
    # numpy and torch values of any shape (0 to 3 dims), finite or not
    st.builds(_array, st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4),
        st.lists(st.lists(st.floats(), min_size=2, max_size=2), max_size=3)), st.booleans()))


@pytest.mark.timeout(120)
@SETTINGS
@given(checker=st.sampled_from(NUMERIC), answer=ANSWERS)
def test_a_numeric_checker_answers_any_input(checker, answer):
    mod, name = checker
    got = getattr(importlib.import_module(mod), name)(answer)
    assert isinstance(got, dict) and isinstance(got.get("message"), str) and "ok" in got
    if isinstance(answer, float) and not math.isfinite(answer):
        assert not got["ok"]
