"""§8's interview answers and the appendix's numbers, as functions of what the notebook
computed; the notebook shows each by naming it (``interview.show("b", ln=ln, mw=mw)``),
closed until the learner clicks (lessons.common.interview). The words, in English and
Chinese, are ``text.INTERVIEW``; these functions compute the numbers they are filled with."""

from __future__ import annotations

from parlab import cost

from lessons.common.interview import Answer, Corner, said

from . import experiments
from .text import INTERVIEW

GB = 1e9


def _formats(f) -> dict:
    return dict(bf16_min=f["bf16"]["smallest_normal"], fp16_min=f["fp16"]["smallest_normal"],
                fp16_max=f["fp16"]["max"], bf16_eps=f["bf16"]["eps"], fp16_eps=f["fp16"]["eps"])


def _a(f, allg) -> Answer:
    return said(INTERVIEW, "a", below=experiments.underflow(allg)["below_normal"], **_formats(f))


def _b(ln, mw) -> Answer:
    return said(INTERVIEW, "b", gap=cost.ulp(1.0, "bf16"),
                lost=cost.vanishing_update(1.0, "bf16", "up"), unchanged=ln["unchanged"],
                vanished=mw["bf16"]["vanished"][-1],
                **{k: mw[k]["losses"][-1] for k in ("bf16", "fp32", "master", "kahan", "stochastic")})


def _c(bp, n7, b7, w7) -> Answer:
    parts = cost.training_bytes_per_param("bf16_mixed")
    return said(INTERVIEW, "c", mixed=bp["bf16_mixed"]["total"], fp32=bp["fp32"]["total"],
                n7=n7 / 1e9, b7=b7 / GB, w7=w7 / GB, **parts)


def _ring(rep) -> dict:
    r1024 = rep[-1]
    return dict(n=r1024["world_size"], mean=r1024["bf16 mean"], max=r1024["bf16 max"],
                bound=(r1024["world_size"] - 1) * cost.unit_roundoff("bf16"),
                fp32_max=r1024["fp32-accumulated max"])


def _d(rep) -> Answer:
    return said(INTERVIEW, "d", **_ring(rep))


def _outliers(out) -> dict:
    o = {(r["outlier"], r["scaling"]): r for r in out}
    return dict(per_tensor=o[1e5, "per tensor"]["error, other channels"],
                flushed=o[1e5, "per tensor"]["flushed to zero"],
                per_block=o[1e5, "per block"]["error, other channels"])


def _e(qe, out) -> Answer:
    return said(INTERVIEW, "e", err=qe[0]["relative error"], **_outliers(out))


def _numbers(f, mw, bp, pred, b7, rep, out) -> Answer:
    """The appendix: every number §8's answers use, in one fold-out."""
    return said(INTERVIEW, "numbers",
                losses=", ".join(f"{k} {v['losses'][-1]:.3f}" for k, v in mw.items()),
                measured=", ".join(f"{r} {bp[r]['total']:.2f}" for r in pred), b7=b7 / GB,
                **_formats(f), **_ring(rep), **_outliers(out))


corner = Corner({"a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "numbers": _numbers})
show = corner.show
