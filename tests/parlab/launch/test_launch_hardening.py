"""parlab.launch under stress: threads, a second Ctrl-C, dead pools, a bad fn, ranks that
do not answer, hang hints, and a rendezvous no other user can reach."""

import gc
import os
import signal
import stat
import sys
import threading
import time

import pytest

import parlab
import workers
from test_launch import _listening_sockets, pids_of, wait_dead

launch_mod = sys.modules["parlab.launch"]
pool_mod = sys.modules["parlab.launch.pool"]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def open_fds() -> int:
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def fd_baseline():
    """Open descriptors with no pool running (the fork server already started)."""
    parlab.launch(workers.all_reduce_sum, 3)
    parlab.shutdown()
    return open_fds()


def fork_server_fds() -> int:
    """The descriptors this process holds for the fork server and for the resource
    tracker parlab started: what a Ctrl-C during a launch closes beside the pool's."""
    from multiprocessing import forkserver, resource_tracker
    processes = sys.modules["parlab.launch.processes"]
    fds = [forkserver._forkserver._forkserver_alive_fd]
    if processes._state["tracker_ours"]:
        fds.append(resource_tracker._resource_tracker._fd)
    return sum(fd is not None for fd in fds)


def assert_nothing_left(fds_before, pids):
    assert parlab.pool_info() == []
    assert wait_dead(pids) == []
    assert open_fds() == fds_before
    assert _listening_sockets(os.getpid()) == []


# --- a: launches from two threads --------------------------------------------------

def test_concurrent_launches_get_their_own_results():
    wrong, failed = [], []

    def launches(tid):
        try:
            for i in range(20):
                got = parlab.launch(workers.echo, 2, tid, i)
                if got != [((tid, i), {})] * 2:
                    wrong.append((tid, i, got))
        except BaseException as e:  # noqa: BLE001 - reported below
            failed.append(e)

    threads = [threading.Thread(target=launches, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not any(t.is_alive() for t in threads)
    assert failed == [] and wrong == []


# --- b: a second Ctrl-C inside close, and pools whose ranks died -------------------

@linux_only
def test_second_ctrl_c_during_close_leaves_nothing(monkeypatch, fd_baseline):
    parlab.launch(workers.all_reduce_sum, 3)
    pids = pids_of(3)
    pool = launch_mod._pools[(3, "gloo")]
    real_kill = pool_mod.Pool._kill

    def kill_then_second_ctrl_c(self):
        real_kill(self)
        os.kill(os.getpid(), signal.SIGINT)  # arrives while the ranks are being reaped
        time.sleep(0.05)

    monkeypatch.setattr(pool_mod.Pool, "_kill", kill_then_second_ctrl_c)
    first = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))  # during the job
    first.start()
    server_fds = fork_server_fds()
    with pytest.raises(KeyboardInterrupt):
        parlab.launch(workers.sleep, 3, 3600, timeout=60)
    first.join()
    monkeypatch.undo()
    assert pool.closed  # close() finished before the second Ctrl-C was raised
    # a Ctrl-C during a launch also stops the fork server (and the tracker parlab
    # started): their pipes are closed too (test_launch_interrupts.py)
    assert_nothing_left(fd_baseline - server_fds, pids)
    assert parlab.launch(workers.all_reduce_sum, 3) == [6.0] * 3


