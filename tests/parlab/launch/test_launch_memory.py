"""The launcher's memory budget (issue 15): the limit it finds, idle pools closed to make
room, a launch that cannot fit refused in words, ranks that give memory back; and,
when PARLAB_MEASURE_NOTEBOOKS=1, every notebook's peak PSS under nbval."""

import gc
import glob
import os
import sys
import time

import pytest
import torch
import torch.distributed as dist

import parlab
from parlab import hardware as hw
from pss import GIB, ROOT, descendants, measure_notebook, pss_bytes

launch_mod = sys.modules["parlab.launch"]
budget = sys.modules["parlab.launch.budget"]
MiB = 2 ** 20
NOTEBOOK_BUDGET = 1.8 * GIB  # a free Binder session has ~2 GB; the Jupyter server needs some


# ---- workers (the ranks import them from this module) ----------------------------------------

_kept = []


def leave_garbage(mib):
    """Leave a reference cycle holding ``mib`` MiB, aged into the oldest generation, so
    only a full collection frees it (as autograd graphs and hooked modules do)."""
    cycle = [torch.ones(mib * MiB // 4)]
    cycle.append(cycle)
    _kept.append(cycle)
    gc.collect()  # survives: now in the oldest generation
    _kept.clear()  # unreachable from here on
    return os.getpid()


def train_small():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(3):
        loss = model(torch.randn(8, 64)).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        opt.zero_grad()
    return os.getpid()


def dynamo_was_preloaded():
    return "torch._dynamo" in sys.modules


def rank_pid():
    return os.getpid()


# ---- the limit found -------------------------------------------------------------------------

def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cgroup_v2_limit(tmp_path):
    write(tmp_path / "cgroup", "0::/\n")
    write(tmp_path / "fs" / "memory.max", "2147483648\n")
    limit, source = hw.cgroup_memory_limit(str(tmp_path / "cgroup"), str(tmp_path / "fs"))
    assert limit == 2 ** 31 and source.startswith("cgroup v2") and source.endswith("memory.max")


def test_cgroup_v2_max_is_no_limit(tmp_path):
    write(tmp_path / "cgroup", "0::/\n")
    write(tmp_path / "fs" / "memory.max", "max\n")
    assert hw.cgroup_memory_limit(str(tmp_path / "cgroup"), str(tmp_path / "fs")) is None


def test_cgroup_v2_limit_on_an_ancestor_counts(tmp_path):
    write(tmp_path / "cgroup", "0::/user.slice/session-1.scope\n")
    write(tmp_path / "fs" / "user.slice" / "memory.max", "1073741824\n")
    write(tmp_path / "fs" / "user.slice" / "session-1.scope" / "memory.max", "max\n")
    limit, source = hw.cgroup_memory_limit(str(tmp_path / "cgroup"), str(tmp_path / "fs"))
    assert limit == 2 ** 30 and "user.slice/memory.max" in source


@pytest.mark.parametrize("text, expected", [("1073741824\n", 2 ** 30),
                                            ("9223372036854771712\n", None),  # v1's "unlimited"
                                            ("garbage", None)])
def test_cgroup_v1_limit(tmp_path, text, expected):
    write(tmp_path / "cgroup", "5:cpu,cpuacct:/\n4:memory:/docker/abc\n0::/\n")
    write(tmp_path / "fs" / "memory" / "memory.limit_in_bytes", text)  # no docker/abc dir here
    found = hw.cgroup_memory_limit(str(tmp_path / "cgroup"), str(tmp_path / "fs"))
    assert (found and found[0]) == expected
    if expected:
        assert found[1].startswith("cgroup v1") and found[1].endswith("memory.limit_in_bytes")


def test_no_cgroup_files_at_all(tmp_path):
    assert hw.cgroup_memory_limit(str(tmp_path / "absent"), str(tmp_path / "absent")) is None


def test_memory_limit_is_the_cgroup_below_the_ram_else_the_ram(monkeypatch):
    ram = int(hw._memory_gb() * 2 ** 30)
    monkeypatch.setattr(hw, "cgroup_memory_limit", lambda: (2 ** 31, "cgroup v2 /x/memory.max"))
    assert hw.memory_limit() == (2 ** 31, "cgroup v2 /x/memory.max")
    monkeypatch.setattr(hw, "cgroup_memory_limit", lambda: None)
    assert hw.memory_limit() == (ram, "physical RAM")
    monkeypatch.setattr(hw, "cgroup_memory_limit", lambda: (ram * 2, "cgroup v2 /x/memory.max"))
    assert hw.memory_limit() == (ram, "physical RAM")  # a limit above the RAM limits nothing


def test_describe_prints_the_limit_and_the_budget(monkeypatch):
    monkeypatch.delenv("PARLAB_MEMORY_BUDGET", raising=False)
    monkeypatch.setattr(hw, "memory_limit", lambda: (2 ** 31, "cgroup v2 /sys/fs/cgroup/memory.max"))
    hw.detect.cache_clear()
    try:
        text = hw.describe(4)
    finally:
        hw.detect.cache_clear()
    assert "memory limit: 2.0 GiB (cgroup v2 /sys/fs/cgroup/memory.max)" in text
    assert "within 1.7 GiB (85%)" in text


# ---- the budget ------------------------------------------------------------------------------

def test_default_budget_is_a_fraction_of_the_limit(monkeypatch):
    monkeypatch.delenv("PARLAB_MEMORY_BUDGET", raising=False)
    monkeypatch.setattr(hw, "memory_limit", lambda: (2 ** 31, "cgroup v2 /sys/fs/cgroup/memory.max"))
    value, source = budget.budget()  # what the launcher uses: hardware.memory_budget()
    assert value == int(0.85 * 2 ** 31) and "2.0 GiB memory limit (cgroup v2" in source


@pytest.mark.parametrize("text, value", [("1.5G", int(1.5 * GIB)), ("1500M", 1500 * MiB),
                                         ("1500MiB", 1500 * MiB), ("123456", 123456),
                                         ("off", None), ("none", None)])
def test_budget_from_the_environment(monkeypatch, text, value):
    monkeypatch.setenv("PARLAB_MEMORY_BUDGET", text)
    assert budget.budget()[0] == value


@pytest.mark.parametrize("text", ["lots", "-1G", "inf", "1.5X"])
def test_bad_budget_is_a_value_error_before_any_rank_starts(monkeypatch, text):
    parlab.shutdown()
    monkeypatch.setenv("PARLAB_MEMORY_BUDGET", text)
    before = set(descendants(os.getpid()))
    with pytest.raises(ValueError, match="PARLAB_MEMORY_BUDGET"):
        parlab.launch(rank_pid, 2)
    assert parlab.pool_info() == []
    assert set(descendants(os.getpid())) <= before


def test_session_bytes_sums_this_process_and_its_ranks():
    pids = parlab.launch(rank_pid, 2)
    ranks = sum(pss_bytes(p) for p in pids)
    used = launch_mod.memory_budget()["used"]
    assert ranks > 0 and used > ranks + pss_bytes(os.getpid()) - 16 * MiB  # read at other moments


# ---- which pools are closed ------------------------------------------------------------------

R = 100 * MiB  # a modelled rank
BASE = 500 * MiB  # a modelled caller


@pytest.fixture
def modelled_memory(monkeypatch):
    """Memory as a model (BASE + R per pooled rank) so the policy is tested exactly."""
    parlab.shutdown()
    monkeypatch.setattr(budget, "session_bytes", lambda pooled: BASE + pooled * R)
    monkeypatch.setattr(budget, "ranks_bytes", lambda pids: len(pids) * R)
    monkeypatch.setattr(budget, "new_pool_bytes", lambda ws: ws * R)
    monkeypatch.setattr(budget, "RANK_BYTES", R)
    monkeypatch.setenv("PARLAB_MEMORY_BUDGET", str(BASE + 7 * R))
    yield
    parlab.shutdown()


def sizes():
    return sorted(i["world_size"] for i in parlab.pool_info())


def test_idle_pools_of_other_sizes_are_closed_oldest_first(modelled_memory):
    parlab.launch(rank_pid, 2)
    parlab.launch(rank_pid, 3)
    assert sizes() == [2, 3]  # 5 R: both fit
    parlab.launch(rank_pid, 4)  # 5 R + 4 R > 7 R: the oldest (2) goes, then 3 R + 4 R fits
    assert sizes() == [3, 4]
    parlab.launch(rank_pid, 3)  # a pool that exists is reused: nothing closes
    assert sizes() == [3, 4]
    parlab.launch(rank_pid, 1)  # the least recently used now is 4
    assert sizes() == [1, 3]


def test_too_many_ranks_are_refused_in_words_and_the_other_pools_kept(modelled_memory):
    parlab.launch(rank_pid, 3)
    pools = parlab.pool_info()
    before = set(descendants(os.getpid()))
    with pytest.raises(ValueError) as e:
        parlab.launch(rank_pid, 8)  # 8 R > 7 R even with every other pool closed
    assert isinstance(e.value, launch_mod.MemoryBudgetError)
    msg = str(e.value)
    assert "world_size=8" in msg and "at most 7 ranks fit" in msg and "PARLAB_MEMORY_BUDGET" in msg
    assert parlab.pool_info() == pools and set(descendants(os.getpid())) <= before
    assert parlab.launch(rank_pid, 7)  # what it said fits does


def test_a_real_budget_refuses_before_starting_anything(monkeypatch):
    parlab.shutdown()
    monkeypatch.setenv("PARLAB_MEMORY_BUDGET", "64M")  # less than this process alone
    with pytest.raises(launch_mod.MemoryBudgetError, match=r"world_size=2 .*at most 0 ranks"):
        parlab.launch(rank_pid, 2)
    assert parlab.pool_info() == []


# ---- what a rank holds -----------------------------------------------------------------------

def wait_below(pid, limit, seconds=10.0):
    deadline = time.monotonic() + seconds
    while (now := pss_bytes(pid)) > limit and time.monotonic() < deadline:
        time.sleep(0.1)
    return now


def test_a_rank_gives_back_the_garbage_a_job_left():
    parlab.shutdown()
    for _ in range(3):  # again if an edited parlab source restarted the ranks in between
        pids = parlab.launch(leave_garbage, 2, 1)  # warm-up: what the job itself costs
        idle = [wait_below(p, 0, 0.5) for p in pids]
        if parlab.launch(leave_garbage, 2, 64) == pids:
            break
    for pid, before in zip(pids, idle):
        assert wait_below(pid, before + 16 * MiB) <= before + 16 * MiB


def test_ranks_share_what_the_fork_server_imported():
    parlab.shutdown()
    assert parlab.launch(dynamo_was_preloaded, 4) == [True] * 4
    pids = parlab.launch(train_small, 4)
    time.sleep(0.5)  # the ranks renew their group and release memory after replying
    for p in pids:  # what the budget assumes a rank costs holds after a training job
        assert pss_bytes(p) < budget.RANK_BYTES, (p, pss_bytes(p) / MiB)


# ---- the notebooks (opt-in: each runs again under nbval, minutes) ----------------------------

@pytest.mark.skipif(not os.environ.get("PARLAB_MEASURE_NOTEBOOKS"),
                    reason="set PARLAB_MEASURE_NOTEBOOKS=1 (bench/memory.py prints the same)")
@pytest.mark.timeout(900)
@pytest.mark.parametrize("notebook", sorted(os.path.relpath(p, ROOT) for p in
                                            glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb"))))
def test_notebook_fits_a_free_binder_session(notebook):
    r = measure_notebook(notebook)
    assert r.ok, r.output[-3000:]
    assert r.peak_bytes <= NOTEBOOK_BUDGET, (f"{notebook}: peak {r.peak_gib:.2f} GiB", r.roles())
