"""Checkpoint fault cases on one process, each sorted by what a restart then does.

    PYTHONPATH=lib python tools/fault_checkpoints.py

A restart is ``latest(directory)`` then ``load`` of what it names. Cases: a save that
raises or is SIGKILLed after writing its shard (into a new step, over the newest one),
a truncated or missing shard, flipped bits (one of the mantissa, one of the exponent,
three in one float), and a 2-layer checkpoint resumed into a 1-layer config. Outcomes:

  good                      the newest intact checkpoint loaded exactly (a damaged one
                            passed over), or a mismatch refused naming the field
  silent-wrong              values loaded that are not any saved checkpoint's
  lost data                 an older checkpoint loaded although a newer good one existed
  wrong error / no fallback an error that is not ours, with no fallback

A measuring tool for a person (tests/parlab/checkpoint/test_atomic.py is the CI test of
the same cases). With the checkpoint code before publishing-by-rename and manifests,
it counted good 2, silent-wrong 6, wrong error / no fallback 2 (of 10); now good 10.
"""
import collections, dataclasses, os, shutil, signal, struct, tempfile, warnings
import torch
warnings.simplefilter("ignore")
from parlab.checkpoint import dcp
from torch.distributed.checkpoint import FileSystemWriter
MARK = 1.2345678

def st(v, step):
    w = torch.full((32, 32), v); w[3, 5] = MARK
    return {"model": {"w": w}, "train": dcp.train_state(step)}

def empty():
    return {"model": {"w": torch.zeros(32, 32)}, "train": dcp.train_state(0)}

ROOT = tempfile.mkdtemp(prefix="parlab_faults_")


def setup():
    d = tempfile.mkdtemp(dir=ROOT)
    for s in (2, 4):
        dcp.save(st(float(s), s), os.path.join(d, f"step_{s:05d}"))
    return d

class Dies(FileSystemWriter):
    def write_data(self, plan, planner):
        super().write_data(plan, planner).wait(); raise OSError("dies")

class Killed(FileSystemWriter):
    def write_data(self, plan, planner):
        super().write_data(plan, planner).wait(); os.kill(os.getpid(), signal.SIGKILL)

def resume(d):
    """What a restart does: latest(), then load it; returns the loaded w[0,0] or the error."""
    found = dcp.latest(d)
    if found is None:
        return "none"
    try:
        got = dcp.load(empty(), found[1])
    except BaseException as e:
        return f"error at {os.path.basename(found[1])}: {type(e).__name__}"
    w = got["model"]["w"]
    exact = float(w[0, 0]) == found[0] and float(w[3, 5]) == struct.unpack("<f", struct.pack("<f", MARK))[0]
    return (os.path.basename(found[1]), "exact" if exact else f"WRONG w00={float(w[0,0])} w35={float(w[3,5])!r}")

def classify(r, expect_step):
    if isinstance(r, tuple):
        if r[1] != "exact": return "silent-wrong"
        return "good" if r[0] == f"step_{expect_step:05d}" else "lost data"
    return "wrong error / no fallback"

def flip(path, *bits):
    data = bytearray(open(path, "rb").read())
    at = data.find(struct.pack("<f", MARK))
    for bit in bits:
        data[at + bit // 8] ^= 1 << (bit % 8)
    open(path, "wb").write(data)

def case_raise(target):
    d = setup(); p = os.path.join(d, target)
    try: dcp.save(st(9.0, 9), p, writer=Dies(p))
    except BaseException: pass
    return resume(d), 4

def case_kill(target):
    d = setup(); p = os.path.join(d, target)
    pid = os.fork()
    if pid == 0:
        try: dcp.save(st(9.0, 9), p, writer=Killed(p))
        finally: os._exit(3)
    os.waitpid(pid, 0)
    return resume(d), 4

def case_damage(kind):
    d = setup(); s4 = os.path.join(d, "step_00004"); shard = os.path.join(s4, "__0_0.distcp")
    if kind == "truncate": os.truncate(shard, os.path.getsize(shard) - 100)
    elif kind == "missing shard": os.remove(shard)
    elif kind.startswith("bit"): flip(shard, int(kind[3:]))
    elif kind == "3 bits": flip(shard, 0, 8, 16)
    return resume(d), 2

def case_config():
    from lessons.l08_checkpoints_and_failures import experiments as E
    from lessons.l08_checkpoints_and_failures.training import Layout, Spec, train_rank
    d = tempfile.mkdtemp(dir=ROOT)
    spec = Spec(E.TINY, Layout("one", 1), steps=3, save_at=(2,), directory=d)
    path = train_rank(spec)["saved"][2]
    try:
        train_rank(dataclasses.replace(spec, config=dataclasses.replace(E.TINY, n_layers=1), resume_from=path, save_at=()))
        return "silent-wrong"
    except BaseException as e:
        return "good" if "n_layers" in str(e) else "wrong error / no fallback"

cases = {f"raise mid-write into new step": lambda: case_raise("step_00006"),
         "raise mid-write over step_4": lambda: case_raise("step_00004"),
         "SIGKILL mid-write into new step": lambda: case_kill("step_00006"),
         "SIGKILL mid-write over step_4": lambda: case_kill("step_00004"),
         "truncated shard": lambda: case_damage("truncate"),
         "missing shard": lambda: case_damage("missing shard"),
         "1 mantissa bit flipped": lambda: case_damage("bit0"),
         "1 exponent bit flipped": lambda: case_damage("bit30"),
         "3 bits of one float flipped": lambda: case_damage("3 bits")}

def main() -> None:
    counts = collections.Counter()
    try:
        for name, f in cases.items():
            r, want = f()
            c = classify(r, want)
            counts[c] += 1
            print(f"{name:34s} {c:26s} {r}")
        c = case_config()
        counts[c] += 1
        print(f"{'2-layer ckpt -> 1-layer config':34s} {c}")
        print(dict(counts))
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
