"""Process plumbing for the pool: how ranks are started, and how a pool is torn down
so that an interrupt cannot leave half of it behind."""

from __future__ import annotations

import os
import signal
import sys
import threading
import types
from contextlib import contextmanager


# What the fork server imports for every rank. A rank's first optimizer imports
# torch._dynamo (about 800 modules: fx, sympy, ...): ~90 MB and seconds of CPU that
# each rank would pay again. Imported here once, the ranks share those pages.
PRELOAD = ("torch", "torch.distributed", "torch._dynamo", "torch.distributed.fsdp",
           "torch.distributed.pipelining")


def mp_context():
    import multiprocessing as mp
    method = os.environ.get("PARLAB_START_METHOD")
    if method is None:
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        # The fork server imports torch once; ranks forked from it start in ~0.1 s.
        # Nothing threaded has run in it, so forking is safe for OpenMP. parlab itself
        # is not preloaded, so edited sources are picked up by new ranks.
        ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def fork_server_pid(ctx) -> int | None:
    """The pid of the fork server that ``ctx`` forks processes from now (None under
    spawn, or if multiprocessing keeps it elsewhere than CPython 3.8-3.13 do)."""
    if ctx.get_start_method() != "forkserver":
        return None
    from multiprocessing import forkserver
    return getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)


_early_cache_dir: list[str] = []  # torch's cache dir, when it was absent as prewarm started


def torch_cache_dir() -> str:
    path = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if path is None:
        import getpass
        import tempfile
        try:
            user = getpass.getuser()
        except (KeyError, OSError, ImportError):
            user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
        path = os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")
    return path


def _rmdir_if_empty(path: str) -> None:
    try:
        os.rmdir(path)  # only when empty
    except OSError:
        pass


def note_cache_dir() -> None:
    """The fork server is being started early (prewarm.py): if torch's cache directory
    does not exist yet, the server's preload may make it while no pool is starting;
    the first pool (or this process's exit, if none starts) removes it when empty."""
    path = torch_cache_dir()
    if not os.path.exists(path) and path not in _early_cache_dir:
        _early_cache_dir.append(path)
        import atexit
        atexit.register(_rmdir_if_empty, path)


@contextmanager
def no_torch_cache_dir_left():
    """Importing torch._dynamo (PRELOAD) creates torch's compile cache directory in the
    temp dir. Remove it again if starting ranks created it and left it empty, so that
    the launcher leaves no files behind; torch makes it again when something compiles."""
    path = torch_cache_dir()
    existed = os.path.exists(path) and path not in _early_cache_dir
    _early_cache_dir.clear()
    try:
        yield
    finally:
        if not existed:
            _rmdir_if_empty(path)


