"""Notebook 08's demos check their arguments before any work: a misspelt choice (a planted
mistake, a layout's kind, a straggler's kind) is a ValueError naming the field and
listing the allowed values; an absurd count (steps=10**12, n_layers=10**9, repeats=10**12,
points=10**12, a slowdown that sleeps for ever) is a ValueError naming it. Nothing
reaches a rank, a temp directory or an allocation: ``launch`` and ``tempfile.mkdtemp`` are
sentinels here. Every public function and class of the lesson is in the table below or
says why it needs no check (``test_every_public_demo_is_covered``)."""

from __future__ import annotations

import importlib
import inspect
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parlab.model import GPTConfig
from lessons.l08_checkpoints_and_failures import (checks, exercises as X, experiments as E,
                                                   stragglers as S, training as T,
                                                   tp_resume, widgets as W)

L = T.Layout
PKG = "lessons.l08_checkpoints_and_failures"


class WorkWouldStart(Exception):
    pass


@pytest.fixture
def no_work(monkeypatch):
    """Ranks, temp directories: each raises instead; what reaches one passed every check."""
    def refuse(*a, **k):
        raise WorkWouldStart
    monkeypatch.setattr(E, "launch", refuse)
    monkeypatch.setattr(sys.modules["parlab.launch"], "launch", refuse)
    monkeypatch.setattr(tempfile, "mkdtemp", refuse)


def huge_config():  # constructs (a config is only numbers); building it would never finish
    return GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=10 ** 9)


