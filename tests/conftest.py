import os
import subprocess
import sys

# the learner's record (lessons.common.record) stays out of the tests, and out of the kernels
# and servers they start (they inherit this); tests of the record name a file of their own
os.environ["PARLAB_RECORD"] = "off"

import pytest

import parlab


def pytest_sessionfinish(session, exitstatus):
    parlab.shutdown()


@pytest.fixture
def cpu_hogs():
    """Two busy-looping processes beside the test, as on a machine another job is using:
    a lesson drawn from a timing must still hold with them running (tests/test_*_load.py).
    They are killed when the test ends, however it ends. The ranks earlier tests left waiting
    in pools of other sizes are stopped first: the lesson's machine is the hogs and its own
    ranks. Left alive, they slowed notebook 06's 8-rank sweep although they idle (1-2 ticks of
    CPU in 5 s): after test_3d_experiments.py's 4- and 2-rank pools, DP = 8 took 215-260 ms a
    step against 124-153 ms without them and ordered behind PP = 8 (2026-12-06)."""
    parlab.shutdown()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield hogs
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()