@contextmanager
def bare_main():
    """Hide the caller's __main__ while starting ranks.

    multiprocessing would otherwise re-run the caller's script (or ``python -m``
    module) in every rank, which breaks scripts without an ``if __name__ ==
    "__main__"`` guard and costs time for everyone. A function defined in a script
    is loaded by path only when a job needs it (rank.py, ``_load_main``).
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def every_step(*steps) -> None:
    """Run every step even if one raises; then raise the first exception."""
    first = None
    for step in steps:
        try:
            step()
        except BaseException as e:
            first = first or e
    if first is not None:
        raise first


@contextmanager
def ctrl_c_deferred():
    """Hold a SIGINT back until the block has finished, then deliver it.

    Only the main thread runs Python signal handlers, so only there can a Ctrl-C
    land inside the block; a handler installed from C (getsignal gives None) is left
    alone because it could not be put back.
    """
    caught = []
    previous = None
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is not None):
        previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
            if caught and callable(previous):
                previous(signal.SIGINT, caught[0])
            elif caught:
                signal.raise_signal(signal.SIGINT)


def import_holding_ctrl_c(name: str) -> None:
    """Import module ``name`` with a Ctrl-C held back until the import is done, then
    raised. For torch, which the caller's first launch imports (to pick a backend):
    torch imports numpy from C++ and clears any error there, so a Ctrl-C landing in
    that window was swallowed. The launch then ran on as if nobody had asked, and torch
    was left without numpy for the rest of the session."""
    if name in sys.modules:
        return
    import importlib
    with ctrl_c_deferred():
        importlib.import_module(name)


# ------------------------------------------------------------------------------
# nothing left behind: interrupts, killed callers, stale directories
# ------------------------------------------------------------------------------

def pause_at(phase: str) -> None:
    """A test hook: with PARLAB_PAUSE_AT=<phase> the launcher says so on stderr and
    waits there, so that a test's signal lands in that phase and no other (the
    interrupt tests). Phases: fork-request (pause_in_fork_request), cold-start (the
    fork server is importing torch, no fork asked yet),
    rendezvous (rank 0 is up and waits for its peers), running (the job was sent),
    collecting (every rank has replied)."""
    if os.environ.get("PARLAB_PAUSE_AT") == phase:
        import time
        print(f"[parlab] PAUSED AT {phase}", file=sys.stderr, flush=True)
        time.sleep(float(os.environ.get("PARLAB_PAUSE_S", "60")))


def pause_in_fork_request() -> None:
    """The test hook for the phase a Ctrl-C used to leak from (PARLAB_PAUSE_AT=
    fork-request): rank 0's fork request sent to a fork server still importing torch,
    the caller blocked reading the pid it will answer. Called just before that start;
    a thread says so once the main thread blocks in that read (Linux /proc)."""
    if os.environ.get("PARLAB_PAUSE_AT") != "fork-request":
        return
    import time
    tid = threading.main_thread().native_id

    def announce():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/self/task/{tid}/wchan") as f:
                    if "pipe_read" in f.read():
                        break
            except OSError:
                return
            time.sleep(0.005)
        print("[parlab] PAUSED AT fork-request", file=sys.stderr, flush=True)

    threading.Thread(target=announce, daemon=True).start()


def process_start(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot, from /proc), to tell it from a later
    process given the same pid; None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_tag() -> str:
    """This process, as the owner of a temporary directory: "<pid>-<start time>"."""
    return f"{os.getpid()}-{process_start(os.getpid()) or 0}"


OWNER_FILE = "parlab-owner"  # in multiprocessing's pymp-* directory: who made it


def mark_mp_temp_dir(ctx) -> None:
    """Mark multiprocessing's private directory (pymp-*, which holds the fork server's
    socket) with this process's owner tag, so that ``sweep_stale_dirs`` can remove it
    if this process is killed with its whole group and nobody is left to do it."""
    if ctx.get_start_method() != "forkserver":
        return
    from multiprocessing import util
    path = os.path.join(util.get_temp_dir(), OWNER_FILE)  # creates the directory if need be
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(owner_tag())


def _owner_gone(tag: str) -> bool:
    pid, _, start = tag.strip().partition("-")
    try:
        pid = int(pid)
    except ValueError:
        return False  # not ours to judge
    from .rank import alive
    if not alive(pid):
        return True
    now = process_start(pid)
    return now is not None and start not in ("", "0") and now != start  # pid reused


def sweep_stale_dirs() -> list[str]:
    """Remove the temporary directories of launchers whose process is gone.

    When a caller is killed with its whole process group (as Jupyter does to a busy
    kernel: SIGTERM, then SIGKILL to the group), its ranks die with it and nobody is
    left to remove its rendezvous directory (parlab-rdzv-<pid>-<start>-*) or
    multiprocessing's (pymp-*, marked with OWNER_FILE). The next pool started on this
    machine removes them. A directory whose owner still runs, or that parlab did not
    mark, is left alone."""
    import shutil
    import tempfile
    root = tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(root, name)
        tag = None
        if name.startswith("parlab-rdzv-"):
            tag = name[len("parlab-rdzv-"):].rsplit("-", 1)[0]  # <pid>-<start>-<random>
        elif name.startswith("pymp-"):
            try:
                with open(os.path.join(path, OWNER_FILE)) as f:
                    tag = f.read()
            except OSError:
                continue
        if tag and _owner_gone(tag):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


_state = {"tracker_ours": None, "cache_dir_absent": None}


def start_fork_server(ctx) -> None:
    """Start the fork server (and multiprocessing's resource tracker) now, if not
    running, remembering what parlab started so that ``stop_fork_server`` stops only
    that."""
    if ctx.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver, resource_tracker
    if fork_server_pid(ctx) is None:  # a cold start
        if _state["tracker_ours"] is None:
            _state["tracker_ours"] = getattr(resource_tracker._resource_tracker, "_fd", 0) is None
        if _state["cache_dir_absent"] is None:
            _state["cache_dir_absent"] = not os.path.exists(torch_cache_dir())
        mark_mp_temp_dir(ctx)
    with bare_main():  # the server must not re-run the caller's script
        forkserver.ensure_running()  # (starts a fresh one if it died)


def stop_fork_server(wait: float = 5.0) -> None:
    """Stop the fork server, at once (it may still be importing torch), and the resource
    tracker if parlab started it. What a Ctrl-C during a launch does after closing the
    pools: a fork request the interrupt cut short may still sit in the server's queue,
    and would fork a rank nobody knows of. Ranks the server forked die with it
    (rank.py: PR_SET_PDEATHSIG). The next launch starts a fresh one (a cold start)."""
    import time
    from multiprocessing import forkserver, resource_tracker
    server = getattr(forkserver, "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        with server._lock:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            for step in (lambda: os.close(server._forkserver_alive_fd),
                         lambda: os.unlink(server._forkserver_address)):
                try:
                    step()
                except (OSError, TypeError):
                    pass
            server._forkserver_alive_fd = server._forkserver_address = None
            server._forkserver_pid = None
    tracker = resource_tracker._resource_tracker
    if _state["tracker_ours"] and getattr(tracker, "_fd", None) is not None:
        # it exits once every holder of its pipe (us, the server, the ranks) has gone,
        # after cleaning up what they registered; reap it without blocking for long
        with tracker._lock:
            os.close(tracker._fd)
            tracker._fd = None
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(tracker._pid, os.WNOHANG)[0]:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.02)
            tracker._pid = None
    _state["tracker_ours"] = None
    if _state["cache_dir_absent"]:
        _rmdir_if_empty(torch_cache_dir())  # made by the server's import, left empty
    _state["cache_dir_absent"] = None
