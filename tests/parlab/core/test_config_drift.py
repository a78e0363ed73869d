"""A GPTConfig cannot drift after it was checked: it is frozen, ``dataclasses.replace``
checks (and re-derives) again, and every run's ``check`` re-validates its config and the
synthetic data's minimum vocabulary before any rank starts."""
import dataclasses
import pickle
import sys

import pytest

from parlab import (context_parallel, data_parallel, expert_parallel, parallel_nd,
                    pipeline_parallel, tensor_parallel, zero)
from parlab.config import GPTConfig, llama_config
from parlab.data import MIN_VOCAB, MarkovData, check_vocab
from parlab.model import reference_train

SIZES = ("vocab_size", "seq_len", "d_model", "n_heads", "n_layers", "d_ff", "n_kv_heads")


# --- frozen, and replace checks again -----------------------------------------------

def test_assigning_a_field_raises_frozen_instance_error():
    cfg = GPTConfig()
    with pytest.raises(dataclasses.FrozenInstanceError, match="d_ff"):
        cfg.d_ff = 0
    with pytest.raises(AttributeError):  # FrozenInstanceError is an AttributeError
        cfg.n_heads = 3
    assert cfg.d_ff == 256 and cfg.n_heads == 4


@pytest.mark.parametrize("change, match", [
    (dict(d_ff=0), r"^d_ff=0 must be an integer >= 1"),
    (dict(n_heads=3), r"^n_heads=3 must divide d_model=64"),
    (dict(n_kv_heads=3), r"^n_kv_heads=3 must divide n_heads=4"),
    (dict(n_kv_heads=8), r"^n_kv_heads=8 must be an integer <= 4"),
    (dict(d_model=None), r"^d_model=None must be an integer"),
])
def test_replace_validates_again(change, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(GPTConfig(), **change)


def test_replace_derives_the_derived_defaults_again_and_keeps_given_ones():
    wide = dataclasses.replace(GPTConfig(), d_model=128, n_heads=8)
    assert (wide.d_ff, wide.n_kv_heads) == (512, 8)  # not 256 and 4 (silent GQA)
    given = dataclasses.replace(GPTConfig(d_ff=100, n_kv_heads=2), d_model=128, n_heads=8)
    assert (given.d_ff, given.n_kv_heads) == (100, 2)
    # the mark survives the trip to a rank
    shipped = pickle.loads(pickle.dumps(GPTConfig()))
    assert shipped == GPTConfig() and dataclasses.replace(shipped, d_model=32).d_ff == 128


def test_config_is_hashable_and_moe_layers_normalised_to_a_tuple():
    cfg = GPTConfig(n_experts=4, moe_layers=[0, 2])
    assert cfg.moe_layers == (0, 2)
    assert {cfg: 1}[GPTConfig(n_experts=4, moe_layers=(0, 2))] == 1


# --- None, floats and impossible combinations: ValueError naming the field ----------

@pytest.mark.parametrize("make", [GPTConfig, llama_config], ids=["GPTConfig", "llama_config"])
@pytest.mark.parametrize("value", [None, 4.0, 4.5, "4", True])
@pytest.mark.parametrize("field", SIZES + ("n_experts", "top_k"))
def test_a_size_that_is_not_an_integer_is_a_value_error_naming_it(make, field, value):
    if value is None and field in ("d_ff", "n_kv_heads"):
        pytest.skip("None is the derived default of d_ff and n_kv_heads")
    with pytest.raises(ValueError, match=rf"^{field}={value!r} must be an integer"):
        make(**{field: value})


def test_validate_is_idempotent_and_returns_the_config():
    cfg = llama_config()
    assert cfg.validate() is cfg and cfg.validate() == llama_config()


# --- every run re-validates its config before any rank starts -----------------------

def _runs(config_kw):
    """(strategy module, a run of it on 2 ranks) for every strategy; MoE configs for EP."""
    dense, moe = GPTConfig(**config_kw), GPTConfig(n_experts=2, **config_kw)
    return [
        (data_parallel, data_parallel.DPRun(config=dense)),
        (tensor_parallel, tensor_parallel.TPRun(config=dense)),
        (context_parallel, context_parallel.CPRun(config=dense)),
        (zero, zero.ZeroRun(config=dense)),
        (pipeline_parallel, pipeline_parallel.PPRun(config=dense, p=2, micro_batches=2)),
        (expert_parallel, expert_parallel.EPRun(config=moe)),
        (parallel_nd, parallel_nd.NDRun(config=dense, dp=1, pp=1, tp=2, micro_batches=1)),
    ]


RUN_IDS = ["dp", "tp", "cp", "zero", "pp", "ep", "3d"]


@pytest.fixture
def no_ranks(monkeypatch):
    def launch(*a, **k):
        raise AssertionError("a rank started: the run's check should have refused first")
    monkeypatch.setattr(sys.modules["parlab.launch"], "launch", launch)


@pytest.mark.parametrize("i", range(len(RUN_IDS)), ids=RUN_IDS)
def test_every_run_accepts_the_default_config(i):
    _, run = _runs({})[i]
    run.check(2)  # the refusals below are the config's, not the run's


@pytest.mark.parametrize("i", range(len(RUN_IDS)), ids=RUN_IDS)
@pytest.mark.parametrize("field, value, match", [
    ("d_ff", 0, r"^config\.d_ff=0 must be an integer >= 1"),
    ("n_heads", 3, r"^config\.n_heads=3 must divide d_model=64"),
    ("d_model", None, r"^config\.d_model=None must be an integer"),
])
def test_every_run_refuses_a_config_changed_past_its_frozen_guard(i, field, value, match,
                                                                   no_ranks):
    module, run = _runs({})[i]
    object.__setattr__(run.config, field, value)  # what the frozen guard stops
    with pytest.raises(ValueError, match=match):
        module.run(run, 2)


@pytest.mark.parametrize("i", range(len(RUN_IDS)), ids=RUN_IDS)
@pytest.mark.parametrize("vocab", [1, 2, MIN_VOCAB - 1])
def test_every_run_refuses_a_vocab_below_the_datas_minimum(i, vocab, no_ranks):
    module, run = _runs(dict(vocab_size=vocab))[i]
    with pytest.raises(ValueError, match=rf"^config\.vocab_size={vocab} must be >= {MIN_VOCAB}"):
        module.run(run, 2)


def test_the_minimum_vocab_is_what_the_data_needs():
    MarkovData(MIN_VOCAB)  # draws
    with pytest.raises(ValueError, match="branching"):
        MarkovData(MIN_VOCAB - 1)
    assert check_vocab(MIN_VOCAB) == MIN_VOCAB
    with pytest.raises(ValueError, match=rf"^vocab_size=3 must be >= {MIN_VOCAB}"):
        check_vocab(3, "vocab_size")


@pytest.mark.parametrize("kw, match", [
    (dict(config=GPTConfig(vocab_size=2)), rf"^config\.vocab_size=2 must be >= {MIN_VOCAB}"),
    (dict(lr=float("inf")), r"^lr=inf must be a finite number"),
    (dict(lr=float("nan")), r"^lr=nan must be a finite number"),
    (dict(steps=-1), r"^steps=-1 must be an integer >= 0"),
    (dict(batch_size=2.0), r"^batch_size=2.0 must be an integer"),
])
def test_reference_train_names_a_bad_argument(kw, match):
    args = {**dict(config=GPTConfig(), steps=1, batch_size=2, lr=1e-3), **kw}
    with pytest.raises(ValueError, match=match):
        reference_train(**args)
