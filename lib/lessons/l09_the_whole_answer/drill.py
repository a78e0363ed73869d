"""The capstone's timed drill: one question from every topic of the lab, in English and
in Chinese, answers computed by ``cost`` and checked by the same rules as every other
drill (``drills.core.Question.verdict``: units, shares, "off by a factor 2"). The score
counts first tries (``drills.session``) and the time taken."""

from __future__ import annotations

import random
import time

from dataclasses import replace

from parlab import cost
from lessons.common.drills.core import Question, TOPICS, fmt
from lessons.common.drills.session import Attempt, Tally
from lessons.common.i18n import pick, t
from .sections import SECTIONS, label
from .text import TEXT

TIME_TARGET_S = 600  # ten questions in ten minutes: an interview's pace


def _ring(rng):
    n, gb = rng.choice((4, 8, 16, 64)), rng.choice((2, 4, 14))
    a = cost.collective_bytes("all_reduce", gb * 1e9, n) / 1e9
    return (f"A ring all-reduce of {gb} GB over {n} GPUs: how many GB does each GPU send?",
            f"在 {n} 张卡上用环形算法 all-reduce {gb} GB 的梯度：每张卡发送多少 GB？",
            a, "GB", f"2(N−1)/N · S = 2·{n - 1}/{n} · {gb} = {fmt(a)} GB", "ring")


def _zero(rng):
    b, n, stage = rng.choice((7, 13, 70)), rng.choice((4, 8, 16, 64)), rng.choice((1, 2, 3))
    a = cost.zero_memory(b * 1e9, n, stage)["total"] / 1e9
    return (f"{b}e9 parameters, mixed-precision AdamW (16 bytes per parameter), ZeRO-{stage} over "
            f"{n} GPUs: GB of model states per GPU?",
            f"{b}e9 个参数，混合精度 AdamW（每参数 16 字节），{n} 张卡上用 ZeRO-{stage}：每张卡的模型"
            "状态占多少 GB？", a, "GB", f"cost.zero_memory: {fmt(a)} GB", "zero")


def _tp(rng):
    t, h = rng.choice((2, 4, 8)), rng.choice((4096, 8192, 12288))
    a = cost.tp_comm_per_layer(1, 2048, h, t)["bytes"] / 2 ** 20
    return (f"Megatron TP, t = {t}, h = {h}, one sequence of 2048 tokens, fp16: MiB sent per GPU "
            "per layer per training step (forward and backward)?",
            f"Megatron 张量并行，t = {t}，h = {h}，一条 2048 token 的序列，fp16：每层每个训练步"
            "（前向加反向）每张卡发送多少 MiB？", a, "MiB",
            {"en": f"4 all-reduces × 2(t−1)/t × 2·s·h bytes = {fmt(a)} MiB",
             "zh": f"4 次 all-reduce × 2(t−1)/t × 2·s·h 字节 = {fmt(a)} MiB"}, "tp_count")


def _bubble(rng):
    p, m = rng.choice((4, 8, 16)), rng.choice((8, 16, 32, 64))
    a = cost.bubble_fraction(p, m) * 100
    return (f"1F1B with P = {p} stages and M = {m} micro-batches: what share of the step is "
            "bubble?", f"1F1B 调度，P = {p} 个阶段，M = {m} 个微批次：气泡占一步时间的百分之几？",
            a, "%", f"(P−1)/(M+P−1) = {p - 1}/{m + p - 1} = {fmt(a)}%", "bubble")


def _capacity(rng):
    tokens, e, cf = rng.choice((1024, 4096, 8192)), rng.choice((8, 16, 64)), rng.choice((1.0, 1.25, 2.0))
    a = cost.expert_capacity(tokens, e, cf)
    return (f"{tokens} tokens, {e} experts, top-1, capacity factor {cf}: how many token slots "
            "does each expert have?", f"{tokens} 个 token，{e} 个专家，top-1，容量因子 {cf}："
            "每个专家有多少个 token 槽位？", a, "",
            {"en": f"capacity = cf · tokens / experts = {fmt(a)} (Switch §2.2)",
             "zh": f"容量 = cf · token 数 / 专家数 = {fmt(a)}（Switch §2.2）"}, "capacity")


