"""parlab.launch: results, failures, timeouts, interrupts, and what it leaves behind."""

import contextlib
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import parlab
import workers
import paths

launch_mod = sys.modules["parlab.launch"]  # the package (parlab.launch is the function)
rank_mod = sys.modules["parlab.launch.rank"]

HERE = str(paths.TESTS)
LIB = str(paths.LIB)
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([LIB, HERE]))


alive = rank_mod.alive


def wait_dead(pids, seconds=10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def pids_of(world_size):
    return [i["pids"] for i in parlab.pool_info() if i["world_size"] == world_size][0]


# --- normal operation --------------------------------------------------------------

def test_results_are_indexed_by_rank():
    res = parlab.launch(workers.rank_and_size, 3)
    assert [(r, w) for r, w, _ in res] == [(0, 3), (1, 3), (2, 3)]
    assert len({pid for _, _, pid in res}) == 3 and os.getpid() not in {p for *_, p in res}


def test_args_kwargs_and_collective():
    assert parlab.launch(workers.echo, 2, 1, "a", key=[3]) == [((1, "a"), {"key": [3]})] * 2
    assert parlab.launch(workers.all_reduce_sum, 4, 2.0) == [20.0] * 4  # 2 * (1+2+3+4)


def test_single_rank():
    assert parlab.launch(workers.all_reduce_sum, 1) == [1.0]


def test_ranks_are_reused_between_launches():
    first = parlab.launch(workers.rank_and_size, 2)
    second = parlab.launch(workers.rank_and_size, 2)
    assert [p for *_, p in first] == [p for *_, p in second]


def test_each_job_gets_a_fresh_process_group():
    # a job that makes subgroups, or even destroys the group, leaves nothing behind
    assert parlab.launch(workers.make_subgroup_and_destroy, 3) == [3.0] * 3
    assert parlab.launch(workers.all_reduce_sum, 3) == [6.0] * 3


def test_rank_output_is_forwarded_with_prefix(capsys):
    parlab.launch(workers.print_lines, 2)
    out = capsys.readouterr().out
    for r in (0, 1):
        for i in (0, 1):
            assert f"[rank {r}] line {i} from {r}" in out


# --- failures ----------------------------------------------------------------------

def test_raising_rank_gives_launch_error_fast_and_stops_the_others():
    parlab.launch(workers.all_reduce_sum, 4)
    old = pids_of(4)
    t0 = time.monotonic()
    with pytest.raises(parlab.LaunchError) as info:
        parlab.launch(workers.raise_on, 4, 2, "boom at rank two", timeout=60)
    assert time.monotonic() - t0 < 5
    err = info.value
    assert err.rank == 2 and not isinstance(err, parlab.LaunchTimeout)
    assert "boom at rank two" in str(err) and "RuntimeError" in err.remote_traceback
    assert "workers.py" in str(err)  # the remote traceback, with the user's frame
    assert wait_dead(old, 5) == []  # ranks 0, 1, 3 were blocked in all_reduce: killed
    # the next launch rebuilds the pool and works
    assert parlab.launch(workers.all_reduce_sum, 4) == [10.0] * 4
    assert set(pids_of(4)).isdisjoint(old)


def test_rank_that_dies_is_reported():
    with pytest.raises(parlab.LaunchError, match=r"rank 1 died .*exit code 3"):
        parlab.launch(workers.exit_hard, 3, 1, timeout=60)
    assert parlab.launch(workers.all_reduce_sum, 3) == [6.0] * 3


def test_unpicklable_result_is_a_launch_error():
    with pytest.raises(parlab.LaunchError, match="pickle"):
        parlab.launch(workers.not_picklable_result, 2)


def test_hang_times_out_naming_ranks_and_blocking_op():
    t0 = time.monotonic()
    with pytest.raises(parlab.LaunchTimeout) as info:
        parlab.launch(workers.hang_in_traced_all_reduce, 3, 0, timeout=2.0)
    elapsed = time.monotonic() - t0
    assert 2.0 <= elapsed < 7
    err = info.value
    assert isinstance(err, parlab.LaunchError) and err.ranks == [0, 1, 2]
    # ranks 1 and 2 are inside the traced op; rank 0 sleeps on its own line
    for r in (1, 2):
        assert "my_all_reduce" in err.blocked_in[r]
        assert "hang_in_traced_all_reduce" in err.blocked_in[r]
    assert "time.sleep" in workers_line(err.blocked_in[0])
    assert "still running: [0, 1, 2]" in str(err)
    assert parlab.launch(workers.all_reduce_sum, 3) == [6.0] * 3


def test_collective_skipped_by_one_rank_times_out_with_a_hint():
    with pytest.raises(parlab.LaunchTimeout) as info:
        parlab.launch(workers.forget_collective_on_rank0, 3, timeout=2.0)
    assert info.value.ranks == [1, 2]
    assert "ranks [0] had already finished" in str(info.value)
    assert "forget_collective_on_rank0" in info.value.blocked_in[1]
    assert parlab.launch(workers.all_reduce_sum, 3) == [6.0] * 3


def workers_line(where: str) -> str:
    """The source line that a 'File ..., line N in fn' frame points to."""
    import re
    m = re.search(r'File "([^"]+)", line (\d+)', where)
    assert m, where
    with open(m.group(1)) as f:
        return f.readlines()[int(m.group(2)) - 1]


def test_caller_environment_reaches_the_ranks(monkeypatch):
    parlab.launch(workers.rank_and_size, 2)  # ranks (and the fork server) already running
    monkeypatch.setenv("PARLAB_TEST_VALUE", "set after start")
    assert parlab.launch(workers.getenv, 2, "PARLAB_TEST_VALUE") == ["set after start"] * 2
    assert parlab.launch(workers.getenv, 2, "RANK") == ["0", "1"]  # never the caller's


def test_rank_that_cannot_start_is_reported(monkeypatch):
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "no-such-interface0")
    parlab.shutdown()
    with pytest.raises(parlab.LaunchError, match="failed to start") as info:
        parlab.launch(workers.rank_and_size, 2, timeout=30)
    assert "no-such-interface0" in str(info.value) or "interface" in str(info.value).lower()
    monkeypatch.delenv("GLOO_SOCKET_IFNAME")
    assert [r for r, _, _ in parlab.launch(workers.rank_and_size, 2)] == [0, 1]


