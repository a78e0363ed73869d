"""What ties ``failover``'s processes to the one that called it, so that none outlives it.

torchrun starts each worker in a session of its own, so no process-group kill reaches
them: killing the caller, or torchrun, or their groups, left workers training on (or the
whole job running to completion) and the run's directories behind. Three ties, on Linux:

  * every process of a run carries ``MARK`` = the run's private directory in its
    environment, so ``members(root)`` finds them all in /proc, whatever their session;
  * ``die_with_parent()``: a worker asks the kernel for SIGKILL when torchrun (its parent)
    dies (PR_SET_PDEATHSIG), and torchrun asks the same of the guard below;
  * the guard, ``python -m lessons.l08_checkpoints_and_failures.lifeline ROOT KEEP --
    torchrun ...``: the caller's one child, in a session of its own (so a Ctrl-C or a kill
    of the caller's group does not reach it), runs torchrun and watches the caller. When
    the caller is gone (killed, even by SIGKILL) it ends every process of the run and
    removes ``ROOT`` (unless KEEP is 1): no one else is left to do it.

The caller itself, on Ctrl-C or its timeout, does the same with ``end_run``. torchrun's
own ``torchelastic_*`` logs go under ``ROOT/tmp`` (TMPDIR), so removing ``ROOT`` removes
them. The standard library and parlab's launcher (no torch): the guard starts in a few
tens of milliseconds.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

from parlab.launch import rank
from parlab.launch.rank import alive  # a zombie counts as dead

MARK = "PARLAB_FAILOVER_RUN"  # every process of a run: its private directory
CALLER = "PARLAB_FAILOVER_CALLER"  # the guard's: the pid of the process that called failover
def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux; elsewhere nothing: the guard and
    end_run still end this process). The launcher's ranks use the same tie."""
    rank.die_with_parent(os.getppid())


def members(root: str) -> list[int]:
    """The pids of the live processes whose environment has ``MARK=root`` (Linux /proc;
    elsewhere none), this process excluded."""
    want = f"{MARK}={root}".encode()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if want in f.read().split(b"\0") and alive(int(name)):
                    found.append(int(name))
        except OSError:
            pass  # gone meanwhile, or not ours to read
    return found


def end_run(root: str, keep: bool, also: tuple[int, ...] = (), wait: float = 5.0) -> list[int]:
    """SIGKILL the pids in ``also`` and every process of the run at ``root``, wait (up to
    ``wait`` s) until none is left, then remove ``root`` unless ``keep``. Returns the pids
    still alive after the wait (none, unless the kernel is very slow)."""
    deadline = time.monotonic() + wait
    left = [p for p in also if alive(p)]
    while True:
        # a worker torchrun started just now carries the mark too: look again each round
        left = sorted(set(left + members(root)))
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        left = [p for p in left if alive(p)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not keep:
        # the processes that wrote here are gone, so nothing recreates what this removes
        shutil.rmtree(root, ignore_errors=True)
    return left


def guard(root: str, keep: bool, cmd: list[str], poll: float = 0.1) -> int:
    """Run ``cmd`` (torchrun) and return its exit status; if the caller (this process's
    parent, whose pid is in CALLER) dies first, end the run and remove ``root``."""
    caller = int(os.environ[CALLER])
    proc = subprocess.Popen(cmd, preexec_fn=die_with_parent)  # torchrun dies with the guard
    while True:
        try:
            return proc.wait(timeout=poll)
        except subprocess.TimeoutExpired:
            pass
        # reparented (getppid changes) or a zombie awaiting its own parent: gone either way
        if os.getppid() != caller or not alive(caller):
            end_run(root, keep, also=(proc.pid,))
            return 1


if __name__ == "__main__":
    # lifeline.py ROOT KEEP -- CMD...
    sys.exit(guard(sys.argv[1], sys.argv[2] == "1", sys.argv[4:]))
