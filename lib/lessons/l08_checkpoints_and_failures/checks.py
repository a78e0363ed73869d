"""Notebook 08's argument checks: every public demo refuses a bad argument up front, with
a ValueError that names it (and lists the allowed values of a choice), before a rank
starts, a file is written or memory is allocated. A typo in a planted mistake's name or a
layout's kind would otherwise train the right thing and teach the wrong lesson; an absurd
count (steps=10**12, n_layers=10**9, repeats=10**12) would run or allocate for ever.

The caps are far above anything the lesson runs (it trains TINY and MEDIUM for at most 8
steps); they only stop what cannot finish on a CPU."""

from __future__ import annotations

import os

from lessons.common.checkers.core import check_ranks as ranks  # noqa: F401 (the demos' rank counts)
from lessons.common.checkers.core import check_timeout as timeout  # noqa: F401
from parlab import cost
from parlab.model import GPTConfig
from parlab.validate import check_choice, check_float, check_int, shown

MAX_STEPS = 10_000      # TINY trains about 200 steps a second: under a minute
MAX_REPEATS = 100       # timed repeats of a measurement
MAX_PARAMS = 200e6      # fp32 weights + AdamW's two moments: 2.4 GB, all on one CPU rank
MAX_BATCH = 4096        # rows of a global batch
MAX_POINTS = 10_000     # points of a goodput curve
MAX_SLOWDOWN = 100.0    # a straggler 101 times slower
MAX_COMPUTE_S = 1.0     # one emulated compute (a sleep) per step or micro-batch
MAX_MICRO_BATCHES = 256


def steps(name: str, value) -> int:
    return check_int(name, value, 1, MAX_STEPS)


def approx_params(config: GPTConfig) -> int:
    """The GPT's parameters from its shape, without building it (building is what an
    absurd config must not get to): attention 4 d^2 and the MLP 2 d d_ff per layer (per
    expert in a MoE), the embeddings and the untied head."""
    experts = max(1, config.n_experts)
    blocks = cost.transformer_params(config.n_layers, config.d_model, config.d_ff * experts)
    return blocks + (2 * config.vocab_size + config.seq_len) * config.d_model


def config(value, name: str = "config") -> GPTConfig:
    """A GPTConfig small enough to train here (``MAX_PARAMS``)."""
    if not isinstance(value, GPTConfig):
        raise ValueError(f"{name}={shown(value)} must be a GPTConfig (e.g. experiments.TINY)")
    n = approx_params(value)
    if n > MAX_PARAMS:
        raise ValueError(f"{name} has about {n:.3g} parameters (n_layers={value.n_layers}, "
                         f"d_model={value.d_model}): at most {MAX_PARAMS:.0e} train on a CPU "
                         "here (weights and AdamW's moments in fp32)")
    return value


def choices(name: str, values, allowed) -> tuple:
    """A tuple (or list) of names, each one of ``allowed``. A lone string is refused: it
    would be read letter by letter."""
    if isinstance(values, str) or not isinstance(values, (tuple, list)):
        raise ValueError(f"{name}={shown(values)} must be a tuple of names, each one of "
                         f"{tuple(allowed)}")
    for v in values:
        check_choice(name, v, allowed)
    return tuple(values)


def optional_float(name: str, value, low: float = 0.0, strict: bool = True):
    return None if value is None else check_float(name, value, low, strict=strict)


def path(name: str, value, *, optional: bool = True):
    """A file or directory name (str or os.PathLike), or None when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"{name}={shown(value)} must be a path (a str)"
                         + (" or None" if optional else ""))
    return value
