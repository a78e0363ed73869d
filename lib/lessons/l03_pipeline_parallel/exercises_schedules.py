"""Notebook 03's schedules written as data by the learner, checked like the lab's own.

``my_1f1b(stage, n_stages, n_micro)`` returns the list of actions one stage runs, in
order: ("F", mb) and ("B", mb). ``check_1f1b`` validates the lists (every micro-batch
forward then backward once per stage), replays them in the simulator (no deadlock),
compares the peak activations with 1F1B's min(P - stage, M) and the bubble with
(P - 1)/(M + P - 1), then RUNS them on P ranks with the lab's executor and real
compute: the loss and every gradient must equal the single device's.

The pieces are shared with the zero-bubble exercise (``zero_bubble.py``: the same lists
with ("W", mb) as well): reading the learner's list (``as_actions``), its structure
(``structure``), the replay (``replay_or_verdict``), and the run on real ranks against
one device (``run_on_ranks``).
"""

from __future__ import annotations

from parlab import cost
from parlab.pipeline_parallel.schedules import Action, bubble, peak_in_flight, replay
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.i18n import t
from .text import TEXT
from lessons.common import record

# what each op needs before it on the same stage (the verdict says why: TEXT's "needs.<op>")
_NEEDS = {"B": "F", "W": "B"}


def solution_1f1b(stage, n_stages, n_micro):
    """1F1B (PipeDream-Flush): warm-up forwards, then one forward / one backward, then
    the remaining backwards."""
    warmup = min(n_stages - stage - 1, n_micro)
    actions = [("F", i) for i in range(warmup)]
    for i in range(n_micro - warmup):          # steady state: 1F, 1B
        actions += [("F", warmup + i), ("B", i)]
    actions += [("B", i) for i in range(n_micro - warmup, n_micro)]  # cool-down
    return actions


# ----------------------------------------------------------------------------- reading a list

def as_actions(raw, stage: int, ops: str = "FB") -> tuple[list[Action] | None, str | None]:
    """The learner's list as Actions (("F", 3) or the string "F3"), or (None, what is
    wrong). ``ops``: the op letters this exercise uses."""
    if not isinstance(raw, (list, tuple)):
        return None, t(TEXT, "actions.not_list", stage=stage, kind=type(raw).__name__)
    out = []
    for k, a in enumerate(raw):
        if isinstance(a, str) and len(a) > 1 and a[0] in ops and a[1:].isdigit():
            a = (a[0], int(a[1:]))
        if not isinstance(a, (tuple, list)) or len(a) < 2 or a[0] not in ops \
                or not isinstance(a[1], int):
            kinds = [f"('{op}', mb)" for op in ops]
            kinds = t(TEXT, "sep.or", items=t(TEXT, "sep.list").join(kinds[:-1]), last=kinds[-1])
            return None, t(TEXT, "actions.item", stage=stage, k=k, item=repr(a), kinds=kinds)
        out.append(Action(a[0], int(a[1]), 0))
    return out, None


def structure(actions: list[Action], stage: int, m: int, ops: str = "FB") -> str | None:
    """Every micro-batch: each op of ``ops`` once, in that order, on this stage."""
    seen = set()
    for a in actions:
        where = dict(stage=stage, op=a.op, mb=a.mb)
        if not 0 <= a.mb < m:
            return t(TEXT, "structure.range", last=m - 1, **where)
        if (a.op, a.mb) in seen:
            return t(TEXT, "structure.twice", **where)
        before = _NEEDS.get(a.op)
        if before and (before, a.mb) not in seen:
            return t(TEXT, "structure.order", before=before, why=t(TEXT, f"needs.{a.op}"), **where)
        seen.add((a.op, a.mb))
    if "W" in ops and not any(op == "W" for op, _ in seen):
        return t(TEXT, "structure.no_w", stage=stage)
    for mb in range(m):
        for op in ops:
            if (op, mb) not in seen:
                return t(TEXT, "structure.missing", stage=stage, op=op, mb=mb)
    return None


def check_pm(p, m) -> tuple[int, int]:
    return core.check_ranks("p", p, 2), check_int("m", m, 1, 10_000)


def learner_schedule(fn, p: int, m: int, label: str, ops: str,
                     timeout: float) -> tuple[list | None, dict | None]:
    """Every stage's list from ``fn`` (called in a child process, ``core.call_learner``),
    read and checked for structure: (schedule, None) or (None, the verdict)."""
    raws, failed = core.call_learner(fn, [(stage, p, m) for stage in range(p)],
                                     label=label, timeout=timeout)
    schedule = []
    for stage, raw in enumerate(raws):
        acts, problem = as_actions(raw, stage, ops)
        problem = problem or structure(acts, stage, m, ops)
        if problem:
            return None, core.verdict(False, problem)
        schedule.append(acts)
    return (None, failed) if failed else (schedule, None)


def replay_or_verdict(schedule, p: int, m: int, durations: dict) -> tuple[list | None, dict | None]:
    """The simulated timeline (events), or (None, a verdict naming where it deadlocks)."""
    try:
        return replay(schedule, p, 1, durations), None
    except RuntimeError as e:
        stuck = str(e).split("at ", 1)[-1]
        rule = t(TEXT, "deadlock.rule")
        if "W" in durations:
            rule += t(TEXT, "deadlock.rule_w")
        return None, core.verdict(False, t(TEXT, "deadlock", p=p, m=m, stuck=stuck, rule=rule))


# ----------------------------------------------------------------------------- 1F1B

