"""Run a function on N ranks: from a notebook, a script, or under torchrun.

    results = parlab.launch(fn, world_size, *args, timeout=60.0, backend=None, **kwargs)

calls ``fn(*args, **kwargs)`` on ``world_size`` ranks with ``torch.distributed``
initialised (gloo on CPU; NCCL when every rank can have its own GPU) and returns
the ranks' return values as a list indexed by rank.

Why a pool of long-lived ranks. A widget re-runs small jobs every time a slider
moves. Starting a rank means starting Python and importing torch, about a second
of CPU each; four of them on two cores cost 3-5 s. So the first launch of a given
(world_size, backend) starts the ranks and keeps them; later launches send the job
to the waiting ranks over a pipe (milliseconds). New ranks are forked from a
"forkserver" that imported torch once, so even a cold start is well under a second
per rank. (bench/launcher.py measures this against a fresh spawn and against
ipyparallel engines; the README's design notes give the figures.)

What never happens (each one is a test in tests/test_launch.py):
- a frozen caller. A rank that raises makes the call raise ``LaunchError`` (with
  the remote traceback) as soon as its message arrives; a rank that dies makes it
  raise at once; a job still running after ``timeout`` seconds raises
  ``LaunchTimeout``, naming the ranks still running, the traced operation each was
  inside and the Python line it was blocked on. In every case the other ranks are
  killed and the pool is rebuilt by the next launch.
- orphans. Ranks die with the caller: each watches a pipe that only the caller
  holds open, so even ``kill -9`` of a notebook kernel takes its ranks with it.
  Ctrl-C / kernel interrupt kills the running job's ranks before re-raising.
- stray sockets or files. Rendezvous is a TCPStore served by the caller on a port
  of 127.0.0.1 that the OS picks; gloo is told to use the loopback interface; no
  file is written.

Isolation between jobs. Once every rank has finished a job, the ranks destroy and
re-create their process group, so a job never sees groups, pending messages or
sequence numbers left by the previous one. They do it while the caller is busy
with the result, so it costs a launch nothing unless launches come back to back
(then ~25 ms per 2 ranks on a 2-core laptop; bench/launcher.py "b2b").

Stale code. Ranks import your function's module once. If that file or any
``parlab`` source changes after the pool started, the next launch restarts the
ranks so that they run the code you see.
"""

from __future__ import annotations

import atexit
import faulthandler
import io
import os
import pickle
import select
import signal
import socket
import sys
import threading
import time
import traceback
import types
from contextlib import contextmanager
from datetime import timedelta
from multiprocessing import connection as mp_connection
from multiprocessing import util as mp_util

MAX_LOCAL_RANKS = int(os.environ.get("PARLAB_MAX_RANKS", "32"))
MAX_POOLED_RANKS = int(os.environ.get("PARLAB_MAX_POOLED_RANKS", "16"))  # kept alive, all pools
START_TIMEOUT = float(os.environ.get("PARLAB_START_TIMEOUT", "120"))
KILL_GRACE = 2.0  # seconds to wait for a killed rank to be reaped
_SLOT = 160  # bytes of the per-rank status slot (current traced op)
_RANK_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
             "MASTER_PORT", "GLOO_SOCKET_IFNAME")  # set per rank; the caller's never override


class LaunchError(RuntimeError):
    """A rank failed. ``.rank`` is the first failing rank; the message holds its traceback."""

    def __init__(self, message: str, rank: int | None = None, remote_traceback: str = ""):
        super().__init__(message)
        self.rank = rank
        self.remote_traceback = remote_traceback


class LaunchTimeout(LaunchError):
    """A job ran past its timeout. ``.ranks``: the ranks still running; ``.blocked_in``:
    rank -> where it was blocked (traced op and Python line), when known."""

    def __init__(self, message: str, ranks: list[int], blocked_in: dict[int, str]):
        super().__init__(message, rank=ranks[0] if ranks else None)
        self.ranks = ranks
        self.blocked_in = blocked_in


# ------------------------------------------------------------------------------
# public API
# ------------------------------------------------------------------------------

