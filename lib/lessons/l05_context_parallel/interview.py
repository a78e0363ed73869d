"""The answers of §11's interview corner and the appendix's numbers, as functions of what the
notebook computed; the notebook shows each by naming it (``interview.show("a", ...)``), closed
until the learner clicks (lessons.common.interview)."""

from __future__ import annotations

from parlab import cost

from lessons.common.interview import Answer, Corner

from . import experiments

KiB, MiB, GB = 2 ** 10, 2 ** 20, 1e9


def _ring_by_cp(s, h) -> dict:
    return {n: cost.cp_comm_per_layer(1, s, h, n, "ring", 2)["bytes"] for n in (2, 8, 32)}


def _ul_by_cp(s, h, a) -> dict:
    return {n: cost.cp_comm_per_layer(1, s, h, n, "ulysses", 2, a)["bytes"] for n in (2, 8, 32)}


def _cp4(bal) -> tuple[dict, dict]:
    """§4's cp = 4 rows: contiguous and zig-zag."""
    return tuple(next(r for r in bal if r["cp"] == 4 and r["layout"] == layout)
                 for layout in ("contiguous", "zigzag"))


def _a(act_sp, act_tp, cp8, meas, sp8, tp2, tp8) -> Answer:
    return Answer("(a) answer", [
        f"Counted in §6 (t = 2, fp32): Megatron SP sends {meas[2, 'megatron_sp'] / KiB:.0f} KiB per block and step; plain TP "
        f"sends {tp2 / KiB:.0f} KiB (<code>cost.tp_comm_per_layer</code>, counted in notebook 02): SP sends more — the "
        "all-reduces become reduce-scatter + all-gather (same bytes) plus a re-gather of the saved shard in backward.",
        f"At the 128k shape, t = 8, bf16: TP {tp8 / GB:.2f} GB, TP + SP {sp8 / GB:.2f} GB per layer per step "
        "(Korthikanti et al. §4.2.2: the bandwidth is the same as TP's).",
        f"What SP divides is activation memory: {act_tp / GB:.2f} GB -> {act_sp / GB:.2f} GB per layer at t = 8 "
        "(<code>cost.activation_memory</code>, selective recomputation).",
        f"What does send fewer bytes is a different design, outside the TP group: Ulysses at cp = 8 sends "
        f"{cp8['ulysses'] / GB:.2f} GB per layer per step, {cp8['megatron_sp'] / cp8['ulysses']:.0f}x less than "
        f"Megatron SP's {cp8['megatron_sp'] / GB:.2f} GB at the same degree (§6); ring sends {cp8['ring'] / GB:.2f} GB."],
        "Does not hold for Megatron's SP: same bytes as TP (+25% with the re-gather); it saves memory, not traffic.")


def _b(h, s) -> Answer:
    ring_by_cp = _ring_by_cp(s, h)
    return Answer("(b) answer", [
        "The paper exists: Li, Xue, Baranwal, Li and You, ACL 2023 (Proceedings of the 61st Annual Meeting, long "
        "papers, pp. 2391–2404), first posted as arXiv 2105.13120 in May 2021. The year 2023 is the ACL version.",
        "It splits the <i>whole</i> input sequence across devices, attention included, and computes attention with "
        "<b>Ring Self-Attention</b>: keys and values passed round a ring of devices. It is the ancestor of ring "
        "attention (§5–§7) — not the SP that splits LayerNorm/dropout activations inside a TP group, which is "
        "Korthikanti et al., <i>Reducing Activation Recomputation in Large Transformer Models</i> (arXiv 2205.05198, "
        "MLSys 2023), §4.2.2.",
        "Nor does it cut TP's traffic: its ring moves every K/V block past every rank, "
        + ", ".join(f"{v / GB:.1f} GB at cp = {n}" for n, v in ring_by_cp.items())
        + " per layer and step at the 128k shape (our ring, Liu-style with dK/dV on the ring) — bounded, not falling. "
        "Its claim is memory: the paper reports 3.0x longer sequences (13.7x larger batches) than TP on 64 P100s.",
        "Same name, two methods; the cited paper is the right one for ring-style sequence splitting, the wrong one "
        "for 'splitting activations inside the TP group'."],
        "The paper is real; it is a different technique from the one the sentence describes.")


def _c(L, flash, tp8) -> Answer:
    return Answer("(c) answer", [
        "Yes: the sequence. Data parallelism splits the batch, TP the hidden width, PP the depth, EP the experts; "
        "none of them divides the activations of one long sequence (Jacobs et al. open the Ulysses paper with this "
        "observation).",
        f"At 128k tokens and LLaMA-2-7B's width, one layer keeps {flash / GB:.1f} GB even with a fused attention kernel; "
        f"{L} layers: {L * flash / GB:.0f} GB. TP = 8 with SP: {L * tp8 / GB:.0f} GB per GPU (§1).",
        "Context parallelism divides that by cp on top (§1), and its three forms trade bytes, balance and memory "
        "as measured in §4–§7."],
        "Incomplete: long-context training adds a fifth dimension, the sequence (context parallelism).")


