"""A real failure under torchrun: a rank SIGKILLs itself, torchrun restarts the group, the
workers resume from the last DCP checkpoint and the losses equal an uninterrupted run."""

from __future__ import annotations

import pytest

from parlab.reliability.failover import check, failover


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
