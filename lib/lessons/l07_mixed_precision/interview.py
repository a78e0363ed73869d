"""§8's interview answers and the appendix's numbers, as functions of what the notebook
computed; the notebook shows each by naming it (``interview.show("b", ln=ln, mw=mw)``),
closed until the learner clicks (lessons.common.interview)."""

from __future__ import annotations

from parlab import cost

from lessons.common.interview import Answer, Corner

from . import experiments


def _a(f, allg) -> Answer:
    return Answer("(a) answer", [
        f"bf16: 8 exponent bits, smallest normal {f['bf16']['smallest_normal']:.2g} (fp32's); fp16: 5, smallest normal {f['fp16']['smallest_normal']:.2g}, max {f['fp16']['max']:g} (§1).",
        f"Measured in §3: {experiments.underflow(allg)['below_normal']:.1%} of the GPT's gradient elements sit below fp16's normals unscaled; in bf16 none do.",
        f"The price: bf16's eps is {f['bf16']['eps']:g} vs fp16's {f['fp16']['eps']:g} — 8x coarser, which is why updates need a master copy (§2)."],
        "bf16 for training (range), fp16 only with loss scaling.")


def _b(ln, mw) -> Answer:
    return Answer("(b) answer", [
        f"An update vanishes when it is at most half the gap to the weight's neighbour on its side: bf16's gap above 1.0 is {cost.ulp(1.0, 'bf16'):g}, so an increase up to {cost.vanishing_update(1.0, 'bf16', 'up'):g} is lost (a decrease up to half the gap below, finer still); lr = 1e-3 steps on a LayerNorm gain all vanished ({ln['unchanged']:.0%} unchanged, §2).",
        f"In place, {mw['bf16']['vanished'][-1]:.0%} of the updates were lost at step 30 and the loss lagged ({mw['bf16']['losses'][-1]:.3f} vs fp32 {mw['fp32']['losses'][-1]:.3f}); master {mw['master']['losses'][-1]:.3f}, Kahan {mw['kahan']['losses'][-1]:.3f}, stochastic {mw['stochastic']['losses'][-1]:.3f}.",
        "Cost: 4 B/param (Kahan's buffer: 2)."])


def _c(bp, n7, b7, w7) -> Answer:
    GB = 1e9
    return Answer("(c) answer", [
        " + ".join(f"{v:g} {k}" for k, v in cost.training_bytes_per_param('bf16_mixed').items() if k != 'total') + " = 16 (ZeRO §3.1, K = 12).",
        f"Measured with held_bytes: {bp['bf16_mixed']['total']:.2f} B/param (bf16 mixed), {bp['fp32']['total']:.2f} (fp32 Adam): the same 16.",
        f"7B ({n7 / 1e9:.2f}e9 parameters): {b7 / GB:.1f} GB of training states, not the {w7 / GB:.1f} GB of its fp16 weights; it needs ZeRO or more than one 80 GB card."])


def _d(rep) -> Answer:
    r1024 = rep[-1]
    return Answer("(d) answer", [
        f"Replayed ring order at N = 1024: mean relative error {r1024['bf16 mean']:.1%}, max {r1024['bf16 max']:.0%}; (N-1)u = {(r1024['world_size'] - 1) * cost.unit_roundoff('bf16'):.1f} — the bound is void (§5).",
        f"fp32 accumulation (upcast, reduce, downcast): max {r1024['fp32-accumulated max']:.4f} ≤ u, whatever N.",
        "So: accumulate in fp32 (twice the bytes), or reduce hierarchically (fewer terms per bf16 sum)."],
        "No, not with bf16 accumulation.")


def _by_case(out) -> dict:
    return {(r["outlier"], r["scaling"]): r for r in out}


def _e(qe, out) -> Answer:
    o = _by_case(out)
    return Answer("(e) answer", [
        f"Without outliers both give ~{qe[0]['relative error']:.1%} error (e4m3's 3 mantissa bits, §6).",
        f"With a x1e5 outlier channel: per tensor {o[1e5, 'per tensor']['error, other channels']:.0%} error on the other channels ({o[1e5, 'per tensor']['flushed to zero']:.0%} flushed to 0); per 1x128 block {o[1e5, 'per block']['error, other channels']:.1%}.",
        "Per block costs one scale per tile and a GEMM that applies them (DeepSeek-V3 §3.3.2); delayed scaling saves the amax pass but clamps a tensor that grew."])


def _numbers(f, mw, bp, pred, b7, rep, out) -> Answer:
    """The appendix: every number §8's answers use, in one fold-out."""
    GB, r1024, o = 1e9, rep[-1], _by_case(out)
    return Answer("Every number of §8", [
        f"(a) smallest normal bf16 {f['bf16']['smallest_normal']:.3g}, fp16 {f['fp16']['smallest_normal']:.3g}; eps bf16 {f['bf16']['eps']:g}, fp16 {f['fp16']['eps']:g}",
        "(b) final losses: " + ", ".join(f"{k} {v['losses'][-1]:.3f}" for k, v in mw.items()),
        "(c) B/param measured: " + ", ".join(f"{r} {bp[r]['total']:.2f}" for r in pred) + f"; 7B bf16 mixed {b7 / GB:.1f} GB",
        f"(d) N=1024 bf16 mean {r1024['bf16 mean']:.3f}, fp32-accumulated max {r1024['fp32-accumulated max']:.4f}",
        f"(e) x1e5 outlier, other channels: per tensor {o[1e5, 'per tensor']['error, other channels']:.3f}, per block {o[1e5, 'per block']['error, other channels']:.3f}"])


corner = Corner({"a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "numbers": _numbers})
show = corner.show
