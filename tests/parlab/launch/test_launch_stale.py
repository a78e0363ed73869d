"""Stale code (docs/design.md): when a source the ranks imported changes, the next
launch restarts them; the list of parlab's sources is kept between launches (a warm
re-run no longer walks the tree) and follows files added or removed."""

from __future__ import annotations

import os
import sys
import time

import pytest

import parlab

launch_mod = sys.modules["parlab.launch"]
pytestmark = pytest.mark.timeout(60)


def test_the_source_list_follows_added_and_removed_files(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("")
    (pkg / "sub" / "b.py").write_text("")
    names = lambda: sorted(os.path.relpath(f, tmp_path) for f in launch_mod._py_files(str(pkg)))
    assert names() == ["pkg/a.py", "pkg/sub/b.py"]
    assert launch_mod._py_files(str(pkg)) is launch_mod._py_files(str(pkg))  # kept, not walked
    time.sleep(0.05)  # directory times tick in milliseconds: let the next tick come
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.cpython.py").write_text("")  # not a source
    (pkg / "sub" / "c.py").write_text("")
    (pkg / "a.py").unlink()
    assert names() == ["pkg/sub/b.py", "pkg/sub/c.py"]


def test_an_edited_module_restarts_the_ranks(tmp_path, monkeypatch, capfd):
    (tmp_path / "stale_worker.py").write_text("import os\ndef pid():\n    return os.getpid()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import stale_worker
    first = parlab.launch(stale_worker.pid, 2)
    assert parlab.launch(stale_worker.pid, 2) == first  # unchanged: the same ranks
    later = time.time() + 5
    os.utime(tmp_path / "stale_worker.py", (later, later))  # as an editor's save would
    second = parlab.launch(stale_worker.pid, 2)
    assert not set(second) & set(first)
    assert "code changed" in capfd.readouterr().err
    parlab.shutdown()
