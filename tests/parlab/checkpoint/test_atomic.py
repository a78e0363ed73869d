"""Checkpoints are published whole and verified before they load: an interrupted save
(a writer that raises, a process killed mid-write) never damages the previous good one
and ``latest`` falls back to it; a truncated, missing or bit-flipped shard is refused by
name; a checkpoint of another config is refused naming the field. Each test first shows
that DCP on its own takes the same damage silently (or leaves it behind), so what the
test catches is the checking, not a crash of the damage itself."""

from __future__ import annotations

import dataclasses
import os
import signal
import struct
import time
import warnings

import pytest
import torch

from parlab.checkpoint import dcp

MARK = 1.2345678  # a value to find in a shard's bytes


def _state(value: float, step: int = 0) -> dict:
    w = torch.full((32, 32), value)
    w[3, 5] = MARK
    return {"model": {"w": w}, "train": dcp.train_state(step)}


def _empty() -> dict:
    return {"model": {"w": torch.zeros(32, 32)}, "train": dcp.train_state(0)}


def _shard(path: str) -> str:
    return os.path.join(path, "__0_0.distcp")


def _raw_load(state: dict, path: str) -> dict:
    """DCP's own load, with none of our checks: what the damage would do unchecked."""
    import torch.distributed.checkpoint as tdcp
    with dcp._quiet():
        tdcp.load(state, checkpoint_id=path)
    return state


@pytest.fixture
def two(tmp_path):
    """Good checkpoints at steps 2 and 4."""
    d = str(tmp_path)
    for step in (2, 4):
        dcp.save(_state(float(step), step), os.path.join(d, dcp.STEP_DIR.format(step)))
    return d, os.path.join(d, "step_00002"), os.path.join(d, "step_00004")


def test_a_save_is_published_whole_with_a_manifest(two):
    d, s2, s4 = two
    assert sorted(os.listdir(d)) == ["step_00002", "step_00004"]  # no sibling left
    m = dcp.verify(s4)
    assert set(m["files"]) == {".metadata", "__0_0.distcp"}
    assert sorted(os.listdir(s4)) == sorted([*m["files"], dcp.MANIFEST])
    got = dcp.load(_empty(), s4)
    assert float(got["model"]["w"][0, 0]) == 4.0 and int(got["train"]["step"]) == 4
    assert dcp.latest(d) == (4, s4)


class _Dies(Exception):
    pass


def _writer_that_dies(path):
    from torch.distributed.checkpoint import FileSystemWriter

    class Dies(FileSystemWriter):
        def write_data(self, plan, planner):
            super().write_data(plan, planner).wait()  # the shard is on disk
            raise _Dies("after the shard")
    return Dies(path)


@pytest.mark.parametrize("target", ["step_00006", "step_00004"])  # a new step; over the last
def test_a_save_that_raises_mid_write_leaves_the_previous_checkpoint_as_it_was(two, target):
    d, s2, s4 = two
    before = dcp.verify(s4)
    path = os.path.join(d, target)
    with pytest.raises(dcp.CheckpointError, match=r"not published.*rank 0: _Dies: after the shard"):
        dcp.save(_state(9.0, 9), path, writer=_writer_that_dies(path))
    assert sorted(os.listdir(d)) == ["step_00002", "step_00004"]
    assert dcp.verify(s4) == before
    assert float(dcp.load(_empty(), s4)["model"]["w"][0, 0]) == 4.0
    assert dcp.latest(d) == (4, s4)


