"""Throw bad inputs at every public entry point and sort what happens.

    python tools/fuzz_inputs.py [--json PATH] [--only PREFIX] [--timeout S]

A catalogue of cases, each a bad (or, as a control, a good) input to one entry point:
``GPTConfig``, every ``*Run`` through its strategy's ``run``, a config changed after it
was made, ``Mesh``, the planner's ``estimate``/``plan``, the exercise checkers (numeric
answers, answers that cannot be printed or raise when read, learner functions that sleep,
exit or raise, the checkers' own parameters), notebook 08's demos (misspelt choices,
absurd counts) and the CLIs (``python -m parlab``, ``python -m lessons``). Each case runs in a worker process (so a case that kills its caller or hangs is
seen as such, and the next case gets a fresh worker) and lands in one category:

  good          a bad input refused with a ValueError naming the field, before any rank
                started (for a checker: a verdict; for the CLI: exit != 0, the flag named,
                no traceback); a good input answered
  wrong         an exception of another type, or one that does not name the field
  in ranks      an error raised only after ranks had started
  kills caller  the worker process died
  hang          no answer within the timeout
  silent-wrong  a bad input accepted: a result came back, no error

This is a measuring tool for a person (its counts go in a closing note); the CI test of
the same property is tests/parlab/core/test_fuzz_inputs.py, smaller and with hypothesis.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import select
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD_INTS = [0, -1, 1.5, None, "2", True, float("nan")]
BAD_FLOATS = [0, -1.0, None, "x", float("nan"), float("inf"), True]


# --- the catalogue ---------------------------------------------------------------------
# A case is (name, expect, thunk). expect: ("field", name) -- a ValueError naming it;
# ("verdict",) -- a checker's {"ok", "message"}; ("frozen",) -- the change is refused;
# ("cli", flag) -- the CLI refuses naming the flag; ("ok",) -- a good input, answered.

def _runs():
    from parlab.context_parallel.runner import CPRun
    from parlab.data_parallel.runner import DPRun
    from parlab.expert_parallel.runner import EPRun
    from parlab.parallel_nd.runner import NDRun
    from parlab.pipeline_parallel.runner import PPRun
    from parlab.tensor_parallel.runner import TPRun
    from parlab.zero.runner import ZeroRun
    return {"tp": (TPRun, "tensor_parallel"), "cp": (CPRun, "context_parallel"),
            "dp": (DPRun, "data_parallel"), "zero": (ZeroRun, "zero"),
            "pp": (PPRun, "pipeline_parallel"), "ep": (EPRun, "expert_parallel"),
            "3d": (NDRun, "parallel_nd")}


def _small(**kw):
    from parlab.model import GPTConfig
    return GPTConfig(**{**dict(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2), **kw})


def _run_case(key, world, run_kw, cfg_kw=None, mutate=None):
    def thunk():
        import dataclasses
        import importlib
        cls, mod = _runs()[key]
        cfg = _small(**(cfg_kw or {}))
        if mutate:
            field, value = mutate
            setattr(cfg, field, value)  # the drift: a config changed after it was checked
        base = dict(config=cfg, steps=2, batch_size=8)
        if key == "ep":
            base["config"] = dataclasses.replace(cfg, n_experts=4, top_k=2)
        if key == "3d":
            base.update(dp=2, pp=1, tp=2)
        r = cls(**{**base, **run_kw})
        return importlib.import_module(f"parlab.{mod}").run(r, world, timeout=60)
    return thunk


def catalogue() -> list:
    cases = []
    add = lambda name, expect, thunk: cases.append((name, expect, thunk))

    # GPTConfig: every size field, bad values; and shapes that cannot work
    for field in ("vocab_size", "seq_len", "d_model", "n_heads", "n_layers", "d_ff", "n_kv_heads"):
        for v in BAD_INTS:
            if v is None and field in ("d_ff", "n_kv_heads"):
                continue  # None is their default: 4 d_model, n_heads
            add(f"GPTConfig {field}={v!r}", ("field", field),
                lambda f=field, v=v: _small(**{f: v}))
    add("GPTConfig d_model=30 n_heads=4", ("field", "n_heads"), lambda: _small(d_model=30))
    add("GPTConfig n_kv_heads=3", ("field", "n_kv_heads"), lambda: _small(n_kv_heads=3))
    add("GPTConfig n_kv_heads=8 > n_heads", ("field", "n_kv_heads"), lambda: _small(n_kv_heads=8))
    add("GPTConfig good", ("ok",), lambda: _small())

    # runs: bad fields through each strategy's run, on 2 ranks (4 for 3d)
    world = {"tp": 2, "cp": 2, "dp": 2, "zero": 2, "pp": 2, "ep": 2, "3d": 4}
    common = {"steps": BAD_INTS[:4], "batch_size": [0, -1, 3.0, None], "lr": BAD_FLOATS[:6]}
    for key in world:
        for field, values in common.items():
            for v in values:
                add(f"{key} run {field}={v!r}", ("field", field),
                    _run_case(key, world[key], {field: v}))
        add(f"{key} run vocab_size=2", ("field", "vocab_size"),
            _run_case(key, world[key], {}, cfg_kw=dict(vocab_size=2)))
        add(f"{key} run config.d_ff=0 after construction", ("frozen",),
            _run_case(key, world[key], {}, mutate=("d_ff", 0)))
        add(f"{key} run config.n_heads=3 after construction", ("frozen",),
            _run_case(key, world[key], {}, mutate=("n_heads", 3)))
        add(f"{key} run good", ("ok",), _run_case(key, world[key], {}))
    add("3d run dp=0", ("field", "dp"), _run_case("3d", 4, dict(dp=0)))
    add("3d run micro_batches=0", ("field", "micro_batches"), _run_case("3d", 4, dict(micro_batches=0)))
    add("pp run micro_batches=0", ("field", "micro_batches"), _run_case("pp", 2, dict(micro_batches=0)))
    add("tp run recompute='x'", ("field", "recompute"), _run_case("tp", 2, dict(recompute="x")))
    add("cp run layout='x'", ("field", "layout"), _run_case("cp", 2, dict(layout="x")))

    # Mesh
    def mesh(**kw):
        from parlab.mesh import Mesh
        return Mesh(**kw)
    for field in ("dp", "pp", "cp", "tp", "ep"):
        for v in (0, -1, 1.5, True, None):
            add(f"Mesh {field}={v!r}", ("field", field), lambda f=field, v=v: mesh(**{f: v}))
    for v in (1.5, True, -1, 8, None):
        add(f"Mesh.coords({v!r})", ("field", "rank"), lambda v=v: mesh(dp=2, tp=2, pp=2).coords(v))
    add("Mesh.layout() at 16384 ranks", ("ok",), lambda: len(mesh(dp=64, pp=16, tp=16).layout()))

    # planner
    def est(**kw):
        from parlab.planner import estimate
        base = dict(n_layers=32, d_model=4096, n_heads=32, seq_len=2048, vocab_size=51200,
                    n_gpus=64, tp=8, pp=2, global_batch=512)
        return estimate(**{**base, **kw})
    for field in ("n_layers", "d_model", "n_heads", "seq_len", "vocab_size", "n_gpus", "tp",
                  "pp", "global_batch"):
        for v in (0, -1, 1.5, None, True):
            add(f"estimate {field}={v!r}", ("field", field), lambda f=field, v=v: est(**{f: v}))
    add("estimate d_model=4100 n_heads=32", ("field", "n_heads"), lambda: est(d_model=4100))
    add("estimate global_batch=10**12", ("ok",), lambda: est(global_batch=10 ** 12).step_time.total)
    add("estimate good", ("ok",), lambda: est().step_time.total)

    def plan(**kw):
        from parlab.planner import plan as p
        return p(**{**dict(model="13B", n_gpus=64, gpu="A100-80GB"), **kw})
    add("plan dp_overlap=0", ("field", "dp_overlap"), lambda: plan(dp_overlap=0))
    add("plan tps=()", ("field", "tps"), lambda: plan(tps=()))
    add("plan tps=8", ("field", "tps"), lambda: plan(tps=8))
    add("plan n_gpus=0", ("field", "n_gpus"), lambda: plan(n_gpus=0))
    add("plan n_gpus=1.5", ("field", "n_gpus"), lambda: plan(n_gpus=1.5))
    add("plan global_batch=64e9", ("field", "global_batch"), lambda: plan(global_batch=64e9))
    add("plan global_batch=10**12", ("ok",), lambda: len(plan(global_batch=10 ** 12).ranked))
    add("plan model='nope'", ("field", "model"), lambda: plan(model="nope"))
    add("plan good", ("ok",), lambda: len(plan().ranked))

    # numeric answer checkers: any input gets a verdict
    def numeric(mod, fn, answer):
        import importlib
        return getattr(importlib.import_module(f"lessons.{mod}.exercises"), fn)(answer)
    answers = [10 ** 400, float("nan"), float("inf"), "np.array([1.0, 2.0])", ["a", 1], None,
               "3.0", True, "abc", [float("nan")],
               # typed notations and formulas, and ones meant to hang or eat memory
               "2^-14", "70e9*12/64", "(8-1)/(8-1+32)", "13.5 GB", "1.5 s", "1,5",
               "9**9**9**9", "10**10**10", "1" * 100_000, "(" * 100_000, "1+" * 5000 + "1",
               "__import__('os')", "(-8)^(1/3)"]
    for mod, fn in [("l00_collectives", "check_ring_bytes"), ("l00_collectives", "check_allreduce_time"),
                    ("l03_pipeline_parallel", "check_bubble"), ("l03_pipeline_parallel", "check_min_m"),
                    ("l01_data_parallel", "check_zero_memory"), ("l04_expert_parallel", "check_capacity"),
                    ("l02_tensor_parallel", "check_activation_bytes"),
                    ("l05_context_parallel", "check_imbalance"), ("l06_3d_parallel", "check_bubble"),
                    ("l06_3d_parallel", "check_coords"), ("l06_3d_parallel", "check_tp_group"),
                    ("l05_context_parallel", "check_zigzag_positions")]:
        for a in answers:
            def thunk(mod=mod, fn=fn, a=a):
                import numpy as np
                return numeric(mod, fn, np.array([1.0, 2.0]) if a == "np.array([1.0, 2.0])" else a)
            add(f"{mod}.{fn}({a!r:.30})", ("verdict",), thunk)

    # every answer checker of every exercises module, on answers that cannot be printed
    # (ints past Python's 4,300-digit str limit) or that raise when read
    for mod, fn in _answer_checkers():
        for what in HOSTILE_ANSWERS:
            def thunk(mod=mod, fn=fn, what=what):
                import importlib
                return getattr(importlib.import_module(mod), fn)(_hostile(what))
            add(f"{mod.split('.')[1][:3]}.{fn}({what})", ("verdict",), thunk)

    # notebook 08's demos: a misspelt choice or an absurd count, named before any work
    for call, field in [("resharded_resume(planted=('no_optimiser',))", "planted"),
                        ("resharded_resume(save=Layout('our', 4))", "kind"),
                        ("resharded_resume(steps=10**12)", "steps"),
                        ("resharded_resume(config=GPTConfig(n_layers=10**9))", "config"),
                        ("save_stall(repeats=10**12)", "repeats"),
                        ("stragglers(slowdown=float('inf'))", "slowdown"),
                        ("stragglers(repeats=100, slowdown=50, t_compute=0.5)", "timeout"),
                        ("stragglers(kinds=('dq',))", "kinds"),
                        ("goodput_at_scale(points=10**12)", "points"),
                        ("tp_resharded_resume(resume=((10**6, 10**6),))", "resume"),
                        ("Spec(TINY, planted='no_rgn')", "planted"),
                        ("widgets.goodput_explorer(n_gpus=3000)", "n_gpus")]:
        def thunk(call=call):
            from parlab.model import GPTConfig  # noqa: F401  (used by eval)
            from lessons.l08_checkpoints_and_failures import experiments, widgets  # noqa: F401
            from lessons.l08_checkpoints_and_failures.training import Layout, Spec  # noqa: F401
            TINY = experiments.TINY  # noqa: F841
            return eval(call if call.startswith(("Spec", "widgets")) else f"experiments.{call}")
        add(f"l08 {call}", ("field", field), thunk)

    # learner functions run by checkers: sleep, exit, raise -> a verdict, the caller lives
    bodies = {"sleeps": "import time; time.sleep(3600)", "os._exit(7)": "import os; os._exit(7)",
              "sys.exit(3)": "import sys; sys.exit(3)",
              "KeyboardInterrupt": "raise KeyboardInterrupt", "raises": "raise RuntimeError('x')"}
    for what, body in bodies.items():
        for mod, checker in [("l03_pipeline_parallel", "check_partition"),
                             ("l06_3d_parallel", "check_groups"), ("l03_pipeline_parallel", "check_1f1b"),
                             ("l00_collectives", "check_reduce_scatter")]:
            def thunk(mod=mod, checker=checker, sig="*args, **kwargs", body=body):
                import importlib
                import linecache
                src = f"def learner({sig}):\n    {body}\n"
                path = f"<fuzz {checker}>"
                linecache.cache[path] = (len(src), None, src.splitlines(True), path)
                ns = {}
                exec(compile(src, path, "exec"), ns)
                kw = {"timeout": 10} if checker != "check_partition" else {}
                try:
                    return getattr(importlib.import_module(f"lessons.{mod}.exercises"), checker)(ns["learner"], **kw)
                except TypeError as e:
                    if "timeout" in str(e):  # a checker without a timeout argument
                        return getattr(importlib.import_module(f"lessons.{mod}.exercises"), checker)(ns["learner"])
                    raise
            add(f"{checker} learner {what}", ("verdict",), thunk)

    # checkers' own parameters
    def rs(**kw):
        from lessons.l00_collectives import exercises as c
        return c.check_reduce_scatter(c.solution_reduce_scatter, **kw)
    for field, v in [("per_chunk", 0), ("per_chunk", -1), ("world_size", 0), ("world_size", 1.5),
                     ("timeout", 0)]:
        add(f"check_reduce_scatter {field}={v!r}", ("field", field), lambda f=field, v=v: rs(**{f: v}))
    def c1f1b(**kw):
        from lessons.l03_pipeline_parallel import exercises as pp
        return pp.check_1f1b(pp.solution_1f1b, **kw)
    for field, v in [("p", 0), ("m", 0), ("p", 1.5), ("timeout", -1)]:
        add(f"check_1f1b {field}={v!r}", ("field", field), lambda f=field, v=v: c1f1b(**{f: v}))

    # the CLI
    cli = [("3d --dp 0", "--dp"), ("3d --micro-batches 0", "--micro-batches"),
           ("ep --experts 0", "--experts"), ("pipeline --micro-batches 0", "--micro-batches"),
           ("train --steps 0", "--steps"), ("train --lr inf", "--lr"), ("train --lr nan", "--lr"),
           ("info --ranks 0", "--ranks"), ("alpha-beta --ranks 33", "--ranks"),
           ("tp --ranks 0", "--ranks"), ("dp --bucket-kib 0", "--bucket-kib"),
           ("zero --stage 7", "--stage"), ("cp --layout x", "--layout"),
           ("plan --gpus 0", "--gpus"), ("plan --model nope", "--model"),
           ("train --batch-size -1", "--batch-size")]
    # the lessons' CLI (python -m lessons): the drill's counts
    cli += [("lessons drill --n 0", "--n"), ("lessons drill --n 1000000000", "--n"),
            ("lessons drill --topic nope", "--topic")]
    for args, flag in cli:
        def thunk(args=args):
            prog = ["-m", "lessons", *args.split()[1:]] if args.startswith("lessons ") \
                else ["-m", "parlab", *args.split()]
            p = subprocess.run([sys.executable, *prog], capture_output=True,
                               text=True, timeout=60, stdin=subprocess.DEVNULL)
            return {"cli": True, "rc": p.returncode, "out": p.stdout[-2000:] + p.stderr[-2000:]}
        add(f"cli {args}", ("cli", flag), thunk)
    return cases


HOSTILE_ANSWERS = ("2**20000", "-(10**5000)", "[2**20000]", "Fraction(2**20000, 3)",
                   "an object whose __float__ and __repr__ raise", "a list nested 5000 deep",
                   "a meta tensor", "np.longdouble('1e4000')")


def _hostile(what: str):
    """The answer ``what`` names, made in the worker (repr() of some of them raises)."""
    import fractions
    import numbers

    import numpy as np
    import torch

    class Raises:
        def __float__(self):
            raise RuntimeError("__float__")
        __repr__ = __str__ = __float__
    numbers.Real.register(Raises)
    nested = 1
    for _ in range(5000):
        nested = [nested]
    return {"2**20000": 2 ** 20000, "-(10**5000)": -(10 ** 5000), "[2**20000]": [2 ** 20000],
            "Fraction(2**20000, 3)": fractions.Fraction(2 ** 20000, 3),
            "an object whose __float__ and __repr__ raise": Raises(),
            "a list nested 5000 deep": nested, "a meta tensor": torch.empty((), device="meta"),
            "np.longdouble('1e4000')": np.longdouble("1e4000")}[what]


def _answer_checkers() -> list:
    """(module, name) of every checker of a typed answer in the lessons' exercises modules."""
    import importlib
    import inspect
    import pkgutil
    sys.path.insert(0, os.path.join(ROOT, "lib"))
    import lessons
    found = []
    for info in pkgutil.walk_packages(lessons.__path__, "lessons."):
        if info.name.rsplit(".", 1)[1].startswith("exercises"):
            mod = importlib.import_module(info.name)
            for name, f in sorted(vars(mod).items()):
                if name.startswith("check_") and inspect.isfunction(f) \
                        and f.__module__ == mod.__name__:
                    sig = inspect.signature(f)
                    if next(iter(sig.parameters)) not in ("fn", "forward") \
                            and sig.return_annotation in (dict, "dict"):
                        found.append((info.name, name))
    return found


