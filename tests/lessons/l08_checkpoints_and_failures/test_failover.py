"""A real failure under torchrun: a rank SIGKILLs itself, torchrun restarts the group, the
workers resume from the last DCP checkpoint and the losses equal an uninterrupted run."""

from __future__ import annotations

import pytest

from lessons.l08_checkpoints_and_failures.failover import _traceback, attempts, check, failover


def test_kill_restart_resume_equals_the_uninterrupted_run():
    r = failover(ranks=2, steps=6, kill_at=3, every=2, timeout=90)
    assert r["resumed_from"] == 2 and r["redone_steps"] == 1
    assert r["max_loss_diff"] < 1e-5
    assert r["lost_seconds"] > 0


@pytest.mark.parametrize("kw, match", [
    (dict(ranks=3), "ranks=3"), (dict(kill_at=8), "kill_at"), (dict(every=0), "every"),
    (dict(timeout=0), "timeout"),
])
def test_bad_settings_are_named_before_torchrun_starts(kw, match):
    args = dict(ranks=2, steps=8, kill_at=5, every=2, timeout=60)
    with pytest.raises(ValueError, match=match):
        check(**{**args, **kw})


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