def _flops(rng):
    b, t = rng.choice((7, 13, 70)), rng.choice((1, 2, 15))
    a = 6 * b * 1e9 * t * 1e12 / 1e21
    return (f"Training a {b}B dense model on {t}T tokens takes about 6·N·D FLOPs. How many "
            "zettaFLOPs (1e21) is that?", f"用 {t}T token 训练一个 {b}B 稠密模型约需 6·N·D 次浮点运算，"
            "合多少 ZFLOP（1e21）？", a, "", f"6 · {b}e9 · {t}e12 = {fmt(a)}e21", "planner")


def _cp(rng):
    cp = rng.choice((2, 4, 8, 16))
    a = 1 / cp ** 2 * 100
    return (f"Ring attention over cp = {cp} ranks: what percentage of one sequence's full "
            "attention score matrix does a rank hold at a time?",
            f"环形注意力，cp = {cp}：每个 rank 同一时刻持有完整注意力分数矩阵的百分之几？", a, "%",
            {"en": f"a block of (S/cp)² out of S²: 1/cp² = {fmt(a)}%",
             "zh": f"S² 中的一块 (S/cp)²：1/cp² = {fmt(a)}%"}, "cp_when")


def _dp_degree(rng):
    tp, pp, n = rng.choice((2, 4, 8)), rng.choice((2, 4, 8)), rng.choice((256, 512, 1024))
    return (f"{n} GPUs, TP = {tp}, PP = {pp}: what is the data-parallel degree?",
            f"{n} 张卡，TP = {tp}，PP = {pp}：数据并行的并行度是多少？", n // (tp * pp), "",
            f"N / (TP · PP) = {n} / {tp * pp} = {n // (tp * pp)}", "mesh")


def _ulp(rng):
    w = rng.choice((1.0, 2.0, 0.5))
    # an increase: the gap above w is a full ulp; below a power of two it is half that
    a = cost.vanishing_update(w, "bf16", "up")
    return (f"A bf16 weight equals {w} and an in-place bf16 update increases it: what is the "
            "largest increase that still vanishes (rounds back to the weight)?",
            f"一个值为 {w} 的 bf16 权重，原地 bf16 更新把它调大：仍会被舍掉（舍入回原值）的"
            "最大增量是多少？", a, "",
            {"en": f"half the gap to the next bf16 value above: ulp(bf16, {w}) / 2 = {fmt(a)}",
             "zh": f"到上方下一个 bf16 值的间距的一半：ulp(bf16, {w}) / 2 = {fmt(a)}"}, "master")


def _daly(rng):
    c, m = rng.choice((10, 30, 60)), rng.choice((2, 3, 6))
    a = cost.young_interval(c, m * 3600) / 60
    return (f"Checkpoints take C = {c} s to write and the job fails every {m} hours on average: "
            "Young's optimal interval √(2·C·MTBF), in minutes?",
            f"写一次检查点需要 C = {c} 秒，作业平均每 {m} 小时失败一次：按 Young 公式 "
            "√(2·C·MTBF)，最优检查点间隔是多少分钟？", a, "min",
            f"√(2 · {c} · {m * 3600}) s = {fmt(a)} min", "goodput")


MAKERS = {"collectives": _ring, "dp_zero": _zero, "tp_sp": _tp, "pp": _bubble,
          "moe_ep": _capacity, "memory_flops": _flops, "cp": _cp, "3d": _dp_degree,
          "precision": _ulp, "reliability": _daly}
assert set(MAKERS) == set(TOPICS)  # one question from every topic


