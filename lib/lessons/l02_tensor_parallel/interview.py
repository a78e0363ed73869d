"""The answers of §11's interview corner and the appendix's numbers, as functions of what the
notebook computed; the notebook shows each by naming it (``interview.show("a", n=n)``), closed
until the learner clicks (lessons.common.interview)."""

from __future__ import annotations

from parlab import cost, hardware

from lessons.common.interview import Answer, Corner

from . import experiments

KiB, MiB, GiB = 2 ** 10, 2 ** 20, 2 ** 30


def _one_card() -> dict:
    """GPT-3 at t = 16 with one network card per node: (h) and the appendix quote it."""
    return experiments.gpu_scale("GPT-3 175B", tps=(8, 16), nics_per_node=1)[1]


def _a(n) -> Answer:
    a = n["a"]
    return Answer("(a) answer", [
        f"Counted in §2 and §4 (t = {a['tp']}): one block issues {a['measured']['forward']} in forward and "
        f"{a['measured']['backward']} in backward; <code>cost.tp_comm_per_layer</code> says the same at GPT-3's shape: "
        f"{a['formula']['forward']} + {a['formula']['backward']}.",
        "The split is right (q, k, v by columns = by heads; proj by rows; same for fc1/fc2), but 'once per step' is "
        "not: it is one all-reduce per sub-block per pass — attention and MLP, forward and backward.",
        "Embedding and loss add their own (§3): one for the embedding's g, one for lm_head's f, three tiny ones for the loss."],
        "Half right: the split yes, the count no — 4 per block per step.")


def _b(g3, n) -> Answer:
    b_ = n["b"]
    state = cost.zero_memory(cost.transformer_params(96, g3["d_model"]), 1, 0)["total"]
    return Answer("(b) answer", [
        f"Parameters of one layer: 12 h² = {b_['params']:,} (<code>cost.transformer_params(1, 12288)</code>) = "
        f"{b_['param_bytes'] / 1e9:.2f} GB in fp16 — not 2.8 GB, and no other count of one layer's weights gives it.",
        f"Activations of one layer, b = 1, s = 2048, no TP: sbh(34 + 5as/h) = {b_['activations'] / 1e9:.2f} GB "
        f"({b_['activations'] / GiB:.2f} GiB; <code>cost.activation_memory</code>): the only per-layer figure near 2.8 GB.",
        f"With t = 8 each GPU keeps {b_['activations_tp8'] / 1e9:.2f} GB of them, {b_['activations_tp8_sp'] / 1e9:.2f} GB with SP; "
        f"the layer's parameters become {b_['param_bytes'] / 8 / 1e9:.2f} GB per GPU.",
        f"A layer fits on one 80 GB GPU easily; what does not fit is the whole model's training state — "
        f"{state / 1e12:.2f} TB with mixed-precision Adam (16 bytes per parameter, <code>cost.zero_memory</code>) — "
        "plus the activations of all 96 layers."],
        f"The number is near one layer's activations at micro-batch 1 ({b_['activations'] / 1e9:.2f} GB), "
        f"not its parameters ({b_['param_bytes'] / 1e9:.1f} GB in fp16).")


def _c(n) -> Answer:
    return Answer("(c) answer", [
        f"Per layer: {n['c']['forward']} all-reduces forward (g after attention, g after the MLP) and {n['c']['backward']} "
        "backward (f before each), counted in §2 and §4.",
        "Megatron's paper says it directly: 4 communication operations in the forward and backward pass of one layer "
        "(Shoeybi et al. 2019, Fig. 4)."],
        "Does not hold: 2 and 2.")


def _d(n) -> Answer:
    d_ = n["d"]
    nv = hardware.LINK_PRESETS["NVLink3"]
    one = cost.collective_time("all_reduce", n["e"]["message"], 8, nv.latency_us * 1e-6, nv.gb_per_s_per_direction * 1e9)
    return Answer("(d) answer", [
        f"600 GB/s is the marketed total: {d_['links']:g} NVLink3 links × 25 GB/s × 2 directions "
        f"(<code>hardware.LINK_PRESETS['NVLink3']</code>: {d_['per_direction']:g} GB/s per direction, {d_['total']:g} total).",
        f"A ring sends and receives at the same time, each direction at {d_['per_direction']:g} GB/s: that is the β to use.",
        f"One 48 MiB all-reduce on 8 GPUs: {one * 1e3:.2f} ms (α-β model, <code>cost.collective_time</code>)."],
        "Right as marketed, but it is both directions added: 300 GB/s each way.")


