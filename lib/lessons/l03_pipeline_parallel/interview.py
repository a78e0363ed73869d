"""The answers of §7's interview question on ZB-H2 and of §10's interview corner, as functions
of what the notebook computed; the notebook shows each by naming it (``interview.show("a", n=n)``),
closed until the learner clicks (lessons.common.interview). Their words, in English and
Chinese, are ``text.INTERVIEW``; each function here computes the numbers they quote."""

from __future__ import annotations

from fractions import Fraction

from lessons.common.i18n import t
from lessons.common.interview import Answer, Corner, said
from .text import INTERVIEW, TEXT


def _join(sep: str, items) -> str:
    """``items`` joined by the separator ``sep`` ("comma", "list", "semi", "and") of TEXT, in the
    session's language."""
    return t(TEXT, f"sep.{sep}").join(items)


def _zb(family) -> Answer:
    row = {r["schedule"]: r for r in family}
    h2, h1, one, v = row["zb-h2"], row["zb-h1"], row["1f1b"], row["zb-v"]
    return said(INTERVIEW, "zb", h2_idle=h2["idle"], h1_idle=h1["idle"], f1b_idle=one["idle"],
                h2_step=h2["step"], h1_step=h1["step"], h2_peak=h2["peak"], f1b_peak=one["peak"],
                mem_ratio=h2["peak"] / one["peak"], msg_ratio=v["messages"] / one["messages"])


def _a(n) -> Answer:
    a = n["a"]
    return said(INTERVIEW, "a", p=a["p"], m50=a["m50"], m20=a["m20"])


def _b(n) -> Answer:
    b = n["b"]
    return said(INTERVIEW, "b", p=b["p"], m=b["m"], ratio=b["ratio"], fraction=b["fraction"],
                ratio_frac=str(Fraction(b["ratio"]).limit_denominator(99)),
                fraction_frac=str(Fraction(b["fraction"]).limit_denominator(99)),
                gpipe=b["measured"]["gpipe"], f1b=b["measured"]["1f1b"])


def _c(n) -> Answer:
    c = n["c"]
    under = [q for q, share, _ in c["rows"] if share < 0.15]
    rows = _join("comma", (t(INTERVIEW, "c.row", q=q, share=share) for q, share, _ in c["rows"]))
    ratios = _join("list", (f"{r:.1%}" for _, _, r in c["rows"]))
    return said(INTERVIEW, "c", rows=rows, under=_join("and", map(str, under)), over=under[-1] + 1,
                ratios=ratios, m_fraction=c["m_fraction"], m_ratio=c["m_ratio"])


def _d(n) -> Answer:
    rows = _join("semi", (t(INTERVIEW, "d.row", m=m, g=g, o=o) for m, (g, o) in n["d"].items()))
    return said(INTERVIEW, "d", rows=rows)


def _advice(n) -> Answer:
    (k1, (q1, s1)), (k2, (q2, s2)) = sorted(n["advice"].items())
    return said(INTERVIEW, "advice", k1=k1, q1=q1, share1=s1, next1=k1 + 1, bound1=1 / (k1 + 1),
                k2=k2, q2=q2, share2=s2, next2=k2 + 1, bound2=1 / (k2 + 1))


def _thirty() -> Answer:
    return said(INTERVIEW, "thirty")


corner = Corner({"zb": _zb, "a": _a, "b": _b, "c": _c, "d": _d, "advice": _advice,
                 "thirty": _thirty})
show = corner.show
