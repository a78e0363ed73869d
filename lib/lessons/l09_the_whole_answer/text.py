"""Notebook 09's words, in English and Chinese (``i18n.t`` formats them; every number is
formatted once, by the code that passes it, with the same field in both languages).

``TEXT``: the layout checker's messages (the "Correct." / "Not yet." before them is the
answer boxes' own, ``checkers.answers.verdict``), the planner's refusals, and what the
figures and widgets say around the answers. ``FOLLOW_UPS``: the follow-ups' answers.
``CLAIMS``: the claims table's judgements (the claims themselves are in
``seed_claims.SEED_CLAIMS``, in Chinese as the interview text words them). ``WALK``: the
decision walk-through. ``INTERVIEW``: the appendix (``lessons.common.interview.said``)."""

from .text_claims import CLAIMS, FOLLOW_UPS  # noqa: F401  (in their own file: this one holds the rest)


TEXT = {
    "where": {"en": "{model} on {n_gpus} × {gpu}: my_layout returned {got}",
              "zh": "{model}，{n_gpus} × {gpu}：my_layout 返回了 {got}"},
    "no_dict": {"en": "{where}; return a dict with keys 'tp', 'pp', 'dp'",
                "zh": "{where}；请返回一个带 'tp'、'pp'、'dp' 三个键的 dict"},
    "degrees": {"en": "{where}: the degrees {why}", "zh": "{where}：并行度 {why}"},
    "product": {"en": "{where}: tp · pp · dp = {product}, it must be {n_gpus} (every GPU used once)",
                "zh": "{where}：tp · pp · dp = {product}，应等于 {n_gpus}（每张 GPU 恰好用一次）"},
    "layout": {"en": "{model} on {n_gpus} × {gpu}, tp={tp} pp={pp} dp={dp}",
               "zh": "{model}，{n_gpus} × {gpu}，tp={tp} pp={pp} dp={dp}"},
    "infeasible": {"en": "{layout}: {why}", "zh": "{layout}：{why}"},
    "no_such": {"en": "the planner has no such layout", "zh": "规划器里没有这种布局"},
    "slower": {"en": "{layout} fits but ranks #{rank} of {of}, {gap} against the best ({best}): "
                     "slower beyond the planner's error bar",
               "zh": "{layout} 能放下，但在 {of} 个布局中排第 {rank}，与最优（{best}）相差 {gap}："
                     "慢得超出了规划器的误差范围"},
    "picked": {"en": "{model} on {n_gpus}: tp={tp} pp={pp} dp={dp}",
               "zh": "{model}，{n_gpus} 张卡：tp={tp} pp={pp} dp={dp}"},
    "picked_sep": {"en": ", ", "zh": "；"},
    "right": {"en": "every layout fits and is as fast as the best within the planner's error "
                    "bar ({picked}).",
              "zh": "每个布局都能放下，且在规划器的误差范围内与最优一样快（{picked}）。"},
}

