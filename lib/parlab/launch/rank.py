"""Inside a rank: join the process group, then serve jobs from the caller until it goes.

A rank is forked from the fork server by the caller's pool (pool.py). It talks to
the caller over one pipe: jobs come in ("run", "exec" for a %%ranks cell,
"regroup"), printed lines and results go out ("out", "ok", "err", "ready"). It
never outlives the caller: a thread waits on a lifeline pipe that only the caller
holds open.
"""

from __future__ import annotations

import faulthandler
import gc
import io
import os
import pickle
import signal
import socket
import sys
import threading
import time
import traceback
import types
from contextlib import suppress
from datetime import timedelta

SLOT = 160  # bytes of the per-rank status slot (current traced op)
# set per rank; the caller's never override them
RANK_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
            "MASTER_PORT", "GLOO_SOCKET_IFNAME", "PARLAB_RANK_PID")
START_TIMEOUT = float(os.environ.get("PARLAB_START_TIMEOUT", "120"))
# A job that left the rank holding more than this gives it back (release_memory). A
# small one (a slider's re-run) does not: giving back its few pages cost the next
# warm launch ~0.5-1 ms to fault them in again, and the collector runs anyway.
RELEASE_ABOVE = 8 * 2 ** 20


class _RankStream(io.TextIOBase):
    """sys.stdout/stderr of a rank: whole lines go to the caller as they are printed."""

    def __init__(self, send):
        self._send = send
        self._buf = ""

    def writable(self):
        return True

    def write(self, text):
        self._buf += text
        if "\n" in self._buf:
            head, _, self._buf = self._buf.rpartition("\n")
            self._send(("out", head + "\n"))
        return len(text)

    def flush(self):
        if self._buf:
            self._send(("out", self._buf))
            self._buf = ""


def rank_main(rank, world_size, backend, store_path, conn, lifeline, dump_w, status, env,
              caller, cleanup_dirs, fork_server=None):
    """Entry point of a rank: set up, serve jobs until the caller goes, clean up.

    (The pool finds this function's name in a rank's faulthandler dump to pick the
    thread that runs jobs.)"""
    # What the fork server imported (torch, its autograd machinery) is shared with us
    # page by page until written to. The collector's first full pass would write to
    # every object it tracks, giving each rank its own copy: keep it off them.
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides what Ctrl-C means
    _die_with_fork_server(fork_server)
    if lifeline.poll(0):  # EOF already: the pool was closed (a Ctrl-C) before we got here
        os._exit(1)
    threading.Thread(target=_die_with_caller, args=(lifeline, caller, cleanup_dirs),
                     daemon=True).start()
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=dump_w, all_threads=True)
    try:
        _serve(rank, world_size, backend, store_path, conn, status, env)
    except BaseException:
        # e.g. the caller died while we were renewing the group; report anything
        # else while someone can still read it.
        if alive(caller):
            traceback.print_exc()
    _exit_after_caller(caller, cleanup_dirs)


