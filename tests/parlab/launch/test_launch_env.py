"""A stray launcher environment (issue 35): RANK/WORLD_SIZE left over in a shell made
``launch`` take itself for one torchrun worker, wait out its whole timeout in
init_process_group, and skip the cap on local ranks. Now only a whole, consistent
torchrun environment counts (torchrun.py), anything else is a ValueError naming the
variables before any process starts, and the cap always holds."""

from __future__ import annotations

import sys

import pytest
import workers
import workers_interrupts

import parlab

torchrun = sys.modules["parlab.launch.torchrun"]
launch_mod = sys.modules["parlab.launch"]
pytestmark = pytest.mark.timeout(120)

TORCHRUN = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
            "TORCHELASTIC_RUN_ID": "none"}
LAUNCHER_VARS = list(TORCHRUN) + ["PARLAB_RANK_PID"]


@pytest.fixture
def env(monkeypatch):
    for k in LAUNCHER_VARS:
        monkeypatch.delenv(k, raising=False)

    def set_env(**values):
        for k, v in values.items():
            monkeypatch.setenv(k, v)
    return set_env


@pytest.mark.parametrize("stray, named", [
    ({"RANK": "0", "WORLD_SIZE": "2"}, ["RANK='0'", "WORLD_SIZE='2'", "MASTER_ADDR",
                                         "MASTER_PORT", "LOCAL_RANK or TORCHELASTIC_RUN_ID"]),
    ({"WORLD_SIZE": "4"}, ["WORLD_SIZE='4'", "RANK", "MASTER_PORT"]),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "x", "MASTER_PORT": "1"},
     ["LOCAL_RANK or TORCHELASTIC_RUN_ID"]),
    (dict(TORCHRUN, RANK="2"), ["RANK='2'", "WORLD_SIZE='2'", "0 <= RANK < WORLD_SIZE"]),
    (dict(TORCHRUN, RANK="one"), ["RANK='one'", "integer"]),
    (dict(TORCHRUN, LOCAL_RANK="3"), ["LOCAL_RANK='3'"]),
    (dict(TORCHRUN, MASTER_PORT="99999"), ["MASTER_PORT='99999'"]),
])
def test_a_stray_launcher_environment_is_refused_before_anything_starts(env, stray, named):
    env(**stray)
    before = parlab.pool_info()
    for call in (lambda: parlab.launch(workers.rank_and_size, 2, timeout=5),
                 lambda: parlab.run_on_ranks("rank", 2, timeout=5)):
        with pytest.raises(ValueError) as e:
            call()
        for name in named:
            assert name in str(e.value), str(e.value)
    assert not torchrun.under_torchrun()
    assert parlab.pool_info() == before  # nothing started, nothing closed


def test_a_whole_torchrun_environment_is_torchrun(env):
    env(**TORCHRUN)
    assert torchrun.under_torchrun()
    env(TORCHELASTIC_RUN_ID="", LOCAL_RANK="0")  # LOCAL_RANK alone will do
    assert torchrun.under_torchrun()


def test_the_cap_on_local_ranks_holds_whatever_the_environment(env):
    too_many = launch_mod.MAX_LOCAL_RANKS + 1
    for values in ({}, {"RANK": "0", "WORLD_SIZE": str(too_many)}, TORCHRUN):
        env(**values)
        with pytest.raises(ValueError, match="world_size|RANK"):
            parlab.launch(workers.rank_and_size, too_many, timeout=5)
    with pytest.raises(ValueError, match=f"world_size={too_many} exceeds the cap"):
        parlab.launch(workers.rank_and_size, too_many, timeout=5)  # (TORCHRUN still set)


def test_a_launch_from_inside_a_rank_still_runs_in_place(env):
    # a parlab rank marks itself (PARLAB_RANK_PID, its own pid): not a stray variable
    assert parlab.launch(workers_interrupts.nested_launch, 2) == [[(0, 2), (1, 2)]] * 2