# What the notebook's figures and widgets say around the answers (figures.py, widgets.py)
TEXT.update({
    "click": {"en": " (click to open)", "zh": "（点击展开）"},
    "thirty_title": {"en": "A 30-second answer · {name}", "zh": "30 秒版回答 · {name}"},
    "three_title": {"en": "A 3-minute answer · {name}", "zh": "3 分钟版回答 · {name}"},
    "follow_up": {"en": "Follow-up {i}.", "zh": "追问 {i}。"},
    "answer": {"en": "Answer", "zh": "答案"},
    # the claims table
    "claims_title": {"en": "The interview text's claims, judged ({n}: {counts})",
                     "zh": "面试文本中的说法，逐条判定（共 {n} 条：{counts}）"},
    "claims_count": {"en": "{n} {verdict}", "zh": "{verdict} {n} 条"},
    "claims_sep": {"en": ", ", "zh": "，"},
    "col_part": {"en": "where in the text", "zh": "出处"},
    "col_claim": {"en": "claim", "zh": "原文说法"},
    "col_verdict": {"en": "verdict", "zh": "判定"},
    "col_figure": {"en": "the figure", "zh": "依据的数字"},
    "col_where": {"en": "where measured", "zh": "在哪一节测量"},
    "verdict_why": {"en": "{verdict}: {why}", "zh": "{verdict}：{why}"},
    "verdict.holds": {"en": "holds", "zh": "成立"},
    "verdict.wrong": {"en": "wrong", "zh": "错误"},
    "verdict.half right": {"en": "half right", "zh": "半对"},
    "verdict.depends": {"en": "depends", "zh": "视情况而定"},
    # the parts of the interview text (its own headings in Chinese)
    "part.standard answer": {"en": "standard answer", "zh": "标准答"},
    "part.30-second template": {"en": "30-second template", "zh": "答题模板（30 秒电梯版）"},
    "part.common mistakes": {"en": "common mistakes", "zh": "避坑 · 常见错误答法"},
    "part.résumé advice": {"en": "résumé advice", "zh": "简历呼应"},
    "part.reading list": {"en": "reading list", "zh": "参考论文"},
    "part.follow-up 1": {"en": "follow-up 1", "zh": "追问 1"},
    "part.follow-up 2": {"en": "follow-up 2", "zh": "追问 2"},
    "part.follow-up 3": {"en": "follow-up 3", "zh": "追问 3"},
    # the walk-through's heading, table and widget
    "walk_title": {"en": "{model} on {n_gpus} × {gpu}", "zh": "{model}，{n_gpus} × {gpu}"},
    "walk_caption": {"en": "the best layout of each kind, of {of} that fit ({infeasible} do not). "
                           "Ranked step: the predicted step at the best end of its error band. "
                           "Every layout plan() searches, FSDP2-style ZeRO-3 included, shares one "
                           "band; only DeepSpeed's 2021 ZeRO-3, which it does not search, has its "
                           "own (those published runs were slower than predicted)",
                     "zh": "每类布局中最好的一个（能放下的共 {of} 个，放不下的 {infeasible} 个）。"
                           "排序用时：取该布局误差带中最乐观一端的预测步时。plan() 搜索的所有布局"
                           "（包括 FSDP2 式的 ZeRO-3）共用同一条误差带；只有它不搜索的 DeepSpeed "
                           "2021 年版 ZeRO-3 另有误差带（那些已发表训练的实测比预测慢）"},
    "zero_shards.0": {"en": "plain DDP shards nothing", "zh": "普通 DDP 什么都不切分"},
    "zero_shards.1": {"en": "ZeRO-1 shards Adam's states", "zh": "ZeRO-1 切分了 Adam 的优化器状态"},
    "zero_shards.2": {"en": "ZeRO-2 also shards the gradients", "zh": "ZeRO-2 还切分了梯度"},
    "zero_shards.3": {"en": "ZeRO-3 also shards the weights", "zh": "ZeRO-3 连权重也切分了"},
    "head_rank": {"en": "rank", "zh": "排名"},
    "head_kind": {"en": "kind", "zh": "类型"},
    "head_layout": {"en": "layout", "zh": "布局"},
    "head_step": {"en": "predicted step (s)", "zh": "预测步时 (s)"},
    "head_ranked": {"en": "ranked step (s)", "zh": "排序用时 (s)"},
    "head_mfu": {"en": "mfu", "zh": "MFU"},
    "head_memory": {"en": "GB / GPU", "zh": "GB / GPU"},
    "head_slower": {"en": "vs #1's ranked step", "zh": "比第 1 名慢"},
    "w_model": {"en": "model", "zh": "模型"},
    "w_gpus": {"en": "GPUs", "zh": "GPU 数"},
    "w_gpu": {"en": "GPU", "zh": "GPU 型号"},
    "w_cannot": {"en": "{why}", "zh": "无法规划：{why}"},
    # the timed drill
    "drill_title": {"en": "<b>Timed drill</b> · one question from every topic",
                    "zh": "<b>限时练习</b> · 每个主题各一道题"},
    "drill_ready": {"en": "Press <b>Start</b>: the first question appears and the clock starts.",
                    "zh": "按<b>开始</b>：第一题出现，同时开始计时。"},
    "drill_start": {"en": "Start", "zh": "开始"},
    "drill_again": {"en": "Start again", "zh": "重新开始"},
    "drill_settled": {"en": "{working}. Settled in notebook {section}.",
                      "zh": "{working}。见 notebook {section}。"},
    "drill_score": {"en": "{tally} · {first} of {n} right first time in {minutes} min {seconds} s "
                          "(target {target} min)",
                    "zh": "{tally} · {n} 题中首次答对 {first} 题，用时 {minutes} 分 {seconds} 秒"
                          "（目标 {target} 分钟）"},
    # the planner's attention kinds, as a sentence says them
    "attention.fused": {"en": "fused", "zh": "融合（fused）"},
    "attention.materialized": {"en": "materialized", "zh": "显式存储分数的（materialized）"},
})

