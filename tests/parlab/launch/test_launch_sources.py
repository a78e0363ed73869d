"""The pool's question before every launch: has a source changed since the ranks
started (launch/sources.py)? Each way a file can change, with the kernel's news
(inotify) and without it (PARLAB_WATCH=stat); no process is started."""

import os

import pytest

from parlab.launch import sources


@pytest.fixture(params=["news", "stat"])
def watched(request, tmp_path, monkeypatch):
    if request.param == "stat":
        monkeypatch.setenv("PARLAB_WATCH", "stat")
    files = []
    for i in range(3):
        f = tmp_path / f"m{i}.py"
        f.write_text("x = 1\n")
        os.utime(f, (1, 1))  # an old mtime: any change below makes a new one
        files.append(str(f))
    s = sources.Sources()
    s.watch(files)
    yield s, files
    s.close()


def test_nothing_changed(watched):
    s, files = watched
    with open(os.path.join(os.path.dirname(files[0]), "notes.txt"), "w") as f:
        f.write("another file in the same directory")
    assert not s.changed()
    assert not s.changed()


def test_an_edit_in_place(watched):
    s, files = watched
    with open(files[1], "a") as f:
        f.write("y = 2\n")
    assert s.changed()


def test_a_file_replaced_by_a_rename(watched):
    s, files = watched
    new = files[2] + ".tmp"
    with open(new, "w") as f:
        f.write("x = 3\n")
    os.replace(new, files[2])  # how many editors save
    assert s.changed()


def test_touched_and_removed(watched):
    s, files = watched
    os.utime(files[0], (5, 5))
    assert s.changed()
    s2 = sources.Sources()
    s2.watch(files)
    os.remove(files[0])
    assert s2.changed()
    s2.close()


def test_first_sight_counts(watched):
    s, files = watched
    with open(files[0], "a") as f:
        f.write("y = 2\n")
    s.watch(files)  # seen again after the edit: still the first mtime
    assert s.changed()


def test_a_symbolic_link_is_stated_every_time(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    real = target / "m.py"
    real.write_text("x = 1\n")
    os.utime(real, (1, 1))
    link = tmp_path / "m.py"
    link.symlink_to(real)
    s = sources.Sources()
    s.watch([str(link)])
    assert not s.changed()
    real.write_text("x = 2\n")  # the link's directory hears nothing of this
    assert s.changed()
    s.close()


def test_without_inotify_everything_is_stated(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "_inotify", lambda: None)
    f = tmp_path / "m.py"
    f.write_text("x = 1\n")
    os.utime(f, (1, 1))
    s = sources.Sources()
    s.watch([str(f)])
    assert not s.changed()
    f.write_text("x = 2\n")
    assert s.changed()
