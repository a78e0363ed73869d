"""What every checker says around a lesson's own message, in English and Chinese: the
verdict's first word, the tiered help's labels (``i18n.t`` formats them). A lesson's own
checker messages are in its ``text.py``."""

TEXT = {
    "correct": {"en": "Correct. ", "zh": "正确。"},
    "not_yet": {"en": "Not yet. ", "zh": "还不对。"},
    "not_answered": {"en": "Not answered yet: {what}", "zh": "还没有作答：{what}"},
    "hint_1": {"en": "Stuck? Hint 1 for <code>{name}</code> (click to open)",
               "zh": "卡住了？<code>{name}</code> 的提示 1（点击展开）"},
    "hint_2": {"en": "Hint 2 (click to open)", "zh": "提示 2（点击展开）"},
    "solution": {"en": "Reference solution (click to open)", "zh": "参考答案（点击展开）"},
    "no_solution": {"en": "(no reference solution)", "zh": "（没有参考答案）"},
}
