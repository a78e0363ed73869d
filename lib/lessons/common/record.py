"""The learner's record: what they passed, what they missed, what they measured.

Kept in one small SQLite file in the learner's work folder (``work/parlab-record.sqlite``
beside their copies of the notebooks; ``~/.parlab/`` when that folder cannot be written).
``PARLAB_RECORD`` names another file, or ``off`` to keep nothing (the test suite sets it).
SQLite makes every write one transaction: a kernel killed in the middle of one leaves the
file as it was before it, never half-written, and two kernels writing at once take turns.

What goes in, and who writes it:

- ``exercise``: every verdict of an exercise checker (``watch`` wraps a lesson's
  ``check_*`` functions), right or not;
- ``drill``: every counted try at a drill question, with the seconds since it was shown
  (``drills.session.Attempt``);
- ``box``: the Leitner box of each drill question (by template: the numbers change, the
  idea does not). A first try right moves it up a box and out of the way for longer
  (``INTERVAL_DAYS``); a miss (wrong first, or the answer shown before a try) puts it back
  in box 1, due again at the next drill. ``due`` lists what is due, box 1 first; the drill
  asks those before new questions;
- ``measurement``: figures the lessons measure on the learner's own machine (bandwidth,
  throughput), with a line saying which machine.

``summary`` reads it back for ``python -m lessons progress`` (and ``run.py progress``).
Recording never gets in a lesson's way: a file that cannot be written is said once, on
stderr, and the lesson goes on.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import sys
import time
from pathlib import Path

ENV = "PARLAB_RECORD"
FILE = "parlab-record.sqlite"
DAY = 86400.0
# Leitner boxes: days until a question in that box is due again (box 1: at the next drill)
INTERVAL_DAYS = {1: 0, 2: 1, 3: 3, 4: 7, 5: 16}

SCHEMA = """
CREATE TABLE IF NOT EXISTS exercise (at REAL, lesson TEXT, name TEXT, ok INTEGER);
CREATE TABLE IF NOT EXISTS drill (at REAL, template TEXT, topic TEXT, seed INTEGER, lang TEXT,
                                  try INTEGER, ok INTEGER, seconds REAL);
CREATE TABLE IF NOT EXISTS box (template TEXT PRIMARY KEY, topic TEXT, box INTEGER, due REAL);
CREATE TABLE IF NOT EXISTS measurement (at REAL, lesson TEXT, name TEXT, value REAL, unit TEXT,
                                        device TEXT, name_zh TEXT);
"""

_warned = False


def lab_root() -> Path:
    """The folder holding notebooks/ and work/ (lib/lessons/common/record.py -> its root)."""
    return Path(__file__).resolve().parents[3]


def path() -> Path | None:
    """The record's file, or None when ``PARLAB_RECORD=off``."""
    env = os.environ.get(ENV, "").strip()
    if env.lower() in ("off", "0", "none"):
        return None
    if env:
        return Path(env).expanduser()
    work = lab_root() / "work"
    if (work.is_dir() and os.access(work, os.W_OK)) or \
            (not work.exists() and os.access(work.parent, os.W_OK)):
        return work / FILE
    return Path.home() / ".parlab" / FILE


def enabled() -> bool:
    return path() is not None


def _connect(p: Path) -> sqlite3.Connection:
    p.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(p, timeout=10)
    con.executescript(SCHEMA)
    return con


def _write(sql_rows: list[tuple[str, tuple]]) -> bool:
    """Run the statements as one transaction; False (said once) when the file cannot be written."""
    global _warned
    p = path()
    if p is None:
        return False
    try:
        con = _connect(p)
        try:
            with con:  # one transaction: all of it lands, or none
                for sql, row in sql_rows:
                    con.execute(sql, row)
        finally:
            con.close()
        return True
    except (sqlite3.Error, OSError) as e:
        if not _warned:
            print(f"parlab: the learner's record at {p} cannot be written ({e}); "
                  f"set {ENV} to another file, or to off", file=sys.stderr)
            _warned = True
        return False


def _read(sql: str, args: tuple = ()) -> list[tuple]:
    p = path()
    if p is None or not p.exists():
        return []
    try:
        con = _connect(p)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()
    except (sqlite3.Error, OSError):
        return []


# -- writing -------------------------------------------------------------------------------

def exercise(lesson: str, name: str, ok: bool, now: float | None = None) -> bool:
    return _write([("INSERT INTO exercise VALUES (?, ?, ?, ?)",
                    (now or time.time(), lesson, name, int(bool(ok))))])


def watch(namespace: dict) -> None:
    """Record the verdict of every ``check_*`` function defined in a lesson's exercises
    module (call ``watch(globals())`` at its end). The function is otherwise unchanged:
    same name, same source (``inspect`` follows ``__wrapped__``)."""
    module = namespace["__name__"]
    parts = module.split(".")
    lesson = next((p for p in parts if p[:1] == "l" and p[1:3].isdigit()), module)
    for name, fn in list(namespace.items()):
        if (name.startswith("check_") and callable(fn) and getattr(fn, "__module__", None) == module
                and not hasattr(fn, "__wrapped__")):
            namespace[name] = _recorded(fn, lesson)


