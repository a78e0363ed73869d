"""Notebook 03's words in English and Chinese (``lessons.common.i18n`` catalogues).

``INTERVIEW``: the answers of §7's ZB-H2 question and of §10's interview corner, shown by
``interview.py`` through ``lessons.common.interview.said``: for an answer ``b``, ``"b"`` is
its summary, ``"b.1"``, ``"b.2"``, ... its lines, ``"b.verdict"`` its verdict; ``"c.row"``
and ``"d.row"`` are one item of a list that a line of (c) and (d) holds.

``TEXT``: what the checkers (``exercises*.py``) tell the learner, the explorer's status
lines (``experiments.explore``) and the widget's labels (``widgets.py``), each rendered
with ``i18n.t`` when it is shown, in the session's language.

Every number is a template field formatted the same in both languages, or written with
the same digits in both (``i18n.catalogue_problems`` checks it).
"""

INTERVIEW = {
    # §7: "ZB-H2 has zero bubble"
    "zb": {"en": "Answer", "zh": "答案"},
    "zb.1": {
        "en": "Idle per rank: {h2_idle:g} slots (ZB-H1 {h1_idle:g}, 1F1B {f1b_idle:g}), as Qi et al. "
              "§2 count it: from each rank's own first op to its last.",
        "zh": "每个 rank 的空闲：{h2_idle:g} 个时隙（ZB-H1 为 {h1_idle:g}，1F1B 为 {f1b_idle:g}），"
              "按 Qi 等人 §2 的算法：从每个 rank 自己的第一个操作算到最后一个操作。"},
    "zb.2": {
        "en": "Idle share of the whole step: {h2_step:.1%}, the same as ZB-H1's {h1_step:.1%}: the "
              "corners of the parallelogram stay unless the next step fills them.",
        "zh": "空闲占整个一步的比例：{h2_step:.1%}，和 ZB-H1 的 {h1_step:.1%} 一样：平行四边形的两个角"
              "仍然空着，除非下一步把它们填上。"},
    "zb.3": {
        "en": "The price: {h2_peak:g} micro-batches of activations on every rank against 1F1B's "
              "{f1b_peak:g} on rank 0 ({mem_ratio:.2f}x). ZB-V gets the same zero at 1F1B's memory "
              "for {msg_ratio:g}x the messages.",
        "zh": "代价：每个 rank 都要保存 {h2_peak:g} 个微批次的激活值，而 1F1B 只在 rank 0 上保存 "
              "{f1b_peak:g} 个（{mem_ratio:.2f}x）。ZB-V 用 1F1B 的显存做到同样的零气泡，"
              "代价是 {msg_ratio:g}x 的消息数。"},
    "zb.4": {
        "en": "To fill the corners, no step-wide synchronisation before the optimizer step: the global "
              "gradient norm and the inf/NaN check move after it (Qi et al.'s post-validation).",
        "zh": "要填满这两个角，优化器更新之前就不能有全局同步：全局梯度范数和 inf/NaN 检查都要挪到"
              "更新之后（Qi 等人称之为 post-validation）。"},
    "zb.verdict": {
        "en": "Zero per rank, not per step: it costs memory (or messages) and a synchronisation-free "
              "optimizer step.",
        "zh": "零气泡是就每个 rank 而言，不是就整个一步而言：代价是显存（或消息数），外加一次不做全局"
              "同步的优化器更新。"},

    # §10 (a): "1F1B takes the bubble from GPipe's 50% to about 20% on 4 GPUs, but needs M >= 4P"
    "a": {"en": "(a) answer", "zh": "(a) 答案"},
    "a.1": {
        "en": "GPipe and 1F1B have the same bubble for the same P and M: measured in §4, in both "
              "normalisations (Narayanan et al. 2021a §2.2.1 say so explicitly).",
        "zh": "P 和 M 相同时，GPipe 和 1F1B 的气泡完全一样：§4 在两种归一化下都实测过"
              "（Narayanan 等人 2021a 的 §2.2.1 明确说了这一点）。"},
    "a.2": {
        "en": "At P = {p} the idle share of the step is at most 50% from M = {m50} and at most 20% "
              "from M = {m20}, for either schedule: the drop comes from <b>more micro-batches</b>.",
        "zh": "P = {p} 时，从 M = {m50} 起空闲占一步的比例不超过 50%，从 M = {m20} 起不超过 20%，"
              "两种调度都一样：下降来自<b>更多的微批次</b>。"},
    "a.3": {
        "en": "What 1F1B contributes is that raising M costs no activation memory (§5).",
        "zh": "1F1B 的贡献在于：增大 M 不再多占激活显存（§5）。"},
    "a.4": {
        "en": "'M ≥ 4 × depth' is GPipe's own rule of thumb (Huang et al. 2019 §2.3: bubble overhead "
              "negligible when M ≥ 4K), not a 1F1B requirement: 1F1B runs with any M ≥ 1.",
        "zh": "“M ≥ 4 × 流水线深度”是 GPipe 自己的经验法则（Huang 等人 2019 §2.3：M ≥ 4K 时气泡开销"
              "可以忽略），并不是 1F1B 的要求：1F1B 在任何 M ≥ 1 下都能运行。"},
    "a.verdict": {
        "en": "Does not hold: the two schedules have one bubble, and more micro-batches lower it "
              "under either.",
        "zh": "不成立：两种调度的气泡是同一个，无论用哪种调度，增加微批次都能把它降下来。"},

    # (b): "GPipe's bubble is (P - 1)/M, 1F1B's (P - 1)/(M + P - 1): 37.5% vs 27.3%"
    "b": {"en": "(b) answer", "zh": "(b) 答案"},
    "b.1": {
        "en": "idle / ideal = {ratio_frac} = {ratio:.1%}; idle / total = {fraction_frac} = "
              "{fraction:.1%}: one idle time, two denominators.",
        "zh": "空闲 / 理想时间 = {ratio_frac} = {ratio:.1%}；空闲 / 总时间 = {fraction_frac} = "
              "{fraction:.1%}：同一段空闲时间，两个不同的分母。"},
    "b.2": {
        "en": "Measured in §4 at P = {p}, M = {m}: GPipe {gpipe:.1%}, 1F1B {f1b:.1%} of the step "
              "(formula {fraction:.1%}).",
        "zh": "§4 在 P = {p}、M = {m} 下的实测：GPipe 空闲占一步的 {gpipe:.1%}，1F1B 占 {f1b:.1%}"
              "（公式给出 {fraction:.1%}）。"},
    "b.3": {
        "en": "(P − 1)/(M + P − 1) is not a 1F1B improvement on (P − 1)/M: it is the same quantity "
              "over a different denominator.",
        "zh": "(P − 1)/(M + P − 1) 并不是 1F1B 对 (P − 1)/M 的改进：它是同一个量，只是换了一个分母。"},
    "b.verdict": {
        "en": "Does not hold as stated: 37.5% and 27.3% are the same bubble written two ways.",
        "zh": "按原话不成立：37.5% 和 27.3% 是同一个气泡的两种写法。"},

    # (c): "with DeepSpeed's gradient accumulation, 1F1B gets the bubble under 15% once M >= 4P"
    "c": {"en": "(c) answer", "zh": "(c) 答案"},
    "c.1": {
        "en": "In pipeline engines such as DeepSpeed's, the micro-batches of a step <i>are</i> the "
              "gradient-accumulation steps: 'gradient accumulation' adds nothing beyond M.",
        "zh": "在 DeepSpeed 这类流水线引擎里，一步中的各个微批次<i>就是</i>梯度累积的各个小步："
              "“梯度累积”在 M 之外并没有带来任何东西。"},
    "c.row": {"en": "P = {q}: {share:.1%}", "zh": "P = {q} 时为 {share:.1%}"},
    "c.2": {
        "en": "At M = 4P the idle share of the step is (P − 1)/(5P − 1): {rows}.",
        "zh": "M = 4P 时，空闲占一步的比例是 (P − 1)/(5P − 1)：{rows}。"},
    "c.3": {
        "en": "So under 15% only for P = {under}; over it from P = {over} on, approaching 1/5 for deep "
              "pipelines (idle / ideal: {ratios}).",
        "zh": "所以只有 P = {under} 时低于 15%；从 P = {over} 起就超过了，流水线越深越接近 1/5"
              "（空闲 / 理想时间：{ratios}）。"},
    "c.4": {
        "en": "P = 4 needs M ≥ {m_fraction} for idle / total ≤ 15%, M ≥ {m_ratio} for idle / ideal ≤ 15%.",
        "zh": "P = 4 时，要让空闲 / 总时间 ≤ 15% 需要 M ≥ {m_fraction}，要让空闲 / 理想时间 ≤ 15% "
              "需要 M ≥ {m_ratio}。"},
    "c.verdict": {"en": "Holds only for small P.", "zh": "只在 P 较小时成立。"},

    # (d): "more micro-batches lower the bubble but raise memory"
    "d": {"en": "(d) answer", "zh": "(d) 答案"},
    "d.row": {"en": "M = {m}: GPipe {g}, 1F1B {o}", "zh": "M = {m} 时 GPipe 为 {g}、1F1B 为 {o}"},
    "d.1": {
        "en": "Peak micro-batches held on rank 0, P = 4: {rows} (the formula; §5 measured the same on "
              "every rank).",
        "zh": "rank 0 上同时保存的微批次数峰值（P = 4）：{rows}（这是公式值；§5 在每个 rank 上实测的"
              "结果与之相同）。"},
    "d.2": {
        "en": "Under GPipe the activation memory grows with M (peak = M); under 1F1B it does not "
              "(peak = min(P − r, M), §5).",
        "zh": "GPipe 的激活显存随 M 增长（峰值 = M）；1F1B 则不会（峰值 = min(P − r, M)，§5）。"},
    "d.3": {
        "en": "With 1F1B the costs of a large M lie elsewhere: for a fixed global batch each "
              "micro-batch gets smaller and each op runs less efficiently on a GPU, and there are "
              "more messages.",
        "zh": "用 1F1B 时，M 大的代价在别处：全局 batch 固定时，每个微批次变小，每个算子在 GPU 上"
              "跑得更低效，消息也更多。"},
    "d.verdict": {
        "en": "Half right: the bubble falls with M under both; memory rises only under GPipe.",
        "zh": "只对一半：两种调度下气泡都随 M 下降；显存只在 GPipe 下上升。"},

    # advice
    "advice": {"en": "Advice on M, in numbers", "zh": "M 怎么取：用数字说话"},
    "advice.1": {
        "en": "With 1F1B, take M as large as the global batch allows at a micro-batch size that still "
              "keeps the device efficient.",
        "zh": "用 1F1B 时，在微批次大小仍能让设备保持高效的前提下，M 取全局 batch 允许的最大值。"},
    "advice.2": {
        "en": "M = {k1}P leaves at most {share1:.3%} of the step idle over P = 1 … 4096 (at P = {q1}): "
              "under 1/{next1} = {bound1:.3%}, whatever P.",
        "zh": "M = {k1}P 时，在 P = 1 … 4096 范围内空闲最多占一步的 {share1:.3%}（出现在 P = {q1}）："
              "不论 P 多大，都低于 1/{next1} = {bound1:.3%}。"},
    "advice.3": {
        "en": "M = {k2}P leaves at most {share2:.3%} of the step idle over P = 1 … 4096 (at P = {q2}): "
              "under 1/{next2} = {bound2:.3%}, whatever P.",
        "zh": "M = {k2}P 时，在 P = 1 … 4096 范围内空闲最多占一步的 {share2:.3%}（出现在 P = {q2}）："
              "不论 P 多大，都低于 1/{next2} = {bound2:.3%}。"},
    "advice.4": {
        "en": "If M cannot grow, interleave: v chunks divide the bubble by v, for (vP − 1)/(P − 1)× "
              "the messages and slightly more activation memory, with M divisible by P (§6).",
        "zh": "如果 M 增大不了，就用交错式调度：v 个模型块把气泡缩小 v 倍，代价是 "
              "(vP − 1)/(P − 1)× 的消息数和略多的激活显存，并且 M 要能被 P 整除（§6）。"},
    "advice.5": {
        "en": "Or split the backward: ZB-H1 idles the share of 1F1B's idle time computed in §7, at "
              "1F1B's memory.",
        "zh": "或者拆分反向：ZB-H1 的空闲时间只有 1F1B 的一部分（比例在 §7 算过），显存与 1F1B 相同。"},
    "advice.6": {
        "en": "Activation checkpointing is the memory lever: it buys memory with about one extra "
              "forward per backward (§8).",
        "zh": "激活检查点（重计算）是调节显存的杠杆：每次反向约多做一次前向，用这些计算换显存（§8）。"},

    # the corner's closing fold-out
    "thirty": {"en": "Answer in 30 seconds (say it yourself first)",
               "zh": "30 秒回答（先自己说一遍）"},
    "thirty.1": {
        "en": "\"With P stages and M micro-batches the pipeline idles (P − 1)/(M + P − 1) of the step — "
              "or (P − 1)/M if you measure against the ideal time; same bubble. GPipe and 1F1B have "
              "<i>the same</i> bubble; 1F1B's win is memory: each stage holds at most P micro-batches "
              "instead of M, so you can raise M, which is what actually shrinks the bubble. "
              "Interleaving with v chunks divides the bubble by v at (vP − 1)/(P − 1) times the "
              "messages — never fewer than v times as many; zero-bubble schedules split backward into "
              "input and weight gradients and fill the bubble with the weight part.\"",
        "zh": "“P 个阶段、M 个微批次时，流水线有 (P − 1)/(M + P − 1) 的时间在空转——以理想时间为分母"
              "就是 (P − 1)/M，是同一个气泡。GPipe 和 1F1B 的气泡<i>完全相同</i>；1F1B 赢在显存："
              "每个阶段最多只存 P 个微批次而不是 M 个，所以可以把 M 调大，真正让气泡变小的正是这一点。"
              "交错式调度用 v 个模型块把气泡缩小 v 倍，代价是 (vP − 1)/(P − 1) 倍的消息数——"
              "至少是 v 倍；零气泡调度把反向拆成输入梯度和权重梯度，用权重梯度那部分去填气泡。”"},
}


