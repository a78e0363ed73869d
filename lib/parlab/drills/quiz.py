"""The terminal quiz behind ``python -m parlab drill``: one question at a time, the
answer read from stdin (a pipe works; end of input stops the quiz cleanly), right or
wrong with the answer and its explanation, the score at the end."""

from __future__ import annotations

import textwrap

from ..validate import check_int
from .bank import generate
from .core import TOPICS, Question, parse_answer


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


def quiz_questions(topic=None, n: int = 10, seed: int = 0) -> list[Question]:
    """The questions a quiz asks: ``generate(topic=topic, seed=seed + i)`` for i < n."""
    n, seed = check_int("n", n), check_int("seed", seed, None)
    return [generate(topic=topic, seed=seed + i) for i in range(n)]


def _wrap(text: str, indent: str = "") -> str:
    return "\n".join(textwrap.fill(line, 92, initial_indent=indent, subsequent_indent=indent)
                     for line in text.splitlines())


def run_quiz(topic=None, n: int = 10, seed: int = 0, read=input, out=print) -> tuple[int, int]:
    """Ask ``n`` questions; ``read(prompt)`` returns the typed line (EOFError ends the
    quiz). An empty answer skips. Returns (right, asked)."""
    questions = quiz_questions(topic, n, seed)
    right = asked = 0
    for i, q in enumerate(questions, 1):
        out(f"\nQuestion {i}/{n}  [{q.topic} · {q.template}]")
        out(_wrap(q.prompt))
        try:
            text = read(f"your answer{' (' + q.unit + ')' if q.unit else ''}, empty to skip> ")
        except EOFError:
            out("\n(end of input: quiz stopped)")
            break
        asked += 1
        text = (text or "").strip()
        value = parse_answer(text, q.unit)
        if not text:
            verdict = f"skipped. The answer is {q.answer_text}."
        elif value is None:
            verdict = (f"could not read {text!r} as a number in {q.unit or 'plain numbers'}. "
                       f"The answer is {q.answer_text}.")
        elif q.check(value):
            right += 1
            verdict = f"right: {q.answer_text} ({q.tolerance_text})."
        else:
            verdict = f"wrong: you said {text}; the answer is {q.answer_text}."
        out(verdict)
        out(_wrap(q.explanation, "    "))
    stopped = f" (stopped after {asked} of {n})" if asked < n else ""
    out(f"\nscore {right}/{asked}{stopped}")
    return right, asked