def _e(n) -> Answer:
    e = n["e"]
    return Answer("(e) answer", [
        f"Message: b·s·h·2 = {e['message']:,.0f} B = {e['message'] / MiB:g} MiB ({e['message'] / 1e6:.1f} MB): right, as a message size.",
        f"A ring all-reduce on 8 GPUs sends 2·7/8 of it per GPU: {e['per_all_reduce'] / MiB:g} MiB "
        "(<code>cost.collective_bytes</code>).",
        f"Forward only ({e['forward']}): {e['forward_bytes']:,.0f} B = {e['forward_bytes'] / MiB:g} MiB sent per GPU.",
        f"Forward + backward, per layer per step: {e['step_bytes']:,.0f} B = {e['step_bytes'] / MiB:g} MiB "
        "(<code>cost.tp_comm_per_layer(1, 2048, 12288, 8)['bytes']</code>; 8·(7/8)·M).",
        f"'96 MB' = two messages, {e['two_messages'] / MiB:g} MiB: the forward's two all-reduces counted by their size, "
        "neither the bytes on the wire nor the whole step."],
        f"48 MB holds (as 48 MiB); 96 MB undercounts what each GPU sends per layer: by "
        f"{e['forward_bytes'] / e['two_messages']:g}× in forward, {e['step_bytes'] / e['two_messages']:g}× over the step.")


def _f(n) -> Answer:
    f_ = n["f"]
    lines = [f"t={t}: TP {a_ / KiB:g} KiB, SP {b__ / KiB:g} KiB per block per step = TP + the re-gather {rg / KiB:g} KiB "
             f"(measured, §4)" for t, (a_, b__, rg) in f_["bytes"].items()]
    lines.append(f"GPT-3, t=8, fp16: TP {f_['gpt3_tp8'][0] / MiB:g} MiB, SP {f_['gpt3_tp8'][1] / MiB:g} MiB per layer per step "
                 "(an all-reduce = reduce-scatter + all-gather; Korthikanti et al. §4.2.2 say the bandwidth is the same).")
    lines += [f"t={t}: activations per block {x:,} B without SP, {y:,} B with it ({y / x:.2f}x; measured, §6)"
              for t, (x, y) in f_.get("activations", {}).items()]
    return Answer("(f) answer", lines,
                   "Does not hold: SP moves the same bytes (more, counting the re-gather); it divides the activation memory by t.")


def _g(n) -> Answer:
    g_ = n["g"]
    m = g_["measured"]
    return Answer("(g) answer", [
        "Not as stated: the LayerNorm after g reads g's result (the residual stream), so it cannot run during that "
        "all-reduce — a data dependency.",
        "Forward overlap exists all the same: the dependency is row by row, so with SP the all-gather → column GEMM and "
        "row GEMM → reduce-scatter are cut into chunks and pipelined (Wang et al., ASPLOS 2023; Megatron-Core / NeMo "
        "<code>tp_comm_overlap</code>, TransformerEngine userbuffers; our <code>overlap_chunks</code>, §8).",
        "In backward, f's input-gradient all-reduce is independent of the weight-gradient matmul: start one, compute "
        "the other (Megatron-LM's async all-reduce; our <code>overlap=True</code>, §8).",
        f"Measured here (CPU, t = {m['tp']}): {m['gain']:+.1%} throughput ({m['load']}).",
        f"GPU-scale model, GPT-3 at t = 8 on A100/NVLink3. Without SP communication is {g_['comm_fraction']:.1%} of "
        f"the step and only the backward half has something to hide behind: at most {g_['best_gain']:+.1%}. With SP "
        f"({g_['sp_comm_fraction']:.1%}, the backward re-gathers included): backward hidden {g_['sp_backward_gain']:+.1%}; "
        f"forward chunked too (<code>cost.tp_forward_overlap</code>) {g_['sp_chunked_gain'][4]:+.1%} at c = 4 and "
        f"{g_['sp_chunked_gain'][8]:+.1%} at c = 8; everything hidden {g_['sp_full_gain']:+.1%}.",
        f"So the {g_['best_gain']:+.1%} ceiling belongs to a model of overlap (backward only), not to the hardware: model "
        "the forward's chunks and it moves. These are still bounds: what smaller GEMMs lose in efficiency, and the "
        "memory bandwidth the collectives take from them, are left out.",
        "The '5–10%' comes with no source or setup; in the model only SP's chunked forward together with backward "
        "overlap reaches it."],
        "The named mechanism is wrong (a data dependency); overlap is real, in backward and, chunked with SP, in "
        "forward; what it buys is bounded by the communication share and by what the model lets overlap.")


