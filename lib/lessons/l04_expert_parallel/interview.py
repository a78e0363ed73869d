"""The answer to §8's question on the variants, §9's interview corner and the appendix's numbers,
as functions of what the notebook computed; the notebook shows each by naming it
(``interview.show("a", n=n)``), closed until the learner clicks (lessons.common.interview)."""

from __future__ import annotations

from lessons.common.interview import Answer, Corner

MiB = 2 ** 20


def _variants(ds, ec) -> Answer:
    c1 = ec[0]
    return Answer("answer", [
        f"Expert choice balances perfectly and drops nothing, but measured here {c1['none']:.0%} of tokens got no expert at c = 1 (random choice: {c1['none_random']:.0%}), and its top-k over the batch needs the future tokens: at generation time they do not exist.",
        f"Token choice is causal; a shared expert gives every token some FFN even when its routed copies are dropped, and it sends nothing: {ds[2]['sent_kib']:.0f} KiB vs {ds[1]['sent_kib']:.0f} KiB for the same FLOPs without it.",
    ])


def _a() -> Answer:
    return Answer("(a) answer", [
        "Experts stay put (rank g holds experts [gE/ep, (g+1)E/ep)); the router is replicated; tokens' hidden states move: "
        "dispatch all-to-all to their experts' ranks, combine all-to-all back (§2, §4).",
        "Only kept assignments travel: dropped ones skip the expert (§1). Before dispatch the ranks also exchange counts "
        "(here: an all-gather of k x E integers so capacity is global; real systems cap per local group instead).",
        "Attention and the rest of the block are not expert-parallel: those parameters are replicated (data parallel)."],
        "Holds.")


def _b(n) -> Answer:
    m = n["models"]
    return Answer("(b) answer", [
        f"Mixtral 8x7B: {m['Mixtral 8x7B']['n_experts']} experts per layer, top-{m['Mixtral 8x7B']['top_k']} ({m['Mixtral 8x7B']['source']}). "
        "EP degree cannot exceed the expert count (EPRun refuses an ep that does not divide n_experts), so at most 8-way EP — "
        "fewer experts than the GPUs such a model is trained on. Not 'far more experts than devices'.",
        f"Switch-C: {m['Switch-C']['n_experts']} experts, top-1 ({m['Switch-C']['source']}); Switch recommends one expert per core "
        "(Appendix D) — experts = EP ranks.",
        f"DeepSeek-V3: {m['DeepSeek-V3']['shared']} shared + {m['DeepSeek-V3']['n_experts']} routed experts, top-{m['DeepSeek-V3']['top_k']} "
        f"({m['DeepSeek-V3']['source']}); its report trains with 64-way EP on 2048 H800s: 4 experts per GPU, and far fewer experts than GPUs.",
        "What EP needs: experts >= EP degree (divisible). More experts per rank is fine (grouped GEMMs), but it is a design choice, not a condition."],
        "Does not hold as stated: Mixtral has 8 experts; EP works with experts = devices (Switch) or a few per device (DeepSeek-V3).")


def _c(n) -> Answer:
    sw = n["sweep"]
    sk, bal = sw[(1.0, "none")], sw[(0.0, "none")]
    return Answer("(c) answer", [
        f"Measured (§3): untilted router at step 0: busiest/coldest {bal['first']['max_over_min']:.1f}x, busiest/mean {bal['first']['max_over_mean']:.2f}; "
        f"tilted: {sk['first']['max_over_min']:.1f}x and {sk['first']['max_over_mean']:.2f}; after 30 steps with the aux loss "
        f"{sw[(1.0, 'aux loss')]['last']['max_over_min']:.1f}x / {sw[(1.0, 'aux loss')]['last']['max_over_mean']:.2f}.",
        "So 10x is possible — and also 3x or 30x: busiest/coldest is unbounded (a cold expert can get ~0 tokens) and noisy "
        "at small batches. It depends on the router's state (init, training), the balancing (aux loss, bias), the data, "
        "the number of experts and tokens per batch.",
        "The number that costs time is busiest/mean (at most E): the layer runs at the pace of the busiest rank (§5)."],
        "Plausible but not a constant; measure busiest/mean, which sets the step time.")


