"""Notebook 09's follow-up answers (``FOLLOW_UPS``) and the claims table's words
(``CLAIMS``) in English and Chinese, read through ``text``.
"""

# The follow-ups' answers (followups.follow_ups): for follow-up n, "fu{n}.origin", its
# sentences "fu{n}.1", "fu{n}.2", ... in order and "fu{n}.verdict"; numbers from facts()
FOLLOW_UPS = {
    "fu1.origin": {"en": "From the interview text's follow-up 1.", "zh": "出自面试文本的追问 1。"},
    "fu1.1": {"en": "One all-reduce moves b·s·h·2 bytes: {message_mib:.0f} MiB for GPT-3 "
                    "(h = 12288, s = 2048, b = 1), as usually quoted.",
              "zh": "一次 all-reduce 传输 b·s·h·2 字节：GPT-3（h = 12288，s = 2048，b = 1）是 "
                    "{message_mib:.0f} MiB，也就是常被引用的那个数。"},
    "fu1.2": {"en": "But a Megatron layer issues {collectives} of them per training step "
                    "({forward} in forward, {backward} in backward), each sending 2(t−1)/t of the "
                    "message: {step_mib:.0f} MiB per GPU per layer at t = 8, not {seed_mib:.0f} MiB.",
              "zh": "但 Megatron 的一层在每个训练步里要做 {collectives} 次（前向 {forward} 次，反向 "
                    "{backward} 次），每次每张卡发送消息的 2(t−1)/t：t = 8 时每层每卡 "
                    "{step_mib:.0f} MiB，而不是 {seed_mib:.0f} MiB。"},
    "fu1.3": {"en": "Sequence parallelism replaces each all-reduce by a reduce-scatter and an "
                    "all-gather of the same total: it cuts activation memory, not traffic "
                    "({sp_step_mib:.0f} MiB with the backward re-gather).",
              "zh": "序列并行把每次 all-reduce 换成一次 reduce-scatter 加一次 all-gather，总量不变："
                    "它省的是激活值显存，不是通信量（算上反向时的再次 all-gather，是 "
                    "{sp_step_mib:.0f} MiB）。"},
    "fu1.4": {"en": "Overlap is the lever: backward's all-reduces hide behind weight-gradient "
                    "GEMMs, and forward's only when the GEMM is chunked against the all-gather / "
                    "reduce-scatter (Wang et al. 2023; Megatron's tp_comm_overlap). Running "
                    "LayerNorm during the all-reduce cannot work: it needs the all-reduce's output.",
              "zh": "真正起作用的是重叠：反向的 all-reduce 可以藏在权重梯度的 GEMM 后面；前向的只有把 "
                    "GEMM 切块、与 all-gather / reduce-scatter 交替流水时才藏得住（Wang 等 2023；"
                    "Megatron 的 tp_comm_overlap）。趁 all-reduce 时跑 LayerNorm 是行不通的："
                    "LayerNorm 的输入正是 all-reduce 的输出。"},
    "fu1.verdict": {"en": "The message size holds; the count per step and the SP claim do not.",
                    "zh": "单条消息的大小没错；每步的次数、以及序列并行能减少通信量的说法都不对。"},
    "fu2.origin": {"en": "From the interview text's follow-up 2.", "zh": "出自面试文本的追问 2。"},
    "fu2.1": {"en": "Idle / total = (P−1)/(M+P−1) = {fraction:.1%} at P = {p}, M = {m}; idle / "
                    "ideal = (P−1)/M = {ratio:.1%}: one bubble over two denominators, not GPipe's "
                    "against 1F1B's.",
              "zh": "空闲 / 总时间 = (P−1)/(M+P−1)，P = {p}、M = {m} 时为 {fraction:.1%}；空闲 / "
                    "理想时间 = (P−1)/M = {ratio:.1%}：这是同一个气泡除以两个不同的分母，"
                    "而不是 GPipe 和 1F1B 各自的气泡。"},
    "fu2.2": {"en": "GPipe and 1F1B have the same bubble, measured on real ranks; 1F1B holds at "
                    "most P micro-batches' activations where GPipe holds M.",
              "zh": "在真实的 rank 上测得 GPipe 和 1F1B 的气泡一样大；区别是 1F1B 最多只保存 P 个"
                    "微批次的激活值，GPipe 要保存 M 个。"},
    "fu2.3": {"en": "At M = 4P the bubble is (P−1)/(5P−1): {at_4p_4:.1%} at P = 4 and "
                    "{at_4p_64:.1%} at P = 64, so 'under 15% once M ≥ 4P' holds only for P ≤ 3.",
              "zh": "M = 4P 时气泡是 (P−1)/(5P−1)：P = 4 时 {at_4p_4:.1%}，P = 64 时 "
                    "{at_4p_64:.1%}；所以「只要 M ≥ 4P 就低于 15%」只在 P ≤ 3 时成立。"},
    "fu2.4": {"en": "What shrinks it: more micro-batches, interleaving ({interleaved_v2:.1%} at "
                    "v = 2, P = 4, M = 8), or a zero-bubble schedule.",
              "zh": "能缩小气泡的是：更多的微批次、交错调度（v = 2、P = 4、M = 8 时 "
                    "{interleaved_v2:.1%}），或者零气泡调度。"},
    "fu2.verdict": {"en": "Same bubble for both; 1F1B saves memory, not idle time.",
                    "zh": "两者气泡相同；1F1B 省的是显存，不是空闲时间。"},
    "fu3.origin": {"en": "From the interview text's follow-up 3.", "zh": "出自面试文本的追问 3。"},
    "fu3.1": {"en": "The weights are {fp16_gb:.1f} GB in fp16 ({params_e9:.2f}e9 parameters), but "
                    "training keeps {bytes_per_param:.0f} bytes per parameter: with one 2048-token "
                    "sequence per GPU, plain DDP needs {ddp_none_gb:.1f} GB per GPU without "
                    "recomputation and still {ddp_full_gb:.1f} GB with full recomputation. It does "
                    "not fit.",
              "zh": "fp16 的权重是 {fp16_gb:.1f} GB（{params_e9:.2f}e9 个参数），但训练时每个参数要占 "
                    "{bytes_per_param:.0f} 字节：每卡一条 2048 token 的序列，普通 DDP 不做重计算时每卡"
                    "要 {ddp_none_gb:.1f} GB，做完整重计算也还要 {ddp_full_gb:.1f} GB。放不下。"},
    "fu3.2": {"en": "ZeRO-1 (shard Adam's states) fits: {zero1_gb:.1f} GB without recomputation, "
                    "{zero1_full_gb:.1f} GB with full; no TP or PP is needed.",
              "zh": "ZeRO-1（切分 Adam 的优化器状态）就放得下：不做重计算 {zero1_gb:.1f} GB，完整"
                    "重计算 {zero1_full_gb:.1f} GB；不需要 TP 或 PP。"},
    "fu3.3": {"en": "Those figures are the memory calculator's, which keeps the attention scores "
                    "(materialized attention): {act_materialized_gb:.1f} GB of activations per "
                    "sequence. The planner assumes a fused kernel (FlashAttention keeps no s × s "
                    "scores): {act_fused_gb:.1f} GB per sequence.",
              "zh": "这些数来自显存计算器，它把注意力分数矩阵存了下来（materialized 注意力）："
                    "每条序列 {act_materialized_gb:.1f} GB 激活值。规划器假设用融合算子"
                    "（FlashAttention 不保存 s × s 的分数）：每条序列 {act_fused_gb:.1f} GB。"},
    "fu3.4": {"en": "So the planner's fastest layout, {best_7b} ({shards}), needs {best_gb:.1f} GB per GPU with {attention} attention; with "
                    "materialized attention the same layout would need {materialized_gb:.1f} GB, "
                    "and micro-batch {max_b_materialized} is the most that fits.",
              "zh": "所以规划器选出的最快布局 {best_7b}（{shards}）用{attention}注意力时"
                    "每卡要 {best_gb:.1f} GB；同一布局若存下分数矩阵，需要 {materialized_gb:.1f} GB，"
                    "微批次最多只能取 {max_b_materialized}。"},
    "fu3.5": {"en": "'Below 20 GB with recomputation' never holds on 4 GPUs: even ZeRO-3 with "
                    "full recomputation needs {zero3_full_gb:.1f} GB.",
              "zh": "「用了重计算就低于 20 GB」在 4 张卡上怎么都不成立：即使 ZeRO-3 加完整重计算也要 "
                    "{zero3_full_gb:.1f} GB。"},
    "fu3.6": {"en": "The speedup over one GPU is not a fixed 3.5×: it depends on the link, the "
                    "batch per GPU and how much of the all-reduce hides behind backward.",
              "zh": "相对单卡的加速比并不是固定的 3.5×：它取决于互连带宽、每卡的批大小，以及 "
                    "all-reduce 有多少能藏在反向计算后面。"},
    "fu3.verdict": {"en": "No TP or PP, right; plain DDP, wrong: ZeRO-1 or more.",
                    "zh": "不用 TP 和 PP，对；只用普通 DDP，不对：至少要 ZeRO-1。"},
    "fu4.origin": {"en": "Not one of the interview text's follow-ups: its list of common mistakes "
                         "asks for concrete degrees, each with its reason.",
                   "zh": "不是面试文本里的追问：它的「常见错误答法」要求给出具体的并行度，"
                         "并说明每个取值的理由。"},
    "fu4.1": {"en": "For 13B on one 8-GPU A100 node, the quoted TP = 4 + PP = 2 ranks "
                    "#{thirteen_rank} of {thirteen_of} in the planner, {thirteen_slower:+.0%} "
                    "against the best, {best13}; 'TP = 8 first' ranks #{rule13_rank}.",
              "zh": "13B 模型放在一台 8 卡 A100 节点上：文中的 TP = 4 + PP = 2 在规划器的 "
                    "{thirteen_of} 个布局里排第 {thirteen_rank}，与最优布局 {best13} 相差 "
                    "{thirteen_slower:+.0%}；「先把 TP 开到 8」排第 {rule13_rank}。"},
    "fu4.2": {"en": "TP belongs inside the node because it all-reduces in every layer; past a "
                    "node each collective crosses the network cards.",
              "zh": "TP 应该留在节点内，因为它每一层都要做 all-reduce；一旦跨出节点，每次集合通信都要"
                    "经过网卡。"},
    "fu4.3": {"en": "Use the smallest PP that fits, and DP (with ZeRO) for the rest: the walk-"
                    "through below does this for any model and cluster.",
              "zh": "PP 取能放下的最小深度，剩下的卡都做 DP（配合 ZeRO）：下面的决策演练对任意模型和"
                    "集群都按这个步骤来。"},
    "fu4.verdict": {"en": "Give the degrees with the reason each is needed, checked by a cost "
                          "model.",
                    "zh": "给出每个并行度以及它为什么必要，再用代价模型核对。"},
}

