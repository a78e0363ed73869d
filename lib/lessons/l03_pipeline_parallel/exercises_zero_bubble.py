"""Notebook 03's zero-bubble exercise: ZB-H1 written as data, on real ranks.

``my_zb_h1(stage, n_stages, n_micro)`` returns the actions one stage runs, in order:
("F", mb), ("B", mb) (the input gradient, which the previous stage waits for) and
("W", mb) (the weight gradients, which nobody waits for) -- Qi et al., "Zero Bubble
Pipeline Parallelism", ICLR 2024, §2.1. ``check_zb_h1`` checks, in this order:

  structure   every micro-batch F, then B, then W, once per stage
  deadlock    the lists replayed in the simulator at T_F = T_B = T_W (``replay``)
  memory      each stage's peak activations (an F to its W) at most P: 1F1B's most
  bubble      each stage's idle time, first op to last, at most the paper's
              (P - 1)(T_F + T_B - T_W) (``cost.split_backward_bubble``)
  real ranks  one training step on P processes with the lab's executor and real
              compute (``pipeline_schedules.run_on_ranks``): the loss and every
              gradient equal the single device's
"""

from __future__ import annotations

from parlab import cost
from .experiments_zb import EQUAL
from parlab.pipeline_parallel.schedules import Timeline, bubble, peak_in_flight
from lessons.common.checkers import core
from lessons.common.i18n import t
from .text import TEXT
from .exercises_schedules import check_pm, learner_schedule, replay_or_verdict, run_on_ranks
from lessons.common import record


def solution_zb_h1(stage, n_stages, n_micro):
    """1F1B's order of F and B; after B(j), stage s runs W(j - s): the later the stage,
    the later its W's start, so every stage holds at most P micro-batches, and the W's
    left over fill the cool-down, where the stage would wait for the next gradient."""
    warmup = min(n_stages - stage - 1, n_micro)
    actions = [("F", i) for i in range(warmup)]
    for j in range(n_micro):
        if warmup + j < n_micro:                  # 1F1B's steady state: one F, one B
            actions.append(("F", warmup + j))
        actions.append(("B", j))
        if j >= stage:
            actions.append(("W", j - stage))  # deferred by `stage` backward slots
    actions += [("W", i) for i in range(max(0, n_micro - stage), n_micro)]  # the W's left
    return actions


def _check_sizes(p, m) -> tuple[int, int]:
    p, m = check_pm(p, m)
    if m < p:  # the paper's count: the steady state needs at least P micro-batches
        raise ValueError(f"m={m} must be at least p={p}: ZB-H1's bubble "
                         f"(P - 1)(T_F + T_B - T_W) holds from M = P micro-batches on")
    return p, m


def plan_zb_h1(fn, p: int = 4, m: int = 8, timeout: float = 10.0) -> dict:
    """Everything about ``fn`` that needs no ranks: structure, deadlock, peak
    activations and idle per stage at T_F = T_B = T_W = 1, each against ZB-H1's.
    ``fn`` runs in a child process (``core.call_learner``), never here."""
    p, m = _check_sizes(p, m)
    core.check_timeout(timeout)
    schedule, bad = learner_schedule(fn, p, m, "my_zb_h1", "FBW", timeout)
    if bad:
        return bad
    events, bad = replay_or_verdict(schedule, p, m, EQUAL)
    if bad:
        return bad
    peaks = [peak_in_flight(a) for a in schedule]
    for stage, peak in enumerate(peaks):
        want = cost.pipeline_peak_activations("zb-h1", p, m, stage)
        if peak > want:
            return core.verdict(False, t(TEXT, "zb.peak", stage=stage, peak=peak, want=want),
                                peaks=peaks)
    idles = Timeline(events, p, *bubble(events, p)).rank_idle
    want, one = (cost.split_backward_bubble(s, p) for s in ("zb-h1", "1f1b"))
    for stage, idle in enumerate(idles):
        if idle > want + 1e-9:
            return core.verdict(False, t(TEXT, "zb.idle", stage=stage, idle=idle, want=want,
                                         one=one), peaks=peaks, idle=idles)
    return dict(ok=True, schedule=schedule, peaks=peaks, idle=idles, want=want)


def check_zb_h1(fn, p: int = 4, m: int = 8, timeout: float = 60.0) -> dict:
    """The verdict on the learner's ``my_zb_h1``: ``plan_zb_h1``, then one training step
    on ``p`` real ranks compared with the single device (the loss, every gradient)."""
    p, m = _check_sizes(p, m)
    core.check_timeout(timeout)
    plan = plan_zb_h1(fn, p, m, timeout=timeout)
    if not plan["ok"]:
        return plan
    bad = run_on_ranks(fn, "zb-h1", p, m, timeout)
    if bad:
        return bad
    idle = ", ".join(f"{x:g}" for x in plan["idle"])
    return core.verdict(True, t(TEXT, "zb.ok", p=p, peaks=plan["peaks"], idle=idle,
                                want=plan["want"], one=cost.split_backward_bubble("1f1b", p)),
                        peaks=plan["peaks"], idle=plan["idle"])


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
