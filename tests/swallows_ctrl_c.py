"""A module whose import swallows a Ctrl-C, as torch's does when one lands while its
C++ code imports numpy (it clears the error). Imported only by
tests/parlab/launch/test_launch_interrupts.py."""
import os
import signal
import time

try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)  # the handler runs here and raises KeyboardInterrupt
except BaseException:  # noqa: BLE001 - what C's PyErr_Clear does to it
    pass
WHOLE = True
