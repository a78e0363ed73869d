"""Notebook 01 speaks the session's language (``lessons.lang``): its checkers' messages, its
questions, its widgets' verdict line and its interview answers render in English and in
Chinese, the Chinese with Chinese in it and the same numbers as the English."""

from __future__ import annotations



from parlab import cost, hardware
from lessons.common import i18n
from lessons.l01_data_parallel import exercises, experiments, interview, widgets_zero
from two_languages import CJK, same_numbers

GB = 1e9
N13 = cost.MODEL_PRESETS["13B"].n_params


def test_questions_and_widget_texts_follow_the_language(both):
    q = both(lambda: exercises.QUESTIONS["hsdp_traffic"])
    same_numbers(q)
    assert sorted(exercises.QUESTIONS) == sorted(["zero_memory", "zero3_traffic", "dp_allreduce",
                                                   "hsdp_traffic"])
    plan = cost.memory_plan("7B", 4, 80, stage=0, recompute="full")
    verdict = both(lambda: widgets_zero.verdict(plan))
    assert verdict["en"] == plan["verdict"]  # the English is cost's own line
    assert "放不下" in verdict["zh"]
    same_numbers(verdict)
    r = {"median": 0.0123, "overlap": 0.42, "exposed": 0.0031, "buckets": 3}
    caption = both(lambda: experiments.sweep_caption("bucketed 4 KiB", r))
    assert caption["en"] == ("bucketed 4 KiB: 3 all-reduces per step, step 12.3 ms (median), "
                             "overlap 42%, exposed comm 3.1 ms")
    assert i18n.numbers(caption["en"]) == i18n.numbers(caption["zh"]) and CJK.search(caption["zh"])


def test_interview_answers_in_both_languages(both):
    m7 = cost.MODEL_PRESETS["7B"]
    a100 = hardware.GPU_PRESETS["A100-SXM4-80GB"].memory_gb
    traffic = {s: cost.zero_comm_volume(m7.n_params, 4, s) for s in (0, 3)}
    answers = both(lambda: interview.corner.answer("seven_b_30s", m7=m7, a100=a100, traffic=traffic))
    text = {k: " ".join([a.summary, *a.lines]) for k, a in answers.items()}
    assert "13.5 GB" in text["en"] and "108 GB" in text["en"] and "1.5×" in text["en"]
    same_numbers(text)
    by_link = {"IB-HDR": {"speedup, no overlap": 3.5}, "NVLink3": {"speedup, no overlap": 3.95}}
    answers = both(lambda: interview.corner.answer("thirty_seconds", by_link=by_link))
    same_numbers({k: " ".join([a.summary, *a.lines]) for k, a in answers.items()})


def test_the_fsdp_answer_uses_the_measured_modes(both):
    hsdp = {"psi": 100, "rows": [{"replicate measured": 50, "shard-group measured": 150}]}
    fsdp = {"rows": [{"mode": "reshard (ZeRO-3)", "all-gather measured": 200,
                      "reduce-scatter measured": 100, "peak measured": 10},
                     {"mode": "keep (no reshard)", "all-gather measured": 100,
                      "reduce-scatter measured": 100, "peak measured": 32}]}
    answers = both(lambda: interview.corner.answer("fsdp_network", hsdp=hsdp, fsdp=fsdp))
    en = " ".join(answers["en"].lines)
    assert "0.50 Ψ across, 1.50 Ψ inside" in en and "33% fewer bytes" in en and "(3.2× the" in en
    assert "<b>75.7 GB per GPU per step</b>" in en and "<b>4.9 GB</b>" in en
    same_numbers({k: " ".join(a.lines) for k, a in answers.items()})
