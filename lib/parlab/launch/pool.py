"""The caller's side of a pool of long-lived ranks: start them, send jobs, collect replies.

A ``Pool`` holds ``world_size`` rank processes (rank.py) forked from a fork server,
one pipe to each, a dump pipe for its faulthandler stack, a shared status buffer
(the traced op each rank is inside) and a lifeline pipe whose closing tells every
rank to exit. Any failure, timeout or Ctrl-C kills all the ranks; the registry in
``__init__.py`` then starts a fresh pool for the next launch.
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import shutil
import signal
import tempfile
import time
from contextlib import suppress
from multiprocessing import util as mp_util

from . import errors, sources, sweeper
from .processes import (bare_main, ctrl_c_deferred, every_step, fork_server_pid, mp_context,
                        no_torch_cache_dir_left, owner_tag, pause_at, pause_in_fork_request,
                        start_fork_server, sweep_stale_dirs)
from .rank import SLOT, START_TIMEOUT, alive, rank_main

KILL_GRACE = 2.0  # seconds to wait for a killed rank to be reaped
DUMP_WAIT = 1.0  # seconds to wait for the stuck ranks' stacks (all ranks together)
REGROUP = pickle.dumps(("regroup",))


class Pool:
    def __init__(self, world_size: int, backend: str):
        self.world_size = world_size
        self.backend = backend
        self.jobs = 0
        self.busy = False
        self.closing = False
        self.closed = False
        self.sources = sources.Sources()  # has a source changed since they started?
        self.procs = []
        self.conns = []
        self.dumps = []
        self.lifeline = None
        self.rendezvous_dir = None  # close() may run (atexit) before it is made
        self.sweeper = None
        self.fork_servers: list[int | None] = []  # per rank: the pid of the one it came from
        atexit.register(self.close)
        ctx = mp_context()
        # Rendezvous: a FileStore in a directory that only this user can enter
        # (mkdtemp makes it 0700). A TCPStore, even on 127.0.0.1, accepts every local
        # process, and each client can make the caller's store server hold more keys
        # and connections (hundreds of MB, or all its descriptors). A file needs no
        # server in the caller, leaves gloo's pairwise connections as the only
        # sockets, and works for the "regroup" between jobs like the TCPStore did.
        # Its name carries our pid and start time: if we are killed with our whole
        # process group nobody is left to remove it, and the next pool does
        # (processes.sweep_stale_dirs; multiprocessing's pymp-* too).
        # A watcher in its own session removes them at once (sweeper.py).
        sweep_stale_dirs()
        self.rendezvous_dir = tempfile.mkdtemp(prefix=f"parlab-rdzv-{owner_tag()}-")
        self.sweeper = sweeper.start()
        store_path = os.path.join(self.rendezvous_dir, "store")
        os.close(os.open(store_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        try:
            lifeline_r, self.lifeline = ctx.Pipe(duplex=False)  # ranks exit when this closes
            # If this process is killed, rank 0 removes our private directories: the
            # rendezvous one and multiprocessing's (the fork-server socket lives there).
            private = ([mp_util.get_temp_dir()] if ctx.get_start_method() == "forkserver"
                       else []) + [self.rendezvous_dir]
            self.status = ctx.Array("c", SLOT * world_size, lock=False)
            try:
                with no_torch_cache_dir_left():  # the fork server may start here
                    start_fork_server(ctx)
                    pause_at("cold-start")
                    for rank in range(world_size):
                        self._start_rank(ctx, rank, store_path, lifeline_r,
                                         private if rank == 0 else [])
                        if rank == 0:
                            pause_at("rendezvous")
            finally:
                lifeline_r.close()
            self._wait_ready()
            if self.lost_fork_server():  # died with every rank ready: still unwatchable
                raise errors.fork_server_died("starting the ranks")
        except BaseException:
            self.close()
            raise

    def _start_rank(self, ctx, rank, store_path, lifeline_r, cleanup_dirs):
        parent_end, child_end = ctx.Pipe()
        dump_r, dump_w = ctx.Pipe(duplex=False)
        self.conns.append(parent_end)
        self.dumps.append(dump_r)
        try:
            proc = ctx.Process(target=rank_main, name=f"parlab-rank{rank}",
                               args=(rank, self.world_size, self.backend, store_path,
                                     child_end, lifeline_r, dump_w, self.status,
                                     dict(os.environ), os.getpid(), cleanup_dirs,
                                     fork_server_pid(ctx)))
            server = fork_server_pid(ctx)  # None before the first start
            if rank == 0:
                pause_in_fork_request()
            try:
                with bare_main():
                    proc.start()
            except (OSError, EOFError) as e:  # its socket went away, or it did mid-fork
                if server is not None and not alive(server):
                    raise errors.fork_server_died("starting the ranks") from e
                raise
            self.procs.append(proc)
            self.fork_servers.append(fork_server_pid(ctx))
        finally:
            child_end.close()
            dump_w.close()

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        waiting = set(range(self.world_size))

        def on_message(rank, reply):
            if reply[0] == "ready":
                waiting.discard(rank)
            else:  # the rank could not even join the process group
                raise errors.LaunchError(f"rank {rank} failed to start:\n{reply[1]}",
                                         rank=rank, remote_traceback=reply[1])

        while waiting:
            self._poll(waiting, deadline, on_message, label="starting the ranks")

    # -- lifecycle -------------------------------------------------------------

    def lost_fork_server(self) -> bool:
        """Whether the fork server that some rank came from has died. Such a rank may
        well still run, but it looks dead (exit code 255) to multiprocessing, whose only
        news of it came through that fork server: the pool cannot watch it any more."""
        return any(pid is not None and not alive(pid) for pid in self.fork_servers)

    def _fork_server_seen_dead(self, wait: float = 1.0) -> bool:
        """``lost_fork_server()``, allowing for the moment between a killed fork server
        closing its pipes (how multiprocessing hears, and reports exit code 255) and the
        kernel marking it a zombie (what ``alive`` reads)."""
        deadline = time.monotonic() + wait
        while not self.lost_fork_server():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def healthy(self) -> bool:
        """Ready for a job: not closed, every rank alive, no job left half-done (a
        Ctrl-C that landed before the pool could close itself leaves ``busy``)."""
        if self.closing or self.busy:
            return False
        # Every launch asks, so first one poll(0) over every rank's pipe and sentinel:
        # a rank that exited has closed its end of its pipe (a hang-up), a fork server
        # that died closes the sentinels, and an idle, living rank's are silent. Silence
        # is not proof: a rank killed while its threads run is a zombie in /proc before
        # its last thread has closed the pipe, so /proc confirms it (about 8 us a rank).
        # Anything heard (a stray line printed by a rank's thread, say) gets the full
        # look below.
        if self.procs and not _fds_ready(self.conns + [p.sentinel for p in self.procs], 0):
            return all(alive(p.pid) for p in self.procs)
        # is_alive() learns of a killed rank only when the fork server reports it, which
        # lags on a busy machine; alive() reads /proc (a zombie counts as dead) at once
        return all(p.is_alive() and alive(p.pid) for p in self.procs)

    def watch(self, files: list[str]) -> None:
        """Remember these sources as the ranks see them (first sight counts)."""
        self.sources.watch(files)

    def stale(self) -> bool:
        """Whether one of them changed since (sources.py: without stat-ing them all)."""
        return self.sources.changed()

    def close(self) -> None:
        """Kill the ranks and free the pipes and the rendezvous directory.

        Safe to call again (each step is). A KeyboardInterrupt (a second Ctrl-C)
        arriving meanwhile is held back until everything is freed, then raised; and
        each step runs even if an earlier one raised, so nothing is left half-closed.
        """
        if self.closed:
            return
        self.closing = True
        with ctrl_c_deferred():
            every_step(self._kill, self._reap, self._close_pipes,
                        self._remove_rendezvous, self._stop_sweeper, self.sources.close,
                        lambda: atexit.unregister(self.close))
            self.closed = True  # not when a step raised: the registry closes it again

    def _kill(self):
        orphans = self.lost_fork_server()
        for p in self.procs:
            with suppress(ValueError):  # ValueError: closed by an earlier close()
                if p.is_alive():
                    p.kill()
                elif orphans and alive(p.pid):
                    # multiprocessing thinks it exited (its fork server died) and will
                    # not signal it; it is not our child either, so init reaps it
                    with suppress(OSError):
                        os.kill(p.pid, signal.SIGKILL)

    def _reap(self):
        for p in self.procs:
            with suppress(ValueError):
                p.join(KILL_GRACE)
                if p.exitcode is not None:
                    p.close()  # frees its sentinel now rather than at garbage collection

    def _close_pipes(self):
        for c in self.conns + self.dumps + [self.lifeline]:
            if c is not None:
                c.close()

    def _stop_sweeper(self):
        watcher, self.sweeper = self.sweeper, None
        sweeper.stop(watcher)

    def _remove_rendezvous(self):
        if self.rendezvous_dir is not None:
            shutil.rmtree(self.rendezvous_dir, ignore_errors=True)

    # -- running a job ---------------------------------------------------------

    def run(self, job, timeout: float, label: str, cell: bool = False) -> list:
        """Send ``job`` to every rank and collect the replies, or fail cleanly.

        A ``launch`` job fails as soon as one rank fails: its peers may be blocked
        waiting for it. A ``%%ranks`` cell (``cell=True``) instead collects every
        rank's error, so that one typo repeated on every rank does not cost the
        session; it kills the ranks only if some are still busy a second later.
        """
        msg = pickle.dumps(job)
        results = [None] * self.world_size
        errs = {}
        infos = {}
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
                errs[rank] = reply[1]
                if len(reply) > 2:  # a cell's error: type, message, cell lines
                    infos[rank] = reply[2]
                pending.discard(rank)
                if not cell:
                    raise errors.failure(label, rank, reply[1])

        self.busy = True
        try:
            for conn in self.conns:
                conn.send_bytes(msg)
            self.jobs += 1
            pause_at("running")
            deadline = time.monotonic() + timeout
            while pending:
                if errs:  # cell mode only: a short grace for the others
                    deadline = min(deadline, time.monotonic() + 1.0)
                self._poll(pending, deadline, on_message, label)
            pause_at("collecting")
        except BaseException as e:
            # Error, timeout, Ctrl-C: the ranks are in an unknown state. Kill them all;
            # the next launch starts a fresh pool.
            if cell and errs and isinstance(e, errors.LaunchTimeout):
                rank = min(errs)
                e = errors.failure(label, rank, errs[rank], still_running=e)
            if cell and isinstance(e, errors.LaunchError):
                # what the %%ranks magic shows: what each rank printed, and every error
                e.outputs = ["".join(o) for o in outputs]
                e.rank_errors = {r: {"error": errs[r], "info": infos.get(r)} for r in errs}
            self.close()
            raise e
        if cell:
            self.busy = False
            return [{"output": "".join(outputs[r]), "value": (results[r] or {}).get("value"),
                     "error": errs.get(r), "error_info": infos.get(r)}
                    for r in range(self.world_size)]
        # Every rank is done: let them renew their process group while we return. (Not
        # earlier: a rank renewing its group would break peers still inside a collective.)
        for conn in self.conns:
            conn.send_bytes(REGROUP)
        self.busy = False
        return results

    def _poll(self, pending: set, deadline: float, on_message, label: str) -> None:
        """Wait for one round of messages from ``pending`` ranks, a death, or the deadline."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout(sorted(pending), label)
        # One poll(2) over the pending ranks' pipes and sentinels, made afresh each time
        # (a few microseconds; multiprocessing's wait() builds a selector: ~10x that)
        by_conn = {self.conns[r].fileno(): r for r in pending}
        by_sentinel = {self.procs[r].sentinel: r for r in pending}
        ready = _fds_ready(list(by_conn) + list(by_sentinel), min(remaining, 0.5))
        for fd in ready:
            if fd in by_conn:
                rank = by_conn[fd]
                try:
                    reply = pickle.loads(self.conns[rank].recv_bytes())
                except (EOFError, OSError):
                    raise self._death(rank, label) from None
                on_message(rank, reply)
        for fd in ready:
            rank = by_sentinel.get(fd)
            if rank is not None and rank in pending and not self.conns[rank].poll():
                raise self._death(rank, label)

    def _death(self, rank: int, label: str) -> errors.LaunchError:
        self.procs[rank].join(KILL_GRACE)
        if self.procs[rank].exitcode == 255 and self._fork_server_seen_dead():
            return errors.fork_server_died(label)
        return errors.death(label, rank, self.procs[rank].exitcode)

    def _timeout(self, ranks: list[int], label: str) -> errors.LaunchTimeout:
        from .. import trace
        ops = {r: trace.read_status_slot(self.status, r * SLOT, SLOT) for r in ranks}
        return errors.timeout(label, self.world_size, ranks, ops, self._stacks(ranks))

    def _stacks(self, ranks: list[int]) -> dict[int, str]:
        """Ask the stuck ranks for their Python stacks (faulthandler on SIGUSR1), all at
        once and with one deadline, so a rank that does not answer costs DUMP_WAIT once."""
        if not hasattr(signal, "SIGUSR1"):
            return {}
        chunks = {}
        for r in ranks:
            with suppress(OSError):
                os.kill(self.procs[r].pid, signal.SIGUSR1)
                chunks[r] = b""
        waiting = {self.dumps[r].fileno(): r for r in chunks}
        deadline = time.monotonic() + DUMP_WAIT
        while waiting and (left := deadline - time.monotonic()) > 0:
            for fd in select.select(list(waiting), [], [], left)[0]:
                r = waiting[fd]
                data = os.read(fd, 65536)
                chunks[r] += data
                if not data or b"rank_main" in chunks[r]:  # EOF, or the main thread's stack
                    del waiting[fd]
        return {r: c.decode("utf-8", "replace") for r, c in chunks.items()}

    def __del__(self):
        with suppress(Exception):
            self.close()


def _fds_ready(objs: list, timeout: float) -> list[int]:
    """The file descriptors among ``objs`` (ints, or objects with ``fileno()``) that are
    readable or hung up, waiting up to ``timeout`` seconds (0: just look)."""
    poller = select.poll()
    for obj in objs:
        poller.register(obj, select.POLLIN)  # POLLHUP/POLLERR are always reported
    return [fd for fd, _ in poller.poll(timeout * 1000)]


def _print_rank_output(rank: int, text: str) -> None:
    for line in text.splitlines():
        print(f"[rank {rank}] {line}", flush=True)
