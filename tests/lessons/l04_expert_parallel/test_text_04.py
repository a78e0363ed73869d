"""Notebook 04 speaks English and Chinese: checker messages, an interview answer and the
widget's table render in the session's language, and the Chinese says the same numbers."""

from lessons.common import i18n
from lessons.l04_expert_parallel import exercises as ex, experiments, interview, widgets
from two_languages import same_numbers


def test_checker_messages_in_both_languages(both):
    p = ex.cost.moe_params(**ex.MIXTRAL)
    cases = [lambda: ex.check_dropped([(1, 0)]),                      # wrong: kept + missing
             lambda: ex.check_mixtral_params(p["total"], p["active"]),  # right
             lambda: ex.check_dropped(None)]                           # not answered
    for case in cases:
        said = both(lambda: case()["message"])
        same_numbers(said["en"], said["zh"])
    said = both(lambda: ex.check_dropped([(1, 0)])["message"])
    assert "kept by the rule: [(1, 0)]" in said["en"] and "[(1, 0)]" in said["zh"]


def test_an_interview_answer_in_both_languages(both):
    n = experiments.interview()
    for key, numbers in (("f", dict(e=n["ep_vs_tp"])), ("b", dict(n=n)), ("thirty", {})):
        said = both(lambda: interview.corner.answer(key, **numbers))
        en, zh = said["en"], said["zh"]
        assert len(en.lines) == len(zh.lines) and bool(en.verdict) == bool(zh.verdict)
        for a, b in zip([en.summary, en.verdict, *en.lines], [zh.summary, zh.verdict, *zh.lines]):
            assert i18n.numbers(a) == i18n.numbers(b), (a, b)
        same_numbers(" ".join(en.lines), " ".join(zh.lines))


def test_the_widget_labels_follow_the_language(both):
    p = experiments.predict(256, 4, 1, 1.25, 1.0, 2)
    said = both(lambda: widgets.predict_html(p, 2))
    assert "capacity per expert" in said["en"] and "每个专家的容量" in said["zh"]
    assert i18n.numbers(said["en"]) == i18n.numbers(said["zh"])
    labels = both(lambda: widgets.capacity_choices()[0][0])
    assert labels == {"en": "no limit", "zh": "不限"}