# (function, its arguments, the field the error must name)
CASES = [
    (E.resharded_resume, dict(save=L("ours", 3)), "dp"),  # 8 rows over 3 ranks
    (E.resharded_resume, dict(save=L("ours", 64)), "dp"),  # over the 32-rank cap
    (E.resharded_resume, dict(save="ours"), "save"),
    (E.resharded_resume, dict(resume=()), "resume"),
    (E.resharded_resume, dict(resume=L("ours", 2)), "resume"),
    (E.resharded_resume, dict(planted=("no_optimiser",)), "planted"),
    (E.resharded_resume, dict(planted="no_rng"), "planted"),  # a string, not a tuple
    (E.resharded_resume, dict(steps=10 ** 12), "steps"),
    (E.resharded_resume, dict(at=6), "at"),
    (E.resharded_resume, dict(config="TINY"), "config"),
    (E.resharded_resume, dict(config=huge_config()), "config"),
    (E.resharded_resume, dict(timeout=float("nan")), "timeout"),
    (E.save_stall, dict(ranks=10 ** 9), "ranks"),
    (E.save_stall, dict(repeats=10 ** 12), "repeats"),
    (E.save_stall, dict(config=huge_config()), "config"),
    (E.save_stall, dict(timeout=-1), "timeout"),
    (E.stragglers, dict(kinds="dp"), "kinds"),
    (E.stragglers, dict(ranks=10 ** 9), "ranks"),
    (E.stragglers, dict(slowdown=float("inf")), "slowdown"),  # slept for ever
    (E.stragglers, dict(slowdown=1e12), "slowdown"),
    (E.stragglers, dict(t_compute=1e9), "t_compute"),
    (E.stragglers, dict(repeats=10 ** 12), "repeats"),
    (E.stragglers, dict(micro_batches=10 ** 9), "micro_batches"),
    (E.stragglers, dict(pp_compute=-1), "pp_compute"),
    (E.stragglers, dict(repeats=100, slowdown=50, t_compute=0.5), "timeout"),  # > 120 s of sleep
    (E.stragglers, dict(bug="no-sync"), "bug"),
    (E.llama3_check, dict(checkpoint_s=-1), "checkpoint_s"),
    (E.llama3_check, dict(restart_s=float("nan")), "restart_s"),
    (E.goodput_at_scale, dict(points=10 ** 12), "points"),  # a list of 10**12 points
    (E.goodput_at_scale, dict(n_gpus=1.5), "n_gpus"),
    (E.goodput_at_scale, dict(checkpoint_bytes=-1), "checkpoint_bytes"),
    (E.goodput_at_scale, dict(restart_s=-1), "restart_s"),
    (E.restart_for_target, dict(target=1.5), "target"),
    (E.restart_for_target, dict(checkpoint_s=0), "checkpoint_s"),
    (E.scale_bytes, dict(models="405B"), "models"),
    (E.scale_bytes, dict(weights="2"), "weights"),
    (E.tp_resharded_resume, dict(resume=((3, 1),)), "resume"),
    (E.tp_resharded_resume, dict(resume=((10 ** 6, 10 ** 6),)), "resume"),
    (E.tp_resharded_resume, dict(steps=10 ** 12), "steps"),
    (E.tp_resharded_resume, dict(save_at=4), "save_at"),
    (E.checkpoint_size, dict(n_params="x"), "n_params"),
    (E.stall_seconds, dict(bandwidth=0), "bandwidth"),
    (E.bandwidth_for_stall, dict(stall_s=0), "stall_s"),
    (E.written, dict(path="/nonexistent/parlab"), "path"),
    (T.Layout, dict(kind="our", dp=2), "kind"),
    (T.Layout, dict(kind="one", dp=2), "dp"),
    (T.Layout, dict(kind="ours", dp=10 ** 9), "dp"),
    (T.Spec, dict(config=E.TINY, planted="no_optimiser"), "planted"),
    (T.Spec, dict(config=E.TINY, steps=10 ** 12), "steps"),
    (T.Spec, dict(config=E.TINY, save_at=(0,)), "save_at"),
    (T.Spec, dict(config=E.TINY, save_at=(2,)), "directory"),
    (T.Spec, dict(config=E.TINY, kill=(0,)), "kill"),
    (T.Spec, dict(config=E.TINY, layout="ours"), "layout"),
    (T.Spec, dict(config=E.TINY, dropout=1.0), "dropout"),
    (T.Spec, dict(config=E.TINY, batch_size=10 ** 9), "batch_size"),
    (T.planted_resume, dict(planted="no_rgn"), "planted"),
    (S.check_bug, dict(bug="nosync"), "bug"),
    (X.hints, dict(name="my_resum"), "name"),
    (X.solution_html, dict(name="my_resum"), "name"),
    (W.goodput_explorer, dict(n_gpus=3000), "n_gpus"),  # the slider once showed 16384 instead
    (W.goodput_explorer, dict(mtbf_years=1000), "mtbf_years"),  # beyond the slider: clamped
    (W.goodput_explorer, dict(restart_s=-5), "restart_s"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fn, kwargs, field", CASES,
                         ids=[f"{f.__name__}-{'-'.join(k)}-{i}" for i, (f, k, _) in enumerate(CASES)])
def test_a_bad_argument_is_named_before_any_work(no_work, fn, kwargs, field):
    with pytest.raises(ValueError, match=field):
        fn(**kwargs)


def test_a_misspelt_choice_lists_the_allowed_names(no_work):
    with pytest.raises(ValueError, match=r"'no_optimizer', 'data_off_by_one', 'no_rng'"):
        E.resharded_resume(planted=("no_optimiser",))
    with pytest.raises(ValueError, match=r"\('one', 'ours', 'fsdp2'\)"):
        L("fsdp", 2)
    with pytest.raises(ValueError, match=r"\('dp', 'tp', 'pp'\)"):
        E.stragglers(kinds=("dq",))


@pytest.mark.timeout(60)
def test_the_lessons_own_calls_pass_the_checks(no_work):
    """The notebook's and the tests' arguments reach the ranks (and nothing else does)."""
    for call in (lambda: E.resharded_resume(steps=5, planted=("no_optimizer", "data_off_by_one",
                                                                "no_rng")),
                 lambda: E.tp_resharded_resume(resume=((1, 4),)), lambda: E.save_stall(repeats=3),
                 lambda: E.stragglers(ranks=4, slowdown=0.5, t_compute=0.02, repeats=3,
                                      pp_compute=0.004),
                 lambda: E.stragglers(kinds=("dp", "tp"), ranks=2, slowdown=3.0, repeats=2,
                                      bug="no_sync")):
        with pytest.raises(WorkWouldStart):
            call()
    T.Spec(E.TINY, L("ours", 2), steps=4, directory="d", save_at=(2,), kill=(1, 3))
    assert E.goodput_at_scale(16384, points=60)["per_day"] > 0
    assert E.restart_for_target(0.9)["target"] == 0.9
    assert W.goodput_explorer() is not None


def test_the_size_check_counts_parameters_as_the_model_does():
    from parlab.model import GPT
    for config in (E.TINY, E.MEDIUM):
        assert checks.approx_params(config) == pytest.approx(GPT(config).num_params(), rel=0.05)


def test_rank_side_functions_refuse_a_misspelt_choice():
    """Run inside ranks (the lesson's own calls are checked above them), they still refuse
    a typo rather than resume or time the wrong thing."""
    with pytest.raises(ValueError, match=r"planted='no_optimiser' must be one of"):
        tp_resume.run(2, 2, 4, planted="no_optimiser")
    with pytest.raises(ValueError, match=r"kind='dq' must be one of"):
        S.straggler_rank("dq", 1, 0.5, 0.01, 1)


# --- the sweep: every public demo is covered, and hypothesis throws bad values at them ---

MODULES = ("experiments", "training", "stall", "stragglers", "tp_resume", "widgets",
           "figures", "exercises", "drills", "checks")
# public functions and classes that need no table row, and why
EXEMPT = {
    "experiments.failover": "failover.py's own (its flags are checked there)",
    "training.train_rank": "a rank's side: its Spec was checked when it was made",
    "training.GlobalDropout": "attached by train_rank to a checked Spec",
    "training.GlobalLoss": "attached by train_rank to a checked Spec",
    "training.KillAt": "attached by train_rank from a checked Spec.kill",
    "training.OneDevice": "built by train_rank from a checked Spec",
    "stall.stall_rank": "a rank's side of save_stall, which checks its arguments",
    "stragglers.kinds_rank": "a rank's side of stragglers, which checks its arguments",
    "stragglers.straggler_rank": "a rank's side; refuses a misspelt kind or bug (tested above)",
    "tp_resume.run": "a rank's side of tp_resharded_resume; refuses a misspelt planted",
    "widgets.explorer_html": "formats goodput_at_scale's checked result",
    "exercises.check_young_interval": "an answer checker: tests/lessons/common/"
                                      "test_checkers_always_answer.py",
    "exercises.check_interruptions_per_day": "an answer checker (as above)",
    "exercises.check_checkpoint_bytes_per_rank": "an answer checker (as above)",
    "exercises.check_resume": "a coding checker: its parameters are in that file's table",
    "exercises.solution_resume": "the reference solution, called by the checker",
    "exercises.resume_harness": "a rank's side of check_resume",
    "exercises.show_solution": "prints the names there are for an unknown one (every lesson's)",
    "checks": "the checks themselves",
}
FIGURES = "figures: draw a result the experiments returned (checked there)"
DRILLS = "drills: question templates, called by the drill bank with a seeded rng"


def _public(module: str):
    mod = importlib.import_module(f"{PKG}.{module}")
    for name, obj in vars(mod).items():
        if not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj)) \
                and obj.__module__.startswith(PKG):
            yield f"{module}.{name}", obj


