"""The lab opens ready: importing parlab in a notebook's kernel starts the fork server.

A cold first launch pays for the fork server importing torch (and torch._dynamo,
processes.PRELOAD): seconds, most of a first launch's wait. A learner reads for a
while between the import cell and the first launch cell, so when ``parlab`` is
imported in a Jupyter/IPython kernel we start the fork server then. Only its spawn
happens during the import (a fork+exec, ~5-20 ms); the server imports torch in its
own process, beside the kernel, and the first launch forks its ranks from it.

- Nothing runs twice. This is multiprocessing's own ``ensure_running``, the call
  every rank start makes, under the same lock: a launch that comes while the server
  still imports torch queues its fork requests on the server's socket and waits for
  them, as a cold launch does; it never starts a second server.
- No orphans. The fork server exits when the kernel does (it watches a pipe only the
  kernel holds, even after ``kill -9``; a server still importing torch notices when
  it has finished), as it did when the first launch started it.
- Memory. It is the fork server the first launch would start (~250 MB of the
  budget, budget.py); it is counted in the session's memory from then on.
- Where. In a kernel only (``get_ipython().kernel`` exists): not in scripts, tests,
  the CLI, under torchrun or in a rank. ``PARLAB_PREWARM=0`` turns it off,
  ``PARLAB_PREWARM=1`` turns it on anywhere else (bench/launcher.py, the tests).
"""

from __future__ import annotations

import os
import sys

from .torchrun import launcher_env_present

OFF = ("0", "off", "false", "no")
ON = ("1", "on", "true", "yes")


def in_kernel() -> bool:
    """Whether this process is a Jupyter/IPython kernel (ipykernel, nbval, VS Code)."""
    if "ipykernel" not in sys.modules:
        return False
    get_ipython = getattr(sys.modules.get("IPython"), "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    return getattr(shell, "kernel", None) is not None


def wanted() -> bool:
    flag = os.environ.get("PARLAB_PREWARM", "auto").strip().lower()
    if flag in OFF or launcher_env_present():  # torchrun's, or stray
        return False
    import multiprocessing
    # a rank, or any process multiprocessing starts (it imports parlab while it
    # unpickles its target, before parent_process() is set)
    if (multiprocessing.parent_process() is not None
            or getattr(multiprocessing.current_process(), "_inheriting", False)):
        return False
    return flag in ON or in_kernel()


def start() -> int | None:
    """Start the fork server now if it is wanted and not running; its pid, or None."""
    from .processes import fork_server_pid, mp_context, note_cache_dir, start_fork_server
    if not wanted():
        return None
    ctx = mp_context()  # sets the preload list
    if ctx.get_start_method() != "forkserver":
        return None
    note_cache_dir()  # the server's import of torch._dynamo may create it: pool.py removes it
    try:
        start_fork_server(ctx)  # (as pool.py does: it must not re-run the caller's script)
    except OSError as e:  # no worse than before: the first launch starts it, or says why
        print(f"[parlab] could not start the fork server early ({e}); the first launch "
              "will", file=sys.stderr, flush=True)
        return None
    return fork_server_pid(ctx)
