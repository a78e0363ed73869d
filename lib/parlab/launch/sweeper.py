"""A watcher that removes a pool's temporary directories if its caller is killed.

A caller killed with its whole process group (as Jupyter does to a busy kernel:
SIGTERM, then SIGKILL, to the group) takes its ranks and its fork server with it, and
nobody is left to remove the rendezvous directory (``parlab-rdzv-*``) or
multiprocessing's (``pymp-*``). ``sweep_stale_dirs`` removes them at the next launch;
this watcher removes them at once. It is the pool's one extra process: started in a
session of its own (so no signal to the caller's group reaches it), it blocks reading
a pipe whose only writer is the caller. On ``Pool.close`` the caller writes ``STOP``
and the watcher exits; at end-of-file without it, the caller has died, and the watcher
waits until it is gone and sweeps every directory whose owner is gone.
Standard library and parlab's launcher only (no torch): it starts in tens of ms.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

STOP = b"s"  # the caller closed its pool: nothing to sweep
GONE_WAIT = 5.0  # seconds for a dying caller to be gone (its files close first)


def start() -> tuple[subprocess.Popen, int] | None:
    """Start the watcher for this process; (its Popen, the pipe's write end), or None
    where it cannot run (not Linux, or no way to start a process: the next launch's
    sweep still removes what is left)."""
    if not sys.platform.startswith("linux"):
        return None
    lib = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [lib] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    r, w = os.pipe()  # both ends non-inheritable: ranks and later children never hold w
    try:
        proc = subprocess.Popen([sys.executable, "-m", "parlab.launch.sweeper", str(os.getpid())],
                                stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    except OSError:
        os.close(w)
        return None
    finally:
        os.close(r)
    return proc, w


def stop(watcher: tuple[subprocess.Popen, int] | None, wait: float = 2.0) -> None:
    """Tell the watcher the pool closed normally, and reap it."""
    if watcher is None:
        return
    proc, w = watcher
    try:
        os.write(w, STOP)
    except OSError:
        pass
    finally:
        try:
            os.close(w)
        except OSError:
            pass
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main(caller: int) -> None:
    got = b""
    while True:
        try:
            chunk = os.read(0, 64)
        except InterruptedError:
            continue
        if not chunk:
            break
        got += chunk
    if STOP in got:
        return
    from .processes import sweep_stale_dirs
    from .rank import alive
    end = time.monotonic() + GONE_WAIT
    while alive(caller) and time.monotonic() < end:
        time.sleep(0.02)
    sweep_until_settled(sweep_stale_dirs)


def sweep_until_settled(sweep, settle: float = GONE_WAIT) -> None:
    """Sweep, and sweep again while a directory just swept is still there.

    The caller is gone, but its ranks die a moment later (with the fork server), and
    one waiting at its rendezvous re-creates the store file as it polls: created
    between rmtree's unlinks and its rmdir, it keeps the directory. Once the ranks are
    gone a sweep removes it; ``settle`` seconds bound the wait."""
    end = time.monotonic() + settle
    removed = sweep()
    while any(os.path.lexists(p) for p in removed) and time.monotonic() < end:
        time.sleep(0.05)
        removed = sweep()


if __name__ == "__main__":
    main(int(sys.argv[1]))
