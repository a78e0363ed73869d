"""Exercises of notebook 03 (pipeline parallelism): checkers and reference solutions.

Coding, on real ranks (each in its own module, every name importable from here):
  my_1f1b(stage, n_stages, n_micro) -> list of ("F", mb) / ("B", mb)
      1F1B written as data (``pipeline_schedules.py``): validated, replayed in the
      simulator, its peak and bubble against 1F1B's, then RUN on P ranks with the lab's
      executor and real compute: the loss and every gradient must equal one device's.
  my_zb_h1(stage, n_stages, n_micro) -> the same with ("W", mb) as well
      ZB-H1 (``zero_bubble.py``): W deferred to fill the cool-down, peak at most P,
      idle per stage at most (P - 1)(T_F + T_B - T_W), then run on P ranks.
  my_pipeline_forward(micro_batches, stage, n_stages, layer) -> outputs (last stage)
      GPipe's forward with dist.send / dist.recv between neighbouring stages
      (``pipeline_forward.py``): the micro-batch, stage and element that differ.
Coding, pure (run in a child process, ``core.call_learner``, like the plan of my_1f1b):
  my_partition(n_layers, n_stages) -> list of layer counts per stage, balanced.
Numeric (answer_box): ``check_bubble``, ``check_interleaved``, ``check_min_m``,
``check_peak``, ``check_zb_h2_peak`` -- computed from ``parlab.cost``.

Checkers never raise on a wrong or missing answer; they return a verdict.
"""

from __future__ import annotations

from parlab import cost
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.i18n import Questions, t
from .hints import HINTS
from .text import TEXT
from .exercises_forward import check_pipeline_forward, solution_pipeline_forward  # noqa: F401
from .exercises_schedules import check_1f1b, plan_1f1b, solution_1f1b  # noqa: F401
from .exercises_zero_bubble import check_zb_h1, plan_zb_h1, solution_zb_h1  # noqa: F401
from lessons.common import record

# the notebook's sizes for the numeric questions
P, M, V, TARGET, PEAK_STAGE = 8, 24, 3, 0.10, 2
# the numeric exercises' questions, in the session's language, with these numbers
QUESTIONS = Questions(TEXT, {
    "bubble": lambda: dict(p=P, m=M), "interleaved": lambda: dict(v=V),
    "min_m": lambda: dict(target=TARGET, p=P), "peak": lambda: dict(stage=PEAK_STAGE, p=P, m=M),
    "zb_h2_peak": lambda: dict(p=P, m=M)})

GPIPE_EXAMPLE = "[('F', i) for i in range(n_micro)] + [('B', i) for i in range(n_micro)]"


def solution_partition(n_layers, n_stages):
    """Sizes differ by at most one; the larger stages first."""
    base, extra = divmod(n_layers, n_stages)
    return [base + (s < extra) for s in range(n_stages)]


