"""Notebook 05 speaks English and Chinese: checker messages, interview answers and the
widget's table render in the session's language, and the Chinese says the same numbers."""

from lessons.common import i18n
from lessons.l05_context_parallel import exercises as ex, interview, widgets
from two_languages import same_numbers


def test_checker_messages_in_both_languages(both):
    for case in (lambda: ex.check_zigzag_positions([4, 5, 6, 7]),   # wrong
                 lambda: ex.check_zigzag_positions([2, 3, 12, 13]),  # right
                 lambda: ex.check_ulysses_cap("A"),
                 lambda: ex.check_ulysses_cap("Z")):
        said = both(lambda: case()["message"])
        same_numbers(said["en"], said["zh"])
    said = both(lambda: ex.check_zigzag_positions([2, 3, 12, 13])["message"])
    assert "rank 1 holds [2, 3, 12, 13]: chunk 1 and chunk 6." in said["en"]


def test_interview_answers_in_both_languages(both):
    for key, numbers in (("b", dict(h=4096, s=131072)), ("thirty", {})):
        said = both(lambda: interview.corner.answer(key, **numbers))
        en, zh = said["en"], said["zh"]
        assert len(en.lines) == len(zh.lines) and bool(en.verdict) == bool(zh.verdict)
        for a, b in zip([en.summary, en.verdict, *en.lines], [zh.summary, zh.verdict, *zh.lines]):
            assert i18n.numbers(a) == i18n.numbers(b), (a, b)
        same_numbers(" ".join(en.lines), " ".join(zh.lines))


def test_the_widget_labels_follow_the_language(both):
    res = dict(bytes=2 ** 20, cp=2, megatron_bytes=3 * 2 ** 20, memory=2 ** 16, work=[1, 3],
               imbalance=1.5)
    said = both(lambda: widgets.predict_html(res))
    assert "attention memory per rank" in said["en"] and "每个 rank 的注意力显存" in said["zh"]
    assert i18n.numbers(said["en"]) == i18n.numbers(said["zh"])
