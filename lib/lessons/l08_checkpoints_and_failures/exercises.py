"""Notebook 08 (checkpoints and failures), "Your turn": checkers and reference solutions.

Numeric answers compare with ``parlab.cost.reliability`` (Young's interval, interruptions
per day, checkpoint bytes per rank). The coding exercise ``my_resume(train_state)`` is the
last step of a restore: ``train_state`` holds what DCP loaded besides the model and the
optimizer, ``{"step": the next step (a tensor), "rng": torch's RNG state}``; the function
puts the RNG back and returns the step to train next. The checker trains the lab's GPT on
2 real ranks (FullyShard, dropout drawn from the RNG), saves a DCP checkpoint, resumes in
the same ranks with ``my_resume`` as ``training.train_rank``'s resume hook, and compares
every resumed step's loss with the uninterrupted run's, naming the first that differs.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile

import torch

from parlab import cost
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.i18n import t
from .hints import HINTS
from .text import TEXT
from lessons.l05_context_parallel.exercises import _unwritten
from lessons.common.checkers.watch import Diagnosis
from lessons.common import record

__all__ = ["check_young_interval", "check_interruptions_per_day", "check_checkpoint_bytes_per_rank",
           "check_resume", "solution_resume", "SOLUTIONS", "hints", "solution_html", "show_solution"]


# --- numeric answers ----------------------------------------------------------------------

def check_young_interval(answer, checkpoint_s: float = 60.0, mtbf_hours: float = 3.0) -> dict:
    """Young's optimal checkpoint interval, seconds, for a save of ``checkpoint_s`` and a
    job MTBF of ``mtbf_hours``."""
    want = cost.young_interval(checkpoint_s, mtbf_hours * 3600)
    return core.check_number(answer, want, unit="s", name="interval",
                             hint=t(TEXT, "young_hint"),
                             explanation=t(TEXT, "young_why", c=checkpoint_s, m=mtbf_hours * 3600,
                                           want=want, minutes=want / 60))


def check_interruptions_per_day(answer, n_gpus: int = 16384, mtbf_gpu_years: float = 5.0) -> dict:
    """Expected failures per day of a job on ``n_gpus`` GPUs with MTBF ``mtbf_gpu_years`` each."""
    hours = mtbf_gpu_years * cost.reliability.HOURS_PER_YEAR
    want = cost.interruptions_per_day(n_gpus, hours)
    return core.check_number(answer, want, name="interruptions per day",
                             hint=t(TEXT, "per_day_hint"),
                             explanation=t(TEXT, "per_day_why", n=n_gpus, years=mtbf_gpu_years,
                                           want=want))


def check_checkpoint_bytes_per_rank(answer, n_params: float = 70e9, dp: int = 64) -> dict:
    """Bytes one rank writes of a sharded checkpoint: fp32 master weights and AdamW's two
    moments (12 B/param) of ``n_params``, sharded over ``dp`` ranks."""
    check_int("dp", dp)
    want = cost.checkpoint_bytes(n_params, dp)["per_rank"]
    return core.check_number(answer, want, unit="bytes", name="bytes per rank",
                             hint=t(TEXT, "per_rank_hint"),
                             explanation=t(TEXT, "per_rank_why", n=n_params, dp=dp, gb=want / 1e9))


# --- coding exercise: restore the data position and the RNG, on 2 real ranks ---------------

def solution_resume(train_state):
    """Put the RNG back and return the next step to train."""
    torch.set_rng_state(train_state["rng"])
    return int(train_state["step"])


def resume_harness(source: str, name: str, steps: int, at: int, directory: str):
    """On each rank: train ``steps`` with a checkpoint before step ``at``, then resume from
    it with the learner's function as the resume hook; both runs' losses. A message to the
    learner speaks the notebook's language (``core.run_learner`` sets it on the ranks)."""
    from .experiments import TINY
    from .training import Layout, Spec, train_rank
    fn = core.load_learner(source, name)
    spec = Spec(TINY, Layout("ours", torch.distributed.get_world_size()), steps=steps,
                directory=directory, save_at=(at,))
    base = train_rank(spec)
    seen = {}

    def hook(train_state):
        got = fn(train_state)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, (int, float)) or got != int(got):
            raise Diagnosis(t(TEXT, "resume_not_a_step", name=name, got=core.shown(got), at=at))
        seen["rng_restored"] = torch.equal(torch.get_rng_state(), train_state["rng"])
        return int(got)

    again = train_rank(dataclasses.replace(spec, resume_from=base["saved"][at], save_at=()), hook)
    return {"base": base["losses"], "resumed": again["losses"], "start": again["start"], **seen}


def check_resume(fn, ranks: int = 2, steps: int = 5, at: int = 2, timeout: float = 60.0) -> dict:
    """Train ``steps`` on ``ranks`` ranks, checkpoint before step ``at``, resume with ``fn``;
    each resumed step's loss must equal the uninterrupted run's (1e-5)."""
    core.check_ranks("ranks", ranks, 1)
    if 8 % ranks:
        raise ValueError(f"ranks={ranks} must divide the batch of 8 sequences")
    check_int("steps", steps, 2)
    check_int("at", at, 1, steps - 1)
    core.check_timeout(timeout)
    if _unwritten(fn):
        return core.missing(t(TEXT, "resume_unwritten", name=fn.__name__))
    directory = tempfile.mkdtemp(prefix="parlab_resume_")
    try:
        got, bad = core.run_learner(resume_harness, fn, ranks, steps, at, directory, timeout=timeout)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if bad:
        return bad
    r = got[0]
    base, mine = r["base"], r["resumed"]
    diffs = {k: abs(mine[k] - base[k]) if k in mine else float("nan") for k in range(at, steps)}
    wrong = [k for k, d in diffs.items() if not d <= 1e-5]
    if r["start"] != at:
        return core.verdict(False, t(TEXT, "resume_late" if r["start"] > at else "resume_early",
                                     start=r["start"], off=abs(r["start"] - at), before=at - 1, at=at)
                            + (t(TEXT, "resume_first_wrong", k=wrong[0]) if wrong else ""))
    if wrong:
        k = wrong[0]
        why = t(TEXT, "resume_rng") if not r.get("rng_restored") else ""
        return core.verdict(False, t(TEXT, "resume_differs", k=k, mine=mine[k], base=base[k],
                                     d=diffs[k]) + why)
    if not all(g.get("rng_restored") for g in got):
        return core.verdict(False, t(TEXT, "resume_rng_some_rank"))
    return core.verdict(True, t(TEXT, "resume_ok", at=at, ranks=ranks, last=steps - 1,
                                d=max(diffs.values())))


# --- reference solutions on demand ---------------------------------------------------------

SOLUTIONS = {"my_resume": solution_resume}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution ("my_resume"), each behind a click."""
    return core.hints(SOLUTIONS, HINTS, name)


def solution_html(name: str) -> str:
    return core.solution_html(SOLUTIONS, name)


def show_solution(name: str) -> None:
    """Print the reference solution of a coding exercise (its source)."""
    core.show_solution(SOLUTIONS, name)


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