SOLUTIONS = {"my_1f1b": solution_1f1b, "my_zb_h1": solution_zb_h1,
             "my_pipeline_forward": solution_pipeline_forward, "my_partition": solution_partition}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution of a coding exercise, each behind a click
    ("my_1f1b", "my_zb_h1", "my_pipeline_forward", "my_partition")."""
    return core.hints(SOLUTIONS, HINTS, name)


def show_solution(name: str) -> None:
    """Print the reference solution of exercise ``name`` (a key of SOLUTIONS)."""
    core.show_solution(SOLUTIONS, name)


# ----------------------------------------------------------------------------- partition

def _check_cases(cases) -> list[tuple[int, int]]:
    """``cases``: (n_layers, n_stages) pairs, at least one layer per stage."""
    try:
        cases = [tuple(c) for c in cases]
    except TypeError:
        raise ValueError(f"cases={cases!r} must be a list of (n_layers, n_stages) pairs") from None
    if not cases or any(len(c) != 2 for c in cases):
        raise ValueError(f"cases={cases!r} must be a non-empty list of (n_layers, n_stages) pairs")
    for n_layers, n_stages in cases:
        check_int("n_stages", n_stages, 1)
        check_int("n_layers", n_layers, n_stages)  # no stage may be empty
    return cases


def check_partition(fn, cases=((8, 4), (10, 4), (7, 3), (3, 3), (12, 5)),
                    timeout: float = 10.0) -> dict:
    """``fn(n_layers, n_stages)`` -> layer counts per stage: all layers, none empty,
    sizes differing by at most one, the larger stages first (the last one carries the
    head and the loss, so it should not also get an extra block). ``fn`` runs in a
    child process (``core.call_learner``), never here."""
    cases = _check_cases(cases)
    core.check_timeout(timeout)
    results, failed = core.call_learner(fn, cases, label="my_partition", timeout=timeout)
    for (n_layers, n_stages), got in zip(cases, results):
        want = solution_partition(n_layers, n_stages)
        where = f"my_partition({n_layers}, {n_stages}) = {got!r}"
        if not isinstance(got, (list, tuple)) or len(got) != n_stages:
            return core.verdict(False, t(TEXT, "partition.not_list", where=where, n_stages=n_stages))
        counts, why = core.as_numbers(got, whole=True)
        if why:
            return core.verdict(False, t(TEXT, "partition.counts", where=where, why=why))
        if sum(counts) != n_layers:
            return core.verdict(False, t(TEXT, "partition.cover", where=where, got=sum(counts),
                                         want=n_layers))
        for s, (g, w) in enumerate(zip(counts, want)):
            if g != w:
                return core.verdict(False, t(TEXT, "partition.stage", where=where, s=s, g=g, w=w))
    if failed:
        return failed
    return core.verdict(True, t(TEXT, "partition.ok"))


# ----------------------------------------------------------------------------- numeric

def check_bubble(answer) -> dict:
    """Idle share of the step, 1F1B, P = 8, M = 24 (a fraction, e.g. 0.25)."""
    return core.check_number(answer, cost.bubble_fraction(P, M), rel_tol=0.01, share=True,
                             hint=t(TEXT, "bubble.hint"),
                             explanation=t(TEXT, "bubble.why", idle=P - 1, total=M + P - 1),
                             name="bubble")


def check_interleaved(answer) -> dict:
    """The same with v = 3 chunks per rank (interleaved 1F1B)."""
    return core.check_number(answer, cost.bubble_fraction(P, M, V), rel_tol=0.01, share=True,
                             hint=t(TEXT, "interleaved.hint"),
                             explanation=t(TEXT, "interleaved.why"), name="bubble")


def check_min_m(answer) -> dict:
    """Fewest micro-batches for an idle share <= 10% at P = 8 (1F1B)."""
    want = cost.min_micro_batches(P, TARGET)
    got, bad = core.read_number(answer, "M", whole=True)
    if bad:
        return bad
    if got == want:
        return core.verdict(True, t(TEXT, "min_m.ok", m=want, share=cost.bubble_fraction(P, want),
                                    fewer=want - 1, fewer_share=cost.bubble_fraction(P, want - 1)))
    if got < want:
        return core.verdict(False, t(TEXT, "min_m.low", got=got,
                                     share=cost.bubble_fraction(P, got) if got >= 1 else 1))
    return core.verdict(False, t(TEXT, "min_m.high", got=got))


def check_peak(answer) -> dict:
    """Micro-batches whose activations stage 2 holds at its peak, 1F1B, P = 8, M = 24."""
    return core.check_number(answer, cost.pipeline_peak_activations("1f1b", P, M, PEAK_STAGE),
                             rel_tol=0, hint=t(TEXT, "peak.hint"), name="peak")


def check_zb_h2_peak(answer) -> dict:
    """Micro-batches whose activations rank 0 holds at its peak under ZB-H2, P = 8, M = 24."""
    want, one = (cost.pipeline_peak_activations(s, P, M, 0) for s in ("zb-h2", "1f1b"))
    return core.check_number(answer, want, rel_tol=0, name="peak",
                             hint=t(TEXT, "zb_h2_peak.hint"),
                             explanation=t(TEXT, "zb_h2_peak.why", want=want, one=one))


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