def test_a_save_killed_mid_write_leaves_the_previous_checkpoint_and_latest_skips_the_rest(two):
    """A real death: a forked child SIGKILLs itself after writing its shard over step 4,
    before DCP's .metadata and our manifest; nothing cleans up."""
    d, s2, s4 = two
    before = dcp.verify(s4)
    from torch.distributed.checkpoint import FileSystemWriter

    class Killed(FileSystemWriter):
        def write_data(self, plan, planner):
            super().write_data(plan, planner).wait()
            os.kill(os.getpid(), signal.SIGKILL)

    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            dcp.save(_state(9.0, 9), s4, writer=Killed(s4))
        finally:
            os._exit(3)
    deadline = time.monotonic() + 30
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the child did not die")
    assert os.WIFSIGNALED(done[1]) and os.WTERMSIG(done[1]) == signal.SIGKILL
    left = [n for n in os.listdir(d) if n.startswith(".step_00004.tmp-")]
    assert len(left) == 1 and "__0_0.distcp" in os.listdir(os.path.join(d, left[0]))
    assert dcp.verify(s4) == before  # the old step 4, byte for byte
    found, skipped = dcp.latest(d, report=True)
    assert found == (4, s4)
    assert [(os.path.basename(p), "unpublished" in why) for p, why in skipped] == [(left[0], True)]
    assert dcp.clean(d) == [os.path.join(d, left[0])]
    assert sorted(os.listdir(d)) == ["step_00002", "step_00004"]


def test_a_replacement_whose_second_rename_fails_keeps_the_old_one(two, monkeypatch):
    """Replacing step 4 renames it aside, then the new one in: if the second rename fails,
    the old one is put back and the error says nothing was published."""
    d, s2, s4 = two
    before = dcp.verify(s4)
    real = os.rename

    def rename(a, b):
        if os.path.basename(a).startswith(".step_00004.tmp-"):
            raise OSError("no space for the directory entry")
        real(a, b)
    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(dcp.CheckpointError, match="not published.*no space"):
        dcp.save(_state(9.0, 9), s4)
    monkeypatch.undo()
    assert sorted(os.listdir(d)) == ["step_00002", "step_00004"]
    assert dcp.verify(s4) == before


def test_a_crash_between_the_two_renames_of_a_replacement_keeps_the_old_one(two):
    """Replacing step 4 renames it aside, then the new one in: dead between the two, the
    old one is found under its aside name and ``clean`` puts it back."""
    d, s2, s4 = two
    aside = os.path.join(d, ".step_00004.old-123-abc")
    os.rename(s4, aside)
    assert dcp.latest(d) == (4, aside)
    dcp.clean(d)
    assert dcp.latest(d) == (4, s4)


