"""Throw faults at checkpoints, launches, failover and bad inputs; sort what happens.

    python tools/fault_probe.py [--quick] [--json PATH] [--only PREFIX] [--list]

A catalogue of hostile cases (tools/fuzz_inputs.py throws bad *values*; these are
faults): interrupted and corrupted checkpoints and a resume after them, a config that
does not match its checkpoint, Ctrl-C / SIGTERM / SIGKILL to a launch's caller (or its
process group) at each phase, failover interrupted or mis-flagged, absurd counts, a stray
launcher environment, the checkers' huge integers, notebook 08's demos with typos.

Each case runs in a process of its own, in its own session (so that it can always be
killed, whole), with a private TMPDIR and a hard timeout. Every process it starts
inherits a tag in its environment, so that what outlives it is found by a /proc scan
even when it moved to another session (torchrun's workers do). After the case: a few
seconds' grace, then whatever still carries the tag, and whatever is left in the private
TMPDIR, is a leak (and is then killed and removed). Each case lands in exactly one of:

  handled          a clear error naming the thing (a ValueError, or a RuntimeError of our
                   own, not a traceback from inside the ranks), or the correct result,
                   and nothing left behind
  wrong-exception  another error: another type, a deep library error, one that does not
                   name the thing, a traceback from inside the ranks where a named error
                   was due
  hang             no end within the case's time limit (or memory limit)
  crash            the case's caller died
  silent-wrong     a wrong result, no error: a resume whose losses differ from the good
                   run's, a bad input accepted
  data-loss        a good checkpoint damaged or lost (by an interrupted save)
  leak             processes or temp files/dirs left behind (else handled)

in that order of precedence. Cases judge by behaviour (error types, what the message
names, losses against the good run's, processes and files left), not by exact messages,
so that the same catalogue counts before and after a fix. Checkpoint cases share one
good checkpoint (2 ranks, steps 0..5, saved at steps 2 and 4) and the losses of a resume
from each step, made once per probe run.

This is a measuring tool for a person (its counts go in a closing note); CI keeps the
tool itself working with tests/project/test_fault_probe.py (the classifier, planted).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.path.join(ROOT, "lib")
TOOLS = os.path.join(ROOT, "tools")
PY = sys.executable
OUTCOMES = ("handled", "wrong-exception", "hang", "crash", "silent-wrong", "data-loss", "leak")
CATEGORIES = ("checkpoint", "launch", "failover", "input", "selftest")
TAG = "FAULT_PROBE_TAG"
# torch's per-user compile cache, made under TMPDIR on import and kept by design: not ours
BENIGN_TMP = ("torchinductor_",)
LAUNCHER_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                "MASTER_PORT", "GROUP_RANK", "TORCHELASTIC_RUN_ID")


@dataclasses.dataclass
class Case:
    name: str
    category: str
    fn: object          # fn(ctx) -> observation dict (see classify), run in the case's process
    quick: bool = False  # part of --quick
    timeout: float = 60.0


# --- the classifier (pure: tests/project/test_fault_probe.py) ---------------------------
# An observation, written by the case's process: "result": "correct" | "wrong" | "lost";
# or "raised" (a type name), "message", "clear" (judge_error's verdict); "stuck": it
# waited out a limit of its own; "crashed": a process it ran died unasked; "leftover":
# what it saw left behind itself; "detail": one line for the table.

def classify(obs: dict | None, timed_out: bool = False, procs=(), files=()) -> str:
    if timed_out or (obs and obs.get("stuck")):
        return "hang"
    if obs is None or obs.get("crashed"):
        return "crash"  # the case's process died before it could say what happened
    if obs.get("result") == "lost":
        return "data-loss"
    if obs.get("result") == "wrong":
        return "silent-wrong"
    if obs.get("raised") and not obs.get("clear"):
        return "wrong-exception"
    if procs or files or obs.get("leftover"):
        return "leak"
    return "handled"


def names(message: str, needles) -> bool:
    """Does ``message`` name one of ``needles``? (A needle with capitals must match
    exactly -- RANK is not "rank 1 raised" --, a lower-case one in any case.)"""
    low = message.lower()
    return any((n in message) if n != n.lower() else (n in low) for n in needles)


# builtin errors that are never the clear named error a fault is due
NOT_CLEAR = {"TypeError", "KeyError", "IndexError", "AttributeError", "OSError", "EOFError",
             "FileNotFoundError", "UnpicklingError", "StatisticsError", "ZeroDivisionError",
             "OverflowError", "AssertionError", "NameError", "CheckpointException",
             "LaunchTimeout", "PicklingError", "SystemError", "RecursionError", "MemoryError"}


def judge_error(e: BaseException, needles, ranks_ok: bool = False, ranks: bool = False) -> dict:
    """An observation of error ``e``. Clear: a ValueError, or a RuntimeError, naming one of
    ``needles``, with no traceback inside. One from inside the ranks (a LaunchError with
    the rank's traceback, or raised after ranks started: ``ranks``) is clear only where
    the fault can only show there (``ranks_ok``: a resume loads in the ranks) and the
    rank's own last error is a clear one."""
    msg = str(e)
    name = type(e).__name__
    remote = "Traceback (most recent call last)" in msg or "--- traceback from rank" in msg
    if remote or ranks:
        last = [m for m in re.findall(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$", msg, re.M)]
        if remote and last:
            name_r, msg_r = last[-1][0].rsplit(".", 1)[-1], last[-1][1]
        else:
            name_r, msg_r = name, msg
        import builtins
        # a rank's own last error: a ValueError, or an error class of our own (a plain
        # RuntimeError there is as likely a library's deep one)
        clear = (ranks_ok and names(msg_r, needles) and name_r not in NOT_CLEAR
                 and (name_r == "ValueError" or (name_r.endswith("Error") and not hasattr(builtins, name_r))))
        where = "in the ranks" if (ranks or "--- traceback from rank" in msg) else "with a traceback inside"
    else:
        ok_type = isinstance(e, ValueError) or (isinstance(e, RuntimeError) and name not in NOT_CLEAR)
        clear = ok_type and names(msg, needles)
        where = "before the ranks"
    return {"raised": name, "message": msg[-600:], "clear": bool(clear),
            "detail": f"{name} {where}: {msg.strip().splitlines()[-1][:120] if msg.strip() else ''}"}


def ok(detail: str = "") -> dict:
    return {"result": "correct", "detail": detail}


def wrong(detail: str) -> dict:
    return {"result": "wrong", "detail": detail}


def lost(detail: str) -> dict:
    return {"result": "lost", "detail": detail}


def stuck(detail: str) -> dict:
    return {"stuck": True, "detail": detail}


# --- processes and files left behind --------------------------------------------------

def tagged(tag: str, exclude=()) -> list[tuple[int, str]]:
    """(pid, command) of every live process whose environment carries ``tag``."""
    out = []
    needle = f"{TAG}={tag}".encode()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in exclude:
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{d}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue  # a zombie holds nothing but its exit status
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        out.append((int(d), cmd[:160]))
    return out


def left_in(tmp: str) -> list[str]:
    """What is in a private TMPDIR besides torch's own cache."""
    try:
        return sorted(n for n in os.listdir(tmp) if not n.startswith(BENIGN_TMP))
    except OSError:
        return []


def settle(tag: str, grace: float, exclude=()) -> list[tuple[int, str]]:
    """Wait up to ``grace`` s for the tagged processes to end; those still alive."""
    end = time.monotonic() + grace
    while True:
        left = tagged(tag, exclude)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.2)


def kill_all(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# --- running one case ------------------------------------------------------------------

def child_main(name: str) -> None:
    """The case's own process: run it, write its observation to FAULT_PROBE_REPORT."""
    report = os.environ["FAULT_PROBE_REPORT"]
    # Ctrl-C as a terminal sends it: started from a background shell, this process was
    # born with SIGINT ignored, which every process it starts would inherit (and Python
    # keeps), so no interrupt case would interrupt anything. A handler is reset on exec.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    case = {c.name: c for c in catalogue(selftest=True)}[name]
    ctx = Ctx()
    try:
        obs = case.fn(ctx) or ok()
    except BaseException as e:  # noqa: BLE001 -- what escaped a case is a finding
        import traceback
        obs = {"raised": type(e).__name__, "clear": False,
               "message": traceback.format_exc()[-1500:],
               "detail": f"{type(e).__name__} escaped: {str(e)[:120]}"}
    with open(report + ".part", "w") as f:
        json.dump(obs, f)
    os.replace(report + ".part", report)


class Ctx:
    """What a case's process knows: its work dir (not TMPDIR: files there are the case's
    own), the shared fixture, the tag."""

    def __init__(self):
        self.work = os.environ["FAULT_PROBE_WORK"]
        self.fixture = os.environ.get("FAULT_PROBE_FIXTURE", "")
        self.tag = os.environ[TAG]
        self.tmp = os.environ["TMPDIR"]

    def ref(self) -> dict:
        with open(os.path.join(self.fixture, "ref.json")) as f:
            return json.load(f)


def case_env(tag: str, tmp: str, work: str, fixture: str, report: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_ENV}
    env.update({TAG: tag, "TMPDIR": tmp, "FAULT_PROBE_WORK": work, "FAULT_PROBE_FIXTURE": fixture,
                "FAULT_PROBE_REPORT": report, "OMP_NUM_THREADS": "1",
                "PYTHONPATH": os.pathsep.join([LIB, TOOLS] + [p for p in [os.environ.get("PYTHONPATH")] if p])})
    return env


CHILD = "import sys; sys.path[:0] = [{tools!r}, {lib!r}]; import fault_probe; fault_probe.{fn}(*sys.argv[1:])"


def run_case(case: Case, root: str, fixture: str = "", grace: float = 5.0,
             timeout: float | None = None) -> dict:
    """Run ``case`` in its own session; its row: name, category, outcome, detail, seconds."""
    d = tempfile.mkdtemp(prefix="case-", dir=root)
    tmp, work = os.path.join(d, "tmp"), os.path.join(d, "work")
    os.makedirs(tmp)
    os.makedirs(work)
    report = os.path.join(d, "report.json")
    tag = uuid.uuid4().hex
    limit = case.timeout if timeout is None else timeout
    t0 = time.monotonic()
    with open(os.path.join(d, "log.txt"), "w") as log:
        p = subprocess.Popen([PY, "-c", CHILD.format(tools=TOOLS, lib=LIB, fn="child_main"), case.name],
                             env=case_env(tag, tmp, work, fixture, report), stdin=subprocess.DEVNULL,
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            p.wait(limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()
    seconds = time.monotonic() - t0
    procs = settle(tag, grace)
    kill_all(pid for pid, _ in procs)
    files = left_in(tmp)
    obs = None
    if os.path.exists(report):
        with open(report) as f:
            obs = json.load(f)
    outcome = classify(obs, timed_out, procs, files)
    with open(os.path.join(d, "log.txt"), errors="replace") as f:
        tail = f.read()[-1500:]
    detail = " ".join(str((obs or {}).get("detail", "")).split())  # one line
    if timed_out:
        detail = f"no end within {limit:.0f} s"
    elif obs is None:
        detail = f"the case's process died (exit {p.returncode}) without a report"
    if procs or files:
        detail += ("; left: " + ", ".join([os.path.basename(c.split()[0]) + " " + " ".join(c.split()[1:3])
                                           for _, c in procs][:4] + files[:4]))[:300]
    settle(tag, 2.0)  # the ones just killed
    shutil.rmtree(d, ignore_errors=True)
    return {"name": case.name, "category": case.category, "outcome": outcome,
            "detail": detail.strip("; "), "seconds": round(seconds, 1), "procs": len(procs),
            "files": files[:10], "raised": (obs or {}).get("raised"),
            "log_tail": tail if outcome != "handled" else ""}


# --- the fixture: one good checkpoint and the losses of resuming from it -----------------

STEPS = 6          # the good run trains steps 0..5
SAVE_AT = (2, 4)   # and saves the state to train step 2 and step 4 next


def fixture_main(directory: str) -> None:
    import dataclasses as dc

    from parlab.launch import launch
    from lessons.l08_checkpoints_and_failures.experiments import TINY
    from lessons.l08_checkpoints_and_failures.training import Layout, Spec, train_rank
    good = os.path.join(directory, "good")
    os.makedirs(good)
    spec = Spec(TINY, Layout("ours", 2), steps=STEPS, directory=good, save_at=SAVE_AT)
    base = launch(train_rank, 2, spec, timeout=120)[0]
    ref = {"names": {str(k): os.path.relpath(v, good) for k, v in base["saved"].items()},
           "base": {str(k): v for k, v in base["losses"].items()}, "one": {}, "dp2": {}}
    for k, path in base["saved"].items():
        one = train_rank(dc.replace(spec, layout=Layout("one", 1), resume_from=path, save_at=()))
        ref["one"][str(k)] = {str(s): v for s, v in one["losses"].items()}
        dp2 = launch(train_rank, 2, dc.replace(spec, resume_from=path, save_at=()), timeout=120)[0]
        ref["dp2"][str(k)] = {str(s): v for s, v in dp2["losses"].items()}
    with open(os.path.join(directory, "ref.json"), "w") as f:
        json.dump(ref, f)


def build_fixture(root: str) -> str:
    d = os.path.join(root, "fixture")
    os.makedirs(d)
    env = case_env("fixture", d, d, d, "")
    p = subprocess.run([PY, "-c", CHILD.format(tools=TOOLS, lib=LIB, fn="fixture_main"), d], env=env,
                       capture_output=True, text=True, timeout=300, start_new_session=True)
    if p.returncode != 0 or not os.path.exists(os.path.join(d, "ref.json")):
        print("the fixture (a good checkpoint) could not be made; checkpoint cases will say so:\n"
              + (p.stdout + p.stderr)[-3000:], file=sys.stderr)
    return d


# --- checkpoint cases -------------------------------------------------------------------

CKPT_NEEDLES = ("checkpoint", "step_0", "shard", "distcp", ".metadata", "metadata", "checksum",
                "corrupt", "incomplete", "truncat", "missing", "partial")


def _l08():
    from lessons.l08_checkpoints_and_failures import experiments, training
    return experiments.TINY, training.Layout, training.Spec, training.train_rank


def _good_copy(ctx: Ctx) -> str:
    ck = os.path.join(ctx.work, "ck")
    shutil.copytree(os.path.join(ctx.fixture, "good"), ck, symlinks=True)
    return ck


def _latest(ck: str):
    """(step, path) of what ``latest`` picks, tolerant of a richer return value."""
    from parlab.checkpoint import latest
    r = latest(ck)
    if r is None:
        return None
    if isinstance(r, str):
        m = re.search(r"(\d+)$", os.path.basename(r.rstrip("/")))
        return int(m.group(1)) if m else -1, r
    return int(r[0]), str(r[1])


def _resume(ctx: Ctx, path: str, layout: str = "one", config=None, seed: int = 0) -> dict:
    import dataclasses as dc
    tiny, Layout, Spec, train_rank = _l08()
    spec = Spec(config or tiny, Layout("one", 1) if layout == "one" else Layout("ours", 2),
                steps=STEPS, seed=seed, resume_from=path)
    if layout == "one":
        return train_rank(spec)["losses"]
    from parlab.launch import launch
    return launch(train_rank, 2, dc.replace(spec), timeout=60)[0]["losses"]


def _same(losses: dict, ref: dict) -> tuple[bool, float]:
    diffs = []
    for s, v in ref.items():
        got = losses.get(int(s), losses.get(s))
        if got is None or got != got:
            return False, float("nan")
        diffs.append(abs(got - v))
    worst = max(diffs) if diffs else 0.0
    return worst <= 1e-7 and len(losses) == len(ref), worst  # the same run, bit for bit


def _judge_resume(ctx: Ctx, ck: str, how: str, layout: str, target: str):
    """Resume after a fault (via ``latest`` or the damaged path): the observation."""
    ref = ctx.ref()
    try:
        if how == "latest":
            found = _latest(ck)
            if found is None:
                return wrong("latest() found no checkpoint, though step 2's is intact")
            step, path = found
        else:
            step, path = 4, target
        losses = _resume(ctx, path, layout)
    except BaseException as e:  # noqa: BLE001
        return judge_error(e, CKPT_NEEDLES, ranks_ok=layout != "one")
    want = ref[layout].get(str(step))
    if want is None:
        return wrong(f"resumed from an unknown step {step} ({os.path.basename(path)})")
    same, worst = _same(losses, want)
    if same:
        return ok(f"resumed from step {step}, losses as the good run's")
    return wrong(f"resumed from step {step} ({os.path.basename(path)}) without an error; "
                 f"losses off by {worst:.2g}")


def _shards(d: str) -> list[str]:
    names = sorted(n for n in os.listdir(d) if n.endswith(".distcp"))
    return names or sorted(n for n in os.listdir(d) if not n.startswith(".")
                           and os.path.isfile(os.path.join(d, n)))


def _meta(d: str) -> str:
    return os.path.join(d, ".metadata")


def _edit(path: str, fn) -> None:
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data = fn(data)
    with open(path, "wb") as f:
        f.write(bytes(data))


def _data_spans(buf) -> list[tuple[int, int]]:
    """(start, length) of the tensor bytes in a shard: DCP writes each tensor as a
    torch.save zip archive whose ".../data/N" members are stored raw. [] for another
    format (then a position is taken in the whole file)."""
    import struct
    spans = []
    buf = bytes(buf)
    for m in re.finditer(rb"PK\x03\x04", buf):
        at = m.start()
        if at + 30 > len(buf):
            continue
        nlen, elen = struct.unpack("<HH", buf[at + 26:at + 30])
        if not re.search(rb"/data/\d+$", buf[at + 30:at + 30 + nlen]):
            continue
        start = at + 30 + nlen + elen
        end = buf.find(b"PK\x07\x08", start)  # the sizes follow the data (a data descriptor)
        if end - start >= 4:
            spans.append((start, end - start))
    return spans


def _flip(frac: float, mask: int = 0xFF, byte_in_word: int = 0, in_data: bool = True):
    """Flip ``mask`` in byte ``byte_in_word`` of the float32 at ``frac`` of the shard's
    tensor bytes (``in_data``), or of the whole file."""
    def fn(data):
        spans = _data_spans(data) if in_data else []
        if spans:
            total = sum(n for _, n in spans)
            want = int(total * frac)
            for start, n in spans:
                if want < n:
                    at = start + (want // 4) * 4
                    break
                want -= n
        else:
            at = (int(len(data) * frac) // 4) * 4
        data[at + byte_in_word] ^= mask
        return data
    return fn


def _mutations():
    """name -> fn(step directory): what is done to the newest good checkpoint."""
    m = {}
    shard = lambda d, i: os.path.join(d, _shards(d)[i])
    for i in (0, 1):
        for frac in (0.5, 0.99):
            m[f"shard {i} truncated to {frac:.0%}"] = \
                lambda d, i=i, frac=frac: _edit(shard(d, i), lambda b: b[:int(len(b) * frac)])
        m[f"shard {i} deleted"] = lambda d, i=i: os.remove(shard(d, i))
        m[f"shard {i} byte flipped at 50% of the file"] = \
            lambda d, i=i: _edit(shard(d, i), _flip(0.5, in_data=False))
        for frac in (0.25, 0.75):  # float32, little-endian: byte 3 holds sign and exponent
            m[f"shard {i} exponent byte flipped at {frac:.0%} of its tensors"] = \
                lambda d, i=i, frac=frac: _edit(shard(d, i), _flip(frac, 0xFF, 3))
        for frac in (0.4, 0.8):  # byte 2 bit 0 is mantissa bit 16
            m[f"shard {i} one mantissa bit flipped at {frac:.0%} of its tensors"] = \
                lambda d, i=i, frac=frac: _edit(shard(d, i), _flip(frac, 0x01, 2))
    m[".metadata deleted"] = lambda d: os.remove(_meta(d))
    m[".metadata truncated to 50%"] = lambda d: _edit(_meta(d), lambda b: b[:len(b) // 2])
    m[".metadata emptied"] = lambda d: _edit(_meta(d), lambda b: bytearray())
    m[".metadata byte flipped at 50%"] = lambda d: _edit(_meta(d), _flip(0.5))
    m[".metadata replaced by junk"] = lambda d: _edit(_meta(d), lambda b: bytearray(b"not a checkpoint\n"))
    m["junk __2_0.distcp added"] = lambda d: _edit_new(os.path.join(d, "__2_0.distcp"), os.urandom(4096))
    m["junk notes.txt added"] = lambda d: _edit_new(os.path.join(d, "notes.txt"), b"hello\n")
    m["junk subdirectory added"] = lambda d: os.makedirs(os.path.join(d, "extra", "deeper"))
    return m


def _edit_new(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _leftovers():
    """name -> fn(checkpoint dir, step 4's dir): debris beside the good checkpoints."""
    def newer(ck, src, keep):
        d = os.path.join(ck, "step_00006")
        shutil.copytree(src, d)
        for n in os.listdir(d):
            if not keep(n, d):
                os.remove(os.path.join(d, n))
    return {
        "empty step_00006 dir": lambda ck, src: os.makedirs(os.path.join(ck, "step_00006")),
        "step_00006 with shards, no .metadata": lambda ck, src: newer(ck, src, lambda n, d: n != ".metadata"),
        "step_00006 with .metadata, a shard missing": lambda ck, src: newer(
            ck, src, lambda n, d: n != _shards(d)[-1]),
        "step_00006 with .metadata, shards empty": lambda ck, src: (
            newer(ck, src, lambda n, d: True),
            [_edit(os.path.join(ck, "step_00006", n), lambda b: bytearray())
             for n in _shards(os.path.join(ck, "step_00006"))]),
        "hidden .step_00006.tmp dir": lambda ck, src: shutil.copytree(src, os.path.join(ck, ".step_00006.tmp")),
        "step_00006.partial dir": lambda ck, src: shutil.copytree(src, os.path.join(ck, "step_00006.partial")),
        "step_00006 is a file": lambda ck, src: _edit_new(os.path.join(ck, "step_00006"), b"x"),
        "step_junk dir": lambda ck, src: shutil.copytree(src, os.path.join(ck, "step_junk")),
    }


def _ckpt_case(mutation: str, how: str, layout: str = "one"):
    def fn(ctx):
        ck = _good_copy(ctx)
        target = os.path.join(ck, ctx.ref()["names"]["4"])
        _mutations()[mutation](target)
        return _judge_resume(ctx, ck, how, layout, target)
    return fn


def _leftover_case(what: str):
    def fn(ctx):
        ck = _good_copy(ctx)
        src = os.path.join(ck, ctx.ref()["names"]["4"])
        _leftovers()[what](ck, src)
        return _judge_resume(ctx, ck, "latest", "one", src)
    return fn


def interrupted_save_rank(spec, victim: int, when: str):
    """One rank of a save that dies part-way: rank ``victim`` SIGKILLs itself as DCP's file
    writer starts ("before": its shard not written) or ends ("after": written) -- wherever
    the save writes (in place, or beside to be renamed)."""
    import torch.distributed as dist
    from torch.distributed.checkpoint import FileSystemWriter
    from lessons.l08_checkpoints_and_failures.training import train_rank
    orig = FileSystemWriter.write_data

    def write_data(self, plan, planner):
        me = dist.get_rank() == victim
        if me and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        out = orig(self, plan, planner)
        if me and when == "after":
            if hasattr(out, "wait"):
                out.wait()
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    FileSystemWriter.write_data = write_data
    return train_rank(spec)


def _interrupted_case(victim: int, when: str, into: str):
    """A second job (seed 1: other weights) saves into the same directory and dies
    part-way: into step 4's existing directory ("existing") or a new step 6 ("new")."""
    def fn(ctx):
        from parlab.launch import LaunchError, launch
        tiny, Layout, Spec, train_rank = _l08()
        ck = _good_copy(ctx)
        ref = ctx.ref()
        at = 4 if into == "existing" else 6
        spec = Spec(tiny, Layout("ours", 2), steps=at + 1, seed=1, directory=ck, save_at=(at,))
        try:
            launch(interrupted_save_rank, 2, spec, victim, when, timeout=60)
            return {"raised": "PlantMissed", "clear": False,
                    "detail": "the save was not interrupted (the probe's plant missed)"}
        except LaunchError:
            pass  # the rank's death: the fault itself
        try:
            found = _latest(ck)
        except BaseException as e:  # noqa: BLE001
            return judge_error(e, CKPT_NEEDLES)
        if found is None:
            return lost("latest() finds no checkpoint after an interrupted save")
        step, path = found
        if into == "existing" and step != 4:
            return lost(f"step 4's good checkpoint is gone; latest() gives step {step}")
        if into == "new" and step == 2:
            return lost("step 4's good checkpoint is gone; latest() gives step 2")
        try:
            losses = _resume(ctx, path)
        except BaseException as e:  # noqa: BLE001
            if step == 4 and into == "existing":
                return lost(f"step 4's checkpoint no longer loads: {type(e).__name__}: {str(e)[:100]}")
            return judge_error(e, CKPT_NEEDLES)
        want = ref["one"].get(str(step))
        same, worst = _same(losses, want) if want else (False, float("nan"))
        if same:
            return ok(f"resumed from step {step}, losses as the good run's")
        return wrong(f"latest() gave the interrupted save's step {step}; it loads without an error,"
                     f" losses off by {worst:.2g} (a mixture)")
    return fn


def _mismatch_case(field: str, value, layout: str = "one"):
    def fn(ctx):
        import dataclasses as dc
        tiny = _l08()[0]
        path = os.path.join(ctx.fixture, "good", ctx.ref()["names"]["4"])
        try:
            cfg = dc.replace(tiny, **{field: value})
        except ValueError as e:
            return {"raised": "SetupError", "clear": False, "detail": f"config refused: {e}"}
        try:
            losses = _resume(ctx, path, layout, config=cfg)
        except BaseException as e:  # noqa: BLE001
            return judge_error(e, (field, "config", "GPTConfig"), ranks_ok=layout != "one")
        return wrong(f"a {field}={getattr(tiny, field)} checkpoint resumed into {field}={value} "
                     f"without an error ({len(losses)} steps trained)")
    return fn


# --- launch interrupts --------------------------------------------------------------------

def sleep_rank(seconds: float) -> int:
    import torch.distributed as dist
    time.sleep(seconds)
    return dist.get_rank()


def big_rank(mib: int) -> bytes:
    return bytes(mib << 20)


def caller_main(mode: str) -> None:
    """A launch's caller, as a notebook kernel would be: ``cold`` (its first launch),
    ``warm`` (a launch on a pool already up), ``collect`` (ranks returning 128 MiB each),
    ``quick`` (one short launch: the "next launch works" check)."""
    import faulthandler
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a stuck caller's stacks
    from parlab.launch import launch
    if mode in ("warm", "collect"):
        launch(sleep_rank, 2, 0.0, timeout=60)
    print("T0", flush=True)
    if mode == "collect":
        launch(big_rank, 2, 128, timeout=60)
    elif mode == "quick":
        assert launch(sleep_rank, 2, 0.0, timeout=60) == [0, 1]
    else:
        launch(sleep_rank, 2, 30.0, timeout=60)
    print("DONE", flush=True)


def _start_caller(ctx: Ctx, mode: str, log: str, env=None) -> subprocess.Popen:
    with open(log, "w") as f:
        return subprocess.Popen([PY, "-c", CHILD.format(tools=TOOLS, lib=LIB, fn="caller_main"), mode],
                                stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)


def _wait_for(path: str, text: str, p: subprocess.Popen, limit: float) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        with open(path, errors="replace") as f:
            if text in f.read():
                return True
        if p.poll() is not None:
            return False
        time.sleep(0.02)
    return False


SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "KILL": signal.SIGKILL}


def _send(p: subprocess.Popen, how: str) -> None:
    """``how``: "INT caller", "KILL group", "INT twice"..."""
    sig, target = how.split()
    send = (lambda s: os.killpg(p.pid, s)) if target == "group" else (lambda s: os.kill(p.pid, s))
    try:
        if target == "twice":
            send = lambda s: os.kill(p.pid, s)  # noqa: E731
            send(signal.SIGINT)
            time.sleep(0.3)
        send(SIGNALS[sig])
    except OSError:
        pass


def _next_launch(ctx: Ctx):
    log = os.path.join(ctx.work, "next.txt")
    p = _start_caller(ctx, "quick", log)
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return stuck("the next launch did not end within 60 s")
    if p.returncode != 0:
        with open(log, errors="replace") as f:
            return {"raised": "NextLaunchFailed", "clear": False,
                    "detail": "the next launch failed: " + f.read()[-200:].replace("\n", " ")}
    return None


def _interrupt_case(mode: str, delay: float, how: str, next_launch: bool = False):
    def fn(ctx):
        log = os.path.join(ctx.work, "caller.txt")
        p = _start_caller(ctx, mode, log)
        if not _wait_for(log, "T0", p, 60):
            with open(log, errors="replace") as f:
                return {"crashed": True, "detail": "the caller never got to its launch: " + f.read()[-200:]}
        time.sleep(delay)
        if p.poll() is not None:
            return {"raised": "NotInterrupted", "clear": False,
                    "detail": f"the caller ended before the signal (after {delay} s)"}
        _send(p, how)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGUSR1)  # its threads' stacks, into its log
            time.sleep(1.0)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            with open(log, errors="replace") as f:
                where = " | ".join(line.strip() for line in f.read().splitlines()
                                   if line.strip().startswith(("File", "Thread", "Current")))[-600:]
            return stuck(f"the caller still ran 15 s after {how}; its stacks: {where}")
        if next_launch:
            bad = _next_launch(ctx)
            if bad:
                return bad
        return ok(f"the caller ended after {how} (exit {p.returncode})")
    return fn


def _stray_env_case(env: dict, world: int):
    def fn(ctx):
        os.environ.update(env)
        from parlab.launch import launch
        t0 = time.monotonic()
        try:
            got = launch(sleep_rank, world, 0.0, timeout=10)
        except BaseException as e:  # noqa: BLE001
            obs = judge_error(e, tuple(env) + ("torchrun",))
            obs["detail"] += f" (after {time.monotonic() - t0:.1f} s)"
            return obs
        return wrong(f"launch returned {got!r:.60} with {env} in the environment")
    return fn


# --- failover -----------------------------------------------------------------------------

def _cli(ctx: Ctx, args: list[str], limit: float, how: str | None = None, at: float = 0.0,
         rss_mib: float | None = None):
    """Run ``python -m <args>`` in its own session; (returncode, output) or an observation
    (stuck: past ``limit`` s, or past ``rss_mib`` of memory)."""
    log = os.path.join(ctx.work, "cli.txt")
    with open(log, "w") as f:
        p = subprocess.Popen([PY, "-m", *args], stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    sent = False
    why = None
    while p.poll() is None:
        now = time.monotonic() - t0
        if how and not sent and now >= at:
            _send(p, how)
            sent, t0, limit = True, time.monotonic(), 15.0  # after a signal: 15 s to end
        elif now > limit:
            why = f"still running after {limit:.0f} s" + (f" ({how})" if sent else "")
        elif rss_mib and _rss_mib(p.pid) > rss_mib:
            why = f"grew past {rss_mib:.0f} MiB in {now:.1f} s"
        if why:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return stuck(why)
        time.sleep(0.1)
    with open(log, errors="replace") as f:
        out = f.read()
    if how and not sent:
        return {"raised": "NotInterrupted", "clear": False,
                "detail": f"it ended (exit {p.returncode}) before the signal at {at} s"}
    return p.returncode, out


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cli_refusal(rc: int, out: str, needles, accept_success: bool = False):
    """A CLI's answer to a bad flag: refused (exit != 0), the flag named, no traceback."""
    if rc == 0:
        return ok("ran to completion") if accept_success else wrong("accepted: exit 0")
    if "Traceback (most recent call last)" in out:
        last = out.strip().splitlines()[-1][:140] if out.strip() else ""
        return {"raised": f"exit {rc}", "clear": False, "message": out[-600:],
                "detail": f"exit {rc} with a traceback: {last}"}
    return {"raised": f"exit {rc}", "clear": names(out, needles), "message": out[-600:],
            "detail": f"refused (exit {rc}): {out.strip().splitlines()[-1][:120] if out.strip() else ''}"}


def _failover_case(args: list[str], how: str | None = None, at: float = 0.0,
                   refuse=None, limit: float = 150.0):
    def fn(ctx):
        r = _cli(ctx, ["lessons", "failover", *args], limit, how, at)
        if isinstance(r, dict):
            return r
        rc, out = r
        if how:
            return ok(f"ended after {how} (exit {rc})")
        if refuse is not None:
            return _cli_refusal(rc, out, refuse, accept_success=True)
        if rc != 0:
            return {"raised": f"exit {rc}", "clear": False, "message": out[-600:],
                    "detail": f"a good failover run failed (exit {rc})"}
        return ok("ran to completion")
    return fn


def _failover_timeout_case(timeout: float):
    def fn(ctx):
        from lessons.l08_checkpoints_and_failures.failover import failover
        try:
            failover(timeout=timeout)
        except BaseException as e:  # noqa: BLE001
            return judge_error(e, ("timeout",))
        return ok("ran to completion within the time limit")
    return fn


# --- bad inputs -------------------------------------------------------------------------------

CHECKERS = [("l07_mixed_precision", f) for f in ("check_bytes_per_param", "check_fp16_smallest_normal",
                                                 "check_vanishing_update", "check_bf16_allreduce_bound")] + \
    [("l01_data_parallel", f) for f in ("check_zero_memory", "check_zero3_traffic",
                                        "check_dp_allreduce_bytes", "check_hsdp_traffic")] + \
    [("l02_tensor_parallel", f) for f in ("check_activation_bytes", "check_where_f", "check_layer_bytes")] + \
    [("l06_3d_parallel", f) for f in ("check_coords", "check_tp_group", "check_bubble", "check_memory")] + \
    [("l05_context_parallel", f) for f in ("check_zigzag_positions", "check_ring_bytes",
                                           "check_imbalance", "check_ulysses_cap")] + \
    [("l04_expert_parallel", f) for f in ("check_capacity", "check_a2a_bytes", "check_dropped")] + \
    [("l03_pipeline_parallel", f) for f in ("check_bubble", "check_interleaved", "check_min_m",
                                            "check_peak", "check_zb_h2_peak")] + \
    [("l08_checkpoints_and_failures", f) for f in ("check_young_interval", "check_interruptions_per_day",
                                                   "check_checkpoint_bytes_per_rank")] + \
    [("l00_collectives", f) for f in ("check_ring_bytes", "check_allreduce_time")]

HUGE = {"2**20000": lambda: 2 ** 20000, "-2**20000": lambda: -(2 ** 20000),
        "[2**20000]": lambda: [2 ** 20000], "'9'*5000": lambda: "9" * 5000}


def _checker_case(mod: str, fn_name: str, value: str):
    def fn(ctx):
        import importlib
        checker = getattr(importlib.import_module(f"lessons.{mod}.exercises"), fn_name)
        try:
            got = checker(HUGE[value]())
        except BaseException as e:  # noqa: BLE001 -- a checker's contract: never raises
            obs = judge_error(e, ())
            obs["clear"] = False
            return obs
        if isinstance(got, dict) and "message" in got:
            return ok("a verdict")
        return wrong(f"returned {type(got).__name__}, not a verdict")
    return fn


def _drill_case(args: list[str], accept_success: bool):
    def fn(ctx):
        r = _cli(ctx, ["lessons", "drill", *args], 20.0, rss_mib=1024)
        if isinstance(r, dict):
            return r
        return _cli_refusal(*r, ("--n", "--topic", "n=", "topic"), accept_success=accept_success)
    return fn


def _watch_ranks():
    import importlib
    pool = importlib.import_module("parlab.launch.pool")
    started = {"ranks": False}
    run_job = pool.Pool.run

    def watched(self, *a, **k):
        started["ranks"] = True
        return run_job(self, *a, **k)
    pool.Pool.run = watched
    return started


def _demo_case(call, needles):
    """A notebook-08 demo called with a typo: a ValueError naming it before any rank starts."""
    def fn(ctx):
        started = _watch_ranks()
        from lessons.l08_checkpoints_and_failures import experiments as E
        from lessons.l08_checkpoints_and_failures.training import Layout
        try:
            got = call(E, Layout)
        except BaseException as e:  # noqa: BLE001
            return judge_error(e, needles, ranks=started["ranks"])
        return wrong(f"accepted: returned {type(got).__name__}"
                     + (" after running ranks" if started["ranks"] else ""))
    return fn


# --- self-test cases: the classifier on faults of known outcome (CI) -----------------------

def _st_hang(ctx):
    time.sleep(3600)


def _st_leak_child(ctx):
    # in a session of its own, as torchrun's workers are: found by its tag, not its group
    subprocess.Popen(["sleep", "60"], start_new_session=True)
    return ok()


def _st_leak_file(ctx):
    os.makedirs(os.path.join(ctx.tmp, "parlab-rdzv-left"))
    return ok()


def _st_crash(ctx):
    os._exit(3)


def _st_clear(ctx):
    try:
        raise ValueError("steps=0: must be >= 1")
    except ValueError as e:
        return judge_error(e, ("steps",))


def _st_deep(ctx):
    return judge_error(KeyError("model.wte.weight"), ("checkpoint",))


def _st_in_ranks(ctx):
    from parlab.launch import LaunchError
    e = LaunchError("rank 1 raised during f; the other ranks were stopped.\n--- traceback from rank 1 ---\n"
                    "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: steps=0: bad\n")
    return judge_error(e, ("steps",))


def _st_silent(ctx):
    return wrong("losses off by 4.6e-05")


def _st_lost(ctx):
    return lost("step 4's good checkpoint is gone")


def _st_escape(ctx):
    raise TypeError("a bug in the case")


def _st_ok(ctx):
    return ok("fine")


def _st_sigint(ctx):
    """What this case starts gets Ctrl-C as a terminal would send it."""
    out = subprocess.run([PY, "-c", "import signal; print(signal.getsignal(signal.SIGINT) is "
                          "signal.default_int_handler)"], capture_output=True, text=True, timeout=30)
    return ok() if out.stdout.strip() == "True" else wrong("SIGINT is ignored in what cases start")


def _selftest() -> list[Case]:
    return [Case(f"selftest {n}", "selftest", f, timeout=20) for n, f in [
        ("hang", _st_hang), ("leak child", _st_leak_child), ("leak file", _st_leak_file),
        ("crash", _st_crash), ("clear error", _st_clear), ("deep error", _st_deep),
        ("error in ranks", _st_in_ranks), ("silent wrong", _st_silent), ("data loss", _st_lost),
        ("escaped exception", _st_escape), ("ok", _st_ok), ("sigint", _st_sigint)]]


# --- the catalogue ----------------------------------------------------------------------------

QUICK_CKPT = {"shard 1 truncated to 50%", "shard 0 deleted", "shard 0 exponent byte flipped at 75% of its tensors",
              "shard 1 one mantissa bit flipped at 40%", ".metadata deleted", "junk notes.txt added"}


def catalogue(selftest: bool = False) -> list[Case]:
    cases: list[Case] = []
    add = lambda *a, **k: cases.append(Case(*a, **k))  # noqa: E731

    # checkpoints: the newest (step 4) damaged; resumed via latest() or from its path
    for mutation in _mutations():
        for how in ("latest", "path") if mutation.startswith("shard") else ("latest",):
            add(f"ckpt {mutation}, resume via {how}", "checkpoint", _ckpt_case(mutation, how),
                quick=how == "latest" and mutation in QUICK_CKPT)
    for mutation in ("shard 1 truncated to 50%", "shard 0 exponent byte flipped at 75% of its tensors", ".metadata deleted",
                     "shard 1 deleted"):
        add(f"ckpt {mutation}, resume via latest on 2 ranks", "checkpoint",
            _ckpt_case(mutation, "latest", "dp2"), timeout=90, quick=mutation.startswith("shard 0 exponent"))
    for what in _leftovers():
        add(f"ckpt leftover {what}", "checkpoint", _leftover_case(what),
            quick=what == "step_00006 with .metadata, a shard missing")
    for victim in (0, 1):
        for when in ("before", "after"):
            for into in ("existing", "new"):
                add(f"ckpt save killed: rank {victim} dies {when} writing, into {into} step dir",
                    "checkpoint", _interrupted_case(victim, when, into), timeout=120,
                    quick=(victim, when) == (1, "before"))
    for field, value in [("n_layers", 1), ("n_layers", 3), ("n_heads", 2), ("n_heads", 8),
                         ("d_model", 64), ("vocab_size", 128), ("seq_len", 32), ("d_ff", 64),
                         ("n_kv_heads", 2)]:
        add(f"ckpt config mismatch {field}={value}", "checkpoint", _mismatch_case(field, value),
            quick=(field, value) in {("n_layers", 1), ("d_model", 64)})
    for field, value in [("n_layers", 1), ("n_heads", 2)]:
        add(f"ckpt config mismatch {field}={value} on 2 ranks", "checkpoint",
            _mismatch_case(field, value, "dp2"), timeout=90)

    # launch interrupts: each phase x each signal; the next launch after some
    hows = ("INT caller", "INT twice", "TERM caller", "KILL caller", "INT group", "TERM group",
            "KILL group")
    for mode, delays in (("cold", (0.3, 1.5)), ("warm", (0.5,)), ("collect", (0.1,))):
        for delay in delays:
            for how in hows if mode != "collect" else ("INT caller", "KILL caller", "KILL group"):
                nxt = how in ("INT caller", "KILL group")
                add(f"launch {mode} +{delay}s: {how}" + (", then a next launch" if nxt else ""),
                    "launch", _interrupt_case(mode, delay, how, nxt), timeout=120,
                    quick=(mode, delay) in {("cold", 0.3), ("warm", 0.5)}
                    and how in ("INT caller", "KILL caller", "KILL group"))
    for env, world in [({"RANK": "0", "WORLD_SIZE": "2"}, 2), ({"RANK": "1", "WORLD_SIZE": "2"}, 2),
                       ({"WORLD_SIZE": "2"}, 2), ({"RANK": "0"}, 2), ({"LOCAL_RANK": "0", "WORLD_SIZE": "2"}, 2),
                       ({"RANK": "0", "WORLD_SIZE": "64"}, 64),
                       ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29517"}, 2)]:
        add("launch stray env " + " ".join(f"{k}={v}" for k, v in env.items()) + f", world {world}",
            "input", _stray_env_case(env, world), timeout=60,
            quick=env == {"RANK": "0", "WORLD_SIZE": "2"})

    # failover (python -m lessons failover): interrupted, killed, a normal run, bad flags
    add("failover normal run", "failover", _failover_case([]), timeout=200)
    # 40 steps, not the default 8: on an idle box the default run is over in ~10 s, before
    # the +12 s signal (it then lands in the restarted group's training, as meant)
    for how, at in [("INT caller", 4.0), ("INT caller", 8.0), ("INT caller", 12.0),
                    ("TERM caller", 8.0), ("KILL caller", 8.0), ("KILL group", 8.0)]:
        add(f"failover +{at:.0f}s: {how}", "failover", _failover_case(["--steps", "40"], how, at),
            timeout=120, quick=(how, at) == ("INT caller", 8.0))
    add("failover --steps 200 --ranks 4 --every 1", "failover",
        # the run sizes its own time limit to the work (330 s here): give it that and more,
        # so that under load this case measures failover's limit, not the probe's
        _failover_case("--steps 200 --ranks 4 --every 1".split(), refuse=("--steps", "--every", "--ranks",
                                                                          "timeout", "time"), limit=420),
        timeout=450)
    add("failover(timeout=3)", "failover", _failover_timeout_case(3.0), timeout=120)
    for args, flag in [("--ranks 3", "--ranks"), ("--ranks 0", "--ranks"), ("--ranks 8", "--ranks"),
                       ("--steps 1", "--steps"), ("--steps 0", "--steps"), ("--kill-at 0", "--kill-at"),
                       ("--kill-at 8", "--kill-at"), ("--every 0", "--every"), ("--every 8", "--every"),
                       ("--steps 100000", "--steps")]:
        add(f"failover {args}", "failover", _failover_case(args.split(), refuse=(flag,), limit=150),
            timeout=200, quick=args in ("--ranks 3", "--kill-at 8"))

    # bad inputs: the checkers' huge integers, drill counts, notebook 08's demos with typos
    for mod, fn_name in CHECKERS:
        for value in HUGE:
            if value != "2**20000" and mod != "l08_checkpoints_and_failures":
                continue
            add(f"checker {mod}.{fn_name}({value})", "input", _checker_case(mod, fn_name, value),
                quick=value == "2**20000" and fn_name in ("check_young_interval", "check_bubble",
                                                          "check_zero_memory"))
    for args, accept in [("--n 1000000000", True), ("--n 1000000000000000000000000000000", True),
                         ("--n -1", False), ("--n 0", False), ("--topic nope", False)]:
        add(f"drill {args}", "input", _drill_case(args.split(), accept), timeout=40,
            quick=args == "--n 1000000000")
    demos = [
        ("resharded_resume planted=('no_optimiser',)", lambda E, L: E.resharded_resume(planted=("no_optimiser",)),
         ("planted",)),
        ("resharded_resume planted=('no-rng',)", lambda E, L: E.resharded_resume(planted=("no-rng",)),
         ("planted",)),
        ("resharded_resume resume=(Layout('fsdp', 2),)",
         lambda E, L: E.resharded_resume(resume=(L("fsdp", 2),)), ("kind", "layout", "fsdp")),
        ("resharded_resume save=Layout('our', 2)",
         lambda E, L: E.resharded_resume(save=L("our", 2), resume=(L("ours", 2),)), ("kind", "layout", "our")),
        ("resharded_resume resume=(Layout('ours', 3),)",
         lambda E, L: E.resharded_resume(resume=(L("ours", 3),)), ("dp", "layout", "ranks", "batch")),
        ("resharded_resume at=9", lambda E, L: E.resharded_resume(at=9), ("at",)),
        ("resharded_resume steps=0", lambda E, L: E.resharded_resume(steps=0), ("steps",)),
        ("save_stall repeats=0", lambda E, L: E.save_stall(repeats=0), ("repeats",)),
        ("save_stall ranks=0", lambda E, L: E.save_stall(ranks=0), ("ranks", "world_size")),
        ("stragglers kinds=('dpp',)", lambda E, L: E.stragglers(kinds=("dpp",)), ("kinds",)),
        ("stragglers bug='nosync_typo'", lambda E, L: E.stragglers(bug="nosync_typo"), ("bug",)),
        ("tp_resharded_resume resume=((3, 1),)", lambda E, L: E.tp_resharded_resume(resume=((3, 1),)),
         ("resume", "dp", "tp")),
        ("goodput_at_scale n_gpus=0", lambda E, L: E.goodput_at_scale(n_gpus=0), ("n_gpus",)),
        ("restart_for_target target=1.5", lambda E, L: E.restart_for_target(target=1.5), ("target",)),
        ("scale_bytes weights=-1", lambda E, L: E.scale_bytes(weights=-1), ("weights",)),
    ]
    for label, call, needles in demos:
        add(f"demo {label}", "input", _demo_case(call, needles), timeout=120,
            quick=label.startswith("resharded_resume planted=('no_optimiser'"))
    if selftest:
        cases += _selftest()
    return cases


# --- the report ---------------------------------------------------------------------------------

def table(rows: list[dict]) -> str:
    cats = [c for c in CATEGORIES if any(r["category"] == c for r in rows)]
    width = max([len(c) for c in cats] + [5])
    head = f"{'':<{width}} " + " ".join(f"{o:>{max(len(o), 5)}}" for o in OUTCOMES) + f" {'total':>6}"
    lines = [head]
    for c in cats + ["total"]:
        sel = [r for r in rows if c == "total" or r["category"] == c]
        n = collections.Counter(r["outcome"] for r in sel)
        lines.append(f"{c:<{width}} " + " ".join(f"{n.get(o, 0):>{max(len(o), 5)}}" for o in OUTCOMES)
                     + f" {len(sel):>6}")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="about 40 cases, a few minutes")
    ap.add_argument("--json", default=None, help="write the per-case outcomes here")
    ap.add_argument("--only", default=None, help="run the cases whose name matches this regex")
    ap.add_argument("--list", action="store_true", help="list the cases and stop")
    ap.add_argument("--grace", type=float, default=5.0,
                    help="seconds a case's processes get to end before they count as left behind")
    ap.add_argument("--fixture", default=None, help=argparse.SUPPRESS)  # a made one: debugging
    ap.add_argument("--selftest", action="store_true", help="run the classifier's own cases too")
    a = ap.parse_args(argv)
    sys.path[:0] = [LIB]
    cases = [c for c in catalogue(selftest=a.selftest)
             if (not a.quick or c.quick or c.category == "selftest")
             and (not a.only or re.search(a.only, c.name))]
    if a.list:
        for c in cases:
            print(f"{c.category:10s} {c.name}")
        print(f"{len(cases)} cases")
        return
    root = tempfile.mkdtemp(prefix="fault-probe-")
    rows = []
    t0 = time.monotonic()
    try:
        fixture = a.fixture or (build_fixture(root) if any(c.category == "checkpoint" for c in cases) else "")
        print(f"fixture ready in {time.monotonic() - t0:.0f} s; {len(cases)} cases", flush=True)
        for c in cases:
            r = run_case(c, root, fixture, grace=a.grace)
            rows.append(r)
            print(f"{r['outcome']:15s} {r['seconds']:5.1f}s  {c.name}"
                  + (f"  [{r['detail'][:160]}]" if r["detail"] else ""),
                  flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total = time.monotonic() - t0
    summary = table(rows)
    print(f"\n{len(rows)} cases in {total:.0f} s\n{summary}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"counts": collections.Counter(r["outcome"] for r in rows), "seconds": round(total),
                       "quick": a.quick, "table": summary, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