# --- one worker: run cases, report what came back ---------------------------------------

def worker() -> None:
    sys.path.insert(0, os.path.join(ROOT, "lib"))
    import importlib
    pool = importlib.import_module("parlab.launch.pool")  # parlab.launch is also a function
    started = {"ranks": False}
    run_job = pool.Pool.run  # every job on ranks goes through here, new pool or reused

    def watched(self, *a, **k):
        started["ranks"] = True
        return run_job(self, *a, **k)
    pool.Pool.run = watched
    cases = catalogue()
    # Reports go out on a copy of stdout; what the cases print goes to /dev/null.
    report = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.stdout = open(os.devnull, "w")
    for line in sys.stdin:
        i = int(line)
        started["ranks"] = False
        name, expect, thunk = cases[i]
        try:
            got = thunk()
            rep = dict(i=i, raised=None, result=_plain(got))
        except BaseException as e:  # KeyboardInterrupt and SystemExit included: what escaped
            rep = dict(i=i, raised=type(e).__name__, message=str(e)[:500])
        rep["ranks"] = started["ranks"]
        print(json.dumps(rep), file=report, flush=True)


def _plain(x):
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in list(x.items())[:8]}
    if isinstance(x, (int, float, str, bool)) or x is None:
        return x if not isinstance(x, float) or x == x else "nan"
    return type(x).__name__