# The decision walk-through (walkthrough.decide): "q.*" its questions, "a.*" its answers,
# "r.*" the planner's reasons for a layout as a sentence says them (the English is
# ``planner.reasons``' own wording, word for word: a test holds them together)
WALK = {
    "q.fit_one": {"en": "Do the training states fit on one GPU?", "zh": "训练状态在一张卡上放得下吗？"},
    "a.fit_one": {"en": "{params_b:.1f}B parameters × {state_bytes} bytes = {states_gb:,.0f} GB of "
                        "weights, gradients and Adam states against {cap_gb:.0f} GB: {verdict}",
                  "zh": "{params_b:.1f}B 个参数 × {state_bytes} 字节 = {states_gb:,.0f} GB 的权重、梯度和 "
                        "Adam 状态，单卡只有 {cap_gb:.0f} GB：{verdict}"},
    "a.fit_yes": {"en": "yes, before activations; plain data parallelism is a candidate.",
                  "zh": "放得下（还没算激活值）；普通数据并行可以作为候选。"},
    "a.fit_no": {"en": "no, {times:.1f}× too many: something must be split.",
                 "zh": "放不下，是单卡容量的 {times:.1f}×：必须切分。"},
    "q.which_fits": {"en": "Which layout fits?", "zh": "哪种布局放得下？"},
    "a.none_fits": {"en": "none of {n_gpus} {gpu} GPUs' layouts fits{closest}: more GPUs, or GPUs "
                          "with more memory.",
                    "zh": "{n_gpus} 张 {gpu} 的所有布局都放不下{closest}：要么加卡，要么换显存更大的卡。"},
    "a.closest": {"en": "; the closest, {label}, is {short_gb:.1f} GB short per GPU",
                  "zh": "；最接近的是 {label}，每卡还差 {short_gb:.1f} GB"},
    "q.split": {"en": "What must be split to fit, and how?", "zh": "要放得下，必须切分什么？怎么切？"},
    "a.split": {"en": "the fastest layout that fits is {label}: {need}, ZeRO stage {zero}, "
                      "{mem_gb:.1f} of {cap_gb:.0f} GB per GPU (counted with {attention} attention, "
                      "as the planner assumes).",
                "zh": "放得下的最快布局是 {label}：{need}，ZeRO 阶段 {zero}，每卡用 {mem_gb:.1f} / "
                      "{cap_gb:.0f} GB（按规划器的假设，以{attention}注意力计算）。"},
    "a.no_split": {"en": "no model split", "zh": "模型本身不切分"},
    "a.sep": {"en": ", ", "zh": "、"},
    "q.tp": {"en": "Where does tensor parallelism go?", "zh": "张量并行放在哪里？"},
    "a.tp_none": {"en": "none: the model fits without splitting its matmuls, and TP would add "
                        "collectives to every layer.",
                  "zh": "不用：模型不切矩阵乘法也放得下，而 TP 会给每一层都加上集合通信。"},
    "a.tp_spans": {"en": "{reason}; the memory needs that much TP, and the network cards pay for it.",
                   "zh": "{reason}；显存需要这么大的 TP，代价由网卡来付。"},
    "a.tp_node": {"en": "{reason}; TP all-reduces in every layer, so it stays in the NVLink domain.",
                  "zh": "{reason}；TP 每一层都做 all-reduce，所以留在 NVLink 域内。"},
    "q.pp": {"en": "Pipeline: how deep?", "zh": "流水线切多深？"},
    "a.pp_deep": {"en": "{reason}: the smallest depth the memory needs, with many micro-batches "
                        "per step.",
                  "zh": "{reason}；取显存所需的最小深度，每步配很多个微批次。"},
    "a.pp_none": {"en": "{reason}: the model fits without cutting its layers.",
                  "zh": "{reason}；模型不按层切也放得下。"},
    "q.dp": {"en": "What takes the rest of the GPUs?", "zh": "剩下的卡做什么？"},
    "a.dp": {"en": "{reason}.", "zh": "{reason}。"},
    "q.rule": {"en": "Does 'TP first, then PP, then DP' give the same answer?",
               "zh": "「先定 TP，再定 PP，最后 DP」能得到同样的答案吗？"},
    "a.rule": {"en": "it picks {label}: #{rank} of {of}, {gap:+.0%} against the best. {outcome}",
               "zh": "它选的是 {label}：在 {of} 个布局里排第 {rank}，相对最优 {gap:+.0%}。{outcome}"},
    "a.rule_fine": {"en": "Inside the planner's error bar: the recipe is fine here.",
                    "zh": "在规划器的误差范围之内：这里照这个套路走没问题。"},
    "a.rule_costs": {"en": "Outside the error bar: the recipe costs real time here.",
                     "zh": "超出了误差范围：这里照套路走会实实在在地变慢。"},
    "q.speed": {"en": "How fast, honestly?", "zh": "实话说，能跑多快？"},
    "a.speed": {"en": "MFU {mfu:.0%} (model FLOPs) / HFU {hfu:.0%} (with recomputation), "
                      "{step_s:.1f} s per step of {batch} sequences × {seq} tokens; published runs "
                      "of this kind land between {lo:.2f}× and {hi:.2f}× the predicted throughput.",
                "zh": "MFU {mfu:.0%}（按模型 FLOPs）/ HFU {hfu:.0%}（含重计算），每步 {step_s:.1f} s，"
                      "一步 {batch} 条序列 × {seq} token；这类布局已发表的实测吞吐落在预测值的 "
                      "{lo:.2f}× 到 {hi:.2f}× 之间。"},
    "a.beyond": {"en": " No published run of {kind} used more than {largest} GPUs (the planner's "
                       "errors there: {lo:+.0%} to {hi:+.0%}): at {n} GPUs this is an extrapolation.",
                 "zh": "{kind} 已发表的实测最多只用到 {largest} 张卡（规划器在那里的误差为 {lo:+.0%} 到 "
                       "{hi:+.0%}）：{n} 张卡时这个预测是外推。"},
    "kind.FSDP2-style ZeRO-3": {"en": "FSDP2-style ZeRO-3", "zh": "FSDP2 式 ZeRO-3"},
    "kind.DeepSpeed's ZeRO-3 of 2021": {"en": "DeepSpeed's ZeRO-3 of 2021",
                                        "zh": "DeepSpeed 2021 年的 ZeRO-3"},
    "kind.Megatron-style layouts (ZeRO 0-2)": {"en": "Megatron-style layouts (ZeRO 0-2)",
                                               "zh": "Megatron 式布局（ZeRO 0-2）"},
    "kind.dp_only": {"en": "DP only", "zh": "只有 DP"},
    # planner.reasons, sentence by sentence
    "r.tp1": {"en": "TP=1: no tensor-parallel communication", "zh": "TP=1：没有张量并行通信"},
    "r.tp_node": {"en": "TP={tp} fits in one node ({link}); its collectives take {pct} of the step",
                  "zh": "TP={tp} 在一个节点之内（{link}）；它的集合通信占一步时间的 {pct}"},
    "r.tp_spans": {"en": "TP={tp} spans {nodes} nodes: its collectives cross {link} ({nics} cards "
                         "a node) and take {pct} of the step",
                   "zh": "TP={tp} 跨了 {nodes} 个节点：它的集合通信要走 {link}（每个节点 {nics} 块网卡），"
                         "占一步时间的 {pct}"},
    "r.bubble": {"en": "bubble {pct} at M={m}{chunks}; p2p {p2p:.1%}",
                 "zh": "气泡占 {pct}（M={m}{chunks}）；p2p 通信占 {p2p:.1%}"},
    "r.chunks": {"en": " with v={v} chunks per rank", "zh": "，每个 rank 分 v={v} 个块"},
    "r.pp1": {"en": "PP=1: no bubble", "zh": "PP=1：没有气泡"},
    "r.dp_after": {"en": "DP={dp}: {what} after backward: {share:.1%} of the step",
                   "zh": "DP={dp}：反向结束后才{what}，占一步时间的 {share:.1%}"},
    "r.dp_exposed": {"en": "DP={dp}: {what}; {share:.1%} of the step does not fit behind the "
                           "compute it overlaps",
                     "zh": "DP={dp}：{what}；其中占一步时间 {share:.1%} 的通信没能藏到与之重叠的计算后面"},
    "r.dp_hidden": {"en": "DP={dp}: {what}, all of it hidden behind compute",
                    "zh": "DP={dp}：{what}，全部藏在计算后面"},
    "r.dp_none": {"en": "DP={dp}", "zh": "DP={dp}"},
    "r.sync": {"en": "synchronises the gradients", "zh": "同步梯度"},
    "r.gather": {"en": "gathers and reduce-scatters every layer's weights every micro-batch",
                 "zh": "每个微批次都要对每一层的权重做 all-gather 和 reduce-scatter"},
}