def test_every_public_demo_is_covered():
    covered = {f for f, _, _ in CASES}
    missing = []
    for module in MODULES:
        for qualname, obj in _public(module):
            if obj in covered or qualname in EXEMPT or module in ("checks", "figures", "drills") \
                    or obj.__module__ != f"{PKG}.{module}":
                continue
            missing.append(qualname)
    assert not missing, f"public demos with no bad-argument case (add one, or a reason): {missing}"


BAD = {  # values no field of that kind takes
    "count": st.one_of(st.integers(max_value=0), st.integers(min_value=10 ** 13),
                       st.sampled_from([1.5, 2.0, None, "2", True, float("nan")])),
    "seconds": st.one_of(st.floats(max_value=0), st.sampled_from([float("nan"), float("inf"),
                                                                  None, "60", True])),
    "name": st.one_of(st.text(max_size=12), st.sampled_from([None, 7, True, ("ours",)])),
}
FIELDS = [  # (function, field, kind of bad value, arguments that make the rest good)
    (E.resharded_resume, "steps", "count", {}), (E.resharded_resume, "at", "count", {}),
    (E.resharded_resume, "timeout", "seconds", {}),
    (E.save_stall, "ranks", "count", {}), (E.save_stall, "repeats", "count", {}),
    (E.stragglers, "ranks", "count", {}), (E.stragglers, "repeats", "count", {}),
    (E.stragglers, "micro_batches", "count", {}), (E.stragglers, "slowdown", "seconds", {}),
    (E.stragglers, "t_compute", "seconds", {}), (E.stragglers, "timeout", "seconds", {}),
    (E.goodput_at_scale, "points", "count", {}),
    (E.llama3_check, "checkpoint_s", "seconds", {}),
    (E.tp_resharded_resume, "steps", "count", {}), (E.tp_resharded_resume, "save_at", "count", {}),
    (T.Layout, "kind", "name", {}), (T.Layout, "dp", "count", {}),
    (T.Spec, "planted", "name", dict(config=E.TINY)), (T.Spec, "steps", "count", dict(config=E.TINY)),
    (T.Spec, "batch_size", "count", dict(config=E.TINY)),
    (T.planted_resume, "planted", "name", {}), (S.check_bug, "bug", "name", {}),
]


@st.composite
def bad_calls(draw):
    fn, field, kind, base = draw(st.sampled_from(FIELDS))
    value = draw(BAD[kind])
    if kind == "name" and fn is T.Layout and value in T.KINDS:
        value = value + "x"
    if kind == "name" and (value is None or value in T.PLANTED + S.BUGS):  # allowed names
        value = f"{value}x"
    return fn, {**base, field: value}, field


@pytest.mark.timeout(120)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=bad_calls())
def test_any_bad_value_is_named_before_any_work(no_work, call):
    fn, kwargs, field = call
    with pytest.raises(ValueError) as e:
        fn(**kwargs)
    assert field in str(e.value), (fn.__name__, kwargs, str(e.value))