def _h(g3, n) -> Answer:
    h8, h16 = n["h"][8], n["h"][16]
    peak, ib = hardware.peak_flops("A100-SXM4-80GB", "bf16"), hardware.LINK_PRESETS["IB-HDR"]
    port = _one_card()
    no_alpha = cost.tp_scaling(g3["n_layers"], g3["d_model"], g3["n_heads"], g3["seq_len"], 1, 16, peak, h16["bandwidth"], 0.0)
    return Answer("(h) answer", [
        f"t = 8 over {h8['link_name']}: MFU {h8['mfu']:.1%}, communication {h8['comm_fraction']:.1%} of the step.",
        f"t = 16 across two nodes: NCCL runs one ring per network card, so the 8 GPUs of each node drive its 8 {h16['link_name']} "
        f"cards at once, {h16['bandwidth'] / 1e9:g} GB/s of bus bandwidth (a DGX A100 measures 192 GB/s, nccl#812): MFU {h16['mfu']:.1%}, "
        f"communication {h16['comm_fraction']:.1%}.",
        f"A node with a single {ib.gb_per_s_per_direction:g} GB/s card would give {port['mfu']:.1%}: the 'collapse' is a one-card node's.",
        f"With α = 0 the t = 16 communication is still {no_alpha['comm_s'] / h16['comm_s']:.0%} of what it is: mostly bandwidth "
        f"({h8['bandwidth'] / h16['bandwidth']:g}× below NVLink3), some latency."],
        "Partly: MFU falls when the TP ring crosses nodes, but on a node with a card per GPU by far less than half; t = 8 stays fastest.")


def _i(n) -> Answer:
    i_ = n["i"]
    pcie = {r["tp"]: r for r in experiments.gpu_scale("13B", "A100 PCIe box (PCIe4, IB-HDR)", (4, 8))}
    return Answer("(i) answer", [
        f"A100/NVLink3, b = 1: communication {i_['rows'][4]['comm_fraction']:.1%} at t = 4, {i_['rows'][8]['comm_fraction']:.1%} at t = 8; "
        f"MFU {i_['rows'][4]['mfu']:.1%} → {i_['rows'][8]['mfu']:.1%}.",
        f"Bytes each GPU sends per layer: {i_['comm_bytes'][4] / MiB:g} MiB at t = 4, {i_['comm_bytes'][8] / MiB:g} MiB at t = 8 "
        "(×(7/8)/(3/4)); compute per GPU halves. The share grows because compute shrinks, not because the link fills up: "
        "each GPU keeps its own 300 GB/s through the NVSwitch at any t ≤ 8.",
        f"The claimed 30% at t = 4 lies between the model's NVLink figure ({i_['rows'][4]['comm_fraction']:.1%}) and its "
        f"PCIe-box figure ({pcie[4]['comm_fraction']:.1%}; t = 8: {pcie[8]['comm_fraction']:.1%}): far above NVLink, "
        "somewhat below PCIe, so it reads as a slow-link number; the model does not reproduce 30% exactly on either."],
        "The trend holds (t = 8 is less efficient); 30% is a slow-link (PCIe-class) share, not NVLink's; "
        "'saturation' is the wrong mechanism.")


def _numbers(n) -> Answer:
    port = _one_card()
    return Answer("§11's numbers", [
        f"(a, c) per block per step: forward {n['a']['measured']['forward']}, backward {n['a']['measured']['backward']}",
        f"(b) GPT-3 layer: {n['b']['params']:,} params = {n['b']['param_bytes'] / 1e9:.2f} GB fp16; "
        f"activations b=1 s=2048: {n['b']['activations'] / 1e9:.2f} GB",
        f"(d) NVLink3: {n['d']['per_direction']:g} GB/s per direction, {n['d']['total']:g} total",
        f"(e) message {n['e']['message']:,.0f} B; sent per GPU per layer per step at t=8: {n['e']['step_bytes']:,.0f} B "
        f"(forward only {n['e']['forward_bytes']:,.0f})",
        f"(f) GPT-3 t=8 bytes per layer per step: TP {n['f']['gpt3_tp8'][0]:,.0f}, SP {n['f']['gpt3_tp8'][1]:,.0f}",
        f"(g) GPT-3 t=8 A100: no SP comm share {n['g']['comm_fraction']:.1%}, backward overlap {n['g']['best_gain']:.1%}; "
        f"SP {n['g']['sp_comm_fraction']:.1%}: backward {n['g']['sp_backward_gain']:.1%}, forward chunked c=4 "
        f"{n['g']['sp_chunked_gain'][4]:.1%} (c=8 {n['g']['sp_chunked_gain'][8]:.1%}), all hidden {n['g']['sp_full_gain']:.1%}",
        f"(h) GPT-3 MFU: t=8 {n['h'][8]['mfu']:.1%} ({n['h'][8]['link_name']}), t=16 {n['h'][16]['mfu']:.1%} "
        f"({n['h'][16]['link_name']}, {n['h'][16]['bandwidth'] / 1e9:g} GB/s over 8 cards); one card a node: {port['mfu']:.1%}",
        f"(i) 13B A100 comm share: t=4 {n['i']['rows'][4]['comm_fraction']:.1%}, t=8 {n['i']['rows'][8]['comm_fraction']:.1%}"])


corner = Corner({"a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "f": _f, "g": _g, "h": _h, "i": _i, "numbers": _numbers})
show = corner.show
