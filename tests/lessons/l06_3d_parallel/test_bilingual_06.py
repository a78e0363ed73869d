"""Notebook 06 speaks the session's language: checker messages, the planner explorer's table
and interview answers render in English and in Chinese, and the Chinese one writes the same
numbers as the English one."""

from __future__ import annotations


import torch
import torch.distributed as dist

from lessons.common import i18n
from lessons.l06_3d_parallel import exercises as ex
from lessons.l06_3d_parallel import experiments, interview, text, widgets
from two_languages import CJK, same_numbers


def test_the_catalogues_are_complete():
    assert i18n.catalogue_problems(text.INTERVIEW) == []
    assert i18n.catalogue_problems(text.TEXT) == []


def test_checker_messages_in_both_languages(both):
    for check in (lambda: ex.check_coords({"dp": 1, "pp": 0, "tp": 1}, rank=5),
                  lambda: ex.check_coords({"dp": 0, "pp": 1, "tp": 1}, rank=5),
                  lambda: ex.check_tp_group([4, 5], rank=6),
                  lambda: ex.check_memory(12.5)):
        said = both(check)
        assert said["en"]["ok"] == said["zh"]["ok"]
        same_numbers(said["en"]["message"], said["zh"]["message"])
    said = both(lambda: ex.check_coords({"dp": 0, "pp": 1, "tp": 1}, rank=5)["message"])
    assert "dp, pp wrong" in said["en"] and "dp, pp 不对" in said["zh"]


# --- learner functions (module level: their source travels to the ranks) ------------------

def world_mean(grad, groups):
    dist.all_reduce(grad)
    return grad / dist.get_world_size()


def no_pp_sum(grads, groups):
    tp_rank = dist.get_rank(groups["tp"])
    total = torch.zeros(1)
    for g in grads.values():
        if g.tp_split is None and tp_rank != 0:
            continue
        total += g.float().pow(2).sum()
    dist.all_reduce(total, group=groups["tp"])
    return float(total.sqrt())


def test_checkers_on_ranks_in_both_languages(both):
    for check in (lambda: ex.check_grad_sync(world_mean),
                  lambda: ex.check_global_grad_norm(no_pp_sum, dp=1),
                  lambda: ex.check_global_grad_norm(ex.solution_global_grad_norm, dp=1)):
        said = both(check)
        assert said["en"]["ok"] == said["zh"]["ok"]
        en, zh = said["en"]["message"], said["zh"]["message"]
        assert CJK.search(zh) and i18n.numbers(en) == i18n.numbers(zh), (en, zh)


def test_the_explorer_table_in_both_languages(both):
    view = experiments.plan_view("7B", nodes=1, global_batch=256, top=3)
    shown = both(lambda: widgets.ranked_html(view))
    assert "layouts fit" in shown["en"] and "个布局放得下" in shown["zh"]
    # the rows are the planner's (labels, reasons); the header and columns are the lesson's
    head = {k: v.split("<table>")[0] for k, v in shown.items()}
    same_numbers(head["en"], head["zh"])


def test_interview_answers_in_both_languages(both):
    n = experiments.interview()
    for key, kw in (("d", dict(n=n)), ("thirty", {}), ("zero2", {})):
        said = both(lambda: interview.corner.answer(key, **kw))
        en, zh = said["en"], said["zh"]
        assert len(en.lines) == len(zh.lines) and bool(en.verdict) == bool(zh.verdict)
        for a, b in zip([en.summary, en.verdict, *en.lines], [zh.summary, zh.verdict, *zh.lines]):
            if a:
                assert i18n.numbers(a) == i18n.numbers(b), (a, b)
        assert CJK.search(" ".join(zh.lines)) and not CJK.search(" ".join(en.lines))
