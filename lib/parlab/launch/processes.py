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