# The claims table (followups.claims): for each claim of seed_claims.SEED_CLAIMS, "{id}.why"
# (after its verdict) and, where a figure settles it, "{id}.figure"
CLAIMS = {
    "four_kinds.why": {"en": "context parallelism is a fifth axis, and ZeRO/FSDP shards what DP "
                             "copies",
                       "zh": "上下文并行是第五个维度；而且 ZeRO/FSDP 会切分数据并行原本整份复制的状态"},
    "four_kinds.figure": {"en": "CP splits one sequence that does not fit",
                          "zh": "CP 切分的是一条单卡放不下的长序列"},
    "dp_idea.why": {"en": "and it is exact: single-device training on the global batch",
                    "zh": "而且结果精确，等同于单卡在全局批次上训练"},
    "dp_idea.figure": {"en": "DDP starts the all-reduce during backward, bucket by bucket",
                       "zh": "DDP 在反向过程中按桶逐个发起 all-reduce"},
    "dp_when.why": {"en": "with ZeRO/FSDP, DP also trains what does not fit",
                    "zh": "有了 ZeRO/FSDP，单卡放不下的模型也能用数据并行训练"},
    "dp_when.figure": {"en": "7B on 4 GPUs, no recomputation: plain DDP {ddp_none_gb:.1f} GB, "
                             "ZeRO-1 {zero1_gb:.1f} GB per GPU",
                       "zh": "7B、4 张卡、不做重计算：普通 DDP 每卡 {ddp_none_gb:.1f} GB，ZeRO-1 每卡 "
                             "{zero1_gb:.1f} GB"},
    "dp_linear.why": {"en": "not with a ring", "zh": "用环形算法时不是这样"},
    "dp_linear.figure": {"en": "{ring8:.2f}× the gradient at 8 GPUs, {ring1024:.3f}× at 1024; in "
                               "NVIDIA's {weak_n} weak-scaling sweeps (up to {weak_gpus:,} GPUs) a "
                               "step grows {weak_max:.0%} at most",
                         "zh": "每卡发送量：8 卡时是梯度的 {ring8:.2f} 倍，1024 卡时 {ring1024:.3f} 倍；"
                               "NVIDIA 的 {weak_n} 组弱扩展实测（每卡批量不变，最多 {weak_gpus:,} 卡）中，"
                               "每步耗时最多只增加 {weak_max:.0%}"},
    "ddp_ring.why": {"en": "DDP only calls the backend's all-reduce; NCCL picks ring or tree per "
                           "call",
                     "zh": "DDP 只是调用后端的 all-reduce；每次用环形还是树形算法由 NCCL 决定"},
    "ddp_ring.figure": {"en": "rings for large messages, trees for small ones over many nodes",
                        "zh": "大消息用环；节点多、消息小时用树"},
    "ring_o1.why": {"en": "only the bytes per GPU are O(1)", "zh": "只有每卡发送的字节数是 O(1)"},
    "ring_o1.figure": {"en": "{ring1024:.3f}× the gradient at 1024 GPUs, but {ring_steps:,} "
                             "sequential steps",
                       "zh": "1024 卡时每卡发送梯度的 {ring1024:.3f} 倍，但要走 {ring_steps:,} 个串行步骤"},
    "cross_node_batch.why": {"en": "more work per GPU gives backward more time to hide the same "
                                   "all-reduce; it also changes the optimisation's batch",
                             "zh": "每卡计算量变大，反向就有更多时间去掩盖同样的 all-reduce；"
                                   "但这也改变了优化所用的批大小"},
    "cross_node_batch.figure": {"en": "the bytes per all-reduce do not change",
                                "zh": "每次 all-reduce 的字节数并没有变"},
    "compression_cost.why": {"en": "a compressor drops information; how much loss it costs "
                                   "depends on the compressor and on error feedback",
                             "zh": "压缩必然丢信息；对损失的影响有多大，取决于压缩方法和有没有误差反馈"},
    "compression_cost.figure": {"en": "fp16, top-k and 1-bit sign against exact training",
                                "zh": "fp16、top-k 和 1-bit 符号压缩与精确训练的对比"},
    "compression_10g.why": {"en": "the threshold is a ratio, not a link speed",
                            "zh": "门槛是一个比值，不是某个链路速率"},
    "compression_10g.figure": {"en": "gradient bytes against compute time",
                               "zh": "梯度字节数与计算时间之比"},
    "tp_idea.why": {"en": "column then row: one sum per block", "zh": "先按列、再按行，每个块只需求和一次"},
    "tp_columns.why": {"en": "Shoeybi et al. 2019, §3", "zh": "Shoeybi 等 2019，§3"},
    "tp_columns.figure": {"en": "{forward} all-reduces per layer in forward",
                          "zh": "前向每层 {forward} 次 all-reduce"},
    "tp_once.why": {"en": "every layer, every step", "zh": "每一层、每一步都要通信"},
    "tp_once.figure": {"en": "{collectives} all-reduces per layer per step",
                       "zh": "每层每步 {collectives} 次 all-reduce"},
    "tp_layer_gb.why": {"en": "a layer fits easily; the whole model's training state does not",
                        "zh": "一层轻松放得下；放不下的是整个模型的训练状态"},
    "tp_layer_gb.figure": {"en": "one layer: 12·h² = {layer_params:,} parameters = "
                                 "{layer_param_gb:.1f} GB in fp16; {layer_act_gb:.1f} GB of "
                                 "activations at b = 1, s = 2048",
                           "zh": "一层：12·h² = {layer_params:,} 个参数，fp16 下 {layer_param_gb:.1f} GB；"
                                 "b = 1、s = 2048 时激活值 {layer_act_gb:.1f} GB"},
    "tp_fwd_bwd_once.why": {"en": "two each way", "zh": "前向、反向各两次"},
    "tp_fwd_bwd_once.figure": {"en": "{forward} in forward, {backward} in backward",
                               "zh": "前向 {forward} 次，反向 {backward} 次"},
    "nvlink_600.why": {"en": "600 GB/s is both directions added", "zh": "600 GB/s 是两个方向加起来的"},
    "nvlink_600.figure": {"en": "NVLink3: {nv_dir:g} GB/s each way, {nv_total:g} total; a ring "
                                "uses one direction's",
                          "zh": "NVLink3：每个方向 {nv_dir:g} GB/s，合计 {nv_total:g}；环形算法用的是单向带宽"},
    "tp_cross_node.why": {"en": "efficiency falls across nodes, mostly by bandwidth, and far less "
                                "than a collapse with a network card per GPU",
                          "zh": "跨节点效率确实会降，主要是带宽所限；每张 GPU 配一块网卡时，远谈不上暴跌"},
    "tp_cross_node.figure": {"en": "IB HDR {ib_hdr:g} GB/s per card against NVLink3's "
                                   "{nv_dir:g} GB/s",
                             "zh": "IB HDR 每块网卡 {ib_hdr:g} GB/s，NVLink3 则是 {nv_dir:g} GB/s"},
    "pp_idea.why": {"en": "stages pass activations point to point", "zh": "阶段之间点对点传递激活值"},
    "pp_schedules.why": {"en": "both are orders of the same forwards and backwards",
                         "zh": "两者只是同一组前向和反向的不同排列顺序"},
    "pp_when.why": {"en": "memory sets the depth, the smallest that fits; the layer count only "
                          "caps it",
                    "zh": "深度由显存决定，取放得下的最小值；层数只是它的上限"},
    "pp_when.figure": {"en": "pp must divide the layers", "zh": "pp 必须整除层数"},
    "bubble_50_20.why": {"en": "the same bubble for both", "zh": "两者的气泡一样大"},
    "bubble_50_20.figure": {"en": "both (P−1)/(M+P−1); M = {m20} reaches 20% at P = {p}",
                            "zh": "两者都是 (P−1)/(M+P−1)；P = {p} 时要 M = {m20} 才降到 20%"},
    "m_4p_hide.why": {"en": "M = 4P keeps the bubble under 20%, it does not hide it",
                      "zh": "M = 4P 能让气泡低于 20%，但并不能把它藏掉"},
    "m_4p_hide.figure": {"en": "(P−1)/(5P−1): {at_4p_4:.1%} at P = 4, {at_4p_1024:.1%} at P = 1024",
                         "zh": "(P−1)/(5P−1)：P = 4 时 {at_4p_4:.1%}，P = 1024 时 {at_4p_1024:.1%}"},
    "more_m_memory.why": {"en": "true of GPipe; 1F1B keeps at most P micro-batches",
                          "zh": "对 GPipe 成立；1F1B 最多只保存 P 个微批次"},
    "more_m_memory.figure": {"en": "P = {p}, M = {peak_m}: GPipe keeps {gpipe_peak}, 1F1B "
                                   "{f1b_peak}",
                             "zh": "P = {p}、M = {peak_m}：GPipe 保存 {gpipe_peak} 个，1F1B 保存 "
                                   "{f1b_peak} 个"},
    "recompute_trade.why": {"en": "full recomputation repeats the forward",
                            "zh": "完整重计算相当于把前向再算一遍"},
    "three_d.why": {"en": "one mesh, TP innermost", "zh": "同一个设备网格，TP 在最内层"},
    "placement.why": {"en": "TP all-reduces in every layer, PP sends one activation per "
                            "micro-batch per stage boundary",
                      "zh": "TP 每层都做 all-reduce；PP 每个微批次在每个阶段边界只发送一次激活值"},
    "gpt3_layout.why": {"en": "the layers do not divide, and GPT-3 was not trained so",
                        "zh": "层数分不均，而且 GPT-3 并不是这样训练的"},
    "gpt3_layout.figure": {"en": "8 × 64 × 64 = {gpt3_gpus:,} GPUs, {layers_per_stage:g} of 96 "
                                 "layers per stage",
                           "zh": "8 × 64 × 64 = {gpt3_gpus:,} 张卡，96 层每个阶段分到 "
                                 "{layers_per_stage:g} 层"},
    "gpt3_312.why": {"en": "312 is the A100's 16-bit peak", "zh": "312 是 A100 的 16 位峰值算力"},
    "gpt3_312.figure": {"en": "52% of 312 is {at_52:.0f}; Megatron's 52% is the 1T model's, "
                              "{mfu_1t:.0%} in model FLOPs",
                        "zh": "312 的 52% 是 {at_52:.0f}；Megatron 的 52% 是 1T 模型的数，按模型 FLOPs "
                              "算是 {mfu_1t:.0%}"},
    "tune_ratio.why": {"en": "the balance matters, but a cost model ranks every layout instead of "
                             "hand tuning",
                       "zh": "比例确实要紧，但应让代价模型给所有布局排序，而不是手工去调"},
    "tp_first.why": {"en": "right only when the model needs TP", "zh": "只有模型确实需要 TP 时才对"},
    "tp_first.figure": {"en": "13B on 8 A100: TP-first ranks #{rule13_rank} of {rule13_of}",
                        "zh": "13B、8 张 A100：先定 TP 的布局在 {rule13_of} 个里排第 {rule13_rank}"},
    "ep_idea.why": {"en": "tokens travel by all-to-all", "zh": "token 通过 all-to-all 发送"},
    "mixtral_experts.why": {"en": "8 experts per layer (Jiang et al. 2024)",
                            "zh": "每层只有 8 个专家（Jiang 等 2024）"},
    "mixtral_experts.figure": {"en": "EP of 8 at most", "zh": "EP 最多为 8"},
    "hot_10x.why": {"en": "a skew a router can produce, not a constant",
                    "zh": "这是路由器可能产生的偏斜，不是一个常数"},
    "hot_10x.figure": {"en": "drops measured balanced and skewed",
                       "zh": "负载均衡与偏斜两种情况下实测的丢弃量"},
    "aux_loss.why": {"en": "it pushes towards balance; capacity still drops the overflow",
                     "zh": "它把负载往均衡的方向推；超出容量的 token 照样被丢弃"},
    "aux_loss.figure": {"en": "drops with and without the loss", "zh": "加与不加辅助损失时的丢弃量"},
    "cf_125.why": {"en": "a capacity factor caps, it does not balance",
                   "zh": "容量因子只设上限，不负责均衡"},
    "cf_125.figure": {"en": "top-{top_k} (Mixtral): {slots:,} slots per expert for {tokens:,} "
                            "tokens on {experts} experts (k·T·cf/E)",
                      "zh": "top-{top_k}（Mixtral）：{tokens:,} 个 token、{experts} 个专家时，每个专家 "
                            "{slots:,} 个槽位（k·T·cf/E）"},
    "topology.why": {"en": "the links decide where each axis can go",
                     "zh": "互连决定了每个并行维度能放在哪一层级"},
    "must_3d.why": {"en": "only when the model needs every axis",
                    "zh": "只有模型确实需要每个维度时才如此"},
    "must_3d.figure": {"en": "the planner's best for 7B on 4 A100s: {best_7b}",
                       "zh": "规划器给 7B、4 张 A100 选出的最优布局：{best_7b}"},
    "tp_two_fwd.why": {"en": "attention output and MLP output", "zh": "注意力输出和 MLP 输出各一次"},
    "tp_two_fwd.figure": {"en": "{forward} in forward", "zh": "前向 {forward} 次"},
    "tp_48mb.why": {"en": "b·s·h·2 bytes, in MiB", "zh": "b·s·h·2 字节，单位是 MiB"},
    "tp_48mb.figure": {"en": "{message_mib:.0f} MiB per message", "zh": "每条消息 {message_mib:.0f} MiB"},
    "tp_96mb.why": {"en": "two messages, not a layer's traffic", "zh": "这只是两条消息，不是一层的通信量"},
    "tp_96mb.figure": {"en": "{step_mib:.0f} MiB sent per GPU per layer per step",
                       "zh": "每层每步每卡发送 {step_mib:.0f} MiB"},
    "sp_comm.why": {"en": "it saves memory, not traffic", "zh": "它省的是显存，不是通信量"},
    "sp_comm.figure": {"en": "{sp_step_mib:.0f} MiB vs {step_mib:.0f} MiB per layer",
                       "zh": "每层 {sp_step_mib:.0f} MiB 对比 {step_mib:.0f} MiB"},
    "layernorm_overlap.why": {"en": "LayerNorm needs the all-reduce's output",
                              "zh": "LayerNorm 要用 all-reduce 的结果作输入"},
    "layernorm_overlap.figure": {"en": "chunked GEMMs overlap", "zh": "切块的 GEMM 才能重叠"},
    "overlap_5_10.why": {"en": "no run or paper is given", "zh": "没有给出任何实验或论文"},
    "overlap_5_10.figure": {"en": "what each overlap hides, modelled",
                            "zh": "用模型估算每种重叠能藏住多少"},
    "bubble_formula.why": {"en": "the idle share of the step", "zh": "这是一步里空闲时间的占比"},
    "bubble_formula.figure": {"en": "{fraction:.1%} at P = {p}, M = {m}",
                              "zh": "P = {p}、M = {m} 时为 {fraction:.1%}"},
    "gpipe_vs_1f1b.why": {"en": "one bubble, two denominators", "zh": "同一个气泡，两个分母"},
    "gpipe_vs_1f1b.figure": {"en": "{ratio:.1%} of ideal = {fraction:.1%} of the step",
                             "zh": "理想时间的 {ratio:.1%} = 整步时间的 {fraction:.1%}"},
    "under_15.why": {"en": "holds only for P ≤ 3", "zh": "只在 P ≤ 3 时成立"},
    "under_15.figure": {"en": "{at_4p_4:.1%} at P = 4, {at_4p_1024:.1%} at P = 1024",
                        "zh": "P = 4 时 {at_4p_4:.1%}，P = 1024 时 {at_4p_1024:.1%}"},
    "7b_14gb.why": {"en": "{params_e9:.2f}e9 parameters × 2 bytes",
                    "zh": "{params_e9:.2f}e9 个参数 × 2 字节"},
    "7b_14gb.figure": {"en": "{fp16_gb:.1f} GB", "zh": "{fp16_gb:.1f} GB"},
    "7b_one_card.why": {"en": "the training state does not fit", "zh": "训练状态放不下"},
    "7b_one_card.figure": {"en": "plain DDP: {ddp_none_gb:.1f} GB per GPU without recomputation, "
                                 "{ddp_full_gb:.1f} GB with full",
                           "zh": "普通 DDP：不做重计算每卡 {ddp_none_gb:.1f} GB，完整重计算 "
                                 "{ddp_full_gb:.1f} GB"},
    "no_tp_pp.why": {"en": "ZeRO-1 or more is enough", "zh": "ZeRO-1 或更高的级别就够了"},
    "no_tp_pp.figure": {"en": "the planner's best: {best_7b}", "zh": "规划器的最优布局：{best_7b}"},
    "speedup_35.why": {"en": "a number without its conditions", "zh": "只给了数，没给条件"},
    "speedup_35.figure": {"en": "link, batch per GPU and overlap", "zh": "互连、每卡批大小和重叠程度"},
    "grad_accum.why": {"en": "summed gradients equal the large batch's",
                       "zh": "累加起来的梯度等于大批次的梯度"},
    "grad_accum.figure": {"en": "the same update, fewer all-reduces",
                          "zh": "更新一样，all-reduce 更少"},
    "recompute_20gb.why": {"en": "not on 4 GPUs", "zh": "4 张卡上做不到"},
    "recompute_20gb.figure": {"en": "ZeRO-3 with full recomputation: {zero3_full_gb:.1f} GB",
                              "zh": "ZeRO-3 加完整重计算：{zero3_full_gb:.1f} GB"},
    "async.why": {"en": "stale gradients; synchronous DP is exact",
                  "zh": "梯度会过时；同步的数据并行才是精确的"},
    "tp_vs_pp_comm.why": {"en": "collectives inside the layer, send/recv between stages",
                          "zh": "层内做集合通信，阶段之间用 send/recv"},
    "thirteen_b.why": {"en": "TP = 8 is slower than TP = 4, but not because NVLink saturates, "
                             "and TP = 4 + PP = 2 is not the best either",
                       "zh": "TP = 8 确实比 TP = 4 慢，但原因不是 NVLink 饱和；而且 TP = 4 + PP = 2 "
                             "也不是最优"},
    "thirteen_b.figure": {"en": "TP = 4 + PP = 2 ranks #{thirteen_rank} of {thirteen_of}, TP = 8 "
                                "#{rule13_rank}; the best is {best13}",
                          "zh": "TP = 4 + PP = 2 在 {thirteen_of} 个布局里排第 {thirteen_rank}，"
                                "TP = 8 排第 {rule13_rank}；最优的是 {best13}"},
    "ref_megatron.why": {"en": "Shoeybi et al., arXiv 1909.08053", "zh": "Shoeybi 等，arXiv 1909.08053"},
    "ref_gpipe.why": {"en": "Huang et al., NeurIPS 2019, arXiv 1811.06965",
                      "zh": "Huang 等，NeurIPS 2019，arXiv 1811.06965"},
    "ref_deepspeed.why": {"en": "Rasley et al., KDD 2020; ZeRO itself is Rajbhandari et al., SC "
                                "2020",
                          "zh": "Rasley 等，KDD 2020；ZeRO 本身是 Rajbhandari 等，SC 2020"},
    "ref_narayanan.why": {"en": "Narayanan et al., SC 2021, arXiv 2104.04473",
                          "zh": "Narayanan 等，SC 2021，arXiv 2104.04473"},
    "ref_sp.why": {"en": "Li et al., arXiv 2105.13120 (2021; ACL 2023): ring self-attention over "
                         "the sequence, closer to CP; Megatron's SP is Korthikanti et al., arXiv "
                         "2205.05198",
                   "zh": "Li 等，arXiv 2105.13120（2021；ACL 2023）：沿序列做环形自注意力，更接近 CP；"
                         "Megatron 的 SP 是 Korthikanti 等，arXiv 2205.05198"},
}