def launch(fn, world_size, *args, timeout=60.0, backend=None, **kwargs) -> list:
    """Run ``fn(*args, **kwargs)`` on ``world_size`` ranks; return their results by rank.

    ``fn`` must be importable by name (defined at module level in ``lib/`` or any
    importable module), because the ranks are separate processes. Under ``torchrun``
    (RANK and WORLD_SIZE in the environment) no process is started: ``fn`` runs in
    this process as this rank, and every rank gets the full list of results.
    """
    _check_args(fn, world_size, timeout, backend)
    if _under_torchrun():
        return _launch_in_process(fn, world_size, args, kwargs, timeout, backend)
    backend = backend or _default_backend(world_size)
    payload = _pickle_job(fn, args, kwargs)
    pool = _get_pool(world_size, backend, _code_files(fn))
    return pool.run(("run", payload, _main_script(fn), sys.path, dict(os.environ)), timeout,
                    label=_fn_name(fn))


def run_on_ranks(code: str, world_size: int, timeout: float = 30.0, backend=None) -> list[dict]:
    """Execute Python source on every rank, in a namespace that persists between calls.

    This is what the ``%%ranks`` cell magic (``parlab.interactive``) calls. The
    namespace starts with ``torch``, ``dist``, ``rank`` and ``world_size``; the
    process group is kept between calls so groups and tensors made in one cell are
    there in the next. Returns, per rank, ``{"output": printed text, "value": repr of
    a trailing expression or None, "error": traceback text or None}``.
    """
    _check_args(None, world_size, timeout, backend)
    if not isinstance(code, str):
        raise ValueError(f"code must be a str, got {type(code).__name__}")
    compile(code, "<ranks>", "exec")  # a SyntaxError here, before any rank sees it
    backend = backend or _default_backend(world_size)
    pool = _get_pool(world_size, backend, _code_files(None))
    return pool.run(("exec", code, None, sys.path, dict(os.environ)), timeout,
                    label="%%ranks cell", cell=True)


def shutdown() -> None:
    """Stop every pooled rank (they also stop when this process exits)."""
    for key in list(_pools):
        _pools.pop(key).close()


def pool_info() -> list[dict]:
    """The pools alive now: world size, backend, pids, jobs run."""
    return [{"world_size": p.world_size, "backend": p.backend, "jobs": p.jobs,
             "pids": [proc.pid for proc in p.procs]} for p in _pools.values()]


# ------------------------------------------------------------------------------
# argument checks (before any process starts)
# ------------------------------------------------------------------------------

def _check_args(fn, world_size, timeout, backend):
    if isinstance(world_size, bool) or not isinstance(world_size, int):
        raise ValueError(f"world_size must be an int, got {world_size!r}")
    if world_size < 1:
        raise ValueError(f"world_size={world_size} must be >= 1")
    if not _under_torchrun() and world_size > MAX_LOCAL_RANKS:
        raise ValueError(f"world_size={world_size} exceeds the cap of {MAX_LOCAL_RANKS} local "
                         f"ranks (set PARLAB_MAX_RANKS to raise it)")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout={timeout!r} must be a number of seconds > 0")
    if backend not in (None, "gloo", "nccl"):
        raise ValueError(f"backend={backend!r} must be None, 'gloo' or 'nccl'")
    if backend == "nccl" and not _under_torchrun():
        import torch
        n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n_gpus < world_size:
            raise ValueError(f"backend='nccl' needs one GPU per rank: world_size={world_size} "
                             f"but {n_gpus} GPU(s) here")
    if fn is None:
        return
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    qualname = getattr(fn, "__qualname__", "")
    module = getattr(fn, "__module__", None)
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError(f"fn={qualname} is a lambda or closure; ranks are separate processes "
                         "and can only run a function defined at module level")
    if module == "__main__" and not hasattr(sys.modules["__main__"], "__file__"):
        raise ValueError(f"fn={qualname} is defined in a notebook or REPL; ranks cannot import "
                         "it. Put it in a module (e.g. under lib/parlab/) and import it")


def _pickle_job(fn, args, kwargs) -> bytes:
    try:
        return pickle.dumps((fn, args, kwargs))
    except Exception as e:
        raise ValueError(f"cannot send the job to the ranks: {type(e).__name__}: {e}") from None


