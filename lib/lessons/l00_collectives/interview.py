"""The answers of §7's interview corner, as functions of what the notebook computed; the notebook
shows each by naming it (``interview.show("holds", ...)``), closed until the learner clicks
(lessons.common.interview). Their words, in English and Chinese, are ``text.INTERVIEW``."""

from __future__ import annotations

from parlab import cost

from lessons.common.i18n import t
from lessons.common.interview import Answer, Corner, said

from .text import INTERVIEW


def _listed(key: str, items) -> str:
    """``items`` (dicts of fields) rendered by ``key.item`` and joined by ``key.sep``, in the
    session's language."""
    return t(INTERVIEW, f"{key}.sep").join(t(INTERVIEW, f"{key}.item", **f) for f in items)


def _holds(ns, per_rank, scale_table) -> Answer:
    sep = t(INTERVIEW, "holds.sep")
    return said(INTERVIEW, "holds", table=scale_table.data,
                per_rank=sep.join(f"{g:.2f}" for g in per_rank), ns=sep.join(map(str, ns)))


def _does_not(bucket_table, crossover, flat_up_to, ns) -> Answer:
    n = ns[-1]
    return said(INTERVIEW, "does_not", steps=cost.collective_steps("all_reduce", n), n=n,
                crossover=_listed("does_not.4", [dict(mb=mb, n=k) for k, mb in crossover.items()]),
                table=bucket_table.data,
                flat=_listed("does_not.6", [dict(ranks=v, us=a * 1e6)
                                            for a, v in flat_up_to.items()]))


def _thirty() -> Answer:
    return said(INTERVIEW, "thirty")


corner = Corner({"holds": _holds, "does_not": _does_not, "thirty": _thirty})
show = corner.show
