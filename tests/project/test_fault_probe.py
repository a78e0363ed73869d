"""tools/fault_probe.py keeps working: its classifier sorts faults of known outcome
(a case that hangs, one that leaves a process in another session or a temp dir behind,
one that kills its own process, clear and deep errors, wrong results, lost data) into
the right outcome, and two real cases are handled. The whole catalogue's outcomes are
what the probe measures, before and after fixes (a person's run: about 10-20 minutes)."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("fault_probe", os.path.join(ROOT, "tools", "fault_probe.py"))
P = importlib.util.module_from_spec(spec)
sys.modules["fault_probe"] = P
spec.loader.exec_module(P)


def test_classifier_precedence():
    c = P.classify
    assert c({"result": "correct"}) == "handled"
    assert c({"result": "correct"}, timed_out=True) == "hang"
    assert c({"stuck": True, "result": "wrong"}) == "hang"
    assert c(None) == "crash"
    assert c({"crashed": True}) == "crash"
    assert c({"result": "lost"}, procs=[(1, "x")]) == "data-loss"
    assert c({"result": "wrong"}, files=["x"]) == "silent-wrong"
    assert c({"raised": "KeyError", "clear": False}, files=["x"]) == "wrong-exception"
    assert c({"raised": "ValueError", "clear": True}) == "handled"
    assert c({"raised": "ValueError", "clear": True}, procs=[(1, "x")]) == "leak"
    assert c({"result": "correct"}, files=["pymp-x"]) == "leak"


def test_judge_error():
    from parlab.launch import LaunchError
    assert P.judge_error(ValueError("steps=0: must be >= 1"), ("steps",))["clear"]
    assert not P.judge_error(ValueError("bad value"), ("steps",))["clear"]  # does not name it
    assert not P.judge_error(KeyError("steps"), ("steps",))["clear"]
    assert P.judge_error(RuntimeError("RANK=0 is set: not under torchrun"), ("RANK",))["clear"]
    remote = LaunchError("rank 1 raised during f\n--- traceback from rank 1 ---\nTraceback (most "
                         "recent call last):\n  File \"x\"\nValueError: checkpoint step_00004: bad\n")
    assert not P.judge_error(remote, ("checkpoint",))["clear"]  # a named error was due before
    assert P.judge_error(remote, ("checkpoint",), ranks_ok=True)["clear"]
    deep = LaunchError("rank 0 raised\n--- traceback from rank 0 ---\nTraceback (most recent call "
                       "last):\nRuntimeError: PytorchStreamReader failed reading checkpoint\n")
    assert not P.judge_error(deep, ("checkpoint",), ranks_ok=True)["clear"]  # a library's own
    assert not P.judge_error(ValueError("x"), ("x",), ranks=True)["clear"]  # after ranks started
    assert P.names("WORLD_SIZE=2 is set", ("WORLD_SIZE",)) and not P.names("rank 1", ("RANK",))


@pytest.fixture(scope="module")
def selftests():
    return {c.name.split(" ", 1)[1]: c for c in P._selftest()}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name, outcome", [
    ("hang", "hang"), ("leak child", "leak"), ("leak file", "leak"), ("crash", "crash"),
    ("clear error", "handled"), ("deep error", "wrong-exception"),
    ("error in ranks", "wrong-exception"), ("silent wrong", "silent-wrong"),
    ("data loss", "data-loss"), ("escaped exception", "wrong-exception"), ("ok", "handled"),
    ("sigint", "handled")])
def test_planted_faults_are_sorted_right(tmp_path, selftests, name, outcome):
    import signal
    # started as from a background shell (SIGINT ignored): the cases must still get Ctrl-C
    was = signal.signal(signal.SIGINT, signal.SIG_IGN) if name == "sigint" else None
    try:
        row = P.run_case(selftests[name], str(tmp_path), grace=1.0, timeout=3 if name == "hang" else 20)
    finally:
        if was is not None:
            signal.signal(signal.SIGINT, was)
    assert row["outcome"] == outcome, row
    if name == "leak child":  # it was in a session of its own; found by its tag, then ended
        assert row["procs"] == 1
    assert os.listdir(tmp_path) == []  # the case's dirs are removed


def test_catalogue_shape():
    cases = P.catalogue()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)) and 100 <= len(cases) <= 300
    assert {c.category for c in cases} == {"checkpoint", "launch", "failover", "input"}
    assert 20 <= sum(c.quick for c in cases) <= 60


@pytest.mark.timeout(90)
def test_two_real_cases_run_and_stay_fixed(tmp_path):
    """A failover flag check and a checker with a huge integer (wrong-exception before
    issue 35's fixes), end to end: both handled (the unit tests keep every other case
    fixed; the whole catalogue is a person's run)."""
    by_name = {c.name: c for c in P.catalogue()}
    for name in ("failover --ranks 3", "checker l08_checkpoints_and_failures.check_young_interval(2**20000)"):
        row = P.run_case(by_name[name], str(tmp_path), grace=2.0)
        assert row["outcome"] == "handled", row