def _fn_name(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _default_backend(world_size: int) -> str:
    from .hardware import default_backend  # imports torch: only when a job is launched
    return default_backend(world_size)


# ------------------------------------------------------------------------------
# under torchrun: this process is one rank
# ------------------------------------------------------------------------------

def _under_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def _launch_in_process(fn, world_size, args, kwargs, timeout, backend):
    import torch
    import torch.distributed as dist
    env_world = int(os.environ["WORLD_SIZE"])
    if world_size != env_world:
        raise ValueError(f"world_size={world_size} but this job was started with "
                         f"WORLD_SIZE={env_world} (torchrun --nproc-per-node/--nnodes)")
    if not dist.is_initialized():
        # one GPU per rank of this node, as torchrun places them
        backend = backend or _default_backend(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout))
        # Tear it down before the interpreter does: exiting with a live gloo group
        # aborts the process ("terminate called without an active exception").
        atexit.register(lambda: dist.is_initialized() and dist.destroy_process_group())
    result = fn(*args, **kwargs)
    gathered = [None] * env_world
    dist.all_gather_object(gathered, result)
    return gathered


# ------------------------------------------------------------------------------
# the pool of long-lived ranks
# ------------------------------------------------------------------------------

_pools: dict[tuple[int, str], "_Pool"] = {}  # insertion order = least recently used first


def _get_pool(world_size: int, backend: str, code_files: list[str]) -> "_Pool":
    key = (world_size, backend)
    pool = _pools.pop(key, None)
    if pool is not None and (not pool.healthy() or pool.stale()):
        if pool.healthy():
            print("[parlab] code changed since the ranks started: restarting them", flush=True)
        pool.close()
        pool = None
    if pool is None:
        # Keep the number of idle ranks bounded (each holds ~150 MB): drop the oldest pools.
        while _pools and sum(k[0] for k in _pools) + world_size > MAX_POOLED_RANKS:
            _pools.pop(next(iter(_pools))).close()
        pool = _Pool(world_size, backend)
    pool.watch(code_files)  # parlab's sources and fn's module, as the ranks will see them
    _pools[key] = pool  # most recently used last
    return pool


def _code_files(fn) -> list[str]:
    """Sources whose change should restart the ranks: parlab's and fn's module."""
    here = os.path.dirname(os.path.abspath(__file__))
    files = [os.path.join(here, f) for f in os.listdir(here) if f.endswith(".py")]
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    if path and path.endswith(".py"):
        files.append(os.path.abspath(path))
    return files


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _mp_context():
    import multiprocessing as mp
    method = os.environ.get("PARLAB_START_METHOD")
    if method is None:
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        # The fork server imports torch once; ranks forked from it start in ~0.1 s.
        # Nothing threaded has run in it, so forking is safe for OpenMP. parlab itself
        # is not preloaded, so edited sources are picked up by new ranks.
        ctx.set_forkserver_preload(["torch", "torch.distributed"])
    return ctx


