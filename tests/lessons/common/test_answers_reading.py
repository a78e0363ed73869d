"""What an answer box understands (``answers.read_text``), how close is close enough
(the digits rule, ``tolerance_words``), and what the verdict says it read."""

from __future__ import annotations

import inspect
import math
import time
import tracemalloc

import pytest

from lessons.common.checkers.answers import (MAX_CHARS, check_number, parse_value,
                                             read_text, tolerance_words)
from lessons.common.checkers.widgets import answer_box
from lessons.common.drills import generate
from lessons.common.drills.bank import templates
from lessons.l07_mixed_precision import exercises as ex_prec

FP16_MIN_NORMAL = 2 ** -14  # 6.103515625e-05


# --- notations ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, unit, value, note", [
    ("6.1e-5", "", 6.1e-5, ""),
    ("  6.104E-05 ", "", 6.104e-5, ""),
    ("-2", "", -2.0, ""),
    ("3,072", "", 3072.0, ""),
    ("1,000,000", "", 1e6, ""),
    ("1_000", "", 1000.0, ""),
    (".5", "", 0.5, ""),
    ("2^-14", "", FP16_MIN_NORMAL, "read 2^-14 = 6.1035e-05"),
    ("2**-14", "", FP16_MIN_NORMAL, "read 2**-14 = 6.1035e-05"),
    ("1/16384", "", FP16_MIN_NORMAL, "read 1/16384 = 6.1035e-05"),
    ("70e9*12/64", "", 70e9 * 12 / 64, "read 70e9*12/64 = 1.3125e+10"),
    ("(8-1)/(8-1+32)", "", 7 / 39, "read (8-1)/(8-1+32) = 0.17949"),
    ("-(2+3)*4", "", -20.0, "read -(2+3)*4 = -20"),
    ("2^3^2", "", 512.0, "read 2^3^2 = 512"),  # right to left, as in maths
    ("-2^2", "", -4.0, "read -2^2 = -4"),
    ("2 × 3 ÷ 4", "", 1.5, "read 2 * 3 / 4 = 1.5"),  # what a keyboard may send
    ("（8－1）／32", "", 7 / 32, "read (8-1)/32 = 0.21875"),  # full-width, a Chinese IME
    ("13.5 GB", "GB", 13.5, ""),
    ("13.5GB", "GB", 13.5, ""),
    ("13500 MB", "GB", 13.5, "read 13500 MB = 13.5 GB"),
    ("13.5e9 B", "GB", 13.5, "read 13.5e9 B = 13.5 GB"),
    ("13.5e9 bytes", "GB", 13.5, "read 13.5e9 bytes = 13.5 GB"),
    ("1 GiB", "GB", 2 ** 30 / 1e9, "read 1 GiB = 1.0737 GB"),  # converted and said, never as 1 GB
    ("2 GB", "bytes", 2e9, "read 2 GB = 2e+09 bytes"),
    ("250 us", "ms", 0.25, "read 250 us = 0.25 ms"),
    ("1.5 s", "ms", 1500.0, "read 1.5 s = 1500 ms"),
    ("12 assignments", "assignments", 12.0, ""),
    ("2.5x", "x", 2.5, ""),
])
def test_each_notation_is_read(text, unit, value, note):
    r = read_text(text, unit)
    assert r.why is None, r.why
    assert r.value == pytest.approx(value, rel=1e-12) and r.note == note


@pytest.mark.parametrize("text, unit, said", [
    ("abc", "", "must be a number, got 'abc'"),
    ("pi/2", "", "uses the name 'pi'"),
    ("x*2", "", "uses the name 'x'"),
    ("abs(-2)", "", "can only be numbers"),
    ("(2).real", "", "can only be numbers"),
    ("__import__('os')", "", "can only be numbers"),
    ("2(3)", "", "can only be numbers"),
    ("7 % 3", "", "an operator other than"),
    ("7 // 3", "", "an operator other than"),
    ("1 << 3", "", "an operator other than"),
    ("0x10", "", "0x10 is not a number in decimal notation"),
    ("1j", "", "plain number, without a unit"),
    ("True", "", "True is not a number in decimal notation"),
    ("'3'", "", "is not a number in decimal notation"),
    ("1,5", "", "a comma groups thousands (3,072); a decimal takes a point (1.5)"),
    ("12,34,567", "", "a comma groups thousands"),
    ("[1, 2]", "", "must be one number, got a list of 2 items"),
    ("1/0", "", "divides by zero"),
    ("0^-1", "", "has no real value"),
    ("(-8)^(1/3)", "", "has no real value"),
    ("1e999", "", "too large to be right"),
    ("1e308*10", "", "too large to be right"),
    ("13.5 GB", "", "this answer is a plain number, without a unit"),
    ("1.5 s", "GB", "= 1.5 s: s is a time, and this answer is a size in bytes; answer in GB"),
    ("13.5 gb", "GB", "'gb' is not a unit this box reads; answer in GB"),
    ("3 ms", "assignments", "this answer is in assignments"),
    ("2 +", "", "must be a number, got '2 +'"),
])
def test_each_refusal_says_why(text, unit, said):
    r = read_text(text, unit)
    assert r.value is None and said in r.why, r.why


