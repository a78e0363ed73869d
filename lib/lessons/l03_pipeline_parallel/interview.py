"""The answers of §7's interview question on ZB-H2 and of §10's interview corner, as functions
of what the notebook computed; the notebook shows each by naming it (``interview.show("a", n=n)``),
closed until the learner clicks (lessons.common.interview)."""

from __future__ import annotations

from fractions import Fraction

from lessons.common.interview import Answer, Corner


def _zb(family) -> Answer:
    row = {r["schedule"]: r for r in family}
    return Answer("Answer", [
        f"Idle per rank: {row['zb-h2']['idle']:g} slots (ZB-H1 {row['zb-h1']['idle']:g}, 1F1B "
        f"{row['1f1b']['idle']:g}), as Qi et al. §2 count it: from each rank's own first op to its last.",
        f"Idle share of the whole step: {row['zb-h2']['step']:.1%}, the same as ZB-H1's "
        f"{row['zb-h1']['step']:.1%}: the corners of the parallelogram stay unless the next step fills them.",
        f"The price: {row['zb-h2']['peak']:g} micro-batches of activations on every rank against 1F1B's "
        f"{row['1f1b']['peak']:g} on rank 0 ({row['zb-h2']['peak'] / row['1f1b']['peak']:.2f}x). ZB-V gets the "
        f"same zero at 1F1B's memory for {row['zb-v']['messages'] / row['1f1b']['messages']:g}x the messages.",
        "To fill the corners, no step-wide synchronisation before the optimizer step: the global gradient "
        "norm and the inf/NaN check move after it (Qi et al.'s post-validation)."],
        "Zero per rank, not per step: it costs memory (or messages) and a synchronisation-free optimizer step.")


def _a(n) -> Answer:
    a = n["a"]
    return Answer("(a) answer", [
        "GPipe and 1F1B have the same bubble for the same P and M: measured in §4, in both normalisations "
        "(Narayanan et al. 2021a §2.2.1 say so explicitly).",
        f"At P = {a['p']} the idle share of the step is at most 50% from M = {a['m50']} and at most 20% from "
        f"M = {a['m20']}, for either schedule: the drop comes from <b>more micro-batches</b>.",
        "What 1F1B contributes is that raising M costs no activation memory (§5).",
        "'M ≥ 4 × depth' is GPipe's own rule of thumb (Huang et al. 2019 §2.3: bubble overhead negligible "
        "when M ≥ 4K), not a 1F1B requirement: 1F1B runs with any M ≥ 1."],
        "Does not hold: the two schedules have one bubble, and more micro-batches lower it under either.")


def _b(n) -> Answer:
    b = n["b"]
    return Answer("(b) answer", [
        f"idle / ideal = {Fraction(b['ratio']).limit_denominator(99)} = {b['ratio']:.1%}; idle / total = "
        f"{Fraction(b['fraction']).limit_denominator(99)} = {b['fraction']:.1%}: one idle time, two denominators.",
        f"Measured in §4 at P = {b['p']}, M = {b['m']}: GPipe {b['measured']['gpipe']:.1%}, "
        f"1F1B {b['measured']['1f1b']:.1%} of the step (formula {b['fraction']:.1%}).",
        "(P − 1)/(M + P − 1) is not a 1F1B improvement on (P − 1)/M: it is the same quantity over a "
        "different denominator."],
        "Does not hold as stated: 37.5% and 27.3% are the same bubble written two ways.")


def _c(n) -> Answer:
    c = n["c"]
    under = [q for q, share, _ in c["rows"] if share < 0.15]
    return Answer("(c) answer", [
        "In pipeline engines such as DeepSpeed's, the micro-batches of a step <i>are</i> the "
        "gradient-accumulation steps: 'gradient accumulation' adds nothing beyond M.",
        "At M = 4P the idle share of the step is (P − 1)/(5P − 1): "
        + ", ".join(f"P = {q}: {share:.1%}" for q, share, _ in c["rows"]) + ".",
        f"So under 15% only for P = {' and '.join(map(str, under))}; over it from P = {under[-1] + 1} on, "
        "approaching 1/5 for deep pipelines (idle / ideal: " + ", ".join(f"{r:.1%}" for _, _, r in c["rows"]) + ").",
        f"P = 4 needs M ≥ {c['m_fraction']} for idle / total ≤ 15%, M ≥ {c['m_ratio']} for idle / ideal ≤ 15%."],
        "Holds only for small P.")


def _d(n) -> Answer:
    return Answer("(d) answer", [
        "Peak micro-batches held on rank 0, P = 4: "
        + "; ".join(f"M = {m}: GPipe {g}, 1F1B {o}" for m, (g, o) in n["d"].items())
        + " (the formula; §5 measured the same on every rank).",
        "Under GPipe the activation memory grows with M (peak = M); under 1F1B it does not "
        "(peak = min(P − r, M), §5).",
        "With 1F1B the costs of a large M lie elsewhere: for a fixed global batch each micro-batch gets "
        "smaller and each op runs less efficiently on a GPU, and there are more messages."],
        "Half right: the bubble falls with M under both; memory rises only under GPipe.")


def _advice(n) -> Answer:
    return Answer("Advice on M, in numbers", [
        "With 1F1B, take M as large as the global batch allows at a micro-batch size that still keeps the "
        "device efficient.",
        *[f"M = {k}P leaves at most {share:.3%} of the step idle over P = 1 … 4096 (at P = {q}): "
          f"under 1/{k + 1} = {1 / (k + 1):.3%}, whatever P." for k, (q, share) in n["advice"].items()],
        "If M cannot grow, interleave: v chunks divide the bubble by v, for (vP − 1)/(P − 1)× the messages "
        "and slightly more activation memory, with M divisible by P (§6).",
        "Or split the backward: ZB-H1 idles the share of 1F1B's idle time computed in §7, at 1F1B's memory.",
        "Activation checkpointing is the memory lever: it buys memory with about one extra forward per "
        "backward (§8)."])


corner = Corner({"zb": _zb, "a": _a, "b": _b, "c": _c, "d": _d, "advice": _advice})
show = corner.show
