"""The question bank: every topic module's templates, and ``templates`` / ``generate``
over them. (The topic modules register their templates in ``core`` when imported here.)"""

from __future__ import annotations

import random

from parlab.validate import shown
from lessons.l00_collectives import drills as collectives
from lessons.l05_context_parallel import drills as cp
from lessons.l01_data_parallel import drills as dp_zero, drills_memory as memory_flops
from lessons.l04_expert_parallel import drills as moe_ep
from lessons.l03_pipeline_parallel import drills as pp
from lessons.l07_mixed_precision import drills as precision
from lessons.l08_checkpoints_and_failures import drills as reliability
from lessons.l06_3d_parallel import drills as threed
from lessons.l02_tensor_parallel import drills as tp_sp
from .. import record
from ..checkers.answers import percent_words
from ..i18n import pick, t
from .core import _REGISTRY, TOPICS, Question, Template
from .text import TEXT

# importing these registered their templates in core
MODULES = (collectives, dp_zero, tp_sp, pp, moe_ep, memory_flops, cp, threed, precision, reliability)


# A seed is written out as text to seed a question's random state: a seed past Python's
# 4,300-digit limit (2**20000) could not be, and none that large is needed.
MAX_SEED = 10 ** 18


def check_seed(seed) -> int:
    """``seed`` if it is an integer within +-MAX_SEED, else a ValueError naming it."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed={shown(seed)} must be an integer")
    if abs(seed) > MAX_SEED:
        raise ValueError(f"seed={shown(seed)} must be within +-{MAX_SEED:.0e} (every integer "
                         "that size gives its own questions)")
    return seed


def registry() -> dict[str, Template]:
    """Every template by name (registered by the topic modules imported above)."""
    return dict(_REGISTRY)


def _topics(topic) -> tuple:
    if topic is None:
        return TOPICS
    names = (topic,) if isinstance(topic, str) else tuple(topic)
    for t in names:
        if t not in TOPICS:
            raise ValueError(f"topic={t!r} must be one of {', '.join(TOPICS)}")
    if not names:
        raise ValueError(f"topic={topic!r} must name at least one of {', '.join(TOPICS)}")
    return names


def templates(topic=None) -> list[str]:
    """Names of the question templates (of ``topic``: a name or a tuple of names), in
    topic order."""
    topics = _topics(topic)
    reg = registry()
    return [n for t in topics for n, tp in reg.items() if tp.topic == t]


def generate(template: str | None = None, topic=None, seed: int = 0,
             lang: str | None = None) -> Question:
    """One question. ``template`` given: that template with parameters drawn from
    ``seed``. Else a template of ``topic`` (None: all topics; a name or a tuple of names):
    consecutive seeds walk through every template of those topics in a shuffled order
    before any repeats, with new parameters each round. ``lang`` ("en", "zh"; default
    the session's, ``lessons.lang``) is the language it asks in: the same numbers, drawn
    from the same seed, whichever."""
    check_seed(seed)
    lang = pick(lang)
    reg = registry()
    if template is None:
        pool = templates(topic)
        order = sorted(pool)
        random.Random("order:" + ",".join(_topics(topic))).shuffle(order)
        template = order[seed % len(order)]
    elif template not in reg:
        raise ValueError(f"template={template!r} must be one of {', '.join(sorted(reg))}")
    elif topic is not None and reg[template].topic not in _topics(topic):
        raise ValueError(f"template={template!r} belongs to topic={reg[template].topic!r}, "
                         f"not {topic!r}")
    tp = reg[template]
    ask = tp.make(random.Random(f"{template}:{seed}"))
    if lang == "zh" and not ask.prompt_zh:
        raise ValueError(f"template={template!r} has no Chinese question (Ask.prompt_zh)")
    if ask.digits:  # read off a table or worked by hand: right to the digits typed
        tol = t(TEXT, "tol_digits", lang, digits=ask.digits)
    elif ask.rel_tol == 0:
        tol = t(TEXT, "tol_exact", lang)
    else:
        tol = t(TEXT, "tol_within", lang, pct=percent_words(ask.rel_tol))
    unit = "" if not ask.unit else t(TEXT, {"x": "unit_ratio", "%": "unit_percent"}.get(
        ask.unit, "unit_other"), lang, unit=ask.unit)
    citation = tp.citation(lang)
    # the working is the formula with its numbers, written once (in English)
    gap = "" if lang == "zh" else " "  # Chinese puts no space after a full stop
    explanation = f"{ask.working}\n{tol}{gap}{t(TEXT, 'measured_in', lang, citation=citation)}"
    prompt = ask.prompt_zh if lang == "zh" else ask.prompt
    return Question(template, tp.topic, seed, prompt + unit, float(ask.answer), ask.unit,
                    ask.rel_tol, explanation, citation, ask.digits, lang)


def topic_name(topic: str, lang: str | None = None) -> str:
    """A topic as a learner reads it: "pipeline parallelism" / "流水线并行" for ``pp``."""
    if topic not in TOPICS:
        raise ValueError(f"topic={topic!r} must be one of {', '.join(TOPICS)}")
    return t(TEXT, f"topic_{topic}", lang)


def next_question(topic=None, seed: int = 0, lang: str | None = None,
                  asked: frozenset | set = frozenset()) -> tuple[Question, bool]:
    """The drill's next question and whether it is a review: a question the learner missed
    before that is due again in their record (``record.due``; box 1 first), with new
    numbers from ``seed``, ahead of ``generate(topic=topic, seed=seed)``'s. ``asked``: the
    templates this session already asked, which are not brought back in it."""
    for template in record.due(_topics(topic)) if record.enabled() else ():
        if template not in asked and template in _REGISTRY:
            return generate(template=template, topic=topic, seed=seed, lang=lang), True
    return generate(topic=topic, seed=seed, lang=lang), False
