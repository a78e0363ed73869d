"""The seed's follow-up questions with answers (numbers from ``facts()``, each sentence
with the section that measures it), and the table of its claims: what holds, what does
not, and the figure that settles each."""

from __future__ import annotations

from .facts import facts
from .seed_claims import SEED_CLAIMS, VERDICTS


def follow_ups() -> list[dict]:
    """Each: ``q`` (en, zh), ``origin`` (where in the interview text it comes from, a sentence),
    ``answer`` [(sentence, section key)], ``verdict``."""
    f = facts()
    b, tp = f["bubble"], f["tp"]
    d7, z1, z3 = f["7b_ddp"], f["7b_zero1"], f["7b_zero3_full"]
    d7n, z1f, best = f["7b_ddp_none"], f["7b_zero1_full"], f["7b_best_layout"]
    thirteen, rule13 = f["thirteen"], f["order"]["13B on 8 A100"]
    return [
        dict(q={"en": "You said TP communicates a lot. How much exactly, and how do you cut it?",
                "zh": "张量并行的通信量到底是多少？有哪些办法减少或掩盖它？"},
             origin="From the interview text's follow-up 1.",
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
             origin="From the interview text's follow-up 2.",
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
             origin="From the interview text's follow-up 3.",
             answer=[
                 (f"The weights are {f['7b_fp16_gb']:.1f} GB in fp16 ({f['7b_params'] / 1e9:.2f}e9 "
                  f"parameters), but training keeps {f['bytes_per_param']:.0f} bytes per parameter: "
                  f"with one 2048-token sequence per GPU, plain DDP needs {d7n['total'] / 1e9:.1f} GB "
                  f"per GPU without recomputation and still {d7['total'] / 1e9:.1f} GB with full "
                  "recomputation. It does not fit.", "seven_b"),
                 (f"ZeRO-1 (shard Adam's states) fits: {z1['total'] / 1e9:.1f} GB without "
                  f"recomputation, {z1f['total'] / 1e9:.1f} GB with full; no TP or PP is needed.",
                  "fits"),
                 (f"Those figures are the memory calculator's, which keeps the attention scores "
                  f"(materialized attention): {best['act_materialized'] / 1e9:.1f} GB of activations "
                  f"per sequence. The planner assumes a fused kernel (FlashAttention keeps no s × s "
                  f"scores): {best['act_fused'] / 1e9:.1f} GB per sequence.", "fits"),
                 (f"So the planner's fastest layout, {f['7b_best']} (ZeRO-2 also shards the "
                  f"gradients), needs {best['total'] / 1e9:.1f} GB per GPU with {best['attention']} "
                  f"attention; with materialized attention the same layout would need "
                  f"{best['materialized'] / 1e9:.1f} GB, and micro-batch "
                  f"{best['max_b_materialized']} is the most that fits.", "fits"),
                 (f"'Below 20 GB with recomputation' never holds on 4 GPUs: even ZeRO-3 with full "
                  f"recomputation needs {z3['total'] / 1e9:.1f} GB.", "seven_b"),
                 ("The speedup over one GPU is not a fixed 3.5×: it depends on the link, the "
                  "batch per GPU and how much of the all-reduce hides behind backward.",
                  "speedup")],
             verdict="No TP or PP, right; plain DDP, wrong: ZeRO-1 or more."),
        dict(q={"en": "Give a concrete hybrid layout and justify it.",
                "zh": "举一个具体的混合并行配置，并解释每个并行度的取值理由。"},
             origin="Not one of the interview text's follow-ups: its list of common mistakes "
                    "asks for concrete degrees, each with its reason.",
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
    """Every claim of the interview text (``seed_claims.SEED_CLAIMS``, in its order), each
    with a verdict (one of ``VERDICTS``, then why), the figure that settles it and the
    section that measures it."""
    f = facts()
    b, tp, g, cap = f["bubble"], f["tp"], f["gpt3_seed"], f["capacity"]
    d7, d7n, z1, z3 = f["7b_ddp"], f["7b_ddp_none"], f["7b_zero1"], f["7b_zero3_full"]
    layer, nv, rule13 = f["gpt3_layer"], f["nvlink3"], f["order"]["13B on 8 A100"]
    m = max(b["peak"])
    judged = {  # id: (verdict, why, the figure, section key)
        "four_kinds": ("half right", "context parallelism is a fifth axis, and ZeRO/FSDP "
                       "shards what DP copies", "CP splits one sequence that does not fit",
                       "cp_why"),
        "dp_idea": ("holds", "and it is exact: single-device training on the global batch",
                    "DDP starts the all-reduce during backward, bucket by bucket", "dp_exact"),
        "dp_when": ("half right", "with ZeRO/FSDP, DP also trains what does not fit",
                    f"7B on 4 GPUs, no recomputation: plain DDP {d7n['total'] / 1e9:.1f} GB, "
                    f"ZeRO-1 {z1['total'] / 1e9:.1f} GB per GPU", "zero"),
        "dp_linear": ("wrong", "not with a ring",
                      f"{f['ring'][8]:.2f}× the gradient at 8 GPUs, {f['ring'][1024]:.3f}× at "
                      "1024", "ring"),
        "ddp_ring": ("half right", "DDP only calls the backend's all-reduce; NCCL picks ring "
                     "or tree per call", "rings for large messages, trees for small ones over "
                     "many nodes",
                     "collectives_interview"),
        "ring_o1": ("half right", "only the bytes per GPU are O(1)",
                    f"{f['ring'][1024]:.3f}× the gradient at 1024 GPUs, but "
                    f"{f['ring_steps'][1024]:,} sequential steps", "ring"),
        "cross_node_batch": ("half right", "more work per GPU gives backward more time to hide "
                             "the same all-reduce; it also changes the optimisation's batch",
                             "the bytes per all-reduce do not change", "dp_buckets"),
        "compression_cost": ("holds", "a compressor drops information; how much loss it costs "
                             "depends on the compressor and on error feedback",
                             "fp16, top-k and 1-bit sign against exact training",
                             "compression"),
        "compression_10g": ("half right", "the threshold is a ratio, not a link speed",
                            "gradient bytes against compute time", "compression"),
        "tp_idea": ("holds", "column then row: one sum per block", "", "tp_split"),
        "tp_columns": ("holds", "Shoeybi et al. 2019, §3",
                       f"{tp['forward']} all-reduces per layer in forward", "tp_split"),
        "tp_once": ("wrong", "every layer, every step",
                    f"{tp['collectives']} all-reduces per layer per step", "tp_count"),
        "tp_layer_gb": ("wrong", "a layer fits easily; the whole model's training state does not",
                        f"one layer: 12·h² = {layer['params']:,} parameters = "
                        f"{layer['param_gb']:.1f} GB in fp16; {layer['act_gb']:.1f} GB of "
                        "activations at b = 1, s = 2048", "tp_interview"),
        "tp_fwd_bwd_once": ("wrong", "two each way",
                            f"{tp['forward']} in forward, {tp['collectives'] - tp['forward']} "
                            "in backward", "tp_count"),
        "nvlink_600": ("half right", "600 GB/s is both directions added",
                       f"NVLink3: {nv['per_direction']:g} GB/s each way, {nv['total']:g} total; "
                       "a ring uses one direction's", "tp_interview"),
        "tp_cross_node": ("half right", "efficiency falls across nodes, mostly by bandwidth, "
                          "and far less than a collapse with a network card per GPU",
                          f"IB HDR {f['ib_hdr']:g} GB/s per card against NVLink3's "
                          f"{nv['per_direction']:g} GB/s", "tp_interview"),
        "pp_idea": ("holds", "stages pass activations point to point", "", "stages"),
        "pp_schedules": ("holds", "both are orders of the same forwards and backwards",
                         "", "schedules"),
        "pp_when": ("depends", "memory sets the depth, the smallest that fits; the layer "
                    "count only caps it", "pp must divide the layers", "3d_interview"),
        "bubble_50_20": ("wrong", "the same bubble for both",
                         f"both (P−1)/(M+P−1); M = {b['m20']} reaches 20% at P = {b['p']}",
                         "bubble"),
        "m_4p_hide": ("half right", "M = 4P keeps the bubble under 20%, it does not hide it",
                      f"(P−1)/(5P−1): {b['at_4p'][4]:.1%} at P = 4, {b['at_4p'][1024]:.1%} at "
                      "P = 1024", "bubble"),
        "more_m_memory": ("half right", "true of GPipe; 1F1B keeps at most P micro-batches",
                          f"P = {b['p']}, M = {m}: GPipe keeps {b['peak'][m][0]}, 1F1B "
                          f"{b['peak'][m][1]}", "pp_memory"),
        "recompute_trade": ("holds", "full recomputation repeats the forward", "",
                            "recompute"),
        "three_d": ("holds", "one mesh, TP innermost", "", "mesh"),
        "placement": ("holds", "TP all-reduces in every layer, PP sends one activation per "
                      "micro-batch per stage boundary", "", "3d_interview"),
        "gpt3_layout": ("wrong", "the layers do not divide, and GPT-3 was not trained so",
                        f"8 × 64 × 64 = {g['product']:,} GPUs, {g['layers_per_stage']:g} of 96 "
                        "layers per stage", "3d_interview"),
        "gpt3_312": ("wrong", "312 is the A100's 16-bit peak",
                     f"52% of 312 is {g['at_52']:.0f}; Megatron's 52% is the 1T model's, "
                     f"{f['mfu_1t']:.0%} in model FLOPs", "planner"),
        "tune_ratio": ("half right", "the balance matters, but a cost model ranks every "
                       "layout instead of hand tuning", "", "planner"),
        "tp_first": ("depends", "right only when the model needs TP",
                     f"13B on 8 A100: TP-first ranks #{rule13['rank']} of {rule13['of']}",
                     "3d_interview"),
        "ep_idea": ("holds", "tokens travel by all-to-all", "", "routing"),
        "mixtral_experts": ("wrong", "8 experts per layer (Jiang et al. 2024)",
                            "EP of 8 at most", "routing"),
        "hot_10x": ("depends", "a skew a router can produce, not a constant",
                    "drops measured balanced and skewed", "capacity"),
        "aux_loss": ("half right", "it pushes towards balance; capacity still drops the "
                     "overflow", "drops with and without the loss", "capacity"),
        "cf_125": ("half right", "a capacity factor caps, it does not balance",
                   f"top-{cap['top_k']} (Mixtral): {cap['slots']:,} slots per expert for "
                   f"{cap['tokens']:,} tokens on {cap['experts']} experts (k·T·cf/E)",
                   "capacity"),
        "topology": ("holds", "the links decide where each axis can go", "", "planner"),
        "must_3d": ("depends", "only when the model needs every axis",
                    f"the planner's best for 7B on 4 A100s: {f['7b_best']}", "3d_interview"),
        "tp_two_fwd": ("holds", "attention output and MLP output",
                       f"{tp['forward']} in forward", "tp_count"),
        "tp_48mb": ("holds", "b·s·h·2 bytes, in MiB",
                    f"{tp['message_mib']:.0f} MiB per message", "tp_interview"),
        "tp_96mb": ("wrong", "two messages, not a layer's traffic",
                    f"{tp['step_mib']:.0f} MiB sent per GPU per layer per step", "tp_interview"),
        "sp_comm": ("wrong", "it saves memory, not traffic",
                    f"{tp['sp_step_mib']:.0f} MiB vs {tp['step_mib']:.0f} MiB per layer", "sp"),
        "layernorm_overlap": ("wrong", "LayerNorm needs the all-reduce's output",
                              "chunked GEMMs overlap", "tp_overlap"),
        "overlap_5_10": ("depends", "no run or paper is given",
                         "what each overlap hides, modelled", "tp_overlap"),
        "bubble_formula": ("holds", "the idle share of the step",
                           f"{b['fraction']:.1%} at P = {b['p']}, M = {b['m']}", "bubble"),
        "gpipe_vs_1f1b": ("wrong", "one bubble, two denominators",
                          f"{b['ratio']:.1%} of ideal = {b['fraction']:.1%} of the step",
                          "bubble"),
        "under_15": ("wrong", "holds only for P ≤ 3",
                     f"{b['at_4p'][4]:.1%} at P = 4, {b['at_4p'][1024]:.1%} at P = 1024",
                     "bubble"),
        "7b_14gb": ("holds", f"{f['7b_params'] / 1e9:.2f}e9 parameters × 2 bytes",
                    f"{f['7b_fp16_gb']:.1f} GB", "seven_b"),
        "7b_one_card": ("wrong", "the training state does not fit",
                        f"plain DDP: {d7n['total'] / 1e9:.1f} GB per GPU without recomputation, "
                        f"{d7['total'] / 1e9:.1f} GB with full", "seven_b"),
        "no_tp_pp": ("holds", "ZeRO-1 or more is enough",
                     f"the planner's best: {f['7b_best']}", "fits"),
        "speedup_35": ("depends", "a number without its conditions",
                       "link, batch per GPU and overlap", "speedup"),
        "grad_accum": ("holds", "summed gradients equal the large batch's",
                       "the same update, fewer all-reduces", "grad_accum"),
        "recompute_20gb": ("wrong", "not on 4 GPUs",
                           f"ZeRO-3 with full recomputation: {z3['total'] / 1e9:.1f} GB",
                           "seven_b"),
        "async": ("holds", "stale gradients; synchronous DP is exact", "", "async"),
        "tp_vs_pp_comm": ("holds", "collectives inside the layer, send/recv between stages",
                          "", "mesh"),
        "thirteen_b": ("half right", "TP = 8 is slower than TP = 4, but not because NVLink "
                       "saturates, and TP = 4 + PP = 2 is not the best either",
                       f"TP = 4 + PP = 2 ranks #{f['thirteen']['rank']} of "
                       f"{f['thirteen']['of']}, TP = 8 #{rule13['rank']}; the best is "
                       f"{rule13['best']}", "3d_interview"),
        "ref_megatron": ("holds", "Shoeybi et al., arXiv 1909.08053", "", "tp_split"),
        "ref_gpipe": ("holds", "Huang et al., NeurIPS 2019, arXiv 1811.06965", "", "bubble"),
        "ref_deepspeed": ("holds", "Rasley et al., KDD 2020; ZeRO itself is Rajbhandari et "
                          "al., SC 2020", "", "zero"),
        "ref_narayanan": ("holds", "Narayanan et al., SC 2021, arXiv 2104.04473", "",
                          "planner"),
        "ref_sp": ("half right", "Li et al., arXiv 2105.13120 (2021; ACL 2023): ring "
                   "self-attention over the sequence, closer to CP; Megatron's SP is "
                   "Korthikanti et al., arXiv 2205.05198", "", "tp_interview"),
    }
    rows = []
    for cid, part, claim in SEED_CLAIMS:
        verdict, why, figure, key = judged[cid]
        if verdict not in VERDICTS:
            raise ValueError(f"{cid}: verdict={verdict!r} must be one of {VERDICTS}")
        rows.append(dict(id=cid, part=part, claim=claim, verdict=verdict, why=why,
                         figure=figure, key=key))
    return rows
