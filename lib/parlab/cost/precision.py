"""Precision: number formats, rounding error of sums, and bytes per parameter by recipe.

Domains: ``fmt`` one of FORMATS; ``n_terms`` an integer >= 1; ``value`` finite; ``recipe``
one of RECIPES; ``n_params`` a whole number >= 0. Pure Python: the formats are described
by their bit counts, and ``parlab.precision.formats`` checks these against ``torch.finfo``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..validate import check_choice, check_float, check_int, check_whole
from .memory import zero_memory

# (exponent bits, mantissa bits) -- IEEE 754 binary32 / binary16; bfloat16 (Kalamkar et al.
# 2019, arXiv 1905.12322, §2: fp32's 8-bit exponent, 7 mantissa bits); the two FP8 formats
# of Micikevicius et al. 2022, "FP8 formats for deep learning" (arXiv 2209.05433, Table 1).
FORMATS = {"fp32": (8, 23), "bf16": (8, 7), "fp16": (5, 10), "e4m3": (4, 3), "e5m2": (5, 2)}


@dataclass(frozen=True)
class TrainingDtype:
    """How a training dtype stores a tensor: ``element_bits`` per value, and a scale of
    ``scale_bits`` for every ``block`` consecutive values (0: no block scale), plus
    ``tensor_scale_bits`` once per tensor (0: none). ``source`` says where from."""
    name: str
    element: str            # the value format ("e2m1": FP4, 1 sign, 2 exponent, 1 mantissa bit)
    element_bits: int
    block: int = 0
    scale: str = ""         # "e8m0": a power of two; "e4m3": an FP8 number
    scale_bits: int = 0
    tensor_scale_bits: int = 0
    source: str = ""


_OCP_MX = ("OCP Microscaling Formats (MX) Specification v1.0, 2023, §5.1-5.2 and Table 1: "
           "MXFP8 = 32 FP8 (E4M3 or E5M2) values sharing one E8M0 (8-bit power-of-two) scale, "
           "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf")
_NVFP4 = ("NVIDIA, 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference' "
          "(2025) and the Transformer Engine docs' NVFP4 recipe: 16 FP4 (E2M1) values share "
          "one FP8 E4M3 scale, and the tensor has a second-level FP32 scale, "
          "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/")
# The dtypes a layout trains in (the planner's ``Layout.dtype``). "fp8" is Transformer
# Engine's per-tensor scaling (delayed or current; Micikevicius et al. 2022, §4.3): one FP32
# scale per tensor, E4M3 forward, E5M2 for gradients.
TRAINING_DTYPES = {d.name: d for d in [
    TrainingDtype("bf16", "bf16", 16, source="Kalamkar et al. 2019"),
    TrainingDtype("fp16", "fp16", 16, source="IEEE 754 binary16 (one loss scale per model)"),
    TrainingDtype("fp8", "e4m3", 8, tensor_scale_bits=32,
                  source="Micikevicius et al., 'FP8 formats for deep learning', arXiv 2209.05433"),
    TrainingDtype("mxfp8", "e4m3", 8, 32, "e8m0", 8, source=_OCP_MX),
    TrainingDtype("nvfp4", "e2m1", 4, 16, "e4m3", 8, 32, source=_NVFP4),
]}
# the ones whose GEMMs run at a low-precision peak of their own (the rest of the step, and
# attention, stay 16-bit): ``planner`` looks up the GPU's peak under the same name
LOW_PRECISION = ("fp8", "mxfp8", "nvfp4")


def bytes_per_element(dtype: str, n_elements: int | None = None) -> float:
    """Bytes one value of ``dtype`` takes, its share of the block scale included: bf16 2,
    mxfp8 1 + 1/32 = 1.03125, nvfp4 1/2 + 1/16 = 0.5625. With ``n_elements`` (the tensor's
    size) the per-tensor scale's share too (fp8 and nvfp4: 4 bytes per tensor)."""
    d = TRAINING_DTYPES[check_choice("dtype", dtype, tuple(TRAINING_DTYPES))]
    out = d.element_bits / 8 + (d.scale_bits / 8 / d.block if d.block else 0.0)
    if n_elements is not None:
        out += d.tensor_scale_bits / 8 / check_int("n_elements", n_elements)
    return out


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