HOSTILE = ["9**9**9**9", "10**10**10", "2^2^2^2^2^2^2^2", "9" * 199, "9" * 5000, "1" * 100_000,
           "(" * 100_000, "[" * 100_000, "(" * 99 + "1" + ")" * 99, "-" * 199 + "1",
           "1+" * 99 + "1", "2**" * 66 + "2", "1e308*1e308-1e308*1e308", "(2^1e9)", "2**0.5**-1e9",
           "1/" * 99 + "1", "9" * 100 + "**" + "9" * 95, "0.1" * 60_000, "\x00" * 1000, "٣" * 50]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_text_is_refused_fast_and_small(text):
    """Nothing typed can hang a checker or eat memory: each is answered in well under a
    second, within a few MB (ints would need 10**10 digits for 10**10**10)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    r = read_text(text, "")
    p = parse_value(text)
    v = check_number(text, 3.5)  # none of them reads as 3.5
    q = generate("ring_steps", seed=1).check(text)
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed < 0.5 and peak < 20 * 2 ** 20, (elapsed, peak)
    assert r.value is None or math.isfinite(r.value)
    assert p is None or isinstance(p, (str, float, int, list, tuple, dict, set))
    assert v["ok"] is False and isinstance(v["message"], str) and q in (True, False)
    if len(text.strip()) > MAX_CHARS:
        assert "characters long" in r.why


# --- the tolerance ----------------------------------------------------------------------

def test_tolerances_in_words_never_say_zero_percent():
    assert tolerance_words(0) == "exactly"
    assert tolerance_words(0.01) == "within 1%" and tolerance_words(0.02) == "within 2%"
    assert tolerance_words(0.005) == "within 0.5%" and tolerance_words(0.001) == "within 0.1%"
    assert tolerance_words(1e-6) == "within 0.0001%"
    assert "rounded correctly to the digits typed, at least 2" in tolerance_words(0, digits=2)
    assert check_number("25％", 0.25, share=True)["ok"]  # a full-width percent sign
    v = check_number("0.5", 0.4999, rel_tol=0.001)
    assert "within 0.1%" in v["message"] and "0%)" not in v["message"]


@pytest.mark.parametrize("typed, ok", [
    # want 9.96: rounded to 2 digits is "10" (9.9 is not), to 3 "9.96" or "10.0"
    ("10", True), ("9.9", False), ("9.96", True), ("10.0", True), ("9.95", False),
    ("9.960", True), ("9.961", False),
    ("1e1", True),  # 1 digit typed, judged as 2 (1.0e1): 9.96 rounds to 10
    ("8", False),   # judged as 8.0
])
def test_the_digits_rule(typed, ok):
    assert check_number(typed, 9.96, digits=2)["ok"] is ok, check_number(typed, 9.96, digits=2)


def test_the_digits_rule_counts_at_least_the_minimum_and_at_most_six():
    # digits=4: "6.1e-5" (2 typed) is judged as 6.100e-5, which 6.1035e-5 does not round to
    assert not check_number("6.1e-5", FP16_MIN_NORMAL, digits=4)["ok"]
    assert check_number("6.104e-5", FP16_MIN_NORMAL, digits=4)["ok"]
    assert check_number("6.1e-5", FP16_MIN_NORMAL, digits=3)["ok"]  # 6.1035 rounds to 6.10
    # a number from code (its repr's digits) and an exact formula: judged to 6 digits
    assert check_number(FP16_MIN_NORMAL * (1 + 1e-7), FP16_MIN_NORMAL, digits=2)["ok"]
    assert not check_number(FP16_MIN_NORMAL * (1 + 1e-5), FP16_MIN_NORMAL, digits=2)["ok"]
    assert not check_number("1/16385", FP16_MIN_NORMAL, digits=2)["ok"]  # exact: 6.1031e-05
    with pytest.raises(ValueError, match="digits=2"):
        check_number("1", 0.5, digits=2, share=True)


# --- notebook 07: fp16's smallest normal, end to end ----------------------------------------

@pytest.mark.parametrize("typed", ["6.1e-5", "6.104e-5", "2^-14", "2**-14", "1/16384", "6.1035e-05",
                                   "0.000061", "6.10e-5", " 6.1E-5 ", 6.1e-5, 2 ** -14])
def test_fp16_smallest_normal_accepts_what_a_learner_reads_or_computes(typed):
    v = ex_prec.check_fp16_smallest_normal(typed)
    assert v["ok"], v["message"]
    assert "within 0%" not in v["message"] and "factor 1 " not in v["message"]
    if isinstance(typed, str) and any(op in typed for op in "^*/"):
        assert v["detail"].startswith(f"read {typed} = 6.1035e-05"), v["detail"]


@pytest.mark.parametrize("typed, said", [
    # 6e-5 carries one digit and is judged as 6.0e-5; 6.1035e-5 rounds to 6.1e-5, not 6.0 or 6.2
    ("6e-5", "6e-05 is off by a factor 0.983: too low"),
    ("6.2e-5", "6.2e-05 is off by a factor 1.02: too high"),
    ("6.103e-5", "6.103e-05 is 0.0084% too low"),  # 6.1035 rounds to 6.104
    ("2^-24", "read 2^-24 = 5.9605e-08. 5.96046e-08 is off by a factor 0.000977: too low"),
    ("2^-15", "off by a factor 0.5: too low"),
])
def test_fp16_smallest_normal_refuses_with_a_clear_message(typed, said):
    v = ex_prec.check_fp16_smallest_normal(typed)
    assert not v["ok"] and said in v["message"], v["message"]
    assert "rounded correctly to the digits typed, at least 2 significant" in v["message"]


def test_the_answer_box_hands_the_text_to_the_checker():
    box = answer_box(ex_prec.check_fp16_smallest_normal)
    text, button = box.children[0].children[0], box.children[0].children[1]
    out = box.children[1]
    text.value = "2^-14"
    button.click()
    assert "Correct. read 2^-14 = 6.1035e-05" in out.value, out.value
    text.value = "13.5 GB"
    button.click()
    assert "Not yet" in out.value and "plain number, without a unit" in out.value, out.value
    got = []
    box = answer_box(lambda a, b: got.append((a, b)) or check_number(a, 1.0),
                     fields=("a", "b"))
    box.children[0].children[0].value = "[(0, 1)]"
    box.children[0].children[1].value = " 2^-14 "
    box.children[0].children[2].click()
    assert got[-1] == ([(0, 1)], "2^-14")  # a list as its value, a number as its text


# --- every checker and drill: the answer as a notebook shows it is right -------------------

def test_every_drill_accepts_its_answer_as_shown_and_formulas():
    for t in templates():
        for seed in range(25):
            q = generate(t, seed=seed)
            shown = q.answer_text
            assert q.check(shown), (t, seed, shown, q.verdict(shown)["message"])
            assert "within 0%" not in q.explanation and "within 0%" not in q.tolerance_text
            if q.digits:  # judged by the digits typed: 1% off at 4 digits is wrong
                assert not q.check(f"{q.answer * 1.01:.4g}"), (t, seed)
    q = generate("unit_roundoff", seed=0)  # a power of two, typed as one
    exponent = round(-math.log2(q.answer))
    v = q.verdict(f"2^-{exponent}")
    assert v["ok"] and v["detail"].startswith(f"read 2^-{exponent} = "), v
    q = generate("ring_all_reduce_bytes", seed=2)  # 7.75 GB
    assert q.check("7750 MB") and q.check("7.75e9 B") and q.check("2*31/32*4")
    assert not q.check("7.75 MB") and not q.check("7.75 s")
    assert q.verdict("7.75 s").get("unreadable")


def test_no_checker_is_tighter_than_four_significant_digits():
    """A non-integer answer shown to 4 significant digits (as the notebooks' tables and
    fmt show them) is accepted by every one-answer numeric checker."""
    import importlib
    import pkgutil

    import lessons
    seen = 0
    for info in pkgutil.walk_packages(lessons.__path__, "lessons."):
        if not info.name.rsplit(".", 1)[1].startswith("exercises"):
            continue
        mod = importlib.import_module(info.name)
        for name, f in sorted(vars(mod).items()):
            if not (name.startswith("check_") and inspect.isfunction(f)
                    and f.__module__ == mod.__name__):
                continue
            params = list(inspect.signature(f).parameters.values())
            if params[0].name in ("fn", "forward") or any(
                    p.default is inspect.Parameter.empty for p in params[1:]):
                continue
            v = f("1")
            want = v.get("want")
            if not isinstance(want, float) or want.is_integer() or "did_you_mean" in v:
                continue
            typed = f"{want:.4g}"
            v = f(typed)
            if v.get("did_you_mean"):  # a share: type it as the question asks
                continue
            assert v["ok"], (info.name, name, typed, v["message"])
            seen += 1
    assert seen >= 8
