"""A real failure under torchrun: a rank SIGKILLs itself, torchrun restarts the group, the
workers resume from the last DCP checkpoint and the losses equal an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from lessons.__main__ import main as lessons_main
from lessons.l08_checkpoints_and_failures import failover as failover_module
from lessons.l08_checkpoints_and_failures import lifeline
from lessons.l08_checkpoints_and_failures.failover import (_traceback, attempts, check, failover,
                                                           time_limit)

LIB = os.path.join(os.path.dirname(__file__), "..", "..", "..", "lib")


def run_processes(tmp: str) -> list[int]:
    """The live processes of any failover run whose directory is under ``tmp``: each
    carries lifeline.MARK (guard, torchrun, workers, whatever their session)."""
    want = f"{lifeline.MARK}={tmp}".encode()
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if any(v.startswith(want) for v in f.read().split(b"\0")):
                    found.append(int(name))
        except OSError:
            pass
    return [p for p in found if lifeline.alive(p)]


def leftovers(tmp: str) -> list[str]:
    """What the run left in the temp folder (torch's compile cache, which the caller's own
    one-device reference may create and every torch user shares, is not the run's)."""
    return sorted(n for n in os.listdir(tmp) if not n.startswith("torchinductor_"))


def wait_until(cond, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_kill_restart_resume_equals_the_uninterrupted_run(tmp_path, monkeypatch):
    # this test's temp folder, for this process and (unless failover points them elsewhere)
    # for torchrun and its workers
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    r = failover(ranks=2, steps=6, kill_at=3, every=2)
    assert r["resumed_from"] == 2 and r["redone_steps"] == 1
    assert r["max_loss_diff"] < 1e-5
    assert r["lost_seconds"] > 0
    # the run's directory and torchrun's torchelastic_* logs are gone, and so is every process
    assert leftovers(str(tmp_path)) == [] and run_processes(str(tmp_path)) == []


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the run's processes in /proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "caller-killed"])
def test_an_interrupted_or_killed_caller_leaves_no_process_and_no_file(tmp_path, sig):
    # the CLI as a user runs it, under its own temp folder, in a session of its own (a
    # Ctrl-C reaches the caller alone, as from a terminal or Jupyter's interrupt)
    tmp = str(tmp_path)
    env = dict(os.environ, TMPDIR=tmp, PYTHONPATH=os.pathsep.join([LIB, os.environ.get("PYTHONPATH", "")]))
    caller = subprocess.Popen([sys.executable, "-m", "lessons", "failover", "--steps", "40"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, start_new_session=True)
    try:
        def training():  # mid-run: rank 0 has logged a step
            return any(os.path.exists(os.path.join(tmp, d, "run", "log.txt"))
                       for d in os.listdir(tmp) if d.startswith("parlab_failover_"))
        assert wait_until(training, 60), "the run never started training"
        caller.send_signal(sig)
        out, _ = caller.communicate(timeout=30)
        if sig == signal.SIGINT:  # the caller itself ended them all before it returned
            assert (run_processes(tmp), leftovers(tmp)) == ([], []), out[-2000:]
        # within a few seconds: no worker, no torchrun, no guard; no directory
        gone = wait_until(lambda: not run_processes(tmp) and not leftovers(tmp), 10)
        assert gone, (run_processes(tmp), leftovers(tmp), out[-2000:])
        if sig == signal.SIGINT:
            assert caller.returncode == 1 and "Traceback" not in out, out[-2000:]
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait()
        lifeline.end_run(tmp, keep=True)  # never leave a failed test's processes behind
        for pid in run_processes(tmp):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the run's processes in /proc")
def test_the_time_limit_ends_every_process_and_removes_the_files(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(failover_module, "check", lambda *a: 4.0)  # torchrun barely started
    with pytest.raises(failover_module.FailoverError, match="after timeout=4 s; killed"):
        failover(ranks=2, steps=6, kill_at=3, every=2)
    assert (run_processes(str(tmp_path)), leftovers(str(tmp_path))) == ([], [])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_dies_with_its_parent():
    # a parent (as torchrun) starts a child that asks to die with it, then is SIGKILLed
    child = ("import sys, time; sys.path.insert(0, sys.argv[1]);"
             "from lessons.l08_checkpoints_and_failures import lifeline;"
             "lifeline.die_with_parent(); print('ready', flush=True); time.sleep(60)")
    parent = ("import subprocess, sys;"
              f"c = subprocess.Popen([sys.executable, '-c', {child!r}, sys.argv[1]],"
              " stdout=subprocess.PIPE, text=True, start_new_session=True);"
              "c.stdout.readline(); print(c.pid, flush=True); c.wait()")
    p = subprocess.Popen([sys.executable, "-c", parent, LIB], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(p.stdout.readline())
        p.kill()
        p.wait()
        assert wait_until(lambda: not lifeline.alive(pid), 5), "the child outlived its parent"
    finally:
        p.kill()
        if "pid" in locals() and lifeline.alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_end_run_removes_the_directory_unless_kept(tmp_path):
    for keep in (True, False):
        root = tmp_path / f"run_{keep}"
        (root / "tmp" / "torchelastic_x").mkdir(parents=True)
        assert lifeline.end_run(str(root), keep=keep) == []
        assert root.exists() == keep


@pytest.mark.parametrize("kw, match", [
    (dict(ranks=3), "ranks=3"), (dict(ranks=8), "ranks=8"), (dict(kill_at=8), "kill_at=8"),
    (dict(every=0), "every=0"), (dict(every=9), "every=9"), (dict(steps=1), "steps=1"),
    (dict(timeout=0), "timeout"), (dict(timeout=float("nan")), "timeout"),
    (dict(timeout=5), "timeout=5 is too short"), (dict(keep="yes"), "keep"),
    (dict(steps=200, ranks=4, every=1, timeout=30), "timeout=30 is too short"),
])
def test_bad_settings_are_named_before_torchrun_starts(kw, match):
    args = dict(ranks=2, steps=8, kill_at=5, every=2, timeout=60)
    with pytest.raises(ValueError, match=match):
        check(**{**args, **kw})


def test_the_time_limit_is_sized_to_the_work():
    small, big = time_limit(2, 8, 5, 2), time_limit(4, 200, 5, 1)
    assert check(2, 8, 5, 2) == small and check(4, 200, 5, 1) == big
    # the run that met a fixed 60 s limit (about 2 min on a busy 2-core box) gets three
    # minutes or more (five on two cores); a short run keeps a short limit
    assert big >= 180 and big > 2 * small and check(2, 8, 5, 2, timeout=45) == 45


def test_the_cli_refuses_in_one_line_before_torchrun(monkeypatch, capsys):
    def no_run(*a, **k):
        raise AssertionError("torchrun started before the flags were refused")
    monkeypatch.setattr(failover_module, "_run", no_run)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    for argv, flag in [(["--steps", "200", "--ranks", "4", "--every", "1", "--timeout", "30"],
                        "--timeout 30.0: "), (["--kill-at", "9"], "--kill-at 9: "),
                       (["--ranks", "3"], "--ranks 3: ")]:
        with pytest.raises(SystemExit) as e:
            lessons_main(["failover", *argv])
        assert str(e.value).startswith("error: " + flag) and "\n" not in str(e.value), e.value


def test_attempts_split_by_the_log_order_not_the_kill_time():
    # rank 0 logged step 4 just after rank 1's kill (a race seen once): still the first attempt
    rows = [(s, 0.0, float(s), 0) for s in range(5)] + [(s, 0.0, 10.0 + s, 4) for s in range(4, 8)]
    first, again = attempts(rows)
    assert [r[0] for r in first] == [0, 1, 2, 3, 4] and again[0][3] == 4
    no_ckpt = [(s, 0.0, float(s), 0) for s in range(3)] + [(s, 0.0, 9.0 + s, 0) for s in range(5)]
    first, again = attempts(no_ckpt)
    assert len(first) == 3 and [r[0] for r in again] == list(range(5))


def test_the_error_carries_the_workers_report_not_torchruns():
    out = ("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"w.py\", line 3\n"
           "[rank1]: RuntimeError: Connection reset by peer\n"
           "Traceback (most recent call last):\n  File \"run.py\"\nChildFailedError: \n")
    assert _traceback(out).splitlines()[2] == "[rank1]: RuntimeError: Connection reset by peer"
    crash = "W1202 closing signal\nterminate called without an active exception\nFatal Python error: Aborted\n"
    assert _traceback(crash).startswith("terminate called")
    assert _traceback("a\nb\nc", lines=2) == "b\nc"
