"""The dry run: every strategy's per-rank code with the compute device standing in for a
GPU (parlab.launch.placement), on the CPU CI has. Each strategy equals the single device
through the same staging a GPU shared by several ranks uses (launch/devices.py), and a
CPU-only tensor planted in the model fails the run with a message naming it. Also: the
choice of backend and device for a given number of GPUs, and bad device arguments."""

from __future__ import annotations

import pytest
import workers_placement

import parlab
from parlab import data_parallel as dp
from parlab import pipeline_parallel as pp
from parlab import tensor_parallel as tp
from parlab.launch import LaunchError, devices, last_placement, on_device
from parlab.launch.cases import CFG, cases, compare, reference

QUICK = cases()


@pytest.mark.parametrize("name,run_fn,run,world_size", QUICK, ids=[c[0] for c in QUICK])
def test_every_strategy_runs_on_the_stand_in_device_and_equals_one_device(name, run_fn, run,
                                                                         world_size):
    with on_device("dry-run"):
        result = run_fn(run, world_size)
    assert last_placement()["device"] == "dry-run"
    diff = compare(result, reference(run))
    assert diff["ok"], (name, diff)


def test_the_strategies_cover_dp_zero_tp_pp_ep_cp():
    names = " ".join(c[0] for c in QUICK)
    for strategy in ("DP", "ZeRO", "TP", "PP", "EP", "CP"):
        assert strategy in names


def test_comm_device_is_the_stand_in_and_staged_send_recv_add_up():
    with on_device("dry-run"):
        out = parlab.launch(workers_placement.where_am_i, 2, timeout=60)
    assert [r["device"] for r in out] == ["cpu:0"] * 2
    assert all(r["sum"] == [3.0] * 5 for r in out)


def test_a_tensor_brought_back_with_cpu_is_on_the_host():
    with on_device("dry-run"):
        out = parlab.launch(workers_placement.brought_back, 2, timeout=60)
    assert out == [{"cpu()": True, 'to("cpu")': True, "host copy + device": "refused"}] * 2


# (each failure restarts the ranks: two plants, on two strategies, keep the test short)
PLANTED = [("arange_in_forward", pp, pp.PPRun(CFG, steps=1, batch_size=8), "torch.zeros"),
           ("cpu_attribute", tp, tp.TPRun(CFG, steps=1, batch_size=8), "torch.ones")]


@pytest.mark.parametrize("plant,strategy,run,made_by", PLANTED,
                         ids=[f"{p}-{s.__name__.split('.')[-1]}" for p, s, _, _ in PLANTED])
def test_a_planted_cpu_tensor_fails_the_dry_run_naming_it(plant, strategy, run, made_by):
    with on_device("dry-run"), pytest.raises(LaunchError) as caught:
        parlab.launch(workers_placement.train_planted, 2, strategy.train_worker, run, plant,
                      timeout=60)
    message = str(caught.value)
    assert "PlacementError" in message
    assert f"{made_by} without device=" in message  # what made it...
    assert "workers_placement.py" in message         # ...where...
    assert "Block" in message                        # ...and in which module's forward
    assert "Expected all tensors to be on the same device" in message


def test_the_planted_tensors_are_harmless_on_the_cpu():
    """So the failures above are the check's, not the plants' (they add 0, multiply by 1)."""
    run = dp.DPRun(CFG, steps=1, batch_size=8)
    for plant in workers_placement.PLANTS:
        with on_device("cpu"):
            out = parlab.launch(workers_placement.train_planted, 2, dp.train_worker, run, plant,
                                timeout=60)
        assert compare(dp.collect(run, out), reference(run))["ok"]


@pytest.mark.parametrize("gpus,world_size,backend,device,want", [
    (0, 4, None, "auto", "gloo"),
    (1, 4, None, "auto", "gloo+cuda"),     # the learner's one GPU: 4 ranks share it
    (2, 4, None, "auto", "gloo+cuda"),
    (4, 4, None, "auto", "nccl"),          # one GPU per rank
    (4, 4, "gloo", "auto", "gloo+cuda"),
    (1, 4, None, "cuda", "gloo+cuda"),
    (4, 2, None, "cpu", "gloo"),
    (0, 4, None, "dry-run", "gloo+dry-run"),
])
def test_the_backend_and_device_for_the_gpus_there_are(monkeypatch, gpus, world_size, backend,
                                                       device, want):
    monkeypatch.setattr(devices, "gpu_count", lambda: gpus)
    monkeypatch.setattr(devices, "_has_nccl", lambda: True)
    assert devices.choose(world_size, backend, device) == want


@pytest.mark.parametrize("kwargs,field", [({"device": "gpu"}, "device"),
                                          ({"device": "cuda"}, "device='cuda'"),
                                          ({"device": "dry-run", "backend": "nccl"}, "nccl"),
                                          ({"backend": "nccl"}, "backend='nccl'")])
def test_bad_device_arguments_are_refused_before_any_rank_starts(kwargs, field):
    with pytest.raises(ValueError, match=field):
        parlab.launch(workers_placement.where_am_i, 2, **kwargs)


def test_a_bad_parlab_device_is_named(monkeypatch):
    monkeypatch.setenv("PARLAB_DEVICE", "tpu")
    with pytest.raises(ValueError, match="PARLAB_DEVICE='tpu'"):
        parlab.launch(workers_placement.where_am_i, 2)


def test_the_gpu_script_says_there_is_no_gpu_and_exits_0(tmp_path):
    import json
    import subprocess
    import sys

    from paths import ROOT
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_all.py"), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "no CUDA GPU here" in p.stdout
    assert json.loads((tmp_path / "gpu_all.json").read_text())["env"]["gpu"] is False
