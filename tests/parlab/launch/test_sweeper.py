"""The watcher's sweep (sweeper.py) outlasts a dying rank that re-creates its store file.

A caller killed at its rendezvous leaves rank 0 polling the FileStore for a moment,
and each poll opens the store file with O_CREAT: one landing between rmtree's unlinks
and its rmdir keeps the directory (CI saw one left after a SIGTERM at rendezvous)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from parlab.launch import processes, sweeper


@pytest.fixture
def stale_dir(tmp_path, monkeypatch):
    """A rendezvous directory whose owner (a finished process) is gone, in a private TMPDIR."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    path = tmp_path / f"parlab-rdzv-{proc.pid}-0-abcd1234"
    path.mkdir()
    (path / "store").write_bytes(b"x")
    return path


def racing_rmtree(monkeypatch, races: int):
    """rmtree as it goes while a dying rank writes: its first ``races`` calls leave the
    directory behind with a store file in it."""
    real, calls = shutil.rmtree, []

    def rmtree(path, ignore_errors=False, **kw):
        real(path, ignore_errors=True)
        calls.append(path)
        if len(calls) <= races:
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, "store"), "wb") as f:
                f.write(b"re-created by a rank")
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    return calls


def test_one_sweep_loses_the_race(stale_dir, monkeypatch):
    racing_rmtree(monkeypatch, races=1)
    processes.sweep_stale_dirs()
    assert stale_dir.exists()  # what the watcher left before it swept until settled


def test_the_watcher_sweeps_until_the_directory_stays_gone(stale_dir, monkeypatch):
    calls = racing_rmtree(monkeypatch, races=3)
    sweeper.sweep_until_settled(processes.sweep_stale_dirs, settle=5.0)
    assert not stale_dir.exists()
    assert len(calls) == 4


def test_a_directory_that_never_goes_costs_the_settle_time_only(stale_dir, monkeypatch):
    racing_rmtree(monkeypatch, races=10**9)
    start = time.monotonic()
    sweeper.sweep_until_settled(processes.sweep_stale_dirs, settle=0.5)
    assert 0.4 < time.monotonic() - start < 3.0
    assert stale_dir.exists()


def test_nothing_stale_is_one_sweep(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / f"parlab-rdzv-{processes.owner_tag()}-live").mkdir()  # ours: alive
    start = time.monotonic()
    sweeper.sweep_until_settled(processes.sweep_stale_dirs, settle=5.0)
    assert time.monotonic() - start < 1.0
    assert (tmp_path / f"parlab-rdzv-{processes.owner_tag()}-live").exists()