def _serve(rank, world_size, backend, store_path, conn, status, env) -> None:
    import torch
    import torch.distributed as dist

    from .. import trace
    from . import devices, isolation

    gc.freeze()  # (spawned ranks) modules live as long as we do: no collection scans them
    lock = threading.Lock()

    def send(obj):
        data = pickle.dumps(obj)
        with lock:
            conn.send_bytes(data)

    torch.set_num_threads(1)  # ranks share the cores: one thread each avoids 5-10x slowdowns
    os.environ.update(env)
    os.environ.pop("MASTER_PORT", None)  # no TCP rendezvous here (see pool.py)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                      LOCAL_WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1",
                      PARLAB_RANK_PID=str(os.getpid()))  # a launch from here runs in place
    pool_backend = backend  # "gloo+cuda": gloo, CUDA tensors (devices.py)
    backend = devices.split(pool_backend)[0]
    lo = _loopback_ifname()
    if backend == "gloo" and lo and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = lo  # never listen beyond this machine
    trace.set_rank(rank)
    trace.install_status_slot(status, rank * SLOT, SLOT)
    generation = 0

    def init_group():
        # A fresh process group per generation, on its own key prefix of the store.
        if dist.is_initialized():
            dist.destroy_process_group()
        dist.init_process_group(backend, store=dist.PrefixStore(f"gen{generation}", store),
                                rank=rank, world_size=world_size)

    try:
        devices.setup_rank(pool_backend, rank)  # its GPU, comm.device(), staging
        # FileStore waits for a missing file for 5 minutes, holding the GIL (so the
        # lifeline thread cannot end us): a pool closed meanwhile removed it, so go.
        if not os.path.exists(store_path):
            os._exit(1)
        store = dist.FileStore(store_path, -1)  # -1: the caller removes the file, not us
        store.set_timeout(timedelta(seconds=START_TIMEOUT))
        init_group()
    except BaseException:
        send(("err", traceback.format_exc()))  # the caller shows it as LaunchError
        raise
    # torch as the rank starts: every "run" job starts from it (isolation.py), so
    # that no earlier job (learner code among them) changes a library run's result
    start_state = isolation.snapshot()
    send(("ready",))
    stdout = sys.stdout
    stderr = sys.stderr
    namespace = {"torch": torch, "dist": dist, "rank": rank, "world_size": world_size}
    fresh = True  # the process group has not been used since it was made
    kept = resident_bytes()  # what the rank held after it last gave memory back
    clean = True  # torch's process state is start_state's (nothing ran since the reset)
    while True:
        try:
            job = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):  # the caller is gone
            return
        if job[0] == "regroup" or (job[0] == "run" and not fresh):
            # "regroup": the caller saw every rank finish a job. A job after %%ranks
            # cells (which keep their group) regroups before it starts.
            generation += 1
            init_group()
            fresh = True
            if job[0] == "regroup":
                # ...and put torch back as it was when the rank started (isolation.py):
                # here, with every rank's reply in, it delays no reply (~0.7 ms a rank).
                # If it fails, the next run tries again and reports it.
                with suppress(Exception):
                    isolation.reset(start_state)
                    clean = True
                continue
        # The caller's sys.path and environment as they are now (ranks forked from the
        # fork server would otherwise see them as they were when it started).
        kind, body, main_script, sys.path[:], env = job
        os.environ.update({k: v for k, v in env.items() if k not in RANK_ENV})
        fresh = False
        sys.stdout = sys.stderr = _RankStream(send)
        try:
            if kind == "run":
                if not clean:  # after %%ranks cells, or a reset that failed at "regroup"
                    isolation.reset(start_state)
                if main_script:
                    _load_main(main_script)
                fn, args, kwargs = pickle.loads(body)
                with devices.job(pool_backend):  # the dry run's placement check
                    result = fn(*args, **kwargs)
                reply = ("ok", pickle.dumps(result))
                result = None
            else:
                code, filename = body if isinstance(body, tuple) else (body, "<ranks>")
                reply = ("ok", _exec_cell(code, namespace, filename))
        except BaseException as e:  # the rank reports it; the caller decides what to do
            tb = e.__traceback__.tb_next  # tb_next: skip this loop's frame
            if kind == "run":
                reply = ("err", "".join(traceback.format_exception(type(e), e, tb)))
            else:  # a cell: its own frames only, and where in the cells it failed
                reply = ("err", "".join(traceback.format_exception(type(e), e, _from_cell(tb))),
                         cell_error_info(e))
        finally:
            sys.stdout.flush()
            sys.stdout = stdout
            sys.stderr = stderr
        send(reply)
        del job, body, reply
        fn = None
        args = None
        kwargs = None
        clean = False  # a cell's changes stay for the next cell; a run resets them
        if not kept or resident_bytes() > kept + RELEASE_ABOVE:
            release_memory()
            kept = resident_bytes()


def resident_bytes() -> int:
    """This process's resident set (0 where /proc cannot tell: then every job releases)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def release_memory() -> None:
    """Give back what a finished job left behind: its garbage (reference cycles such
    as autograd graphs and modules with hooks) and the heap pages malloc keeps for
    reuse after large tensors are freed. An idle rank then holds about what it held
    before the job, not its peak."""
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            ctypes.CDLL(None).malloc_trim(0)  # glibc; absent (AttributeError) on musl
        except (OSError, AttributeError):
            pass


def _loopback_ifname() -> str | None:
    try:
        for _, name in socket.if_nameindex():
            if name in ("lo", "lo0"):
                return name
    except OSError:
        pass
    return None


def _load_main(path: str) -> None:
    """Make the caller's script importable as __main__ here (its guarded part is skipped)."""
    import runpy
    if getattr(sys.modules["__main__"], "__file__", None) != path:
        module = types.ModuleType("__mp_main__")
        module.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
        module.__file__ = path
        sys.modules["__main__"] = sys.modules["__mp_main__"] = module


