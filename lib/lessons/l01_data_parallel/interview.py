"""The answers of the interview corner, as functions of what the notebook computed; the notebook
shows each by naming it (``interview.show("bytes", ...)``), closed until the learner clicks
(lessons.common.interview)."""

from __future__ import annotations

from parlab import cost, hardware

from lessons.common.interview import Answer, Corner

GB = 1e9


def _compression(gbit, pays) -> Answer:
    return Answer("Compression: one threshold?", [
        "No single one. The prediction above (no overlap, free codec) saves at least 10% of the step when the link is "
        "slower than a threshold that moves with gradient bytes per second of compute and with the ranks: "
        + "; ".join(f"{n_p / 1e9:.3g}B parameters, {n} ranks, {c:g} s compute: fp16 {gbit(v['fp16'])}, sign {gbit(v['sign'])}"
                    for (n_p, n, c), v in pays.items()) + ".",
        "Ten times the compute per step moves the threshold ten times lower. And sign's all-gather grows with the ranks: "
        "at 64 ranks it sends as much as the exact all-reduce and never pays. DDP's overlap and a real codec cost both "
        "lower every threshold.",
        "1-bit Adam (Tang et al., ICML 2021) reports up to 5× less communication volume and up to 3.3× the throughput of "
        "BERT-Large pre-training on commodity TCP clusters (abstract). The 5×, not 32×, is its warm-up: the first steps run "
        "plain Adam until the variance settles, so the ratio is 1 / (w + (1 − w)/r) (<code>cost.onebit_adam_volume_ratio</code>): "
        + ", ".join(f"{cost.onebit_adam_volume_ratio(w, 16):.1f}× at w = {w:.0%}" for w in (0.15, 0.2, 0.25))
        + " with r = 16 from fp16."],
        "Half holds: compression trades convergence for bytes, but '10 Gbps' is one point of a ratio, not a rule.")


def _bytes(ring_rows, ring_table, wire) -> Answer:
    return Answer("Answer: count the bytes", [
        ring_table.data,
        f"Ring: 2(W−1)/W·S per rank, {ring_rows[0]['ring GB / rank']:.1f} GB at 2 ranks and "
        f"{ring_rows[-1]['ring GB / rank']:.1f} GB at 1024: bounded by 2S. Section 5's traces measured "
        + ", ".join(f"{r['ratio']:.2f}×" for r in wire if r["setting"].startswith("exact"))
        + " of the gradient size at " + ", ".join(str(r["world_size"]) for r in wire if r["setting"].startswith("exact"))
        + " ranks.",
        "Only the 2(W−1) latency steps grow, which matters for small messages or thousands of ranks (hence tree "
        "and hierarchical algorithms).",
        f"A parameter server's root exchanges (W−1)·S: {ring_rows[-1]['root GB (parameter server)']:,.0f} GB at "
        "1024 ranks — linear. So are <b>all-gather-based compressed exchanges</b> (top-k, sign; section 5): a real trap.",
        "What does grow in practice is the chance that some link is slow (crossing nodes): the ring runs at the pace "
        "of its slowest link."], verdict="False for ring all-reduce, true for what it replaced.")