def classify(expect, rep) -> str:
    kind = expect[0]
    if rep["raised"] is None:
        res = rep["result"]
        if kind == "ok":
            return "good"
        if kind == "verdict":
            return "good" if isinstance(res, dict) and "message" in res else "silent-wrong"
        if kind == "cli":
            if res["rc"] == 0:
                return "silent-wrong"
            if "Traceback" in res["out"]:
                return "wrong"
            return "good" if expect[1] in res["out"] else "wrong"
        return "silent-wrong"
    if kind == "frozen" and rep["raised"] in ("FrozenInstanceError", "AttributeError"):
        return "good"
    if rep["ranks"] and rep["raised"] not in ("ValueError",):
        return "in ranks"
    if kind == "field" and rep["raised"] == "ValueError" and expect[1] in rep["message"] \
            and not rep["ranks"]:
        return "good"
    if kind == "field" and rep["raised"] == "ValueError" and rep["ranks"]:
        return "in ranks"
    return "wrong"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default=None, help="run the cases whose name starts with this")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per case")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker()
    sys.path.insert(0, os.path.join(ROOT, "lib"))
    os.environ["PYTHONPATH"] = os.path.join(ROOT, "lib")  # the worker, its ranks, the CLI
    cases = catalogue()
    todo = [i for i, c in enumerate(cases) if not a.only or c[0].startswith(a.only)]
    rows, proc = [], None
    t0 = time.time()
    for i in todo:
        name, expect, _ = cases[i]
        if proc is None or proc.poll() is not None:
            proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                    start_new_session=True)
        proc.stdin.write(f"{i}\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], a.timeout)
        line = proc.stdout.readline() if ready else None
        if line:
            rep = json.loads(line)
            cat = classify(expect, rep)
        else:
            cat = "hang" if not ready else "kills caller"
            rep = dict(raised=None)
            with_pg = os.getpgid(proc.pid) if proc.poll() is None else None
            if with_pg:
                os.killpg(with_pg, 9)
            proc.wait()
            proc = None
        rows.append(dict(name=name, expect=list(expect), category=cat,
                         raised=rep.get("raised"), message=rep.get("message", "")[:200]))
        print(f"{cat:13s} {name}" + (f"  [{rep.get('raised')}: {rep.get('message', '')[:100]}]"
                                     if cat != "good" and rep.get("raised") else ""), flush=True)
    if proc is not None:
        proc.stdin.close()
        proc.wait(timeout=30)
    counts = collections.Counter(r["category"] for r in rows)
    print(f"\n{len(rows)} cases in {time.time() - t0:.0f} s: "
          + ", ".join(f"{k} {counts.get(k, 0)}" for k in
                      ("good", "wrong", "in ranks", "kills caller", "hang", "silent-wrong")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(counts=counts, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
