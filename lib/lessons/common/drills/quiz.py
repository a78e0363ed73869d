"""The terminal quiz behind ``python -m lessons drill``: one question at a time, the
answer read from stdin (a pipe works; end of input stops the quiz cleanly), right or
wrong with how far off and a second try, then the answer and its explanation; the score
at the end, counted by ``session``'s rules (the widget's too)."""

from __future__ import annotations

import textwrap

from parlab.validate import check_int, shown
from ..i18n import pick, t
from .bank import check_seed, next_question, templates, topic_name
from .core import TOPICS, Question
from .session import Attempt, Tally
from .text import TEXT


def parse_topics(text: str | None):
    """``--topic`` as typed: None (all), "pp", or "pp,cp"; a ValueError lists the valid
    names."""
    if text is None or not text.strip():
        return None
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    for t in names:
        if t not in TOPICS:
            raise ValueError(f"topic={t!r} must be one of {', '.join(TOPICS)}")
    return names[0] if len(names) == 1 else names


# The most questions one quiz asks. Templates draw new parameters each round, so distinct
# questions never run out; a person does not sit through more than this (1000 is 13 rounds
# of the 76 templates), and --n 10**9 must be refused, not start building a billion
# questions (the quiz once did: it hung, growing by about 11 MB/s).
MAX_QUESTIONS = 1000


def _questions(topic, n, seed, lang=None):
    """The quiz's questions, one at a time (a quiz that stops early never builds the rest)."""
    n = check_int("n", n)
    if n > MAX_QUESTIONS:
        raise ValueError(f"n={shown(n)} must be at most {MAX_QUESTIONS}: a quiz asks at most "
                         f"MAX_QUESTIONS = {MAX_QUESTIONS} questions")
    check_seed(seed), check_seed(seed + n - 1)  # the last question's seed too
    templates(topic)  # a bad topic is refused now, not at the first question
    lang = pick(lang)
    return n, _walk(topic, n, seed, lang)


def _walk(topic, n, seed, lang):
    """``next_question`` n times: the learner's due reviews first, then the seeds in turn."""
    asked = set()
    for i in range(n):
        q, review = next_question(topic, seed + i, lang, asked)
        asked.add(q.template)
        yield q, review


def quiz_questions(topic=None, n: int = 10, seed: int = 0,
                   lang: str | None = None) -> list[Question]:
    """The questions a quiz asks: ``generate(topic=topic, seed=seed + i, lang=lang)`` for
    i < n (``n`` at most ``MAX_QUESTIONS``)."""
    return [q for q, _ in _questions(topic, n, seed, lang)[1]]


def _wrap(text: str, indent: str = "", lang: str = "en") -> str:
    width = 56 if lang == "zh" else 92  # a Chinese character takes two columns
    return "\n".join(textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent)
                     for line in text.splitlines())


def run_quiz(topic=None, n: int = 10, seed: int = 0, read=input, out=print,
             tries: int = 2, lang: str | None = None) -> Tally:
    """Ask ``n`` questions; ``read(prompt)`` returns the typed line (EOFError ends the
    quiz). A wrong answer gets its verdict (how far off, which way; "did you mean 3.03%?")
    and another go, up to ``tries`` counted tries; an empty answer skips or gives up and
    shows the answer. Scored as ``session`` says: first tries count. Asked in ``lang``
    (default the session's: ``lessons.lang``, or ``--lang``). Returns the Tally."""
    tries = check_int("tries", tries)
    lang = pick(lang)
    # every argument checked before the first question
    n, questions = _questions(topic, n, seed, lang)
    tally, asked = Tally(), 0
    for i, (q, review) in enumerate(questions, 1):
        tag = topic_name(q.topic, lang) + (" · " + t(TEXT, "review", lang) if review else "")
        out(f"\n{t(TEXT, 'quiz_head', lang, i=i, n=n)}  [{tag}]")
        out(_wrap(q.prompt, lang=lang))
        attempt = Attempt(q, tally)
        ask = t(TEXT, "quiz_ask_unit", lang, unit=q.unit) if q.unit else \
            t(TEXT, "quiz_ask", lang)
        while True:
            try:
                text = (read(ask) or "").strip()
            except EOFError:
                out("\n" + t(TEXT, "quiz_eof", lang))
                return _end(tally, asked, n, out, stopped=True, lang=lang)
            if not text:
                attempt.reveal()
                out(t(TEXT, "quiz_skipped" if attempt.tries == 0 else "quiz_wrong", lang,
                      answer=q.answer_text))
                break
            v = attempt.answer(text)
            if v["ok"]:
                out(t(TEXT, "quiz_right_on" if attempt.tries > 1 else "quiz_right", lang,
                      tries=attempt.tries, answer=q.answer_text, tolerance=q.tolerance_text))
                break
            if v.get("unreadable") or v.get("did_you_mean"):
                out(t(TEXT, "not_counted", lang, detail=v["detail"].rstrip(".")))
            elif attempt.tries >= tries:
                attempt.reveal()
                out(t(TEXT, "quiz_wrong_said", lang, said=text,
                      detail=v["detail"].rstrip("."), answer=q.answer_text))
                break
            else:
                out(t(TEXT, "quiz_not_yet", lang, detail=v["detail"]))
            ask = t(TEXT, "quiz_again", lang)
        asked += 1
        out(_wrap(q.explanation, "    ", lang))
    return _end(tally, asked, n, out, lang=lang)


def _end(tally: Tally, asked: int, n: int, out, stopped: bool = False,
         lang: str = "en") -> Tally:
    """The score line; ``stopped``: input ended, after ``asked`` questions had a verdict."""
    note = t(TEXT, "quiz_stopped", lang, asked=asked, n=n) if stopped else ""
    out("\n" + t(TEXT, "quiz_score", lang, tally=tally.text(lang)) + note)
    return tally
