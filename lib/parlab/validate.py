"""Argument checks shared by every public entry point: each raises ``ValueError``
naming the argument and its value, before any process starts.

    check_int("steps", 0)            -> ValueError: steps=0 must be an integer >= 1
    check_float("lr", float("nan"))  -> ValueError: lr=nan must be a finite number > 0
    check_whole("n_params", 7.5e9)   -> 7.5e9 (a count written as a float is fine; 7.5 is not)
    check_choice("schedule", "x", PIPELINE_SCHEDULES)

Pure Python: no torch.
"""

from __future__ import annotations

import math
import numbers


def shown(value) -> str:
    """``repr(value)`` for an error message. Never raises: an int past Python's 4,300-digit
    ``str`` limit (2**20000) would make ``repr`` raise a ValueError of its own, which
    names no field."""
    if isinstance(value, int) and value.bit_length() > 10_000:
        return f"{'-' if value < 0 else ''}<an integer of {value.bit_length():,} bits>"
    try:
        return repr(value)
    except Exception:  # a list nested too deep, a __repr__ that raises
        return f"<a {type(value).__name__}>"


def check_int(name: str, value, low: int | None = 1, high: int | None = None) -> int:
    """``value`` if it is an integer in [low, high] (not a bool, not a float such as
    8.0), else a ValueError naming it. ``low=None``: no lower bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}={shown(value)} must be an integer"
                         + (f" >= {low}" if low is not None else ""))
    if low is not None and value < low:
        raise ValueError(f"{name}={shown(value)} must be an integer >= {low}")
    if high is not None and value > high:
        raise ValueError(f"{name}={shown(value)} must be an integer <= {high}")
    return int(value)


def check_float(name: str, value, low: float | None = 0.0, *, strict: bool = True,
                high: float | None = None) -> float:
    """``value`` as a float if it is a finite real number above ``low`` (``strict``:
    > low, else >= low) and at most ``high``; else a ValueError naming it. Bools and
    strings are refused; NaN and infinities are refused. ``low=None``: no lower bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={shown(value)} must be a real number")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}={shown(value)} must be a finite number")
    if low is not None and (value <= low if strict else value < low):
        raise ValueError(f"{name}={shown(value)} must be {'>' if strict else '>='} {low}")
    if high is not None and value > high:
        raise ValueError(f"{name}={shown(value)} must be <= {high}")
    return value


def check_whole(name: str, value, low: int = 0):
    """``value`` if it is a whole number >= ``low``: an integer (not a bool), or a finite
    float with no fractional part, as parameter counts are often written (7.5e9);
    else a ValueError naming it. Ints come back as int, floats as float."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_int(name, value, low)
    v = check_float(name, value, low, strict=False)
    if not v.is_integer():
        raise ValueError(f"{name}={shown(value)} must be a whole number >= {low} "
                         f"(an int, or a float such as 7.5e9)")
    return v


def check_choice(name: str, value, choices) -> object:
    """``value`` if it is one of ``choices`` (compared without letting True stand for 1
    or 1.0 for 1), else a ValueError listing them."""
    for c in choices:
        if type(value) is type(c) and value == c:
            return value
        if value is None and c is None:
            return value
    raise ValueError(f"{name}={shown(value)} must be one of {tuple(choices)}")


def check_bool(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name}={shown(value)} must be True or False")
    return value
