"""The run convention: every strategy's <Name>Run refuses bad input in ``check``,
with a ValueError naming the field, before any process starts; RunResult reads like
reference_train's dict."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parlab import validate
from parlab.model import GPTConfig
from parlab.runs import RunResult, TrainRun


def run_classes():
    """(a valid run, its world size) for TrainRun and every strategy's Run class."""
    out = [(TrainRun(), 2)]
    from parlab.data_parallel import DPRun
    out.append((DPRun(), 2))
    try:
        from parlab.zero import ZeroRun
        out.append((ZeroRun(zero_stage=2), 2))
    except ImportError:
        pass
    try:
        from parlab.pipeline_parallel import PPRun
        out.append((PPRun(p=2, micro_batches=2), 2))
    except ImportError:
        pass
    from parlab.tensor_parallel import TPRun
    out.append((TPRun(sequence_parallel=True), 2))
    from parlab.context_parallel import CPRun
    out.append((CPRun(layout="zigzag", attention="ulysses"), 2))
    from parlab.expert_parallel import EPRun
    out.append((EPRun(config=GPTConfig(n_experts=4, top_k=2, capacity_factor=1.25)), 2))
    from parlab.parallel_nd import NDRun
    out.append((NDRun(dp=2, pp=2, tp=2, micro_batches=4, sequence_parallel=True), 8))
    return out


RUNS = run_classes()
IDS = [type(r).__name__ for r, _ in RUNS]

# (field, bad value) pairs every run must refuse, naming the field
BAD = [("steps", 0), ("steps", 1.5), ("steps", -1), ("steps", True), ("steps", "3"),
       ("batch_size", 0), ("batch_size", 8.0), ("batch_size", None),
       ("lr", float("nan")), ("lr", float("inf")), ("lr", 0.0), ("lr", -1e-3), ("lr", "1e-3"),
       ("weight_decay", -0.1), ("weight_decay", float("nan")),
       ("seed", "x"), ("seed", 1.0), ("seed", -1), ("data_seed", 0.5),
       ("config", {"d_model": 64})]


@pytest.mark.parametrize("run, world", RUNS, ids=IDS)
def test_valid_defaults_pass(run, world):
    run.check(world)


@pytest.mark.parametrize("run, world", RUNS, ids=IDS)
@pytest.mark.parametrize("field, bad", BAD)
def test_bad_field_is_named(run, world, field, bad):
    broken = type(run)(**{**{f.name: getattr(run, f.name) for f in dataclasses.fields(run)}, field: bad})
    with pytest.raises(ValueError, match=field):
        broken.check(world)


@pytest.mark.parametrize("run, world", RUNS, ids=IDS)
@pytest.mark.parametrize("world_size", [0, 2.0, "2", True, None])
def test_bad_world_size(run, world, world_size):
    with pytest.raises(ValueError, match="world_size"):
        run.check(world_size)


@settings(max_examples=60, deadline=None)
@given(steps=st.one_of(st.integers(max_value=0), st.floats(), st.text(max_size=3), st.booleans()),
       lr=st.one_of(st.floats(max_value=0.0), st.just(float("nan")), st.just(float("inf"))))
def test_property_bad_steps_or_lr_never_pass(steps, lr):
    for run, world in RUNS:
        fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}
        with pytest.raises(ValueError, match="steps"):
            type(run)(**{**fields, "steps": steps}).check(world)
        with pytest.raises(ValueError, match="lr"):
            type(run)(**{**fields, "lr": lr}).check(world)


@settings(max_examples=60, deadline=None)
@given(steps=st.integers(1, 10**6), batch=st.integers(1, 64), lr=st.floats(1e-8, 10.0),
       wd=st.floats(0.0, 1.0), seed=st.integers(0, 2**31))
def test_property_valid_train_runs_pass(steps, batch, lr, wd, seed):
    TrainRun(steps=steps, batch_size=batch, lr=lr, weight_decay=wd, seed=seed).check(1)


def test_runs_are_frozen():
    with pytest.raises(Exception):
        TrainRun().steps = 5  # type: ignore[misc]


def test_gpt_config_refuses_non_integers():
    for field, bad in (("d_model", 64.0), ("n_layers", 0), ("n_heads", "4"), ("vocab_size", True)):
        with pytest.raises(ValueError, match=field):
            GPTConfig(**{field: bad})
    with pytest.raises(ValueError, match="bias"):
        GPTConfig(bias=1)


def test_run_result_indexes_like_reference_train():
    r = RunResult(losses=[1.0], state_dict={"w": 1}, grads={"w": 2})
    assert r["losses"] == [1.0] and r["state_dict"] == {"w": 1} and r["grads"] == {"w": 2}
    with pytest.raises(KeyError):
        r["nope"]


def test_validate_helpers():
    assert validate.check_int("n", 3) == 3
    assert validate.check_float("x", 2) == 2.0
    assert validate.check_float("x", 0.0, strict=False) == 0.0
    for bad in (float("nan"), math.inf, True, "1"):
        with pytest.raises(ValueError, match="x="):
            validate.check_float("x", bad)
    assert validate.check_choice("stage", 3, (0, 1, 2, 3)) == 3
    for bad in (3.0, True, "3"):
        with pytest.raises(ValueError, match="stage"):
            validate.check_choice("stage", bad, (0, 1, 2, 3))
    assert validate.check_choice("c", None, (None, "fp16")) is None


@pytest.mark.parametrize("run, world", RUNS, ids=IDS)
def test_only_expert_parallelism_takes_a_moe_config(run, world):
    moe = GPTConfig(n_experts=4, top_k=2)
    fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}
    if "sequence_parallel" in fields and type(run).trains_moe:
        fields["sequence_parallel"] = False  # (experts on sequence shards: not composed)
    changed = type(run)(**{**fields, "config": moe})
    if type(run).trains_moe:
        changed.check(world)
    else:
        with pytest.raises(ValueError, match="n_experts"):
            changed.check(world)