def _recorded(fn, lesson: str):
    @functools.wraps(fn)
    def checked(*args, **kwargs):
        v = fn(*args, **kwargs)
        if isinstance(v, dict) and "ok" in v and not v.get("missing") and enabled():
            exercise(lesson, fn.__name__, v["ok"])
        return v
    return checked


def drill_try(q, try_no: int, ok: bool, seconds: float, now: float | None = None) -> bool:
    """One counted try at drill question ``q`` (a ``drills.core.Question``)."""
    return _write([("INSERT INTO drill VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (now or time.time(), q.template, q.topic, q.seed, q.lang, try_no,
                     int(bool(ok)), round(seconds, 3)))])


def settle(template: str, topic: str, right_first: bool, now: float | None = None) -> int:
    """Move ``template`` by its first try: up a box when right, back to box 1 when not.
    Returns the new box (0 when nothing is recorded)."""
    now = now or time.time()
    old = _read("SELECT box FROM box WHERE template = ?", (template,))
    box = min(old[0][0] + 1, max(INTERVAL_DAYS)) if (right_first and old) else (2 if right_first else 1)
    ok = _write([("INSERT OR REPLACE INTO box VALUES (?, ?, ?, ?)",
                  (template, topic, box, now + INTERVAL_DAYS[box] * DAY))])
    return box if ok else 0


def due(topics=None, now: float | None = None) -> list[str]:
    """Drill templates due now (of ``topics``: names, or None for all), lowest box first."""
    now = now or time.time()
    rows = _read("SELECT template, topic FROM box WHERE due <= ? ORDER BY box, due, template", (now,))
    wanted = None if topics is None else ({topics} if isinstance(topics, str) else set(topics))
    return [t for t, topic in rows if wanted is None or topic in wanted]


def boxes() -> dict[str, int]:
    return dict((t, b) for t, b in _read("SELECT template, box FROM box"))


def device() -> str:
    """One line naming this machine, for a measurement: the GPU if one is used, else the CPU."""
    try:
        from parlab import hardware
        hw = hardware.detect()
        cpu = f"{hw.cpu_model or 'CPU'}, {hw.usable_cpus} cores, torch {hw.torch_version}"
        gpus = ", ".join(g["name"] for g in hw.gpus) if hw.gpus else ""
        return f"{gpus}; {cpu}" if gpus else cpu
    except Exception:  # a record line is no reason to fail a lesson
        return "unknown machine"


def measurement(lesson: str, name: str, value: float, unit: str, name_zh: str | None = None,
                now: float | None = None) -> bool:
    """A figure measured on this machine, named in English and (``name_zh``) Chinese; the
    latest of each name is what ``summary`` shows."""
    if not enabled():
        return False
    return _write([("INSERT INTO measurement VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (now or time.time(), lesson, name, float(value), unit, device(), name_zh or name))])


# -- reading -------------------------------------------------------------------------------

def summary(now: float | None = None) -> dict:
    """What the record holds, counted: exercises passed by lesson, the drill by topic
    (questions, right on the first try, median seconds), what is due, the latest of each
    measurement."""
    now = now or time.time()
    passed, tried = {}, {}
    for lesson, name, ok in _read("SELECT lesson, name, MAX(ok) FROM exercise GROUP BY lesson, name"):
        tried.setdefault(lesson, set()).add(name)
        if ok:
            passed.setdefault(lesson, set()).add(name)
    topics = {}
    # a question's first counted try decides it; its time is the time to that try
    for topic, ok, seconds in _read("SELECT topic, ok, seconds FROM drill WHERE try = 1"):
        t = topics.setdefault(topic, {"asked": 0, "first": 0, "seconds": []})
        t["asked"] += 1
        t["first"] += ok
        t["seconds"].append(seconds)
    for t in topics.values():
        s = sorted(t.pop("seconds"))
        t["median_s"] = (s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2) if s else None
    latest = {}
    for at, lesson, name, value, unit, dev, name_zh in _read(
            "SELECT at, lesson, name, value, unit, device, name_zh FROM measurement ORDER BY at"):
        latest[(lesson, name)] = dict(at=at, lesson=lesson, name=name, name_zh=name_zh, value=value,
                                      unit=unit, device=dev)
    first = _read("SELECT MIN(at) FROM (SELECT at FROM exercise UNION ALL SELECT at FROM drill "
                  "UNION ALL SELECT at FROM measurement)")
    return {
        "path": str(path()) if path() else None,
        "since": first[0][0] if first and first[0][0] else None,
        "exercises": {l: {"passed": sorted(passed.get(l, ())), "tried": sorted(tried[l])}
                      for l in sorted(tried)},
        "drill": dict(sorted(topics.items())),
        "due": due(now=now),
        "boxes": boxes(),
        "measurements": list(latest.values()),
    }
