"""Has a source changed since the ranks started? The pool asks before every launch
(pool.py, stale; the registry in __init__.py restarts the ranks if so).

Stat-ing every watched file (parlab's ~130 sources and the function's module) took
a warm re-run 0.15-0.4 ms of the caller's time, the largest share of its checks. On
Linux the kernel can instead say which files in a directory were written, renamed,
created, removed or touched (inotify): reading that news is one read(2) per launch,
and only the files it names are stat-ed. The news is a hint; the mtime decides: a
file has changed only if its mtime differs from the one first seen, as before.

Every file is stat-ed on every launch, as before, where the kernel cannot tell:
not Linux, no inotify left (a per-user limit), a queue that overflowed, a watched
directory removed or moved, and files that are symbolic links (their target's
directory is elsewhere). A network file system (NFS) reports only the edits made
from this machine: ``PARLAB_WATCH=stat`` turns the news off.
"""

from __future__ import annotations

import os
import struct
import sys

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
WATCH = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
         | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
BLINDING = IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF  # stat everything
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name


class Sources:
    """The watched files' mtimes as first seen, and whether any has changed since."""

    def __init__(self):
        self.mtimes: dict[str, float] = {}
        self._always: list[str] = []  # stat-ed on every launch (symbolic links)
        self._dirs: dict[int, str] = {}  # watch descriptor -> directory
        self._heard: set[str] = set()  # files named by the news since the last look
        self._libc = None
        self._fd = None if os.environ.get("PARLAB_WATCH") == "stat" else _inotify()

    def watch(self, files: list[str]) -> None:
        """Remember these files' mtimes (first sight counts)."""
        for f in files:
            if f in self.mtimes:
                continue
            if os.path.islink(f):
                self._always.append(f)
            elif self._fd is not None:
                self._watch_dir(os.path.dirname(f))  # before the mtime: no edit falls between
            self.mtimes[f] = _mtime(f)

    def changed(self) -> bool:
        if self._fd is None or not self._read_news():
            return any(_mtime(f) != m for f, m in self.mtimes.items())
        heard, self._heard = self._heard, set()
        return any(_mtime(f) != self.mtimes[f] for f in list(heard) + self._always
                   if f in self.mtimes)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _watch_dir(self, d: str) -> None:
        if d in self._dirs.values():
            return
        wd = _libc().inotify_add_watch(self._fd, os.fsencode(d), WATCH)
        if wd < 0:  # out of watches: stat everything, as without inotify
            self.close()
        else:
            self._dirs[wd] = d

    def _read_news(self) -> bool:
        """Take in the kernel's news; False if it cannot be trusted any more."""
        while True:
            try:
                buf = os.read(self._fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                self.close()
                return False
            at = 0
            while at < len(buf):
                wd, mask, _, size = EVENT.unpack_from(buf, at)
                name = buf[at + EVENT.size: at + EVENT.size + size].split(b"\0", 1)[0]
                at += EVENT.size + size
                if mask & BLINDING or wd not in self._dirs:
                    self.close()
                    return False
                self._heard.add(os.path.join(self._dirs[wd], os.fsdecode(name)))


_loaded = []


def _libc():
    if not _loaded:
        import ctypes
        _loaded.append(ctypes.CDLL(None, use_errno=True))
    return _loaded[0]


def _inotify() -> int | None:
    """A non-blocking inotify descriptor, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fd = _libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, AttributeError):
        return None
    return fd if fd >= 0 else None


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