def _speedup(N, VOCAB, by_link, d, ddp_states, link_table, m7, t_bwd, t_fwd) -> Answer:
    return Answer("Answer: it depends on the link, the batch and the overlap", [
        f"N = {N / 1e9:.2f} B non-embedding parameters ({m7.n_params / 1e9:.2f} B minus the {VOCAB:,} × {d:,} input "
        f"embedding table). Compute per step: forward {t_fwd:.2f} s, backward {t_bwd:.2f} s.",
        link_table.data,
        f"Within one NVLink node DP on 4 GPUs reaches {by_link['NVLink3']['speedup, no overlap']:.2f}–"
        f"{by_link['NVLink3']['speedup, overlapped']:.2f}×; {by_link['IB-HDR']['speedup, no overlap']:.1f}× is what the "
        f"model gives over {hardware.LINK_PRESETS['IB-HDR'].gb_per_s_per_direction:.0f} GB/s InfiniBand (PCIe 4.0: "
        f"{by_link['PCIe4-x16']['speedup, no overlap']:.2f}×) <i>without</i> overlap, or with a much smaller batch "
        "per GPU (less compute to hide the same all-reduce behind); with DDP's overlap those links hide the "
        "all-reduce behind backward, while over 10 GbE no overlap can save DP. This is a bound: the last bucket "
        "never overlaps, and real overlap is imperfect (section 2 measured it).",
        f"The premise fails first on memory: with mixed-precision Adam the 7B model needs {ddp_states / 1e9:.0f} GB of "
        "model states per GPU under plain DDP, more than an 80 GB card holds: the next question.",
        "On this machine: the 2-rank timelines of section 2 show how much communication stays exposed after "
        "backward, and the throughput table of section 4 how little speedup the few cores leave room to measure."],
        verdict="A number without its conditions.")


def _seven_b(a100, act, acts, best_ddp, ddp, full_extra, m7, micro, nvlink, states, traffic,
             z1, z3) -> Answer:
    return Answer("Answer: part by part, for LLaMA-7B with mixed-precision AdamW", [
        states.data, acts.data, micro.data,
        f"'14 GB in fp16' is the weights only ({2 * m7.n_params / GB:.1f} GB). Training with Adam holds 16 bytes per "
        f"parameter: {cost.zero_memory(m7.n_params, 1, 0)['total'] / GB:.0f} GB per GPU with plain DDP, more than "
        f"{a100:.0f} GB before a single activation. Even with full recomputation DDP needs {best_ddp / GB:.0f} GB: "
        f"{ddp['verdict'].split(': ')[-1]}.",
        f"ZeRO-1 alone makes it fit: {(z1['total'] - z1['activations']) / GB:.1f} GB of states per GPU, room for "
        f"micro-batch {cost.max_micro_batch('7B', 4, a100, 1, 'none')} at 2048 tokens without recomputation "
        f"({z1['verdict'].split(': ')[-1]}, before buffers and fragmentation); ZeRO-2 and ZeRO-3 "
        f"leave more room ({cost.zero_memory(m7.n_params, 4, 2)['total'] / GB:.1f} and "
        f"{cost.zero_memory(m7.n_params, 4, 3)['total'] / GB:.1f} GB of states).",
        f"'Below 20 GB with recomputation' never holds on 4 GPUs: the smallest total, ZeRO-3 with full recomputation, is "
        f"{z3['total'] / GB:.1f} GB. What recomputation really does is shrink activations per sequence from "
        f"{act['none']:.1f} GB (LLaMA's layer; GPT's 34 + 5as/h would say "
        f"{cost.activation_memory(m7.seq_len, 1, m7.d_model, m7.n_heads, m7.n_layers) / GB:.1f}) to {act['selective']:.1f} (selective) or {act['full']:.2f} GB (full), so the batch can grow "
        f"far more than 2× once the states fit. Full recomputation costs one extra forward, +{full_extra:.0%} of the "
        "step's FLOPs; selective recomputes only the attention scores (a small share, Korthikanti et al. §5).",
        f"No TP or PP needed indeed, but DP must be ZeRO (or FSDP), not DDP. ZeRO-3's extra all-gather costs "
        f"{traffic[3] / traffic[0]:.1f}× DDP's traffic: {traffic[3] / GB:.1f} vs {traffic[0] / GB:.1f} GB per GPU and step, "
        f"~{traffic[3] / nvlink * 1e3:.0f} vs ~{traffic[0] / nvlink * 1e3:.0f} ms at NVLink3's {nvlink / 1e9:.0f} GB/s — "
        "so ZeRO-1/2 (same traffic as DDP) is the first choice when it fits."],
        verdict="It fits without TP or PP, but not with plain DDP: ZeRO-1 or more.")


corner = Corner({"compression": _compression, "bytes": _bytes, "speedup": _speedup, "seven_b": _seven_b})
show = corner.show