# The appendix (interview.py): the figures the answers quote, behind a click
INTERVIEW = {
    "numbers": {"en": "The figures the answers quote", "zh": "答案引用的数字"},
    "numbers.1": {"en": "ring: {ring2:.2f}x / {ring1024:.3f}x the gradient per GPU at 2 / 1024 "
                        "GPUs, {ring_steps} steps at 1024",
                  "zh": "环形 all-reduce：2 / 1024 卡时每卡发送梯度的 {ring2:.2f}x / {ring1024:.3f}x，"
                        "1024 卡时 {ring_steps} 步"},
    "numbers.2": {"en": "7B on 4 x 80 GB, 1 x 2048 tokens per GPU, no / full recompute: DDP "
                        "{ddp_none_gb:.1f} / {ddp_full_gb:.1f} GB, ZeRO-1 {zero1_gb:.1f} / "
                        "{zero1_full_gb:.1f} GB, ZeRO-3 (full) {zero3_full_gb:.1f} GB per GPU "
                        "(materialized attention)",
                  "zh": "7B、4 x 80 GB、每卡 1 x 2048 token，不做 / 完整重计算：DDP {ddp_none_gb:.1f} / "
                        "{ddp_full_gb:.1f} GB，ZeRO-1 {zero1_gb:.1f} / {zero1_full_gb:.1f} GB，"
                        "ZeRO-3（完整重计算）每卡 {zero3_full_gb:.1f} GB（materialized 注意力）"},
    "numbers.3": {"en": "7B planner best ({best_7b}): {best_gb:.1f} GB with {attention} attention, "
                        "{materialized_gb:.1f} GB materialized; activations per sequence "
                        "{act_fused_gb:.1f} / {act_materialized_gb:.1f} GB",
                  "zh": "7B 的规划器最优布局（{best_7b}）：{attention}注意力 {best_gb:.1f} GB，"
                        "materialized 时 {materialized_gb:.1f} GB；每条序列的激活值 "
                        "{act_fused_gb:.1f} / {act_materialized_gb:.1f} GB"},
    "numbers.4": {"en": "TP t=8, GPT-3 layer: message {message_mib:.0f} MiB, {collectives} "
                        "all-reduces, {step_mib:.0f} MiB per GPU per layer per step (SP "
                        "{sp_step_mib:.0f})",
                  "zh": "TP t=8，GPT-3 的一层：每条消息 {message_mib:.0f} MiB，{collectives} 次 "
                        "all-reduce，每层每步每卡 {step_mib:.0f} MiB（SP 时 {sp_step_mib:.0f}）"},
    "numbers.5": {"en": "bubble P=4 M=8: {fraction:.1%} of the step, {ratio:.1%} of ideal; v=2 "
                        "{interleaved_v2:.1%}; M=4P at P=4 {at_4p_4:.1%}",
                  "zh": "气泡 P=4 M=8：占整步的 {fraction:.1%}，理想时间的 {ratio:.1%}；v=2 时 "
                        "{interleaved_v2:.1%}；M=4P、P=4 时 {at_4p_4:.1%}"},
    "numbers.6": {"en": "Mixtral top-{top_k}: {slots} slots per expert for {tokens} tokens, "
                        "{experts} experts, cf {cf}",
                  "zh": "Mixtral top-{top_k}：{tokens} 个 token、{experts} 个专家，每个专家 {slots} "
                        "个槽位，cf {cf}"},
    "numbers.7": {"en": "GPT-3 8x64x64: {gpt3_gpus} GPUs, {layers_per_stage} layers per stage; "
                        "1T at 52% HFU = {mfu_1t:.0%} MFU",
                  "zh": "GPT-3 8x64x64：{gpt3_gpus} 张卡，每个阶段 {layers_per_stage} 层；1T 的 52% HFU "
                        "= {mfu_1t:.0%} MFU"},
    "numbers.8": {"en": "Llama 3: {per_day:.2f} interruptions a day; C = 2.4 s: tau* {young_s:.0f} "
                        "s, goodput {goodput:.1%}",
                  "zh": "Llama 3：每天中断 {per_day:.2f} 次；C = 2.4 s 时 tau* = {young_s:.0f} s，"
                        "goodput {goodput:.1%}"},
}

