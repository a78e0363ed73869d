"""Pages the lessons write for the learner (a progress page, read-only section copies,
cheat sheets) are written whole: into a temporary file beside the target, then renamed
over it, so a reader (or an interrupted run) never sees half a page."""

from __future__ import annotations

import os


def write_whole(path, text: str) -> str:
    """``text`` into ``path`` (UTF-8) through a temporary file and a rename; returns ``path``."""
    path = os.fspath(path)
    tmp = os.path.join(os.path.dirname(path) or ".", f".{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