def _d(n) -> Answer:
    sw = n["sweep"]
    d125 = {k: v["drops_last"][1.25] for k, v in sw.items()}
    return Answer("(d) answer", [
        "Aux loss (Switch §2.2, eq. 4): α·E·Σ f_i P_i, α = 10⁻² in Switch (swept 10⁻¹…10⁻⁵). Here, tilted router, busiest/mean after 30 steps: "
        f"none {sw[(1.0, 'none')]['last']['max_over_mean']:.2f}, aux loss {sw[(1.0, 'aux loss')]['last']['max_over_mean']:.2f}, "
        f"DeepSeek-V3's bias {sw[(1.0, 'bias')]['last']['max_over_mean']:.2f}: both balancers reduce imbalance.",
        "Capacity does not balance: it caps each expert and drops the excess. Dropped at cf 1.25 (last 10 steps): "
        f"balanced {100 * d125[(0.0, 'none')]:.1f}% (aux {100 * d125[(0.0, 'aux loss')]:.1f}%), skewed {100 * d125[(1.0, 'none')]:.1f}% "
        f"(aux {100 * d125[(1.0, 'aux loss')]:.1f}%, bias {100 * d125[(1.0, 'bias')]:.1f}%).",
        "Values in the papers: Switch Table 1 compares 1.0, 1.25, 2.0 in training and finds 1.0–1.25 best for speed-quality; "
        "Google's T5X MoE configs train at 1.25 and evaluate at 2.0; GShard caps top-2 at 2N/E (cf 1.0 of assignments). "
        "The factor is a fixed hyper-parameter there, not adjusted dynamically.",
        "1.25 'works well' only when the router is already balanced (by the aux loss): the drop rate at a given factor "
        "is set by the imbalance."],
        "Half right: the aux loss balances; capacity only caps, and 1.25's drop rate depends on the imbalance.")


def _e(bus, p) -> Answer:
    return Answer("(e) answer", [
        f"It spreads the experts' parameters and FLOPs: Mixtral's experts are {p['experts'] / p['total']:.0%} of its {p['total'] / 1e9:.1f}B parameters.",
        "It adds two all-to-alls per layer per pass (§4), whose bytes grow with k and (ep-1)/ep and cross the slowest links.",
        f"It runs at the busiest rank's pace: {bus[0]['predicted_s'] / bus[0]['balanced_s']:.2f}x slower than balanced in §5 — hence aux losses, "
        "bias balancers, capacity and drops.",
        "Its degree is bounded by the number of experts; attention and embeddings still need DP/TP/PP."],
        "Partly: it is what makes large MoE fit and run, with costs of its own.")


def _f(e) -> Answer:
    return Answer("(f) answer", [
        f"TP (t = 8): all-reduces of the activations, 2 forward + 2 backward per block: {e['tp8'] / MiB:.0f} MiB per rank per block at d = 4096, "
        f"s = 4096, bf16 ({e['tp8_mlp_only'] / MiB:.0f} MiB of it for the MLP). All t ranks process the same tokens.",
        f"EP (ep = 8, top-2): all-to-alls of routed rows: {e['ep8'] / MiB:.0f} MiB per rank per MoE layer — 2x TP's MLP bytes, "
        "but each rank brings its own tokens (8x the tokens for that traffic), and experts stay whole.",
        "TP is for a layer too big for a device, inside NVLink; EP is for many experts, and needs DP/TP for the dense parts."],
        "EP moves tokens (all-to-all), TP moves partial sums (all-reduce); compare per token, not per message.")


def _numbers(e, n, p) -> Answer:
    lines = []
    for name, x in n["models"].items():
        shared = f" + {x['shared']} shared" if x["shared"] else ""
        print(f"{name}: {x['n_experts']} routed experts{shared}, top-{x['top_k']} ({x['source']})")
    lines.append(f"Mixtral 8x7B: {p['total']:,} parameters, {p['active']:,} active")
    lines.append(f"EP8 top-2 {e['ep8']:,.0f} B vs TP8 {e['tp8']:,.0f} B per rank per layer "
                 f"(MLP share {e['tp8_mlp_only']:,.0f} B)")
    return Answer('Every number of §9', lines)


corner = Corner({"variants": _variants, "a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "f": _f, "numbers": _numbers})
show = corner.show