# --- bad arguments: ValueError before any process starts -------------------------

def _closure():
    def inner():
        return 1
    return inner


@pytest.mark.parametrize("world_size", [0, -1, 1.5, True, "2", None, 10_000])
def test_bad_world_size(world_size):
    before = parlab.pool_info()
    with pytest.raises(ValueError, match="world_size"):
        parlab.launch(workers.rank_and_size, world_size)
    assert parlab.pool_info() == before


@pytest.mark.parametrize("fn, match", [
    (lambda: 0, "lambda or closure"),
    (_closure(), "lambda or closure"),
    (42, "callable"),
])
def test_bad_function(fn, match):
    with pytest.raises(ValueError, match=match):
        parlab.launch(fn, 2)


def test_function_defined_in_a_notebook(monkeypatch):
    import types
    notebook_main = types.ModuleType("__main__")  # like IPython's: no __file__
    exec("def f():\n    return 1", notebook_main.__dict__)
    monkeypatch.setitem(sys.modules, "__main__", notebook_main)
    with pytest.raises(ValueError, match="notebook or REPL"):
        parlab.launch(notebook_main.f, 2)


@pytest.mark.parametrize("kwargs, match", [
    ({"timeout": 0}, "timeout"), ({"timeout": -1}, "timeout"), ({"timeout": "5"}, "timeout"),
    ({"timeout": float("inf")}, "timeout"), ({"timeout": float("nan")}, "timeout"),
    ({"backend": "mpi"}, "backend"),
    ({"backend": "nccl"}, "one GPU per rank"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        parlab.launch(workers.rank_and_size, 2, **kwargs)


def test_unpicklable_argument():
    with pytest.raises(ValueError, match="cannot send the job"):
        parlab.launch(workers.echo, 2, threading.Lock())


# --- %%ranks cells -----------------------------------------------------------------

def test_cells_keep_their_namespace_and_group():
    out = parlab.run_on_ranks("g = dist.new_group([0, 1])\nx = torch.tensor([rank + 1.0])\n"
                              "dist.all_reduce(x, group=g)\nprint('sum', x.item())\nx", 2)
    assert [o["output"] for o in out] == ["sum 3.0\n"] * 2
    assert [o["value"] for o in out] == ["tensor([3.])"] * 2
    out = parlab.run_on_ranks("dist.all_reduce(x, group=g)\nx.item()", 2)  # same g, same x
    assert [o["value"] for o in out] == ["6.0"] * 2


def test_cell_error_on_every_rank_keeps_the_session():
    parlab.run_on_ranks("y = rank", 2)
    pids = pids_of(2)
    out = parlab.run_on_ranks("undefined_name + 1", 2)
    assert all("NameError" in o["error"] for o in out)
    assert pids_of(2) == pids
    assert [o["value"] for o in parlab.run_on_ranks("y", 2)] == ["0", "1"]


def test_cell_error_on_one_rank_while_others_block():
    with pytest.raises(parlab.LaunchError, match="ZeroDivisionError"):
        parlab.run_on_ranks("if rank == 1:\n    1 / 0\nx = torch.ones(1)\ndist.all_reduce(x)",
                            2, timeout=30)
    assert [o["value"] for o in parlab.run_on_ranks("rank", 2)] == ["0", "1"]


def test_cell_syntax_error_is_raised_here():
    with pytest.raises(SyntaxError):
        parlab.run_on_ranks("def (:", 2)


# --- code changes restart the ranks -----------------------------------------------

def test_edited_module_is_picked_up(tmp_path, monkeypatch):
    mod = tmp_path / "edited_worker.py"
    mod.write_text("def value():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import edited_worker
    assert parlab.launch(edited_worker.value, 2) == [1, 1]
    mod.write_text("def value():\n    return 2\n")
    st = os.stat(mod)
    os.utime(mod, (st.st_atime, st.st_mtime + 5))
    assert parlab.launch(edited_worker.value, 2) == [2, 2]


# --- what is left behind -----------------------------------------------------------

def _listening_sockets(pid: int) -> list[str]:
    """Local addresses of TCP sockets in LISTEN state owned by ``pid`` (Linux /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                if parts[3] == "0A" and parts[9] in inodes:  # 0A = LISTEN
                    found.append(parts[1])
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_only_loopback_sockets_and_none_after_shutdown():
    parlab.launch(workers.all_reduce_sum, 3)
    pids = pids_of(3)
    addresses = [a for pid in [os.getpid()] + pids for a in _listening_sockets(pid)]
    assert addresses, "expected gloo to listen somewhere"
    for a in addresses:  # hex IP:port; 0100007F = 127.0.0.1
        assert a.split(":")[0] in ("0100007F", "00000000000000000000000001000000"), addresses
    parlab.shutdown()
    assert parlab.pool_info() == []
    assert wait_dead(pids) == []
    assert _listening_sockets(os.getpid()) == []


SCRIPT = textwrap.dedent("""
    import os, sys, time
    import parlab, workers
    parlab.launch(workers.all_reduce_sum, 3)
    print("PIDS", *[p for i in parlab.pool_info() for p in i["pids"]], flush=True)
    mode = sys.argv[1]
    if mode == "hang":
        parlab.launch(workers.sleep, 3, 3600, timeout=3600)
    elif mode == "sleep":
        time.sleep(3600)
    print("EXITING", flush=True)
""")


def _run_script(tmp_path, mode):
    script = tmp_path / "driver.py"
    script.write_text(SCRIPT)  # no __main__ guard on purpose: ranks must not re-run it
    env = dict(ENV, TMPDIR=str(tmp_path / "tmp"))
    os.makedirs(env["TMPDIR"])
    proc = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    assert line.startswith("PIDS"), line + proc.stderr.read()
    return proc, [int(p) for p in line.split()[1:]], env["TMPDIR"]


def test_ctrl_c_stops_the_job_and_its_ranks(tmp_path):
    proc, pids, tmp = _run_script(tmp_path, "hang")
    time.sleep(1.0)  # the hanging job is running
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:  # the Ctrl-C did not stop it: leave no orphan behind
        for pid in [proc.pid, *pids]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("the driver ignored Ctrl-C (is SIGINT ignored where the tests "
                             "run? a shell's background job ignores it)") from None
    assert "KeyboardInterrupt" in err
    assert wait_dead(pids) == []
    assert os.listdir(tmp) == []  # no temp files


def test_clean_exit_leaves_nothing(tmp_path):
    proc, pids, tmp = _run_script(tmp_path, "exit")
    proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert wait_dead(pids) == []
    assert os.listdir(tmp) == []


def test_kill_9_of_the_caller_takes_the_ranks_with_it(tmp_path):
    proc, pids, tmp = _run_script(tmp_path, "sleep")
    proc.kill()
    proc.communicate(timeout=10)
    assert wait_dead(pids) == []
    deadline = time.monotonic() + 5
    while os.listdir(tmp) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.listdir(tmp) == []


def test_function_in_a_guarded_script(tmp_path):
    script = tmp_path / "guarded.py"
    script.write_text(textwrap.dedent("""
        import torch, torch.distributed as dist, parlab
        def double_rank():
            return 2 * dist.get_rank()
        if __name__ == "__main__":
            print(parlab.launch(double_rank, 3))
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=ENV, timeout=60)
    assert out.stdout.strip() == "[0, 2, 4]", out.stderr


def test_under_torchrun_every_rank_gets_all_results(tmp_path):
    script = tmp_path / "under_torchrun.py"
    script.write_text(textwrap.dedent("""
        import os, parlab, workers
        res = parlab.launch(workers.all_reduce_sum, 2, 1.0)
        ranks = parlab.launch(workers.rank_and_size, 2)
        line = f"RESULT {os.environ['RANK']} {res} {[r[:2] for r in ranks]}\\n"
        os.write(1, line.encode())  # one write: the two ranks share this pipe
    """))
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc-per-node", "2", str(script)],
                         capture_output=True, text=True, env=ENV, timeout=120)
    lines = sorted(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT"))
    assert lines == ["RESULT 0 [3.0, 3.0] [(0, 2), (1, 2)]",
                     "RESULT 1 [3.0, 3.0] [(0, 2), (1, 2)]"], out.stdout + out.stderr


def test_pools_are_bounded(monkeypatch):
    monkeypatch.setattr(launch_mod, "MAX_POOLED_RANKS", 6)
    parlab.shutdown()
    parlab.launch(workers.rank_and_size, 2)
    parlab.launch(workers.rank_and_size, 3)
    assert sorted(i["world_size"] for i in parlab.pool_info()) == [2, 3]
    parlab.launch(workers.rank_and_size, 4)  # 2 + 3 + 4 > 6: the oldest pools go
    assert sorted(i["world_size"] for i in parlab.pool_info()) == [4]


def test_job_pickles_once():
    # the payload is pickled in the caller, so an argument that fails to pickle
    # never reaches a rank, and what reaches them is exactly what was sent
    payload = launch_mod._pickle_job(workers.echo, (1,), {})
    assert pickle.loads(payload)[0] is workers.echo