@contextmanager
def _bare_main():
    """Hide the caller's __main__ while starting ranks.

    multiprocessing would otherwise re-run the caller's script (or ``python -m``
    module) in every rank, which breaks scripts without an ``if __name__ ==
    "__main__"`` guard and costs time for everyone. A function defined in a script
    is loaded by path only when a job needs it (see ``_load_main``).
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _main_script(fn) -> str | None:
    """The script file that defines ``fn``, when ``fn`` lives in ``__main__``."""
    if getattr(fn, "__module__", None) != "__main__":
        return None
    return os.path.abspath(sys.modules["__main__"].__file__)


def _loopback_ifname() -> str | None:
    try:
        for _, name in socket.if_nameindex():
            if name in ("lo", "lo0"):
                return name
    except OSError:
        pass
    return None


class _Pool:
    def __init__(self, world_size: int, backend: str):
        import torch
        import torch.distributed as dist

        self.world_size, self.backend = world_size, backend
        self.jobs, self.closed = 0, False
        self.watched: dict[str, float] = {}
        self.procs, self.conns, self.dumps, self.lifeline = [], [], [], None
        ctx = _mp_context()
        # Rendezvous: a TCPStore served from this process on a socket we bind to
        # 127.0.0.1 ourselves (TCPStore alone would listen on every interface).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        # Before torch 2.8 the libuv store server ignored a passed-in socket (pytorch#150215).
        old_torch = tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 8)
        self.store = dist.TCPStore("127.0.0.1", self.port, None, True, wait_for_workers=False,
                                   timeout=timedelta(seconds=START_TIMEOUT),
                                   master_listen_fd=sock.detach(),
                                   **({"use_libuv": False} if old_torch else {}))
        lifeline_r, self.lifeline = ctx.Pipe(duplex=False)  # ranks exit when this closes
        # multiprocessing keeps its fork-server socket in a temp dir that it removes at
        # a clean exit; if this process is killed, rank 0 removes it instead.
        temp_dir = mp_util.get_temp_dir() if ctx.get_start_method() == "forkserver" else None
        self.status = ctx.Array("c", _SLOT * world_size, lock=False)
        try:
            for rank in range(world_size):
                parent_end, child_end = ctx.Pipe()
                dump_r, dump_w = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_rank_main, name=f"parlab-rank{rank}",
                                   args=(rank, world_size, backend, self.port, child_end,
                                         lifeline_r, dump_w, self.status, dict(os.environ),
                                         os.getpid(), temp_dir if rank == 0 else None))
                with _bare_main():
                    proc.start()
                child_end.close()
                dump_w.close()
                self.conns.append(parent_end)
                self.dumps.append(dump_r)
                self.procs.append(proc)
            lifeline_r.close()
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        atexit.register(self.close)

    # -- lifecycle -------------------------------------------------------------

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        waiting = set(range(self.world_size))

        def on_message(rank, reply):
            if reply[0] == "ready":
                waiting.discard(rank)
            else:  # the rank could not even join the process group
                raise LaunchError(f"rank {rank} failed to start:\n{reply[1]}", rank=rank,
                                  remote_traceback=reply[1])

        while waiting:
            self._poll(waiting, deadline, on_message, label="starting the ranks")

    def healthy(self) -> bool:
        return not self.closed and all(p.is_alive() for p in self.procs)

    def watch(self, files: list[str]) -> None:
        """Remember these sources as the ranks see them (first sight counts)."""
        for f in files:
            self.watched.setdefault(f, _mtime(f))

    def stale(self) -> bool:
        return any(_mtime(f) != m for f, m in self.watched.items())

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for p in self.procs:
            if p.is_alive():
                p.kill()
        for p in self.procs:
            p.join(KILL_GRACE)
        for c in self.conns + self.dumps + [self.lifeline]:
            if c is not None:
                c.close()
        self.store = None  # stops the TCPStore server and frees the port
        for key, pool in list(_pools.items()):
            if pool is self:
                del _pools[key]
        atexit.unregister(self.close)

    # -- running a job ---------------------------------------------------------

    def run(self, job, timeout: float, label: str, cell: bool = False) -> list:
        """Send ``job`` to every rank and collect the replies, or fail cleanly.

        A ``launch`` job fails as soon as one rank fails: its peers may be blocked
        waiting for it. A ``%%ranks`` cell (``cell=True``) instead collects every
        rank's error, so that one typo repeated on every rank does not cost the
        session; it kills the ranks only if some are still busy a second later.
        """
        msg = pickle.dumps(job)
        results, errors = [None] * self.world_size, {}
        outputs = [[] for _ in range(self.world_size)]
        pending = set(range(self.world_size))

        def on_message(rank, reply):
            kind = reply[0]
            if kind == "out":
                outputs[rank].append(reply[1]) if cell else _print_rank_output(rank, reply[1])
            elif kind == "ok":
                results[rank] = reply[1] if cell else pickle.loads(reply[1])
                pending.discard(rank)
            elif kind == "err":
                errors[rank] = reply[1]
                pending.discard(rank)
                if not cell:
                    raise self._failure(label, rank, reply[1])

        try:
            for conn in self.conns:
                conn.send_bytes(msg)
            self.jobs += 1
            deadline = time.monotonic() + timeout
            while pending:
                if errors:  # cell mode only: a short grace for the others
                    deadline = min(deadline, time.monotonic() + 1.0)
                self._poll(pending, deadline, on_message, label)
        except BaseException as e:
            # Error, timeout, Ctrl-C: the ranks are in an unknown state. Kill them all;
            # the next launch starts a fresh pool.
            if cell and errors and isinstance(e, LaunchTimeout):
                rank = min(errors)
                e = self._failure(label, rank, errors[rank])
            self.close()
            raise e
        if cell:
            return [{"output": "".join(outputs[r]), "value": (results[r] or {}).get("value"),
                     "error": errors.get(r)} for r in range(self.world_size)]
        # Every rank is done: let them renew their process group while we return. (Not
        # earlier: a rank renewing its group would break peers still inside a collective.)
        regroup = pickle.dumps(("regroup",))
        for conn in self.conns:
            conn.send_bytes(regroup)
        return results

    def _poll(self, pending: set, deadline: float, on_message, label: str) -> None:
        """Wait for one round of messages from ``pending`` ranks, a death, or the deadline."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout(sorted(pending), label)
        by_conn = {self.conns[r]: r for r in pending}
        by_sentinel = {self.procs[r].sentinel: r for r in pending}
        ready = mp_connection.wait(list(by_conn) + list(by_sentinel), timeout=min(remaining, 0.5))
        for obj in ready:
            if obj in by_conn:
                try:
                    reply = pickle.loads(obj.recv_bytes())
                except (EOFError, OSError):
                    raise self._death(by_conn[obj], label) from None
                on_message(by_conn[obj], reply)
        for obj in ready:
            rank = by_sentinel.get(obj)
            if rank is not None and rank in pending and not self.conns[rank].poll():
                raise self._death(rank, label)

    def _death(self, rank: int, label: str) -> LaunchError:
        self.procs[rank].join(KILL_GRACE)
        code = self.procs[rank].exitcode
        how = (f"killed by signal {signal.Signals(-code).name}" if code and code < 0
               else f"exit code {code}")
        return LaunchError(f"rank {rank} died during {label} ({how}); the other ranks "
                           "were stopped", rank=rank)

    def _failure(self, label: str, rank: int, tb: str) -> LaunchError:
        return LaunchError(f"rank {rank} raised during {label}; the other ranks were stopped.\n"
                           f"--- traceback from rank {rank} ---\n{tb}", rank=rank,
                           remote_traceback=tb)

    def _timeout(self, ranks: list[int], label: str) -> LaunchTimeout:
        from . import trace
        blocked = {}
        for r in ranks:
            op = trace.read_status_slot(self.status, r * _SLOT, _SLOT)
            line = self._python_line(r)
            blocked[r] = ", ".join(x for x in (f"traced op '{op}'" if op else "", line) if x) \
                or "unknown"
        detail = "\n".join(f"  rank {r}: blocked in {blocked[r]}" for r in ranks)
        finished = sorted(set(range(self.world_size)) - set(ranks))
        if finished:
            detail += (f"\n  ranks {finished} had already finished: did only some ranks call "
                       "a collective?")
        return LaunchTimeout(f"{label} did not finish within its timeout on "
                             f"{self.world_size} ranks; still running: {ranks} (all ranks "
                             f"were stopped).\n{detail}", ranks, blocked)

    def _python_line(self, rank: int) -> str:
        """Ask a stuck rank for its Python stack (faulthandler on SIGUSR1); return the
        innermost frame outside torch, which is the line that called the blocking op."""
        if not hasattr(signal, "SIGUSR1"):
            return ""
        try:
            os.kill(self.procs[rank].pid, signal.SIGUSR1)
        except OSError:
            return ""
        fd, chunks, until = self.dumps[rank].fileno(), [], time.monotonic() + 1.0
        while time.monotonic() < until:
            if select.select([fd], [], [], 0.1)[0]:
                chunks.append(os.read(fd, 65536))
                if b"_rank_main" in b"".join(chunks):
                    break
        return _innermost_user_frame(b"".join(chunks).decode("utf-8", "replace"))

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _innermost_user_frame(dump: str) -> str:
    # faulthandler lists each thread's frames, most recent first; pick the main
    # thread (the one running _rank_main) and skip frames inside torch itself.
    for block in dump.split("\n\n"):
        if "_rank_main" not in block:
            continue
        frames = [ln.strip() for ln in block.splitlines() if ln.strip().startswith("File ")]
        names = [f for f in frames if f"{os.sep}torch{os.sep}" not in f]
        return names[0] if names else (frames[0] if frames else "")
    return ""


