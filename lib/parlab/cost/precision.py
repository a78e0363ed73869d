"""Precision: number formats, rounding error of sums, and bytes per parameter by recipe.

Domains: ``fmt`` one of FORMATS; ``n_terms`` an integer >= 1; ``value`` finite; ``recipe``
one of RECIPES; ``n_params`` a whole number >= 0. Pure Python: the formats are described
by their bit counts, and ``parlab.precision.formats`` checks these against ``torch.finfo``.
"""

from __future__ import annotations

import math

from ..validate import check_choice, check_float, check_int, check_whole
from .memory import zero_memory

# (exponent bits, mantissa bits) -- IEEE 754 binary32 / binary16; bfloat16 (Kalamkar et al.
# 2019, arXiv 1905.12322, §2: fp32's 8-bit exponent, 7 mantissa bits); the two FP8 formats
# of Micikevicius et al. 2022, "FP8 formats for deep learning" (arXiv 2209.05433, Table 1).
FORMATS = {"fp32": (8, 23), "bf16": (8, 7), "fp16": (5, 10), "e4m3": (4, 3), "e5m2": (5, 2)}


def _fmt(fmt) -> tuple[int, int]:
    return FORMATS[check_choice("fmt", fmt, tuple(FORMATS))]


def mantissa_bits(fmt: str) -> int:
    """Explicit fraction bits of ``fmt`` (the leading 1 of a normal number is implicit)."""
    return _fmt(fmt)[1]


def unit_roundoff(fmt: str) -> float:
    """u = 2^-(p) with p = mantissa bits + 1: the largest relative error of one
    round-to-nearest (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.
    2002, §2.1). Half of machine epsilon: bf16 2^-8, fp16 2^-11, fp32 2^-24."""
    return 2.0 ** -(mantissa_bits(fmt) + 1)


def ulp(value: float, fmt: str) -> float:
    """The gap between ``value`` and the next representable number of ``fmt`` away from
    zero (a normal value: 2^(e - mantissa bits) for |value| in [2^e, 2^(e+1)))."""
    value = check_float("value", value, None, strict=False)
    exp_bits, man = _fmt(fmt)
    e_min = 2 - 2 ** (exp_bits - 1)  # smallest normal exponent (fp32: -126)
    e = max(math.frexp(abs(value))[1] - 1, e_min) if value else e_min
    return 2.0 ** (e - man)


def vanishing_update(weight: float, fmt: str, direction: str) -> float:
    """The largest update that leaves ``weight`` (a value of ``fmt``) unchanged when
    ``weight`` + update is rounded to nearest in ``fmt``, for an update that moves it
    ``direction`` "up" (an increase) or "down" (a decrease): half the gap to the neighbour
    on that side. The two gaps are equal (one ulp) except at a power of two, where the gap
    toward zero is half the gap away from it: bf16's neighbours of 1.0 are 1 + 2^-7 and
    1 - 2^-8, so an increase of 1.0 is lost up to 2^-8 and a decrease only up to 2^-9
    (1 - 0.002 rounds to 0.99609375). An update of exactly this size is a tie, which goes
    to the neighbour whose last mantissa bit is 0: the weight itself when its own is 0 (as
    1.0's is), else the neighbour. Counted in notebook 07 §2."""
    weight = check_float("weight", weight, None, strict=False)
    direction = check_choice("direction", direction, ("up", "down"))
    exp_bits, _ = _fmt(fmt)
    gap = ulp(weight, fmt)  # the gap away from zero
    toward_zero = weight != 0 and (direction == "down") == (weight > 0)
    mantissa, e = math.frexp(abs(weight))  # |weight| = mantissa * 2^e, mantissa in [0.5, 1)
    if toward_zero and mantissa == 0.5 and e - 1 > 2 - 2 ** (exp_bits - 1):
        gap /= 2  # a power of two above the smallest normal: the binade below is finer
    return gap / 2


def summation_error_bound(n_terms: int, fmt: str) -> float:
    """gamma_(n-1) = (n-1) u / (1 - (n-1) u): the bound on |computed - exact| / sum|x_i| of
    n terms added one after another, each partial sum rounded to ``fmt`` (Higham 2002, §4.2,
    recursive summation; valid while (n-1) u < 1). A ring reduce-scatter adds a chunk's n
    contributions that way, one hop at a time (notebook 07 §5)."""
    n = check_int("n_terms", n_terms)
    nu = (n - 1) * unit_roundoff(fmt)
    return math.inf if nu >= 1 else nu / (1 - nu)


# Bytes per parameter kept for training with Adam, by what holds them. The ZeRO paper's
# mixed-precision Adam (Rajbhandari et al. 2020, §3.1): 2 + 2 + K with K = 12 (fp32 master
# copy, momentum, variance) = 16. "fp8_mixed" keeps an fp8 copy of each GEMM weight beside
# the bf16 one (what the FP8 GEMMs read, cached across micro-batches).
RECIPES = {
    "fp32": {"weights": 4, "grads": 4, "master": 0, "adam_m": 4, "adam_v": 4},
    "bf16_mixed": {"weights": 2, "grads": 2, "master": 4, "adam_m": 4, "adam_v": 4},
    "fp8_mixed": {"weights": 2, "fp8_weights": 1, "grads": 2, "master": 4, "adam_m": 4,
                  "adam_v": 4},
}


def training_bytes_per_param(recipe: str = "bf16_mixed", gemm_fraction: float = 1.0) -> dict:
    """{what: bytes per parameter} and "total" for ``recipe``. ``gemm_fraction``: the share
    of parameters that are GEMM weights (only those get an fp8 copy; LayerNorm gains and
    biases do not). bf16_mixed is ``zero_memory``'s default (2 + 2 + 12 = 16 B)."""
    parts = dict(RECIPES[check_choice("recipe", recipe, tuple(RECIPES))])
    frac = check_float("gemm_fraction", gemm_fraction, 0.0, strict=False)
    if frac > 1:
        raise ValueError(f"gemm_fraction={gemm_fraction} must be in [0, 1]")
    if "fp8_weights" in parts:
        parts["fp8_weights"] *= frac
    parts["total"] = sum(parts.values())
    return parts


def training_bytes(n_params: float, recipe: str = "bf16_mixed", dp: int = 1,
                   zero_stage: int = 0) -> dict:
    """Model-state bytes per GPU for ``n_params`` under ``recipe`` and ZeRO ``zero_stage``
    (``zero_memory`` with this recipe's bytes: weights, grads, optimizer = master + m + v)."""
    n_params = check_whole("n_params", n_params)
    b = training_bytes_per_param(recipe)
    return zero_memory(n_params, dp, zero_stage, param_bytes=b["weights"] + b.get("fp8_weights", 0),
                       grad_bytes=b["grads"],
                       optimizer_bytes=b["master"] + b["adam_m"] + b["adam_v"])
