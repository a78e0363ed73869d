"""The seed's follow-up questions with answers (numbers from ``facts()``, each sentence
with the section that measures it), and the table of its claims: what holds, what does
not, and the figure that settles each."""

from __future__ import annotations

from .facts import facts


def follow_ups() -> list[dict]:
    """Each: ``q`` (en, zh), ``answer`` [(sentence, section key)], ``verdict``."""
    f = facts()
    b, tp = f["bubble"], f["tp"]
    d7, z1, z3 = f["7b_ddp"], f["7b_zero1"], f["7b_zero3_full"]
    thirteen, rule13 = f["thirteen"], f["order"]["13B on 8 A100"]
    return [
        dict(q={"en": "You said TP communicates a lot. How much exactly, and how do you cut it?",
                "zh": "张量并行的通信量到底是多少？有哪些办法减少或掩盖它？"},
             answer=[
                 (f"One all-reduce moves b·s·h·2 bytes: {tp['message_mib']:.0f} MiB for GPT-3 "
                  "(h = 12288, s = 2048, b = 1), as usually quoted.", "tp_count"),
                 (f"But a Megatron layer issues {tp['collectives']} of them per training step "
                  f"({tp['forward']} in forward, {tp['collectives'] - tp['forward']} in backward), "
                  f"each sending 2(t−1)/t of the message: {tp['step_mib']:.0f} MiB per GPU per layer "
                  f"at t = 8, not {tp['seed_mib']:.0f} MiB.", "tp_interview"),
                 ("Sequence parallelism replaces each all-reduce by a reduce-scatter and an "
                  "all-gather of the same total: it cuts activation memory, not traffic "
                  f"({tp['sp_step_mib']:.0f} MiB with the backward re-gather).", "sp"),
                 ("Overlap is the lever: backward's all-reduces hide behind weight-gradient "
                  "GEMMs, and forward's only when the GEMM is chunked against the all-gather / "
                  "reduce-scatter (Wang et al. 2023; Megatron's tp_comm_overlap). Running "
                  "LayerNorm during the all-reduce cannot work: it needs the all-reduce's "
                  "output.", "tp_overlap")],
             verdict="The message size holds; the count per step and the SP claim do not."),
        dict(q={"en": "How do you compute the pipeline bubble? How much better is 1F1B than GPipe?",
                "zh": "流水线气泡的比例如何计算？1F1B 相比 GPipe 究竟改进了什么？"},
             answer=[
                 (f"Idle / total = (P−1)/(M+P−1) = {b['fraction']:.1%} at P = {b['p']}, "
                  f"M = {b['m']}; idle / ideal = (P−1)/M = {b['ratio']:.1%}: one bubble over two "
                  "denominators, not GPipe's against 1F1B's.", "bubble"),
                 ("GPipe and 1F1B have the same bubble, measured on real ranks; 1F1B holds at "
                  "most P micro-batches' activations where GPipe holds M.", "pp_memory"),
                 (f"At M = 4P the bubble is (P−1)/(5P−1): {b['at_4p'][4]:.1%} at P = 4 and "
                  f"{b['at_4p'][64]:.1%} at P = 64, so 'under 15% once M ≥ 4P' holds only for "
                  "P ≤ 3.", "bubble"),
                 (f"What shrinks it: more micro-batches, interleaving ({b['interleaved_v2']:.1%} "
                  "at v = 2, P = 4, M = 8), or a zero-bubble schedule.", "interleave")],
             verdict="Same bubble for both; 1F1B saves memory, not idle time."),
        dict(q={"en": "You have one 7B model and 4 A100-80GB. Which strategy?",
                "zh": "手上有 4 张 80GB 的 A100，要训练 7B 模型，你会用哪种并行方式？为什么？"},
             answer=[
                 (f"The weights are {f['7b_fp16_gb']:.1f} GB in fp16, but training keeps "
                  f"{f['bytes_per_param']:.0f} bytes per parameter: plain DDP needs "
                  f"{d7['total'] / 1e9:.1f} GB per GPU, which does not fit.", "seven_b"),
                 (f"ZeRO-1 (shard Adam's states) fits: {z1['total'] / 1e9:.1f} GB with "
                  f"{z1['activations'] / 1e9:.1f} GB of activations per 2048-token sequence; no "
                  "TP or PP is needed.", "fits"),
                 (f"The planner's fastest layout for this job: {f['7b_best']} (ZeRO-2 also "
                  "shards the gradients, which leaves room for a larger micro-batch).", "fits"),
                 (f"'Below 20 GB with recomputation' never holds on 4 GPUs: even ZeRO-3 with full "
                  f"recomputation needs {z3['total'] / 1e9:.1f} GB.", "seven_b"),
                 ("The speedup over one GPU is not a fixed 3.5×: it depends on the link, the "
                  "batch per GPU and how much of the all-reduce hides behind backward.",
                  "speedup")],
             verdict="No TP or PP, right; plain DDP, wrong: ZeRO-1 or more."),
        dict(q={"en": "Give a concrete hybrid layout and justify it.",
                "zh": "举一个具体的混合并行配置，并解释每个并行度的取值理由。"},
             answer=[
                 (f"For 13B on one 8-GPU A100 node, the quoted TP = 4 + PP = 2 ranks "
                  f"#{thirteen['rank']} of {thirteen['of']} in the planner, {thirteen['slower']:+.0%} "
                  f"against the best, {rule13['best']}; 'TP = 8 first' ranks #{rule13['rank']}.",
                  "3d_interview"),
                 ("TP belongs inside the node because it all-reduces in every layer; past a node "
                  "each collective crosses the network cards.", "3d_interview"),
                 ("Use the smallest PP that fits, and DP (with ZeRO) for the rest: the walk-"
                  "through below does this for any model and cluster.", "planner")],
             verdict="Give the degrees with the reason each is needed, checked by a cost model."),
    ]