def _d(a, h, meas, s) -> Answer:
    ring_by_cp, ul_by_cp = _ring_by_cp(s, h), _ul_by_cp(s, h, a)
    return Answer("(d) answer", [
        f"Counted in §6 (fp32, small model): cp = 4, ring {meas[4, 'ring'] / KiB:.0f} KiB vs Ulysses "
        f"{meas[4, 'ulysses'] / KiB:.0f} KiB per layer per step, both equal to <code>cost.cp_comm_per_layer</code>.",
        "128k shape, bf16: Ulysses " + ", ".join(f"{v / GB:.2f} GB at cp = {n}" for n, v in ul_by_cp.items())
        + " (falls as 1/cp); ring " + ", ".join(f"{v / GB:.1f} GB" for v in ring_by_cp.values()) + " (does not).",
        "Ulysses wins on bytes and runs any attention kernel, but cp <= heads (whole heads per rank; fewer with GQA) "
        "and its all-to-alls sit on the critical path.",
        "Ring wins when cp must exceed the heads, or the links are neighbour-to-neighbour: its transfers hide behind "
        f"compute once a block is long enough — c >= {experiments.hiding_block('NVLink3'):,} positions over NVLink3, "
        f"{experiments.hiding_block('IB-HDR'):,} over IB-HDR (§5's grid).",
        "Production systems combine them: Ulysses inside a node, ring across nodes."],
        "Ulysses sends less (~8bsh/cp vs ~6bsh); ring scales past the head count and overlaps.")


def _e(bal) -> Answer:
    c4, z4 = _cp4(bal)
    return Answer("(e) answer", [
        f"Counted in §4, cp = 4: contiguous ranks compute {c4['counted']} blocks (max/mean {c4['imbalance']:.2f}); "
        f"zig-zag {z4['counted']} (max/mean {z4['imbalance']:.2f}). Same total work.",
        f"The imbalance of contiguous shards is 2cp/(cp+1): {cost.causal_work_per_rank(8, 'contiguous')['imbalance']:.2f} "
        f"at cp = 8, {cost.causal_work_per_rank(32, 'contiguous')['imbalance']:.2f} at 32 — and the ring runs at the "
        "slowest rank's pace.",
        "Zig-zag gives each rank chunk r and chunk 2cp−1−r: one with little to attend to, one with much. Every "
        "foreign block is then needed by exactly half, so each hop also computes half a block.",
        "It changes nothing for Ulysses (each rank attends over the whole sequence); our Ulysses only reorders the "
        "gathered sequence back to position order."],
        "Balance: the causal mask makes later positions more expensive.")


def _f(by) -> Answer:
    r1, r4 = by[1, 1024, "ring"], by[4, 1024, "ring"]
    u1, u4 = by[1, 1024, "ulysses"], by[4, 1024, "ulysses"]
    return Answer("(f) answer", [
        f"Measured in §7 (s = 1024, fp32): ring peak {r1['peak'] / MiB:.1f} MiB at cp = 1 -> {r4['peak'] / MiB:.2f} MiB "
        f"at cp = 4 ({r1['peak'] / r4['peak']:.0f}x, ~cp²); Ulysses {u1['peak'] / MiB:.1f} -> {u4['peak'] / MiB:.1f} MiB "
        f"({u1['peak'] / u4['peak']:.1f}x, ~cp).",
        "The largest tensor equals the formula's score term exactly: one (s/cp)² block per head (ring), s² for "
        "n_heads/cp heads (Ulysses).",
        "Every other activation of the layer is divided by cp too: each rank holds s/cp positions of the residual "
        "stream (§1)."],
        "Yes: by cp for everything, by cp² for ring attention's working set.")


def _numbers(L, a, act_sp, act_tp, bal, cp8, flash, h, meas, s, sp8, tp2, tp8) -> Answer:
    ring_by_cp, ul_by_cp, (c4, z4) = _ring_by_cp(s, h), _ul_by_cp(s, h, a), _cp4(bal)
    lines = []
    lines.append(f"(a) 128k, t=8, bf16, per layer per step: TP {tp8 / GB:.2f} GB, TP+SP {sp8 / GB:.2f} GB")
    lines.append(f"(a) same, cp=8: Ulysses {cp8['ulysses'] / GB:.2f} GB, ring {cp8['ring'] / GB:.2f} GB")
    lines.append(f"(a) activations per layer, t=8: {act_tp / GB:.2f} -> {act_sp / GB:.2f} GB")
    lines.append(f"(a) counted, fp32 small model, t=cp=2: Megatron SP {meas[2, 'megatron_sp']:,} B vs TP formula {tp2:,.0f} B")
    lines.append(f"(b) ring bytes per layer at 128k: " + ", ".join(f"cp={n} {v / GB:.2f} GB" for n, v in ring_by_cp.items()))
    lines.append(f"(c) one layer at 128k (selective): {flash / GB:.2f} GB; {L} layers {L * flash / GB:.0f} GB")
    lines.append(f"(d) Ulysses bytes per layer at 128k: " + ", ".join(f"cp={n} {v / GB:.3f} GB" for n, v in ul_by_cp.items()))
    c32 = cost.causal_work_per_rank(32, "contiguous")["imbalance"]
    lines.append(f"(e) contiguous max/mean: cp=4 {c4['imbalance']:.2f}, cp=32 {c32:.3f}; zigzag {z4['imbalance']:.2f}")
    return Answer('Every number of §11', lines)


corner = Corner({"a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "f": _f, "numbers": _numbers})
show = corner.show
