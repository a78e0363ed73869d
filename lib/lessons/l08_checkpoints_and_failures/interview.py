"""§6's interview answers and the appendix's numbers, as functions of what the notebook
computed; the notebook shows each by naming it (``interview.show("c", ll=ll, ...)``),
closed until the learner clicks (lessons.common.interview). The words, in English and
Chinese, are ``text.INTERVIEW``; these functions compute the numbers they are filled with."""

from __future__ import annotations

from lessons.common.interview import Answer, Corner, said

from . import experiments
from .text import INTERVIEW

GB, TB = 1e9, 1e12


def _size(b405, per_gpu, c405, bw60) -> dict:
    return dict(tb=b405["total"] / TB, mb=per_gpu / 1e6, c405=c405,
                slow_s=experiments.SLOW_STALL_S, gbs=bw60 / GB)


def _a(b405, per_gpu, stall, c405, bw60) -> Answer:
    return said(INTERVIEW, "a", ratio=stall["async_s"] / stall["sync_s"],
                **_size(b405, per_gpu, c405, bw60))


def _b(per16k, ll, lost, fo) -> Answer:
    return said(INTERVIEW, "b", per16k=per16k, mtbf_h=ll["job_mtbf_hours"], half=ll["young_s"] / 2,
                c=ll["checkpoint_s"], r=ll["restart_s"], lost=lost, redone=fo["redone_steps"],
                lost_s=fo["lost_seconds"])


def _interval(ll, slow) -> dict:
    return dict(c=ll["checkpoint_s"], mtbf_h=ll["job_mtbf_hours"], young=ll["young_s"],
                daly=ll["daly_s"], goodput=ll["goodput"], slow_c=slow["checkpoint_s"],
                slow_young=slow["young_s"], slow_goodput=slow["goodput"])


def _c(ll, b405, slow, R) -> Answer:
    return said(INTERVIEW, "c", tb=b405["total"] / TB, r=R, slow_s=experiments.SLOW_STALL_S,
                **_interval(ll, slow))


def _d(dp_row) -> Answer:
    return said(INTERVIEW, "d", normal_ms=dp_row["normal_s"] * 1e3,
                slowed_ms=dp_row["slowed_s"] * 1e3, predicted_ms=dp_row["predicted_s"] * 1e3)


def _peaks(peaks) -> str:
    """Micro-batches held on rank 0 per M, under GPipe and 1F1B (names and numbers only)."""
    return "; ".join(f"M = {m}: GPipe {g}, 1F1B {o}" for m, (g, o) in peaks.items())


def _claim(peaks) -> Answer:
    return said(INTERVIEW, "claim", peaks=_peaks(peaks))


def _numbers(b405, per_gpu, c405, bw60, per16k, ll, lost, R, slow, peaks) -> Answer:
    """The appendix: every number §6's answers use that does not depend on this machine's timing."""
    return said(INTERVIEW, "numbers", per16k=per16k, lost=lost, r=R, peaks=_peaks(peaks),
                **_size(b405, per_gpu, c405, bw60), **_interval(ll, slow))


corner = Corner({"a": _a, "b": _b, "c": _c, "d": _d, "claim": _claim, "numbers": _numbers})
show = corner.show