def _print_rank_output(rank: int, text: str) -> None:
    for line in text.splitlines():
        print(f"[rank {rank}] {line}", flush=True)


# ------------------------------------------------------------------------------
# inside a rank
# ------------------------------------------------------------------------------

class _RankStream(io.TextIOBase):
    """sys.stdout/stderr of a rank: whole lines go to the caller as they are printed."""

    def __init__(self, send):
        self._send, self._buf = send, ""

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


def _rank_main(rank, world_size, backend, port, conn, lifeline, dump_w, status, env, caller,
               temp_dir):
    """Entry point of a rank: set up, serve jobs until the caller goes, clean up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides what Ctrl-C means
    threading.Thread(target=_die_with_caller, args=(lifeline, caller, temp_dir),
                     daemon=True).start()
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=dump_w, all_threads=True)
    try:
        _serve(rank, world_size, backend, port, conn, status, env)
    except BaseException:
        # e.g. the caller died while we were renewing the group ("Broken pipe" from
        # its store); report anything else while someone can still read it.
        if _alive(caller):
            traceback.print_exc()
    _exit_after_caller(caller, temp_dir)


def _serve(rank, world_size, backend, port, conn, status, env) -> None:
    import torch
    import torch.distributed as dist
    from . import trace

    lock = threading.Lock()

    def send(obj):
        data = pickle.dumps(obj)
        with lock:
            conn.send_bytes(data)

    torch.set_num_threads(1)  # ranks share the cores: one thread each avoids 5-10x slowdowns
    os.environ.update(env)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                      LOCAL_WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    lo = _loopback_ifname()
    if backend == "gloo" and lo and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = lo  # never listen beyond this machine
    trace.set_rank(rank)
    trace.install_status_slot(status, rank * _SLOT, _SLOT)
    generation = 0

    def init_group():
        # A fresh process group per generation, on its own key prefix of the store.
        if dist.is_initialized():
            dist.destroy_process_group()
        dist.init_process_group(backend, store=dist.PrefixStore(f"gen{generation}", store),
                                rank=rank, world_size=world_size)

    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
        store = dist.TCPStore("127.0.0.1", port, world_size, False,
                              timeout=timedelta(seconds=START_TIMEOUT))
        init_group()
    except BaseException:
        send(("err", traceback.format_exc()))  # the caller shows it as LaunchError
        raise
    send(("ready",))
    stdout, stderr = sys.stdout, sys.stderr
    namespace = {"torch": torch, "dist": dist, "rank": rank, "world_size": world_size}
    fresh = True  # the process group has not been used since it was made
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
                continue
        # The caller's sys.path and environment as they are now (ranks forked from the
        # fork server would otherwise see them as they were when it started).
        kind, body, main_script, sys.path[:], env = job
        os.environ.update({k: v for k, v in env.items() if k not in _RANK_ENV})
        fresh = False
        sys.stdout = sys.stderr = _RankStream(send)
        try:
            if kind == "run":
                if main_script:
                    _load_main(main_script)
                fn, args, kwargs = pickle.loads(body)
                reply = ("ok", pickle.dumps(fn(*args, **kwargs)))
            else:
                reply = ("ok", _exec_cell(body, namespace))
        except BaseException as e:  # the rank reports it; the caller decides what to do
            reply = ("err", "".join(traceback.format_exception(
                type(e), e, e.__traceback__.tb_next)))  # tb_next: skip this loop's frame
        finally:
            sys.stdout.flush()
            sys.stdout, sys.stderr = stdout, stderr
        send(reply)


def _load_main(path: str) -> None:
    """Make the caller's script importable as __main__ here (its guarded part is skipped)."""
    import runpy
    if getattr(sys.modules["__main__"], "__file__", None) != path:
        module = types.ModuleType("__mp_main__")
        module.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
        module.__file__ = path
        sys.modules["__main__"] = sys.modules["__mp_main__"] = module