TEXT = {
    # separators of lists inside a message
    "sep.comma": {"en": ", ", "zh": "，"},
    "sep.list": {"en": ", ", "zh": "、"},
    "sep.semi": {"en": "; ", "zh": "；"},
    "sep.and": {"en": " and ", "zh": " 和 "},
    "sep.or": {"en": "{items} or {last}", "zh": "{items} 或 {last}"},

    # my_partition
    "partition.not_list": {
        "en": "{where}: expected a list of {n_stages} layer counts",
        "zh": "{where}：应当返回一个列表，含 {n_stages} 个阶段各自的层数"},
    "partition.counts": {"en": "{where}: the layer counts {why}", "zh": "{where}：层数列表 {why}"},
    "partition.cover": {
        "en": "{where}: covers {got} layers, not {want}",
        "zh": "{where}：一共覆盖 {got} 层，而不是 {want} 层"},
    "partition.stage": {
        "en": "{where}: stage {s} gets {g} layers, expected {w} (sizes differ by at most one, larger "
              "stages first)",
        "zh": "{where}：阶段 {s} 分到 {g} 层，应为 {w} 层（各阶段的层数最多差一层，多出来的层给靠前的"
              "阶段）"},
    "partition.ok": {
        "en": "Balanced, larger stages first, as pp.split_layers cuts them.",
        "zh": "切分均衡，较大的阶段在前，和 pp.split_layers 的切法一致。"},

    # exercises 5-8 and §7's ZB-H2 question
    # the numeric exercises' questions (exercises.QUESTIONS), with the checkers' numbers
    "q_bubble": {
        "en": "Idle share of the step (idle / total), 1F1B, P = {p}, M = {m}:",
        "zh": "一步中空闲所占的比例（空闲 / 总时间），1F1B，P = {p}，M = {m}："},
    "q_interleaved": {
        "en": "The same with interleaved 1F1B, v = {v} chunks per rank (messages free):",
        "zh": "同上，但用交错式 1F1B，每个 rank 有 v = {v} 个块（消息不计时间）："},
    "q_min_m": {
        "en": "Fewest micro-batches that bring 1F1B's idle share to {target:.0%} or less at P = {p}:",
        "zh": "P = {p} 时，让 1F1B 的空闲比例降到 {target:.0%} 或更低所需的最少微批次数："},
    "q_peak": {
        "en": "Micro-batches whose activations stage {stage} holds at its peak, 1F1B, P = {p}, "
              "M = {m}:",
        "zh": "1F1B，P = {p}，M = {m}：stage {stage} 在峰值时保存着多少个微批次的激活？"},
    "q_zb_h2_peak": {
        "en": "Micro-batches held by rank 0 at its peak, ZB-H2, P = {p}, M = {m}:",
        "zh": "ZB-H2，P = {p}，M = {m}：rank 0 在峰值时保存着多少个微批次？"},
    "bubble.hint": {
        "en": "(P - 1) / (M + P - 1), as a fraction of the whole step.",
        "zh": "(P - 1) / (M + P - 1)，写成占整个一步的比例。"},
    "bubble.why": {
        "en": "{idle} idle slots out of {total} per rank.",
        "zh": "每个 rank 的 {total} 个时隙中有 {idle} 个空闲。"},
    "interleaved.hint": {
        "en": "each chunk's op is v times shorter: (P - 1) / (vM + P - 1).",
        "zh": "每个模型块上的操作短 v 倍：(P - 1) / (vM + P - 1)。"},
    "interleaved.why": {
        "en": "v divides the ideal bubble; messages grow by (vP - 1)/(P - 1).",
        "zh": "理想气泡缩小 v 倍；消息数增加到 (vP - 1)/(P - 1) 倍。"},
    "min_m.ok": {
        "en": "M = {m}: (P-1)/(M+P-1) = {share:.2%}; M = {fewer} gives {fewer_share:.2%}.",
        "zh": "M = {m}：(P-1)/(M+P-1) = {share:.2%}；M = {fewer} 时为 {fewer_share:.2%}。"},
    "min_m.low": {
        "en": "At M = {got:g} the bubble is still {share:.2%}",
        "zh": "M = {got:g} 时气泡仍占 {share:.2%}"},
    "min_m.high": {
        "en": "M = {got:g} works but is not the fewest: try smaller",
        "zh": "M = {got:g} 能达标，但不是最少的：再试小一点"},
    "peak.hint": {
        "en": "1F1B runs P - stage forwards before its first backward, then frees one per new one.",
        "zh": "1F1B 在第一次反向之前先做 P - stage 次前向，之后每开始一个新的微批次就释放一个。"},
    "zb_h2_peak.hint": {
        "en": "the table of §7 gives ZB-H2's peak at P = 4 against 1F1B's; the rule behind it is in "
              "Qi et al. §2.3, Table 2.",
        "zh": "§7 的表格给出了 P = 4 时 ZB-H2 与 1F1B 的峰值；背后的规律见 Qi 等人论文的 §2.3、"
              "Table 2。"},
    "zb_h2_peak.why": {
        "en": "min(M, 2P - 1) = {want}, against 1F1B's {one} on rank 0.",
        "zh": "min(M, 2P - 1) = {want}，而 1F1B 在 rank 0 上是 {one}。"},

    # my_pipeline_forward: the watch's verdicts (said on a rank, in the language passed to it)
    "fwd.first_recv": {
        "en": "stage 0 receives from rank {peer}; the first stage takes the micro-batches it is "
              "given and receives nothing",
        "zh": "阶段 0 在从 rank {peer} 接收；第一个阶段直接用传给它的微批次，什么都不接收"},
    "fwd.last_send": {
        "en": "stage {stage} sends to rank {peer}; the last stage keeps its outputs (returns them) "
              "and sends nothing",
        "zh": "阶段 {stage} 在向 rank {peer} 发送；最后一个阶段留下自己的输出（把它们返回），"
              "什么都不发送"},
    "fwd.peer_recv": {
        "en": "stage {stage} receives from rank {peer}; it must receive from stage {want} (rank "
              "{want}): the micro-batches go stage 0 -> 1 -> ... -> {last}, one neighbour at a time",
        "zh": "阶段 {stage} 在从 rank {peer} 接收；它应当从阶段 {want}（rank {want}）接收："
              "微批次按阶段 0 -> 1 -> ... -> {last} 的顺序，每次只传给相邻的阶段"},
    "fwd.peer_send": {
        "en": "stage {stage} sends to rank {peer}; it must send to stage {want} (rank {want}): the "
              "micro-batches go stage 0 -> 1 -> ... -> {last}, one neighbour at a time",
        "zh": "阶段 {stage} 在向 rank {peer} 发送；它应当发给阶段 {want}（rank {want}）："
              "微批次按阶段 0 -> 1 -> ... -> {last} 的顺序，每次只传给相邻的阶段"},
    "fwd.count": {
        "en": "The last stage ({last}) returned {got} outputs, expected a list of {m} (one per "
              "micro-batch)",
        "zh": "最后一个阶段（{last}）返回了 {got} 个输出，应当是含 {m} 个输出的列表（每个微批次一个）"},
    "fwd.where": {
        "en": "micro-batch {i} leaving the last stage ({last})",
        "zh": "离开最后一个阶段（{last}）的微批次 {i}"},
    "fwd.wrong": {
        "en": "{msg}. Each stage applies its layer once, to what it received from the stage before",
        "zh": "{msg}。每个阶段对从前一个阶段收到的数据只应用一次自己的层"},
    "fwd.ok": {
        "en": "{m} micro-batches went through {p} stages on {p} ranks, each output equal to one "
              "device's.",
        "zh": "{m} 个微批次在 {p} 个 rank 上依次经过了 {p} 个阶段，每个输出都与单设备的结果一致。"},

    # my_1f1b and my_zb_h1: reading the lists
    "actions.not_list": {
        "en": "stage {stage}: returned a {kind}, expected a list",
        "zh": "阶段 {stage}：返回的是 {kind}，应当返回列表"},
    "actions.item": {
        "en": "stage {stage}: item {k} is {item}; each action must be a tuple {kinds}",
        "zh": "阶段 {stage}：第 {k} 项是 {item}；每个动作都必须是元组 {kinds}"},
    "structure.range": {
        "en": "stage {stage}: {op}({mb}) names a micro-batch outside 0..{last}",
        "zh": "阶段 {stage}：{op}({mb}) 指的微批次不在 0..{last} 之内"},
    "structure.twice": {
        "en": "stage {stage}: {op}({mb}) appears twice",
        "zh": "阶段 {stage}：{op}({mb}) 出现了两次"},
    "structure.order": {
        "en": "stage {stage}: {op}({mb}) comes before {before}({mb}): {why}",
        "zh": "阶段 {stage}：{op}({mb}) 排在了 {before}({mb}) 之前：{why}"},
    "needs.B": {
        "en": "the backward starts from what the forward kept",
        "zh": "反向要从前向保存下来的激活值开始算"},
    "needs.W": {
        "en": "the weight gradients need the output gradient that B received",
        "zh": "权重梯度要用到 B 收到的输出梯度"},
    "structure.no_w": {
        "en": "stage {stage} runs no W: the backward is split in two, B (the input gradient) and W "
              "(the weight gradients); add a ('W', mb) after each ('B', mb)",
        "zh": "阶段 {stage} 没有运行任何 W：反向被拆成了两部分，B（输入梯度）和 W（权重梯度）；"
              "在每个 ('B', mb) 之后加一个 ('W', mb)"},
    "structure.missing": {
        "en": "stage {stage}: {op}({mb}) is missing",
        "zh": "阶段 {stage}：缺少 {op}({mb})"},
    "deadlock": {
        "en": "P={p}, M={m} deadlocks: every stage waits for another (stage: next action) {stuck}. "
              "{rule}",
        "zh": "P={p}, M={m} 会死锁：每个阶段都在等另一个阶段（阶段: 下一个动作）{stuck}。{rule}"},
    "deadlock.rule": {
        "en": "F(mb) on stage s needs F(mb) on s-1; B(mb) needs B(mb) on s+1",
        "zh": "阶段 s 上的 F(mb) 要等 s-1 上的 F(mb)；B(mb) 要等 s+1 上的 B(mb)"},
    "deadlock.rule_w": {
        "en": "; W(mb) only its own B(mb)",
        "zh": "；W(mb) 只等它自己的 B(mb)"},

    # my_1f1b
    "f1b.peak": {
        "en": "stage {stage} holds {peak} activations at peak, 1F1B holds {want}: start backwards "
              "earlier (after P - stage forwards)",
        "zh": "阶段 {stage} 的激活值峰值是 {peak} 份，1F1B 是 {want} 份：把反向提前"
              "（在 P - stage 次前向之后就开始）"},
    "f1b.bubble": {
        "en": "A valid schedule, but its bubble is {fraction:.1%} of the step (F = 1, B = 2 time "
              "units), 1F1B's is (P-1)/(M+P-1) = {want:.1%}: a stage waits where it could work",
        "zh": "调度是合法的，但它的气泡占一步的 {fraction:.1%}（F = 1、B = 2 个时间单位），"
              "而 1F1B 的是 (P-1)/(M+P-1) = {want:.1%}：有阶段在本可以干活的时候空等"},
    "ranks.loss": {
        "en": "stage {stage}: loss {loss:.6g}, the single device's {ref:.6g}",
        "zh": "阶段 {stage}：loss 为 {loss:.6g}，单设备为 {ref:.6g}"},
    "ranks.where": {"en": "stage {stage}, {name}", "zh": "阶段 {stage}，{name}"},
    "f1b.ok": {
        "en": "Your schedule ran on {p} ranks; loss and gradients equal the single device's; peak "
              "activations per stage {peaks} (1F1B's min(P - stage, M)); bubble {bubble:.1%} = "
              "(P-1)/(M+P-1)",
        "zh": "你的调度在 {p} 个 rank 上跑通了；loss 和梯度都与单设备一致；各阶段的激活值峰值 {peaks}"
              "（正是 1F1B 的 min(P - stage, M)）；气泡 {bubble:.1%} = (P-1)/(M+P-1)"},

    # my_zb_h1
    "zb.peak": {
        "en": "stage {stage} holds {peak} micro-batches' activations at its peak (each from its F "
              "to its W), more than 1F1B's most, P = {want}: a W frees its micro-batch, so run the "
              "W's sooner",
        "zh": "阶段 {stage} 在峰值时保存了 {peak} 个微批次的激活值（每个从它的 F 保存到它的 W），"
              "超过了 1F1B 的最大值 P = {want}：W 会释放它的微批次，所以要早点运行 W"},
    "zb.idle": {
        "en": "A valid schedule within 1F1B's memory, but stage {stage} idles {idle:g} time units "
              "between its first op and its last (F = B = W = 1); ZB-H1's (P - 1)(T_F + T_B - T_W) "
              "= {want:g}, 1F1B's (P - 1)(T_F + T_B + T_W) = {one:g}. Nobody waits for a W: keep "
              "some back to fill the waits of the cool-down",
        "zh": "调度合法，显存也没超过 1F1B，但阶段 {stage} 在第一个和最后一个操作之间空闲了 {idle:g} "
              "个时间单位（F = B = W = 1）；ZB-H1 的 (P - 1)(T_F + T_B - T_W) = {want:g}，"
              "1F1B 的 (P - 1)(T_F + T_B + T_W) = {one:g}。没有谁在等 W：留一些 W 到后面，"
              "去填排空阶段的等待"},
    "zb.ok": {
        "en": "Your ZB-H1 ran on {p} ranks; loss and gradients equal the single device's; peak "
              "activations per stage {peaks} (at most P = {p}, 1F1B's rank 0); idle per stage "
              "[{idle}] time units at F = B = W = 1, at most (P - 1)(T_F + T_B - T_W) = {want:g}: "
              "a third of 1F1B's {one:g}",
        "zh": "你的 ZB-H1 在 {p} 个 rank 上跑通了；loss 和梯度都与单设备一致；各阶段的激活值峰值 "
              "{peaks}（最多 P = {p}，即 1F1B 在 rank 0 上的值）；F = B = W = 1 时各阶段空闲 "
              "[{idle}] 个时间单位，不超过 (P - 1)(T_F + T_B - T_W) = {want:g}：是 1F1B 的 "
              "{one:g} 的三分之一"},

    # the pipeline explorer (experiments.explore's lines, widgets.pipeline_explorer's labels)
    "explore.moved": {
        "en": "M={wanted} does not work here ({error}); showing M={m}, the nearest M that does.",
        "zh": "M={wanted} 在这里不可用（{error}）；改为显示 M={m}，即最接近的可用 M。"},
    "explore.v": {"en": ", v={v}", "zh": ", v={v}"},
    "explore.sim": {
        "en": "{schedule}, P={p}, M={m}{v_part}: simulated bubble {bubble:.1%} of the step, messages "
              "free",
        "zh": "{schedule}, P={p}, M={m}{v_part}: 模拟的气泡占一步的 {bubble:.1%}, 消息不计开销"},
    "explore.formula": {"en": " (formula {formula:.1%})", "zh": "（公式 {formula:.1%}）"},
    "explore.peaks": {
        "en": "peak micro-batches held per rank: [{peaks}]",
        "zh": "每个 rank 同时保存的微批次峰值: [{peaks}]"},
    "explore.measured": {
        "en": "measured {measured:.1%} (emulated, {t_fwd:g}/{t_bwd:g} ms ops)",
        "zh": "实测 {measured:.1%}（仿真计算，操作耗时 {t_fwd:g}/{t_bwd:g} ms）"},
    "explore.with_comm": {
        "en": "simulated with this run's message costs ({t_comm:.1f} ms a message, {t_gap:.1f} ms "
              "between ops): {simulated:.1%}",
        "zh": "计入本次运行的消息开销后的模拟结果（每条消息 {t_comm:.1f} ms, 操作间隔 {t_gap:.1f} ms）: "
              "{simulated:.1%}"},
    "widget.schedule": {"en": "schedule", "zh": "调度"},
    "widget.p": {"en": "stages P", "zh": "阶段数 P"},
    "widget.m": {"en": "micro-batches M", "zh": "微批次数 M"},
    "widget.v": {"en": "chunks v", "zh": "模型块数 v"},
    "widget.v_tip": {
        "en": "model chunks per rank: interleaved schedule only",
        "zh": "每个 rank 上的模型块数：仅用于交错式调度"},
    "widget.run": {"en": "run live (emulated compute)", "zh": "实际运行（仿真计算）"},
    "widget.run_tip": {
        "en": "run the schedule on P real ranks and overlay the measured timeline",
        "zh": "在 P 个真实 rank 上运行该调度，并叠加实测的时间线"},
    "widget.simulated": {"en": "simulated", "zh": "模拟"},
    "widget.measured": {"en": "measured", "zh": "实测"},
}
