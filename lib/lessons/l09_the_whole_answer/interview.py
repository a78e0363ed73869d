"""The appendix's figures (spoilers for §2–5) as a function of ``facts()``; the notebook
shows them by naming them (``interview.show("numbers", f=f)``), closed until the learner
clicks (lessons.common.interview). The words are ``text.INTERVIEW``'s, in the session's
language."""

from __future__ import annotations

from lessons.common.i18n import pick, t
from lessons.common.interview import Answer, Corner, said
from .text import INTERVIEW, TEXT


def _numbers(f) -> Answer:
    lang = pick(None)
    b, tp, bl, cap = f["bubble"], f["tp"], f["7b_best_layout"], f["capacity"]
    return said(
        INTERVIEW, "numbers", lang,
        ring2=f["ring"][2], ring1024=f["ring"][1024], ring_steps=f["ring_steps"][1024],
        ddp_none_gb=f["7b_ddp_none"]["total"] / 1e9, ddp_full_gb=f["7b_ddp"]["total"] / 1e9,
        zero1_gb=f["7b_zero1"]["total"] / 1e9, zero1_full_gb=f["7b_zero1_full"]["total"] / 1e9,
        zero3_full_gb=f["7b_zero3_full"]["total"] / 1e9, best_7b=f["7b_best"],
        best_gb=bl["total"] / 1e9, attention=t(TEXT, f"attention.{bl['attention']}", lang),
        materialized_gb=bl["materialized"] / 1e9, act_fused_gb=bl["act_fused"] / 1e9,
        act_materialized_gb=bl["act_materialized"] / 1e9,
        message_mib=tp["message_mib"], collectives=tp["collectives"], step_mib=tp["step_mib"],
        sp_step_mib=tp["sp_step_mib"], fraction=b["fraction"], ratio=b["ratio"],
        interleaved_v2=b["interleaved_v2"], at_4p_4=b["at_4p"][4], top_k=cap["top_k"],
        slots=cap["slots"], tokens=cap["tokens"], experts=cap["experts"], cf=cap["cf"],
        gpt3_gpus=f["gpt3_seed"]["product"], layers_per_stage=f["gpt3_seed"]["layers_per_stage"],
        mfu_1t=f["mfu_1t"], per_day=f["llama3"]["per_day"],
        young_s=f["llama3_fast"]["young_s"], goodput=f["llama3_fast"]["goodput"])


corner = Corner({"numbers": _numbers})
show = corner.show
