"""The answers of §11's interview corner, its 30-second answer and the appendix's numbers, as
functions of what the notebook computed; the notebook shows each by naming it
(``interview.show("a", ...)``), closed until the learner clicks (lessons.common.interview).
The words, in English and Chinese, are ``text.INTERVIEW``."""

from __future__ import annotations

from parlab import cost

from lessons.common.i18n import t
from lessons.common.interview import Answer, Corner, said

from . import experiments
from .text import INTERVIEW

KiB, MiB, GB = 2 ** 10, 2 ** 20, 1e9


def _ring_by_cp(s, h) -> dict:
    return {n: cost.cp_comm_per_layer(1, s, h, n, "ring", 2)["bytes"] for n in (2, 8, 32)}


def _ul_by_cp(s, h, a) -> dict:
    return {n: cost.cp_comm_per_layer(1, s, h, n, "ulysses", 2, a)["bytes"] for n in (2, 8, 32)}


def _listed(key: str, by_cp: dict) -> str:
    """``{cp: bytes}`` as a list in words, each item ``INTERVIEW[key]`` with ``gb`` and ``cp``."""
    return t(INTERVIEW, "list.sep").join(t(INTERVIEW, key, gb=v / GB, cp=n) for n, v in by_cp.items())


def _cp4(bal) -> tuple[dict, dict]:
    """§4's cp = 4 rows: contiguous and zig-zag."""
    return tuple(next(r for r in bal if r["cp"] == 4 and r["layout"] == layout)
                 for layout in ("contiguous", "zigzag"))


def _a(act_sp, act_tp, cp8, meas, sp8, tp2, tp8) -> Answer:
    return said(INTERVIEW, "a", sp_kib=meas[2, "megatron_sp"] / KiB, tp2_kib=tp2 / KiB,
                tp8=tp8 / GB, sp8=sp8 / GB, act_tp=act_tp / GB, act_sp=act_sp / GB,
                ul8=cp8["ulysses"] / GB, ratio=cp8["megatron_sp"] / cp8["ulysses"],
                msp8=cp8["megatron_sp"] / GB, ring8=cp8["ring"] / GB)


def _b(h, s) -> Answer:
    return said(INTERVIEW, "b", ring=_listed("b.item", _ring_by_cp(s, h)))


def _c(L, flash, tp8) -> Answer:
    return said(INTERVIEW, "c", flash=flash / GB, L=L, total=L * flash / GB, tp8=L * tp8 / GB)


def _d(a, h, meas, s) -> Answer:
    return said(INTERVIEW, "d", ring4=meas[4, "ring"] / KiB, ul4=meas[4, "ulysses"] / KiB,
                ulysses=_listed("d.ulysses", _ul_by_cp(s, h, a)),
                ring=_listed("d.ring", _ring_by_cp(s, h)),
                nvlink=experiments.hiding_block("NVLink3"), ib=experiments.hiding_block("IB-HDR"))


def _e(bal) -> Answer:
    c4, z4 = _cp4(bal)
    return said(INTERVIEW, "e", c4=c4["counted"], c4_imb=c4["imbalance"], z4=z4["counted"],
                z4_imb=z4["imbalance"],
                imb8=cost.causal_work_per_rank(8, "contiguous")["imbalance"],
                imb32=cost.causal_work_per_rank(32, "contiguous")["imbalance"])


def _f(by) -> Answer:
    r1, r4 = by[1, 1024, "ring"]["peak"], by[4, 1024, "ring"]["peak"]
    u1, u4 = by[1, 1024, "ulysses"]["peak"], by[4, 1024, "ulysses"]["peak"]
    return said(INTERVIEW, "f", r1=r1 / MiB, r4=r4 / MiB, r_ratio=r1 / r4, u1=u1 / MiB,
                u4=u4 / MiB, u_ratio=u1 / u4)


def _thirty() -> Answer:
    return said(INTERVIEW, "thirty")


def _numbers(L, a, act_sp, act_tp, bal, cp8, flash, h, meas, s, sp8, tp2, tp8) -> Answer:
    c4, z4 = _cp4(bal)
    return said(INTERVIEW, "numbers", tp8=tp8 / GB, sp8=sp8 / GB, ul8=cp8["ulysses"] / GB,
                ring8=cp8["ring"] / GB, act_tp=act_tp / GB, act_sp=act_sp / GB,
                sp2=meas[2, "megatron_sp"], tp2=tp2,
                ring=_listed("numbers.ring", _ring_by_cp(s, h)), flash=flash / GB, L=L,
                total=L * flash / GB, ulysses=_listed("numbers.ulysses", _ul_by_cp(s, h, a)),
                c4=c4["imbalance"], c32=cost.causal_work_per_rank(32, "contiguous")["imbalance"],
                z4=z4["imbalance"])


corner = Corner({"a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "f": _f, "thirty": _thirty,
                 "numbers": _numbers})
show = corner.show