def _drawn(seed: int) -> list[tuple[Question, Question]]:
    """One question per topic, in an order drawn from ``seed``: the same Question asked
    in English and in Chinese (prompt, explanation and tolerance in its ``lang``)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed={seed!r} must be an integer")
    rng = random.Random(f"capstone:{seed}")
    topics = list(TOPICS)
    rng.shuffle(topics)
    out = []
    for topic in topics:
        en, zh, answer, unit, working, key = MAKERS[topic](rng)
        working = working if isinstance(working, dict) else {"en": working, "zh": working}
        nb, heading = SECTIONS[key][:2]
        q = Question(f"capstone_{topic}", topic, seed, en, float(answer), unit,
                     0 if topic in ("3d", "moe_ep") else 0.02,  # counts are exact
                     t(TEXT, "drill_settled", "en", working=working["en"], section=label(key)),
                     f"{nb} '{heading}'")
        out.append((q, replace(q, prompt=zh, lang="zh", explanation=t(
            TEXT, "drill_settled", "zh", working=working["zh"], section=label(key)))))
    return out


def mixed_drill(seed: int = 0) -> list[tuple[Question, str]]:
    """One question per topic, in an order drawn from ``seed``: (Question, Chinese prompt)."""
    return [(q, zh.prompt) for q, zh in _drawn(seed)]


class TimedDrill:
    """The tries and the clock of one mixed drill: ``answer(i, value)`` counts by
    ``drills.session``'s rules; ``score()`` says how many were right first time, and how
    long it took against ``TIME_TARGET_S``. ``clock`` is injectable for tests.

    The clock starts at ``start()``, when the first question is shown, not when the drill
    is built: the notebook builds it at Run All, and a learner who reads the sections
    above first must not be past the target before the first question."""

    def __init__(self, seed: int = 0, clock=time.monotonic):
        drawn = _drawn(seed)
        self.questions = [(q, zh.prompt) for q, zh in drawn]
        self.asked = {"en": [q for q, _ in drawn], "zh": [zh for _, zh in drawn]}
        self.tally, self.clock = Tally(), clock
        self.attempts = [Attempt(q, self.tally) for q, _ in self.questions]
        self.started, self.finished = None, None

    def start(self) -> None:
        """Start the clock (once: showing the first question again does not restart it)."""
        if self.started is None:
            self.started = self.clock()

    def answer(self, i: int, value) -> dict:
        if not 0 <= i < len(self.attempts):
            raise ValueError(f"i={i!r} must be 0..{len(self.attempts) - 1}")
        self.start()  # an answer before start() (a script, a test) starts the clock there
        v = self.attempts[i].answer(value)
        self._stop_when_done()
        return v

    def reveal(self, i: int) -> None:
        if not 0 <= i < len(self.attempts):
            raise ValueError(f"i={i!r} must be 0..{len(self.attempts) - 1}")
        self.start()
        self.attempts[i].reveal()
        self._stop_when_done()

    def _stop_when_done(self) -> None:
        """The clock stops once every question is solved or its answer shown."""
        if self.finished is None and all(a.solved or a.revealed for a in self.attempts):
            self.finished = self.clock()

    def question(self, i: int, lang: str | None = None) -> Question:
        """Question ``i`` as asked in ``lang`` (default: the session's): its prompt,
        explanation and tolerance in that language; the answer is the same."""
        return self.asked[pick(lang)][i]

    def score(self, lang: str | None = None) -> dict:
        """The tally and the time; ``text`` says them in ``lang`` (default: the session's)."""
        if self.started is None:
            elapsed = 0.0
        else:
            elapsed = (self.clock() if self.finished is None else self.finished) - self.started
        n = len(self.attempts)
        return dict(first=self.tally.first, later=self.tally.later, answered=self.tally.answered,
                    skipped=self.tally.skipped, of=n, seconds=elapsed,
                    points=10 * self.tally.first + 5 * self.tally.later,
                    in_time=elapsed <= TIME_TARGET_S, text=t(
                        TEXT, "drill_score", lang, tally=self.tally.text(lang),
                        first=self.tally.first, n=n, minutes=int(elapsed // 60),
                        seconds=int(elapsed % 60), target=TIME_TARGET_S // 60))