@linux_only
def test_close_finishes_when_a_step_is_interrupted(monkeypatch, fd_baseline):
    parlab.launch(workers.all_reduce_sum, 3)
    pids = pids_of(3)
    rendezvous = launch_mod._pools[(3, "gloo")].rendezvous_dir
    real_reap = pool_mod.Pool._reap
    interrupts = []

    def reap_then_interrupt(self):
        real_reap(self)
        if not interrupts:
            interrupts.append(1)
            raise KeyboardInterrupt

    monkeypatch.setattr(pool_mod.Pool, "_reap", reap_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        parlab.shutdown()
    assert interrupts == [1]
    assert not os.path.exists(rendezvous)
    assert_nothing_left(fd_baseline, pids)


@linux_only
def test_pool_info_and_shutdown_drop_pools_whose_ranks_died(fd_baseline):
    parlab.launch(workers.all_reduce_sum, 3)
    pids = pids_of(3)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert wait_dead(pids) == []
    assert_nothing_left(fd_baseline, pids)  # pool_info() == [] and everything freed
    parlab.launch(workers.all_reduce_sum, 3)
    for pid in pids_of(3):
        os.kill(pid, signal.SIGKILL)
    parlab.shutdown()
    assert launch_mod._pools == {}
    assert parlab.launch(workers.all_reduce_sum, 3) == [6.0] * 3


# --- c: fn is checked before anything starts ---------------------------------------

@pytest.mark.parametrize("fn", [None, "workers.echo", 3.5])
def test_non_callable_fn_is_rejected_before_any_rank_starts(fn):
    parlab.shutdown()
    with pytest.raises(ValueError, match="fn must be callable"):
        parlab.launch(fn, 2)
    assert parlab.pool_info() == []


# --- d: ranks that do not answer the stack-dump request ----------------------------

def test_timeout_with_unresponsive_ranks_is_not_late():
    parlab.launch(workers.all_reduce_sum, 4)  # the pool is up: time only the job
    t0 = time.monotonic()
    with pytest.raises(parlab.LaunchTimeout) as info:
        parlab.launch(workers.deaf_sleep, 4, 3600, timeout=1)
    assert time.monotonic() - t0 < 1 + 2.5  # was 1 s more per rank
    assert info.value.ranks == [0, 1, 2, 3]
    assert parlab.launch(workers.all_reduce_sum, 4) == [10.0] * 4


# --- e: the hint names a skipped collective only when there is one ----------------

COLLECTIVE_HINT = "did only some ranks call a collective?"
PLAIN_HINT = "no rank was blocked in a communication op"


def test_hint_for_a_collective_that_only_some_ranks_called():
    with pytest.raises(parlab.LaunchTimeout) as info:
        parlab.launch(workers.forget_collective_on_rank0, 3, timeout=1.5)
    assert COLLECTIVE_HINT in str(info.value) and PLAIN_HINT not in str(info.value)


def test_hint_for_a_rank_in_a_collective_while_another_sleeps():
    with pytest.raises(parlab.LaunchTimeout) as info:
        parlab.launch(workers.hang_in_traced_all_reduce, 3, 0, timeout=1.5)
    assert "ranks [0] were not in a collective" in str(info.value)
    assert COLLECTIVE_HINT in str(info.value)


@pytest.mark.parametrize("worker, args, running", [
    (workers.sleep_on, (1, 3600), [1]),  # rank 0 finished, rank 1 sleeps on its own
    (workers.sleep, (3600,), [0, 1]),  # every rank sleeps
])
def test_plain_hang_gets_a_plain_hint(worker, args, running):
    with pytest.raises(parlab.LaunchTimeout) as info:
        parlab.launch(worker, 2, *args, timeout=1.5)
    assert info.value.ranks == running
    assert COLLECTIVE_HINT not in str(info.value) and PLAIN_HINT in str(info.value)


# --- f: a rendezvous only this user can reach --------------------------------------

@linux_only
def test_rendezvous_is_private_and_removed():
    parlab.launch(workers.all_reduce_sum, 2)
    rendezvous = launch_mod._pools[(2, "gloo")].rendezvous_dir
    st = os.stat(rendezvous)
    assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
    for name in os.listdir(rendezvous):
        assert stat.S_IMODE(os.stat(os.path.join(rendezvous, name)).st_mode) & 0o077 == 0
    # the caller serves nothing: the only listening sockets are gloo's, in the ranks
    assert _listening_sockets(os.getpid()) == []
    parlab.shutdown()
    assert not os.path.exists(rendezvous)


def test_pool_that_fails_before_its_rendezvous_dir_still_closes(monkeypatch):
    """Pool.__init__ registers close() with atexit first; if it then fails before the
    rendezvous directory exists (a full /tmp, say), that close() must not raise
    AttributeError at interpreter exit on top of the real error."""
    import sys as _sys
    pool_mod = _sys.modules["parlab.launch.pool"]
    registered = []
    monkeypatch.setattr(pool_mod.atexit, "register", registered.append)
    monkeypatch.setattr(pool_mod.atexit, "unregister", lambda f: None)

    def full_tmp(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(pool_mod.tempfile, "mkdtemp", full_tmp)
    with pytest.raises(OSError, match="No space"):
        pool_mod.Pool(2, "gloo")
    assert registered
    for close in registered:
        close()  # raised AttributeError: 'Pool' object has no attribute 'rendezvous_dir'