def _exec_cell(code: str, namespace: dict, filename: str = "<ranks>") -> dict:
    """Run a cell's source like IPython does: a trailing expression's value is shown.

    ``filename`` names the cell in tracebacks and stack dumps ("<ranks cell 3>"); its
    lines go to linecache so that tracebacks show them, as they do for files."""
    import ast
    import linecache
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), namespace)
    value = None
    if last is not None:
        result = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
        value = None if result is None else repr(result)
    sys.stdout.flush()
    return {"value": value}


def _from_cell(tb):
    """The traceback from the first frame of cell code on (drops _exec_cell's frame)."""
    t = tb
    while t is not None and not t.tb_frame.f_code.co_filename.startswith("<ranks"):
        t = t.tb_next
    return t or tb


def cell_error_info(e: BaseException) -> dict:
    """What the %%ranks magic shows of a cell's error: type, message, and the cell
    frames (filename, line), outermost first."""
    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(e.__traceback__)
              if f.filename.startswith("<ranks")]
    if isinstance(e, SyntaxError) and (e.filename or "").startswith("<ranks"):
        frames.append((e.filename, e.lineno))
    return {"type": type(e).__name__, "message": str(e), "frames": frames}


PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies


def die_with_parent(parent: int) -> bool:
    """Ask the kernel for SIGKILL when ``parent`` (this process's parent) dies. If it died
    before the request was made, exit at once: the kernel would not tell. False where
    it cannot be asked (not Linux): the caller's other ties must do."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # it died before the prctl: we were handed to init
        os._exit(1)
    return True


def _die_with_fork_server(server: int | None) -> None:
    """Die with the fork server we were forked from, by the kernel's hand.

    The lifeline thread (``_die_with_caller``) needs the GIL, and a rank inside C++
    code that holds it (a FileStore waiting for its file, a learner's C loop) would
    outlive its caller by minutes. The fork server exits when the caller does (it
    watches its own pipe) and when a Ctrl-C stops it (processes.stop_fork_server), so
    PR_SET_PDEATHSIG makes the rank follow at once. Not under spawn (``server`` None),
    where our parent is the caller: the signal follows the parent *thread* that
    started us, and a launch from a thread that then ends would kill its pool.
    Linux only; elsewhere the lifeline thread is all there is."""
    if server is None or not die_with_parent(server):
        return
    # multiprocessing gave us a copy of the pipe whose closing tells the server its
    # clients are gone: held here, it would keep the server (and so us) alive
    from multiprocessing import forkserver
    held = getattr(forkserver._forkserver, "_forkserver_alive_fd", None)
    if held is not None:
        with suppress(OSError):
            os.close(held)
        forkserver._forkserver._forkserver_alive_fd = None


def _die_with_caller(lifeline, caller: int, cleanup_dirs: list[str]) -> None:
    # Only the caller holds the write end: EOF means it is gone (even after kill -9),
    # or it closed the pool (and is killing us anyway).
    try:
        lifeline.recv_bytes()
    except (EOFError, OSError):
        pass
    _exit_after_caller(caller, cleanup_dirs)


def _exit_after_caller(caller: int, cleanup_dirs: list[str]) -> None:
    """Exit; rank 0 first removes the caller's private directories (multiprocessing's,
    which holds the fork-server socket, and the rendezvous one) if the caller died
    without doing it."""
    if cleanup_dirs:
        for _ in range(40):  # a dying process closes its files a moment before it is gone
            if not alive(caller):
                import shutil
                for d in cleanup_dirs:
                    shutil.rmtree(d, ignore_errors=True)
                break
            time.sleep(0.05)
    os._exit(1)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed but not yet reaped, counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