def _exec_cell(code: str, namespace: dict) -> dict:
    """Run a cell's source like IPython does: a trailing expression's value is shown."""
    import ast
    tree = ast.parse(code, "<ranks>")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<ranks>", "exec"), namespace)
    value = None
    if last is not None:
        result = eval(compile(ast.Expression(last.value), "<ranks>", "eval"), namespace)
        value = None if result is None else repr(result)
    sys.stdout.flush()
    return {"value": value}


def _die_with_caller(lifeline, caller: int, temp_dir: str | None) -> None:
    # Only the caller holds the write end: EOF means it is gone (even after kill -9),
    # or it closed the pool (and is killing us anyway).
    try:
        lifeline.recv_bytes()
    except (EOFError, OSError):
        pass
    _exit_after_caller(caller, temp_dir)


def _exit_after_caller(caller: int, temp_dir: str | None) -> None:
    """Exit; rank 0 first removes the caller's multiprocessing temp dir if the caller
    died without doing it (its fork-server socket lives there)."""
    if temp_dir is not None:
        for _ in range(40):  # a dying process closes its files a moment before it is gone
            if not _alive(caller):
                import shutil
                shutil.rmtree(temp_dir, ignore_errors=True)
                break
            time.sleep(0.05)
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:  # a zombie (killed, not yet reaped by its parent) is dead
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
