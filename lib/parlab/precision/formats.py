"""The number formats of mixed-precision training, read off ``torch.finfo``, and the two
roundings the notebook compares: to nearest (what a cast does) and stochastic.

fp32, fp16: IEEE 754 binary32 / binary16. bf16: fp32's 8-bit exponent with 7 mantissa
bits (Kalamkar et al. 2019, "A study of BFLOAT16 for deep learning training", arXiv
1905.12322, §2). e4m3 / e5m2: Micikevicius et al. 2022, "FP8 formats for deep learning"
(arXiv 2209.05433, Table 1: e4m3 has no infinities and one NaN pattern, max 448; e5m2 is
IEEE-like, max 57344); torch's ``float8_e4m3fn`` / ``float8_e5m2``.
"""

from __future__ import annotations

import torch

from .. import cost

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
          "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def dtype_of(fmt) -> torch.dtype:
    """``fmt`` as a torch dtype ("bf16" or torch.bfloat16 ...); a ValueError otherwise."""
    if isinstance(fmt, torch.dtype) and fmt in DTYPES.values():
        return fmt
    if fmt not in DTYPES:
        raise ValueError(f"fmt={fmt!r} must be one of {', '.join(DTYPES)}")
    return DTYPES[fmt]


def describe(fmt) -> dict:
    """One format from ``torch.finfo``: bits, the largest value, the smallest normal and
    subnormal (smallest normal x eps: the last mantissa bit below the smallest exponent),
    machine epsilon (the gap above 1.0), mantissa bits (from eps), and u = eps / 2."""
    dt = dtype_of(fmt)
    f = torch.finfo(dt)
    name = next(k for k, v in DTYPES.items() if v == dt)
    man = round(-torch.log2(torch.tensor(f.eps, dtype=torch.float64)).item())
    return {"format": name, "bits": f.bits, "exponent_bits": f.bits - 1 - man, "mantissa_bits": man,
            "max": f.max, "smallest_normal": f.smallest_normal,
            "smallest_subnormal": f.smallest_normal * f.eps, "eps": f.eps, "u": f.eps / 2,
            "decimal_digits": man * 0.30103 + 0.30103}


def format_table(fmts=tuple(DTYPES)) -> list[dict]:
    """``describe`` for each format, checked against ``cost.FORMATS`` (bit counts)."""
    rows = [describe(f) for f in fmts]
    for r in rows:
        if (r["exponent_bits"], r["mantissa_bits"]) != cost.FORMATS[r["format"]]:
            raise AssertionError(f"{r['format']}: torch.finfo disagrees with cost.FORMATS")
    return rows


def representable(fmt) -> torch.Tensor:
    """Every finite non-negative value of an 8-bit format, sorted (all 256 bit patterns)."""
    dt = dtype_of(fmt)
    if torch.finfo(dt).bits != 8:
        raise ValueError(f"fmt={fmt!r}: only the 8-bit formats can be listed")
    v = torch.arange(256, dtype=torch.uint8).view(dt).float()
    return v[torch.isfinite(v) & (v >= 0)].unique()


def ulp(x: torch.Tensor, fmt="bf16") -> torch.Tensor:
    """Per element: the gap from x (a value of ``fmt``) to its neighbour away from zero."""
    dt = dtype_of(fmt)
    f = torch.finfo(dt)
    a = x.detach().abs().to(torch.float64).clamp_min(f.smallest_normal)
    return torch.exp2(torch.floor(torch.log2(a))) * f.eps


def round_stochastic(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """fp32 -> bf16 rounding up or down at random, up with probability equal to the distance
    from the lower neighbour in ulps: unbiased, E[round(x)] = x (Zamirai et al. 2020,
    "Revisiting BFloat16 training", arXiv 2010.06192). bf16 is the top 16 bits of fp32, so
    adding a uniform 16-bit integer to the low half and truncating does it (the magnitude
    is rounded, so the sign needs no care)."""
    bits = x.detach().float().contiguous().view(torch.int32)
    noise = torch.randint(0, 1 << 16, bits.shape, dtype=torch.int32, generator=generator)
    return ((bits + noise) & -65536).view(torch.float32).to(torch.bfloat16)