def plan_1f1b(fn, p: int = 4, m: int = 8, timeout: float = 10.0) -> dict:
    """Everything about ``fn`` that needs no ranks: the per-stage Actions and a verdict
    (ok=False names the stage and the action), with the simulated bubble and peaks.
    ``fn`` runs in a child process (``core.call_learner``), never here."""
    p, m = check_pm(p, m)
    core.check_timeout(timeout)
    schedule, bad = learner_schedule(fn, p, m, "my_1f1b", "FB", timeout)
    if bad:
        return bad
    events, bad = replay_or_verdict(schedule, p, m, {"F": 1.0, "B": 2.0})
    if bad:
        return bad
    peaks = [peak_in_flight(a) for a in schedule]
    for stage, peak in enumerate(peaks):
        want = cost.pipeline_peak_activations("1f1b", p, m, stage)
        if peak > want:
            return core.verdict(False, t(TEXT, "f1b.peak", stage=stage, peak=peak, want=want),
                                peaks=peaks)
    fraction = bubble(events, p)[0]
    want = cost.bubble_fraction(p, m)
    if fraction > want + 1e-9:
        return core.verdict(False, t(TEXT, "f1b.bubble", fraction=fraction, want=want),
                            peaks=peaks)
    return dict(ok=True, schedule=schedule, peaks=peaks, bubble=fraction)


def _run_harness(source, name, run, p, m):
    """On each rank: the learner's actions for this stage, run by the lab's executor
    with real compute for one step (``run.schedule`` says whether B and W are apart);
    returns the loss and this stage's gradients."""
    import torch
    import torch.distributed as dist

    from parlab import trace
    from parlab.data import get_batch
    from parlab.model import GPT
    from parlab.pipeline_parallel.compute import RealCompute
    from parlab.pipeline_parallel.executor import PipelineExecutor
    from parlab.pipeline_parallel.schedules import SPLIT_BACKWARD, placement_of
    from parlab.pipeline_parallel.stages import gpt_stages

    fn = core.load_learner(source, name)
    torch.set_num_threads(1)
    rank, c, split = dist.get_rank(), run.config, run.schedule in SPLIT_BACKWARD
    schedule = []  # every stage's list, as the executor takes them (fn is pure: any rank asks)
    for stage in range(p):
        acts, problem = as_actions(fn(stage, p, m), stage, "FBW" if split else "FB")
        if problem:
            raise ValueError(problem)
        schedule.append(acts)
    gpt = GPT(c, run.seed)
    names = {id(q): n for n, q in gpt.named_parameters()}
    stages = gpt_stages(gpt, p, rank)
    compute = RealCompute(stages, m, split)
    me = PipelineExecutor(schedule, placement_of(run.schedule, p, 1, m), compute,
                          (run.batch_size // m, c.seq_len, c.d_model))  # the learner's lists
    x, y = get_batch(0, run.batch_size, c.seq_len, c.vocab_size, seed=run.data_seed)
    with trace.tagged(step=0):
        loss = me.step([t.clone() for t in x.chunk(m)], [t.clone() for t in y.chunk(m)])
    grads = {names[id(q)]: q.grad.clone() for st in stages for q in st.parameters()}
    return dict(loss=loss if stages[-1].last else None, grads=grads, peak=me.peak)


def run_on_ranks(fn, schedule: str, p: int, m: int, timeout: float) -> dict | None:
    """One training step of ``fn``'s lists on ``p`` real ranks (a small GPT, one block per
    stage) against the single device: None when the loss and every gradient agree,
    else the verdict naming the stage and the parameter."""
    from parlab.model import GPTConfig, reference_train
    from parlab.pipeline_parallel.runner import PPRun

    run = PPRun(config=GPTConfig(n_layers=p, d_model=32, n_heads=4, seq_len=16), steps=1,
                batch_size=m, schedule=schedule, p=p, micro_batches=m)
    ranks, bad = core.run_learner(_run_harness, fn, p, run, p, m, timeout=timeout)
    if bad:
        return bad
    ref = reference_train(run.config, 1, run.batch_size, run.lr)
    loss = next(r["loss"] for r in ranks if r["loss"] is not None)
    if abs(loss - ref["losses"][0]) > 1e-5:
        return core.verdict(False, t(TEXT, "ranks.loss", stage=p - 1, loss=loss,
                                     ref=ref["losses"][0]))
    for stage, r in enumerate(ranks):
        for name, g in r["grads"].items():
            msg = core.compare_tensors(g, ref["grads"][name], atol=1e-6, rtol=1e-4,
                                       where=t(TEXT, "ranks.where", stage=stage, name=name))
            if msg:
                return core.verdict(False, msg)
    return None


def check_1f1b(fn, p: int = 4, m: int = 8, timeout: float = 60.0) -> dict:
    """The verdict on the learner's ``my_1f1b``: structure, deadlock, peak, bubble
    (``plan_1f1b``), then one training step on ``p`` real ranks compared with the
    single device: the loss and every parameter's gradient."""
    p, m = check_pm(p, m)
    core.check_timeout(timeout)
    plan = plan_1f1b(fn, p, m, timeout=timeout)
    if not plan["ok"]:
        return plan
    bad = run_on_ranks(fn, "1f1b", p, m, timeout)
    if bad:
        return bad
    return core.verdict(True, t(TEXT, "f1b.ok", p=p, peaks=plan["peaks"], bubble=plan["bubble"]),
                        peaks=plan["peaks"])


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
