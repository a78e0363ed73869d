"""The interview text's factual claims, sentence by sentence, in its order: the checklist
the claims table must cover (a test holds ``followups.claims()`` to it). Each entry:
(id, the part of the text it comes from, the claim: ``en`` in our words, ``zh`` the
text's own words, quoted, "……" where a part is left out). Framing, advice without
a checkable content and anecdotes (a 1.3B demo "on 4 cards") are left out."""

from __future__ import annotations

STANDARD = "standard answer"
THIRTY = "30-second template"
MISTAKES = "common mistakes"
RESUME = "résumé advice"
READING = "reading list"

SEED_CLAIMS: tuple[tuple[str, str, dict], ...] = (
    # the standard answer: DP
    ("four_kinds", STANDARD,
     {"en": "Four kinds of parallelism: data, tensor, pipeline, expert",
      "zh": "主流策略分四类，按切分维度排列"}),
    ("dp_idea", STANDARD,
     {"en": "DP: a full copy per GPU, its own data, gradients all-reduced after backward",
      "zh": "每张卡持有完整模型副本，各自处理不同 batch 数据，前向/反向后通过 AllReduce 同步梯度"}),
    ("dp_when", STANDARD,
     {"en": "DP is for a model that fits on one GPU",
      "zh": "适用：单卡能装下模型，但数据量大、需要加速"}),
    ("dp_linear", STANDARD,
     {"en": "DP's communication grows linearly with the GPUs",
      "zh": "坑：通信开销随卡数线性增长"}),
    ("ddp_ring", STANDARD,
     {"en": "PyTorch DDP uses ring all-reduce by default",
      "zh": "用 PyTorch DDP 时，默认用 Ring AllReduce"}),
    ("ring_o1", STANDARD,
     {"en": "Ring all-reduce takes DP's communication from O(N) to O(1)",
      "zh": "Ring AllReduce 把通信复杂度从 O(N) 降到 O(1)"}),
    ("cross_node_batch", STANDARD,
     {"en": "Fine within 8 GPUs; across nodes, raise the batch size to synchronise less often",
      "zh": "8 卡内效果不错，跨机时需调大 batch size 减少同步频率"}),
    ("compression_cost", STANDARD,
     {"en": "Gradient compression (1-bit SGD) cuts traffic but may hurt convergence",
      "zh": "梯度压缩（如 1-bit SGD）能降通信量，但可能影响收敛精度"}),
    ("compression_10g", STANDARD,
     {"en": "Use gradient compression only below 10 Gbps",
      "zh": "一般只在带宽 < 10Gbps 时启用"}),
    # TP
    ("tp_idea", STANDARD,
     {"en": "TP splits each matmul over GPUs and all-reduces the partial results",
      "zh": "把单个算子（如 Transformer 的 Attention 或 FFN）的矩阵乘法切分到多卡，每卡算一部分，最后 AllReduce 合并"}),
    ("tp_columns", STANDARD,
     {"en": "Megatron splits Q/K/V by columns and the output projection by rows",
      "zh": "Megatron-LM 把 Q/K/V 投影按列切分，输出投影按行切分"}),
    ("tp_once", STANDARD,
     {"en": "TP communicates once per step",
      "zh": "每步通信一次"}),
    ("tp_layer_gb", STANDARD,
     {"en": "TP is for a layer that does not fit: 175B has 2.8 GB of parameters plus "
            "activations per layer",
      "zh": "适用：单卡显存放不下一个层（如 175B 模型每层 2.8GB 参数 + 激活）"}),
    ("tp_fwd_bwd_once", STANDARD,
     {"en": "Each layer does one all-reduce in forward and one in backward",
      "zh": "每层 forward/backward 各一次 AllReduce"}),
    ("nvlink_600", STANDARD,
     {"en": "A DGX A100's NVLink gives 600 GB/s",
      "zh": "NVIDIA DGX A100 用 NVLink 600GB/s 带宽"}),
    ("tp_cross_node", STANDARD,
     {"en": "TP works best in one node; across nodes network latency makes its efficiency "
            "collapse",
      "zh": "TP 在单机内效果最好；跨机用 TP 会因网络延迟导致效率暴跌"}),
    # PP
    ("pp_idea", STANDARD,
     {"en": "PP puts consecutive layers on different GPUs; data flows through them like a "
            "pipeline",
      "zh": "把模型按层切分到不同设备……数据像流水线一样依次流过各设备"}),
    ("pp_schedules", STANDARD,
     {"en": "The classic schedules: GPipe (micro-batches) and 1F1B",
      "zh": "经典调度：GPipe（微批次）和 1F1B（一次前向一次反向）"}),
    ("pp_when", STANDARD,
     {"en": "PP is for many layers (over 40) when a few consecutive layers fit on a GPU",
      "zh": "适用：模型层数多（>40 层），且单卡能装下连续几层"}),
    ("bubble_50_20", STANDARD,
     {"en": "1F1B cuts GPipe's bubble from 50% to about 20% on 4 GPUs",
      "zh": "1F1B 调度把气泡率从 GPipe 的 50% 降到约 20%（4 卡时）"}),
    ("m_4p_hide", STANDARD,
     {"en": "Hiding the bubble needs M ≥ 4 × the pipeline depth",
      "zh": "需要微批次数量 ≥ 4×流水线深度才能掩盖"}),
    ("more_m_memory", STANDARD,
     {"en": "More micro-batches lower the bubble but keep more activations",
      "zh": "增大微批次数量能降气泡，但会增加显存（需存更多中间激活）"}),
    ("recompute_trade", STANDARD,
     {"en": "Activation checkpointing trades compute for memory",
      "zh": "通常用激活重计算（activation checkpointing）换显存"}),
    # 3D
    ("three_d", STANDARD,
     {"en": "3D parallelism is DP + TP + PP, e.g. Megatron-LM with DeepSpeed",
      "zh": "混合并行（3D Parallelism）……同时用 DP + TP + PP，典型如 Megatron-LM + DeepSpeed"}),
    ("placement", STANDARD,
     {"en": "TP inside a node (NVLink), PP across nodes (IB/RoCE), DP over all nodes",
      "zh": "TP 在单机内（NVLink），PP 跨机（IB/RoCE），DP 跨所有节点"}),
    ("gpt3_layout", STANDARD,
     {"en": "GPT-3 175B trained as 8-way TP × 64-way PP × 64-way DP = 32768 GPUs",
      "zh": "训练 GPT-3 175B 用 8 路 TP × 64 路 PP × 64 路 DP = 32768 张卡"}),
    ("gpt3_312", STANDARD,
     {"en": "... at 312 TFLOPS per GPU (52% utilisation)",
      "zh": "吞吐量达 312 TFLOPS/GPU（利用率 52%）"}),
    ("tune_ratio", STANDARD,
     {"en": "The TP/PP/DP split must be tuned by hand, or one axis becomes the bottleneck",
      "zh": "需手动调 TP/PP/DP 的切分比例，否则某维度成为瓶颈"}),
    ("tp_first", STANDARD,
     {"en": "First fix TP (4-8 in a node), then PP (layers per GPU by memory), then DP for the "
            "rest",
      "zh": "一般先定 TP（单机内 4-8 路），再定 PP（按显存算每卡能装几层），最后 DP 填满剩余卡数"}),
    # EP
    ("ep_idea", STANDARD,
     {"en": "EP puts experts on different GPUs; a token goes only to the experts its router "
            "picks",
      "zh": "把不同专家（Expert）分配到不同设备，输入 token 经路由选择后只发往对应专家"}),
    ("mixtral_experts", STANDARD,
     {"en": "MoE models such as Mixtral 8x7B have far more experts than devices",
      "zh": "MoE 模型（如 Mixtral 8×7B），专家数远多于设备数"}),
    ("hot_10x", STANDARD,
     {"en": "Hot experts may get 10× the tokens of cold ones",
      "zh": "热门专家可能收到 10 倍于冷门专家的 token"}),
    ("aux_loss", STANDARD,
     {"en": "An auxiliary loss forces the load to balance",
      "zh": "用辅助损失（auxiliary loss）强制负载均衡"}),
    ("cf_125", STANDARD,
     {"en": "A capacity factor of 1.25 works well",
      "zh": "动态调整专家容量（capacity factor = 1.25 时效果较好）"}),
    ("topology", STANDARD,
     {"en": "The topology (NVLink vs IB vs Ethernet) sets each strategy's granularity",
      "zh": "通信拓扑（NVLink vs IB vs Ethernet）决定各策略的切分粒度"}),
    # the 30-second template
    ("must_3d", THIRTY,
     {"en": "Large-model training must use 3D parallelism (DP + TP + PP)",
      "zh": "大模型训练必须用 3D 并行（DP+TP+PP）"}),
    # follow-up 1
    ("tp_two_fwd", "follow-up 1",
     {"en": "Forward does 2 all-reduces per layer (attention and MLP outputs)",
      "zh": "每层 forward 需要 2 次 AllReduce（Attention 输出和 FFN 输出）"}),
    ("tp_48mb", "follow-up 1",
     {"en": "One all-reduce moves h × b × s × 2 bytes (float16): about 48 MB",
      "zh": "每次通信量等于 hidden_size × batch_size × seq_len × 2（float16）……单次通信约 48MB"}),
    ("tp_96mb", "follow-up 1",
     {"en": "8-way TP moves 96 MB per layer",
      "zh": "8 卡 TP 时每层总通信量 96MB"}),
    ("sp_comm", "follow-up 1",
     {"en": "Sequence parallelism reduces the communication volume",
      "zh": "用序列并行（Sequence Parallelism）把激活切分到 TP 组内，减少通信量"}),
    ("layernorm_overlap", "follow-up 1",
     {"en": "Overlap by running e.g. LayerNorm during the all-reduce",
      "zh": "用计算掩盖通信——在 AllReduce 等待期间插入计算（如 LayerNorm）"}),
    ("overlap_5_10", "follow-up 1",
     {"en": "That overlap was measured at +5-10% throughput",
      "zh": "实测可提升 5-10% 吞吐"}),
    # follow-up 2
    ("bubble_formula", "follow-up 2",
     {"en": "The bubble is (P−1)/(M+P−1)",
      "zh": "气泡率公式：bubble = (P-1) / (M+P-1)"}),
    ("gpipe_vs_1f1b", "follow-up 2",
     {"en": "GPipe's bubble is (P−1)/M, 1F1B's (P−1)/(M+P−1): at P = 4, M = 8, GPipe 37.5% vs "
            "1F1B 27.3%",
      "zh": "GPipe 用 M 个微批次顺序执行，气泡率约 (P-1)/M；1F1B 通过交错调度，气泡率降到 (P-1)/(M+P-1)。举例：P=4, M=8 "
            "时，GPipe 气泡率 37.5%，1F1B 气泡率 27.3%"}),
    ("under_15", "follow-up 2",
     {"en": "1F1B with DeepSpeed's accumulation stays under 15% once M ≥ 4P",
      "zh": "1F1B 配合 DeepSpeed 的梯度累积，能把气泡压到 15% 以下（M≥4P 时）"}),
    # follow-up 3
    ("7b_14gb", "follow-up 3",
     {"en": "A 7B model's parameters are about 14 GB in fp16",
      "zh": "7B 模型参数约 14GB（fp16）"}),
    ("7b_one_card", "follow-up 3",
     {"en": "So it fits on one 80 GB GPU: plain DDP is enough",
      "zh": "单卡 80GB 完全装得下……直接用数据并行（DDP）即可"}),
    ("no_tp_pp", "follow-up 3",
     {"en": "No TP or PP is needed",
      "zh": "所以不需要 TP 或 PP"}),
    ("speedup_35", "follow-up 3",
     {"en": "4 GPUs give about 3.5× (communication costs the rest)",
      "zh": "4 卡加速比约 3.5x（受通信开销影响）"}),
    ("grad_accum", "follow-up 3",
     {"en": "Gradient accumulation (steps = 4) emulates a larger batch",
      "zh": "可以用梯度累积（gradient accumulation steps=4）模拟更大 batch"}),
    ("recompute_20gb", "follow-up 3",
     {"en": "With recomputation memory drops below 20 GB, so the batch can double",
      "zh": "如果模型用激活重计算，显存占用会降到 20GB 以下，可以每卡 batch size 翻倍"}),
    # common mistakes
    ("async", MISTAKES,
     {"en": "Asynchronous gradient updates can hurt convergence",
      "zh": "指出异步梯度可能导致的收敛问题"}),
    ("tp_vs_pp_comm", MISTAKES,
     {"en": "TP splits inside an operator and all-reduces; PP splits between operators and "
            "sends P2P (send/recv)",
      "zh": "必须区分张量并行（算子内切分）和流水线并行（算子间切分），并说明各自通信模式（AllReduce vs P2P send/recv）"}),
    # résumé advice
    ("thirteen_b", RESUME,
     {"en": "13B: TP = 4 spent 30% in communication, TP = 8 lowered utilisation because NVLink "
            "saturated, TP = 4 + PP = 2 was best",
      "zh": "我在训练 13B 模型时，发现 TP=4 时通信开销占 30%，改用 TP=8 后利用率反而下降，因为 NVLink 带宽饱和了，最终选了 TP=4 + PP=2 "
            "的组合"}),
    # reading list
    ("ref_megatron", READING,
     {"en": "Megatron-LM (NVIDIA 2019)",
      "zh": "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model "
            "Parallelism（NVIDIA 2019）"}),
    ("ref_gpipe", READING,
     {"en": "GPipe (Google 2019)",
      "zh": "GPipe: Efficient Training of Large Neural Networks using Pipeline "
            "Parallelism（Google 2019）"}),
    ("ref_deepspeed", READING,
     {"en": "DeepSpeed: system optimizations ... over 100 billion parameters (Microsoft 2020)",
      "zh": "DeepSpeed: System Optimizations Enable Training Deep Learning Models with Over 100 "
            "Billion Parameters（Microsoft 2020）"}),
    ("ref_narayanan", READING,
     {"en": "Efficient large-scale language model training on GPU clusters using Megatron-LM "
            "(NVIDIA 2021)",
      "zh": "Efficient Large-Scale Language Model Training on GPU Clusters Using "
            "Megatron-LM（NVIDIA 2021）"}),
    ("ref_sp", READING,
     {"en": "Sequence Parallelism: Long Sequence Training from System Perspective (2023), for "
            "sequence parallelism",
      "zh": "Sequence Parallelism: Long Sequence Training from System Perspective（2023）"}),
)

VERDICTS = ("holds", "wrong", "half right", "depends")