def claims() -> list[dict]:
    """The seed's claims, each with a verdict, the figure that settles it and its section."""
    f = facts()
    b, tp, g = f["bubble"], f["tp"], f["gpt3_seed"]
    rows = [
        ("Ring AllReduce takes DP's communication from O(N) to O(1)",
         "only bytes per GPU", f"{f['ring'][1024]:.3f}× the gradient at 1024 GPUs, but "
         f"{f['ring_steps'][1024]:,} sequential steps", "ring"),
        ("DP's communication grows linearly with the cards", "no, not with a ring",
         f"{f['ring'][8]:.2f}× at 8 GPUs, {f['ring'][1024]:.3f}× at 1024", "ring"),
        ("4 cards give about 3.5×", "a number without its conditions",
         "depends on link, batch per GPU and overlap", "speedup"),
        ("Gradient compression only below 10 Gbps", "half: the threshold is a ratio",
         "gradient bytes against compute time", "compression"),
        ("A 7B model fits on one card, so just DDP", "does not fit",
         f"DDP {f['7b_ddp']['total'] / 1e9:.1f} GB vs ZeRO-1 {f['7b_zero1']['total'] / 1e9:.1f} GB "
         "per GPU", "seven_b"),
        ("TP communicates once per step", "no",
         f"{tp['collectives']} all-reduces per layer per step", "tp_count"),
        ("96 MB per layer at 8-way TP", "undercounts",
         f"{tp['step_mib']:.0f} MiB sent per GPU per layer per step", "tp_interview"),
        ("Sequence parallelism reduces communication volume", "no: memory",
         f"{tp['sp_step_mib']:.0f} MiB vs {tp['step_mib']:.0f} MiB per layer", "sp"),
        ("Overlap by running LayerNorm during the all-reduce", "wrong mechanism",
         "LayerNorm needs the all-reduce's output; chunked GEMMs overlap", "tp_overlap"),
        ("1F1B cuts GPipe's bubble from 50% to 20%", "no: same bubble",
         f"both (P−1)/(M+P−1); M = {b['m20']} reaches 20% at P = 4", "bubble"),
        ("GPipe 37.5% vs 1F1B 27.3% at P = 4, M = 8", "one bubble, two denominators",
         f"{b['ratio']:.1%} of ideal = {b['fraction']:.1%} of the step", "bubble"),
        ("Under 15% once M ≥ 4P", "only for P ≤ 3",
         f"{b['at_4p'][4]:.1%} at P = 4, {b['at_4p'][1024]:.1%} at P = 1024", "bubble"),
        ("GPT-3: 8 × 64 × 64 = 32768 GPUs at 312 TFLOPS (52%)", "does not hold",
         f"{g['layers_per_stage']:g} layers per stage; 312 is the peak, 52% of it is "
         f"{g['at_52']:.0f}", "3d_interview"),
        ("First fix TP, then PP, then DP", "only when the model needs TP",
         f"13B on 8 A100: TP-first ranks #{f['order']['13B on 8 A100']['rank']}", "3d_interview"),
        ("Mixtral 8x7B: far more experts than devices", "no", "8 experts per layer (Jiang et al. 2024)", "routing"),
        ("Capacity factor 1.25 works well", "caps, does not balance",
         f"{f['capacity']['slots']} slots per expert for {f['capacity']['tokens']} tokens, 8 "
         "experts", "capacity"),
    ]
    return [dict(claim=c, verdict=v, figure=fig, key=k) for c, v, fig, k in rows]