# Why the planner refuses a layout (exercises.planner_why): the English is the planner's
# own sentence (``planner.plan``'s Infeasible reasons), the Chinese says the same
TEXT.update({
    "why.no_fit": {"en": "doesn't fit: needs {need} GB of {cap} GB per GPU ({short} GB short) "
                         "even at micro-batch {b}, {zero}, recompute={recompute}{sp}",
                   "zh": "放不下：即使微批次取 {b}、{zero}、recompute={recompute}{sp}，每卡仍需 "
                         "{need} GB，而显存只有 {cap} GB（差 {short} GB）"},
    "why.sp": {"en": ", sequence parallel", "zh": "、序列并行"},
    "why.heads": {"en": "tp={tp} must divide n_heads={heads} (each rank holds whole heads)",
                  "zh": "tp={tp} 必须整除 n_heads={heads}（每个 rank 要持有完整的注意力头）"},
    "why.kv_heads": {"en": "tp={tp} must divide n_kv_heads={kv} or be a multiple of it",
                     "zh": "tp={tp} 必须整除 n_kv_heads={kv}，或者是它的整数倍"},
    "why.pp_layers": {"en": "pp={pp} must divide n_layers={layers} (equal stages; "
                            "uneven_stages=True times the slowest one)",
                      "zh": "pp={pp} 必须整除 n_layers={layers}（各阶段层数相等；设 uneven_stages=True "
                            "则按最慢的阶段计时）"},
    "why.pp_max": {"en": "pp={pp} must be <= n_layers={layers} (a stage needs a layer)",
                   "zh": "pp={pp} 必须 <= n_layers={layers}（每个阶段至少要有一层）"},
    "why.batch": {"en": "global_batch={batch} must be divisible by dp={dp}",
                  "zh": "global_batch={batch} 必须能被 dp={dp} 整除"},
})
