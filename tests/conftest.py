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
    They are killed when the test ends, however it ends."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield hogs
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()
