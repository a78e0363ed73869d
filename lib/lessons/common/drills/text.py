"""What the drills say around a question, in English and Chinese: the unit and tolerance
lines, the quiz's and the widget's feedback, buttons and score (``i18n.t`` formats them;
the numbers are formatted by the caller, once, for both languages). Each template's own
question is written beside its English in the lesson's ``drills.py`` (``Ask.prompt_zh``)."""

TEXT = {
    # the lines generate() adds to a question
    "unit_ratio": {"en": " Answer as a ratio (a number, e.g. 2.5).",
                   "zh": "（以倍数作答，填一个数，例如 2.5。）"},
    "unit_percent": {"en": " Answer in % (12.5 or 12.5%).",
                     "zh": "（以百分数作答：12.5 或 12.5%。）"},
    "unit_other": {"en": " Answer in {unit}.", "zh": "（单位：{unit}。）"},
    "tol_exact": {"en": "Exact answer expected.", "zh": "要求精确答案。"},
    "tol_within": {"en": "Accepted within {pct} of the answer.",
                   "zh": "与答案相差 {pct} 以内即算对。"},
    "tol_digits": {"en": "Accepted when it is the answer rounded correctly to the digits you "
                         "type (at least {digits} significant).",
                   "zh": "按你写出的有效数字（至少 {digits} 位）正确舍入即算对。"},
    "measured_in": {"en": "Measured or computed in {citation}.",
                    "zh": "测量或计算见 {citation}。"},
    "citation": {"en": "notebook {nb} §{n} '{title}'", "zh": "notebook {nb} 第 {n} 节「{title}」"},
    "exact": {"en": "exact", "zh": "精确"},
    "within": {"en": "within {pct}", "zh": "误差 {pct} 以内"},
    "digits": {"en": "right when rounded correctly to the digits typed, at least {digits} "
                     "significant",
               "zh": "按写出的有效数字正确舍入即算对（至少 {digits} 位）"},
    # the score (session.Tally)
    "score_first": {"en": "{first} right of {answered} on the first try",
                    "zh": "已答 {answered} 题，首次答对 {first} 题"},
    "score_later": {"en": "{later} more right on a later try", "zh": "另有 {later} 题重试后答对"},
    "score_skipped": {"en": "{skipped} skipped", "zh": "跳过 {skipped} 题"},
    "comma": {"en": ", ", "zh": "，"},
    # the terminal quiz
    "quiz_head": {"en": "Question {i}/{n}", "zh": "第 {i}/{n} 题"},
    "quiz_ask": {"en": "your answer, empty to skip> ", "zh": "你的答案（直接回车跳过）> "},
    "quiz_ask_unit": {"en": "your answer ({unit}), empty to skip> ",
                      "zh": "你的答案（{unit}，直接回车跳过）> "},
    "quiz_again": {"en": "try again, empty to see the answer> ", "zh": "再试一次（直接回车看答案）> "},
    "quiz_eof": {"en": "(end of input: quiz stopped)", "zh": "（输入结束：测验停止）"},
    "quiz_skipped": {"en": "skipped. The answer is {answer}.", "zh": "已跳过。答案是 {answer}。"},
    "quiz_wrong": {"en": "wrong: the answer is {answer}.", "zh": "答错了：答案是 {answer}。"},
    "quiz_right": {"en": "right: {answer} ({tolerance}).", "zh": "答对了：{answer}（{tolerance}）。"},
    "quiz_right_on": {"en": "right on try {tries}: {answer} ({tolerance}).",
                      "zh": "第 {tries} 次答对：{answer}（{tolerance}）。"},
    "not_counted": {"en": "{detail} (not counted as a try).", "zh": "{detail}（不计入尝试次数）。"},
    "quiz_wrong_said": {"en": "wrong: you said {said}: {detail}; the answer is {answer}.",
                        "zh": "答错了：你答的是 {said}：{detail}；答案是 {answer}。"},
    "quiz_not_yet": {"en": "not yet: {detail}", "zh": "还不对：{detail}"},
    "quiz_score": {"en": "score: {tally}", "zh": "得分：{tally}"},
    "quiz_stopped": {"en": " (stopped after {asked} of {n})", "zh": "（共 {n} 题，答到第 {asked} 题时停止）"},
    # the notebook widget
    "w_title": {"en": "Interview drill", "zh": "面试练习"},
    "w_topic": {"en": "topic", "zh": "主题"},
    "w_all": {"en": "all of these", "zh": "以上全部"},
    "w_question": {"en": "Question", "zh": "题目"},
    "w_placeholder": {"en": "your answer", "zh": "你的答案"},
    "w_placeholder_unit": {"en": "your answer in {unit}", "zh": "你的答案（{unit}）"},
    "w_check": {"en": "Check", "zh": "检查"},
    "w_show": {"en": "Show answer", "zh": "看答案"},
    "w_next": {"en": "Next question", "zh": "下一题"},
    "w_type_first": {"en": "type a number first", "zh": "请先填一个数"},
    "w_right": {"en": "Right ({tolerance}).", "zh": "答对了（{tolerance}）。"},
    "w_right_on": {"en": "Right on try {tries} ({tolerance}).",
                   "zh": "第 {tries} 次答对（{tolerance}）。"},
    "w_not_quite": {"en": "Not quite: {detail}. Try again, or Show answer.",
                    "zh": "还不对：{detail}。再试一次，或点「看答案」。"},
    "w_answer": {"en": "Answer: {answer}", "zh": "答案：{answer}"},
    "w_score": {"en": "score: {tally}", "zh": "得分：{tally}"},
}
