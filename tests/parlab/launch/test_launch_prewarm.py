"""The lab opens ready (launch/prewarm.py): importing parlab in a notebook's kernel starts
the fork server, the first launch forks its ranks from that one (never a second), and a
kernel that goes away takes it along. Elsewhere (scripts, tests, ranks, torchrun) and
with PARLAB_PREWARM=0 nothing starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import types

import pytest
from test_launch import wait_dead

import paths

from parlab.launch import prewarm
from parlab.launch.processes import mp_context

ROOT = str(paths.ROOT)
pytestmark = [pytest.mark.timeout(90),
              pytest.mark.skipif(mp_context().get_start_method() != "forkserver",
                                 reason="prewarm starts a fork server: forkserver only")]

# A fresh interpreter that imports parlab as a notebook's first cell would, then prints
# the fork server's pid and runs the rest of its script.
HEAD = """
import json, os, sys, time
t0 = time.perf_counter()
import parlab
import_s = time.perf_counter() - t0
from parlab.launch.processes import fork_server_pid, mp_context
from multiprocessing import resource_tracker
server = fork_server_pid(mp_context())
tracker = resource_tracker._resource_tracker._pid
print(json.dumps({"server": server, "tracker": tracker, "import_s": import_s}), flush=True)
"""


def python(script: str, prewarm_flag: str | None, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "lib"),
                                                       os.path.join(ROOT, "tests")]))
    env.pop("PARLAB_PREWARM", None)
    if prewarm_flag is not None:
        env["PARLAB_PREWARM"] = prewarm_flag
    return subprocess.Popen([sys.executable, "-c", HEAD + script], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def fake_kernel(monkeypatch, kernel=True):
    """Make this process look like an ipykernel (get_ipython().kernel exists)."""
    shell = types.SimpleNamespace(kernel=object()) if kernel else types.SimpleNamespace()
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", ipython)


@pytest.mark.parametrize("flag, kernel, torchrun, expected", [
    (None, True, False, True),  # a notebook's kernel: on
    (None, False, False, False),  # a script, a test, the CLI: off
    ("0", True, False, False),  # turned off
    ("off", True, False, False),
    ("1", False, False, True),  # forced on (bench/launcher.py, these tests)
    ("1", True, True, False),  # under torchrun this process is a rank: never
])
def test_prewarm_is_wanted_in_a_kernel_only(monkeypatch, flag, kernel, torchrun, expected):
    monkeypatch.delenv("PARLAB_PREWARM", raising=False)
    if flag is not None:
        monkeypatch.setenv("PARLAB_PREWARM", flag)
    if kernel:
        fake_kernel(monkeypatch)
    if torchrun:
        monkeypatch.setenv("RANK", "0")
        monkeypatch.setenv("WORLD_SIZE", "2")
    assert prewarm.wanted() is expected


def test_a_terminal_ipython_is_not_a_kernel(monkeypatch):
    fake_kernel(monkeypatch, kernel=False)
    monkeypatch.delenv("PARLAB_PREWARM", raising=False)
    assert prewarm.in_kernel() is False and prewarm.wanted() is False


def test_a_plain_script_starts_nothing():
    out, err = python("", None).communicate(timeout=60)
    assert json.loads(out.splitlines()[0])["server"] is None, err


def test_first_launch_after_import_reuses_the_early_fork_server():
    """The launch comes at once, while the server may still import torch: it waits for
    that server (no second one), and ranks that import parlab start none of their own."""
    p = python("""
import workers_isolation as w
parents = parlab.launch(w.parent_pid, 2)
def fork_servers_of(parent):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline").read().replace("\\0", " ")
            ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        if ppid == parent and "forkserver import main" in cmd:
            found.append(int(pid))
    return found
print(json.dumps({"parents": parents, "servers": fork_servers_of(os.getpid())}), flush=True)
""", "1")
    out, err = p.communicate(timeout=80)
    assert p.returncode == 0, err
    head, tail = (json.loads(line) for line in out.splitlines()[:2])
    assert head["server"] is not None, err
    assert tail["parents"] == [head["server"]] * 2, (head, tail)
    assert tail["servers"] == [head["server"]]  # this process started one fork server
    assert wait_dead([head["server"]], 30) == []  # gone with its caller


def test_a_kernel_killed_while_the_server_imports_torch_leaves_no_process():
    p = python("time.sleep(60)", "1")
    head = json.loads(p.stdout.readline())
    assert head["server"] is not None
    os.kill(p.pid, signal.SIGKILL)  # kill -9 of the kernel, the server still importing
    p.communicate(timeout=10)
    assert wait_dead([head["server"], head["tracker"]], 60) == []