def _flip(path: str, value: float, bit: int) -> None:
    """Flip bit ``bit`` of the float32 ``value`` where it sits in the shard."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        at = data.find(struct.pack("<f", value))
        assert at >= 0, "the value is not in the shard's bytes"
        data[at + bit // 8] ^= 1 << (bit % 8)
        f.seek(0)
        f.write(data)


@pytest.mark.parametrize("bit", [0, 30])  # the lowest mantissa bit; an exponent bit
def test_a_flipped_bit_is_refused_naming_the_file_and_latest_falls_back(two, bit):
    d, s2, s4 = two
    _flip(_shard(s4), MARK, bit)
    unchecked = float(_raw_load(_empty(), s4)["model"]["w"][3, 5])  # loads, quietly wrong
    saved = struct.unpack("<f", struct.pack("<f", MARK))[0]
    assert unchecked != saved and (bit or abs(unchecked - saved) < 1e-6), unchecked
    assert dcp.complete(s4)  # the sizes still hold: only the checksum sees it
    with pytest.raises(dcp.CheckpointError, match=r"__0_0\.distcp: checksum mismatch"):
        dcp.load(_empty(), s4)
    with pytest.warns(UserWarning, match=r"skipped step_00004 \(.*__0_0\.distcp: checksum.*using step_00002"):
        assert dcp.latest(d) == (2, s2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dcp.latest(d, verify=False) == (4, s4)  # the cheap check reads no bytes


def test_a_truncated_shard_is_refused_by_its_size(two):
    d, s2, s4 = two
    size = os.path.getsize(_shard(s4))
    os.truncate(_shard(s4), size - 100)
    assert not dcp.complete(s4)
    with pytest.raises(dcp.CheckpointError, match=rf"__0_0\.distcp: {size - 100} bytes, the manifest says {size}"):
        dcp.load(_empty(), s4)
    with pytest.warns(UserWarning, match=r"skipped step_00004 \(__0_0\.distcp: \d+ bytes.*using step_00002"):
        found, skipped = dcp.latest(d, report=True)
    assert found == (2, s2) and [os.path.basename(p) for p, _ in skipped] == ["step_00004"]


@pytest.mark.parametrize("name", ["__0_0.distcp", ".metadata", dcp.MANIFEST])
def test_a_missing_file_is_refused_by_name(two, name):
    d, s2, s4 = two
    os.remove(os.path.join(s4, name))
    assert not dcp.complete(s4)
    with pytest.raises(dcp.CheckpointError, match=rf"{name}|no \{dcp.MANIFEST}"):
        dcp.load(_empty(), s4)
    with pytest.warns(UserWarning, match="skipped step_00004"):
        assert dcp.latest(d) == (2, s2)


def test_no_good_checkpoint_left_is_none_and_says_so(two):
    d, s2, s4 = two
    for p in (s2, s4):
        os.remove(_shard(p))
    with pytest.warns(UserWarning, match="no good checkpoint left"):
        assert dcp.latest(d) is None
    assert dcp.latest(os.path.join(d, "nowhere")) is None


# --- the saved run against the resuming one ------------------------------------------

@pytest.fixture(scope="module")
def two_layers(tmp_path_factory):
    from lessons.l08_checkpoints_and_failures import experiments as E
    from lessons.l08_checkpoints_and_failures.training import Layout, Spec, train_rank
    spec = Spec(E.TINY, Layout("one", 1), steps=3, save_at=(2,),
                directory=str(tmp_path_factory.mktemp("two_layers")))
    assert E.TINY.n_layers == 2
    return spec, train_rank(spec)["saved"][2]


def test_a_checkpoint_of_another_config_is_refused_naming_the_field(two_layers):
    from lessons.l08_checkpoints_and_failures.training import train_rank
    from parlab.checkpoint.state import training_state
    from parlab.model import GPT
    spec, path = two_layers
    one_layer = dataclasses.replace(spec.config, n_layers=1)
    # unchecked, DCP fills the 1-layer model from the 2-layer files without a word
    model = GPT(one_layer, 0)
    sd, _ = training_state(model, torch.optim.AdamW(model.parameters()))
    _raw_load({"model": sd}, path)
    resumed = dataclasses.replace(spec, config=one_layer, resume_from=path, save_at=())
    with pytest.raises(dcp.CheckpointMismatch, match=r"config\.n_layers: saved 2, this run 1"):
        train_rank(resumed)
    with pytest.raises(dcp.CheckpointMismatch, match=r"config\.n_layers"):  # asking to reshard does not help
        train_rank(dataclasses.replace(resumed, reshard=True))
    assert train_rank(dataclasses.replace(spec, resume_from=path, save_at=(), reshard=False))["start"] == 2


def test_a_layout_change_loads_only_when_asked():
    saved = {"config": {"n_layers": 2}, "layout": {"world_size": 2, "recipe": "ZeroRecipe"}}
    here = {"config": {"n_layers": 2}, "layout": {"world_size": 1, "recipe": "OneDevice"}}
    with pytest.raises(dcp.CheckpointMismatch, match=r"layout\.recipe: .*layout\.world_size: saved 2, this run 1; pass reshard=True"):
        dcp.check_run(saved, here)
    dcp.check_run(saved, here, reshard=True)
    with pytest.raises(dcp.CheckpointMismatch, match="records no config"):
        dcp.check_run(None, here, reshard=True)


# --- on two ranks: publish after an async write, a rank dying mid-write, verify shared --

def test_on_two_ranks_async_publish_rank_death_and_a_corrupt_shard(tmp_path):
    import workers_ckpt
    from parlab.launch import launch
    d = str(tmp_path)
    out = launch(workers_ckpt.interrupted_and_corrupt, 2, d, timeout=90)
    for rank, r in enumerate(out):
        assert not r["published_before_wait"] and r["published_after_wait"], r
        assert "disk gone" in r["rewrite"], r  # every rank hears of rank 1's failure
        assert r["kept"] == (4.0 + rank, 4), r  # the old step 4, not a mixture
        assert "__1_0.distcp: checksum mismatch" in r["corrupt"], r  # found by rank 1, told to both
    assert sorted(os.listdir(d)) == ["step_00002", "step_00004"]
