"""Notebook 00 speaks English and Chinese (lessons/l00_collectives/text.py): its checkers'
messages and its interview answers, rendered in each language, say the same numbers, the
Chinese one in Chinese; and the answers, for the numbers §7 passes, say what the notebook
showed before they followed the session's language (their cells are no longer pinned)."""

from __future__ import annotations


import pytest
import torch
import torch.distributed as dist

import lessons
from lessons.common import i18n
from lessons.l00_collectives import exercises as ex, explorer, figures, interview
from parlab import cost, hardware
from two_languages import CJK, same_numbers

@pytest.fixture
def in_lang():
    """Render ``fn()`` in a language, then switch back to the session's."""
    before = lessons.current_lang()

    def render(lang, fn):
        lessons.lang(lang)
        try:
            return fn()
        finally:
            lessons.lang(before)
    return render


def _both(in_lang, fn):
    en, zh = in_lang("en", fn), in_lang("zh", fn)
    same_numbers(en, zh)
    return en, zh


def ring_stops_one_step_short(x, rank, world_size):
    chunks = x.chunk(world_size)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    incoming = torch.empty_like(chunks[0])
    for s in range(world_size - 1):
        send_c, recv_c = (rank - s - 1) % world_size, (rank - s - 2) % world_size
        req = dist.isend(chunks[send_c].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[recv_c].add_(incoming)
    for s in range(world_size - 2):  # planted: one all-gather step too few
        send_c, recv_c = (rank - s) % world_size, (rank - s - 1) % world_size
        req = dist.isend(chunks[send_c].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[recv_c].copy_(incoming)
    return x


def test_the_numeric_checkers_explain_in_both_languages(in_lang):
    en, zh = _both(in_lang, lambda: ex.check_ring_bytes("700")["message"])
    assert en.startswith("Correct.") and "2·7/8·400 MB" in en and "2·7/8·400 MB" in zh
    en, zh = _both(in_lang, lambda: ex.check_all_gather_bytes("1.75")["message"])
    assert "(N-1)/N·S" in zh and "all-reduce" in zh
    en, zh = _both(in_lang, lambda: ex.QUESTIONS["allreduce_time"])
    assert "N = 16" in en and "N = 16" in zh and "25 GB/s" in zh


def test_a_ring_that_stops_short_is_diagnosed_in_both_languages(in_lang):
    def message():
        return ex.check_ring_all_reduce(ring_stops_one_step_short, world_size=3)["message"]
    en, zh = in_lang("en", message), in_lang("zh", message)
    assert "stopped one step short (2 steps are needed, 1 ran)" in en
    assert "少跑了一步（需要 2 步，只跑了 1 步）" in zh
    # the element the comparison names is core's (English) wording; the lesson's words are Chinese
    assert "每个 rank 最后都应得到所有 rank 的 x 逐元素相加之和" in zh


def test_the_explorer_note_follows_the_language(in_lang):
    en, zh = _both(in_lang, lambda: explorer.link_choices(256)["note"])
    assert "at most 72 GPUs" in en and "最多 72 张 GPU" in zh


def _notebook_numbers():
    """§7's two cells: what they compute and pass to interview.show."""
    link = hardware.LINK_PRESETS["IB-HDR"]
    alpha, B = link.latency_us * 1e-6, link.gb_per_s_per_direction * 1e9
    nvlink, dgx = hardware.LINK_PRESETS["NVLink3"], hardware.NODE_PRESETS["DGX-A100"]
    S, ns = 2 * cost.MODEL_PRESETS["7B"].n_params, [2, 4, 8, 64, 512, 4096]
    per_rank = [cost.collective_bytes("all_reduce", S, n) / 1e9 for n in ns]
    scale_table = figures.allreduce_at_scale_table(
        S, ns, alpha, B, nvlink.gb_per_s_per_direction * 1e9, dgx.gpus_per_node, "caption")
    bucket = 25 * 2 ** 20
    flat_up_to = {a: bucket / (a * B) for a in (alpha, 10 * alpha)}
    crossover = {n: cost.ring_tree_crossover(n, alpha, B) / 1e6 for n in (8, 64, 512)}
    bucket_table = figures.bucket_latency_table(S, bucket, [2, 8, 64, 512, 1024, 4096, 16384],
                                                alpha, B)
    return {"holds": dict(ns=ns, per_rank=per_rank, scale_table=scale_table),
            "does_not": dict(bucket_table=bucket_table, crossover=crossover,
                             flat_up_to=flat_up_to, ns=ns),
            "thirty": {}}


@pytest.mark.parametrize("key", ["holds", "does_not", "thirty"])
def test_each_interview_answer_says_the_same_numbers_in_chinese(in_lang, key):
    numbers = _notebook_numbers()[key]
    en = in_lang("en", lambda: interview.corner.answer(key, **numbers))
    zh = in_lang("zh", lambda: interview.corner.answer(key, **numbers))
    assert len(en.lines) == len(zh.lines) and bool(en.verdict) == bool(zh.verdict)
    for a, b in zip([en.summary, en.verdict, *en.lines], [zh.summary, zh.verdict, *zh.lines]):
        if a.startswith("<table"):
            assert a == b  # the notebook's table, as computed
            continue
        assert i18n.numbers(a) == i18n.numbers(b), (a, b)
        assert not a or CJK.search(b), b


def test_the_answers_show_what_the_pinned_notebook_showed(in_lang):
    """The numbers §7's answers showed when their cells were pinned (English)."""
    numbers = _notebook_numbers()
    holds = in_lang("en", lambda: interview.corner.answer("holds", **numbers["holds"]))
    assert ("13.48, 20.22, 23.58, 26.53, 26.90, 26.95 GB at N = 2, 4, 8, 64, 512, 4096"
            in holds.lines[1])
    does_not = in_lang("en", lambda: interview.corner.answer("does_not", **numbers["does_not"]))
    text = " ".join(does_not.lines)
    assert "2(N−1), 8,190 at N = 4,096" in text
    assert "tree faster below 1 MB at N = 8, 91 MB at N = 64, 6,426 MB at N = 512" in text
    assert "about 1,049 ranks with α = 1 µs or 105 ranks with α = 10 µs" in text
    assert in_lang("en", lambda: interview.show("thirty").data).startswith(
        "<details><summary><b>A 30-second answer</b>")


def test_the_pictures_the_widgets_show_follow_the_language(in_lang):
    from ring_reference import simulate_ring
    frames = simulate_ring(4)
    en, zh = _both(in_lang, lambda: " | ".join(
        [figures.collective_diagram("reduce_scatter", 4).layout.title.subtitle.text]
        + [f.layout.title.text for f in figures.ring_animation(frames).frames[:5]]))
    assert "reduce-scatter step 1 of 3" in en and "reduce-scatter 第 1 步（共 3 步）" in zh
