"""Notebook 01 speaks the session's language (``lessons.lang``): its checkers' messages, its
questions, its widgets' verdict line and its interview answers render in English and in
Chinese, the Chinese with Chinese in it and the same numbers as the English."""

from __future__ import annotations

import re

import pytest

from parlab import cost, hardware
from lessons.common import i18n
from lessons.l01_data_parallel import exercises, experiments, interview, widgets_zero

CJK = re.compile(r"[\u3400-\u9fff]")
GB = 1e9
N13 = cost.MODEL_PRESETS["13B"].n_params


@pytest.fixture
def both():
    """Render ``make()`` in English, then in Chinese; the session's language restored."""
    was = i18n.current_lang()

    def render(make):
        out = {}
        for code in i18n.LANGS:
            i18n.lang(code)
            out[code] = make()
        return out

    yield render
    i18n.lang(was)


def _same_numbers_and_chinese(texts: dict):
    assert not CJK.search(texts["en"]), texts["en"]
    assert CJK.search(texts["zh"]), texts["zh"]
    assert i18n.numbers(texts["en"]) == i18n.numbers(texts["zh"]), texts


def test_a_numeric_checkers_hint_names_the_mistake_in_both_languages(both):
    plain_dp = cost.zero_memory(N13, 8, 0)["total"] / GB
    said = both(lambda: exercises.check_zero_memory(plain_dp)["message"])
    assert "That is plain DP's figure (nothing sharded)." in said["en"]
    assert "这是普通数据并行的数值" in said["zh"]
    assert said["zh"].startswith("还不对。")
    assert i18n.numbers(said["en"]) == i18n.numbers(said["zh"])


def test_the_all_reduce_checkers_explanation_in_both_languages(both):
    S = 2 * cost.MODEL_PRESETS["1.3B"].n_params
    right = cost.collective_bytes("all_reduce", S, 16) / GB
    said = both(lambda: exercises.check_dp_allreduce_bytes(right)["detail"])
    assert "S = 2 bytes x 1.32 B parameters" in said["en"]
    assert "S = 2 字节 x 1.32 B 个参数" in said["zh"]
    wrong = both(lambda: exercises.check_dp_allreduce_bytes(S / GB)["detail"])
    assert "an all-reduce is a reduce-scatter plus an all-gather" in wrong["en"]
    assert "all-reduce 是一次 reduce-scatter 加一次 all-gather" in wrong["zh"]


def test_checker_hints_on_wrong_shards_in_both_languages(both):
    """The ZeRO-1 hint for a summed gradient and the HSDP one for a too-small shard,
    rendered without ranks (their helpers take the tensors the checker compared)."""
    import torch
    before, want = torch.zeros(8), -torch.ones(8)
    said = both(lambda: exercises._zero1_hint(4 * want, want, before, 0, 2, 4, 0))
    assert said["en"] == ". The update is 4x too large: the reduce-scatter sums the gradients -- divide by world_size."
    _same_numbers_and_chinese(said)
    from lessons.l01_data_parallel import exercises_hsdp as hsdp
    grads = torch.arange(32.0).reshape(4, 8)
    said = both(lambda: hsdp._value_hint(torch.zeros(2), grads, [{"position": 0}] * 4, 0, 2, 2))
    assert "that is 1/4 of the gradient" in said["en"] and "a shard has 4 elements" in said["en"]
    _same_numbers_and_chinese(said)


def test_questions_and_widget_texts_follow_the_language(both):
    q = both(lambda: exercises.QUESTIONS["hsdp_traffic"])
    _same_numbers_and_chinese(q)
    assert sorted(exercises.QUESTIONS) == sorted(["zero_memory", "zero3_traffic", "dp_allreduce",
                                                   "hsdp_traffic"])
    plan = cost.memory_plan("7B", 4, 80, stage=0, recompute="full")
    verdict = both(lambda: widgets_zero.verdict(plan))
    assert verdict["en"] == plan["verdict"]  # the English is cost's own line
    assert "放不下" in verdict["zh"]
    _same_numbers_and_chinese(verdict)
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
    _same_numbers_and_chinese(text)
    by_link = {"IB-HDR": {"speedup, no overlap": 3.5}, "NVLink3": {"speedup, no overlap": 3.95}}
    answers = both(lambda: interview.corner.answer("thirty_seconds", by_link=by_link))
    _same_numbers_and_chinese({k: " ".join([a.summary, *a.lines]) for k, a in answers.items()})


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
    _same_numbers_and_chinese({k: " ".join(a.lines) for k, a in answers.items()})
