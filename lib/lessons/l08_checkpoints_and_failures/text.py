"""Notebook 08's words in English and Chinese (catalogues of ``lessons.common.i18n``).

``INTERVIEW``: §6's interview answers, the answer on the claim and the appendix
(``interview.py`` computes the numbers and renders them with
``lessons.common.interview.said``): for an answer ``b``, ``"b"`` is its summary, ``"b.1"``,
``"b.2"``, ... its lines and ``"b.verdict"`` its verdict.
``TEXT``: what the checkers of ``exercises.py`` tell the learner and the labels of the
goodput explorer (``widgets.py``), rendered with ``i18n.t`` when they are shown.
"""

INTERVIEW = {
    # (a) checkpointing a 405B model
    "a": {"en": "(a) answer", "zh": "(a) 答案"},
    "a.1": {
        "en": "Size: 12 B/param (fp32 master weights, AdamW m and v: what a resume needs) x 405e9 = "
              "{tb:.2f} TB (<code>cost.checkpoint_bytes</code>). The bf16 weights are a cast of the "
              "master; a framework that saves them too writes 14 B/param.",
        "zh": "大小：12 B/参数（fp32 主权重，加上 AdamW 的 m 和 v，恢复训练需要的正是这些）x 405e9 = "
              "{tb:.2f} TB（<code>cost.checkpoint_bytes</code>）。bf16 权重只是主权重转换出来的副本；"
              "连它一起保存的框架，每个参数要写 14 B。"},
    "a.2": {
        "en": "Sharded: every rank writes its own shard with DCP (§1), {mb:.0f} MB per GPU over "
              "16,384 GPUs, plus one .metadata file; no rank gathers the model.",
        "zh": "分片：每个 rank 用 DCP 写自己的那一片（§1），分到 16,384 个 GPU 上每个写 {mb:.0f} MB，"
              "外加一个 .metadata 文件；没有哪个 rank 需要把整个模型收集到一起。"},
    "a.3": {
        "en": "Async: stage to host memory, write in the background (§2: the stall fell to "
              "{ratio:.0%} of a sync save here). A sync save at the 2 TB/s of Llama 3's storage "
              "would stall {c405:.1f} s; storage that makes it stall {slow_s:.0f} s (§4's slow "
              "case) writes {tb:.2f} TB / {slow_s:.0f} s = {gbs:.0f} GB/s.",
        "zh": "异步：先拷到主机内存，再在后台写盘（§2：这里的停顿降到了同步保存的 {ratio:.0%}）。"
              "按 Llama 3 存储的 2 TB/s 同步保存，训练要停 {c405:.1f} s；要是存储慢到让它停 "
              "{slow_s:.0f} s（§4 的慢速情形），那它的写入速度是 {tb:.2f} TB / {slow_s:.0f} s = "
              "{gbs:.0f} GB/s。"},
    "a.4": {
        "en": "Resharding on resume: the metadata maps boxes, so the checkpoint loads on another dp "
              "or layout (§1: dp4 -> dp2, equal within 1e-5). Save the data position and the RNG "
              "too, or the resumed run differs.",
        "zh": "恢复时重新分片：元数据记录了每一块在全局张量里的位置，所以检查点能加载到另一种 dp "
              "规模或并行布局上（§1：dp4 -> dp2，误差在 1e-5 以内）。数据读到的位置和 RNG 状态也要"
              "保存，否则恢复后的训练会和原来不一样。"},
    "a.verdict": {
        "en": "Sharded, async, with the full training state: 12 B/param of it.",
        "zh": "分片、异步，并且存下完整的训练状态：每个参数 12 B。"},
    # (b) one GPU of 16k dies
    "b": {"en": "(b) answer", "zh": "(b) 答案"},
    "b.1": {
        "en": "The whole job stops: every collective waits for the dead rank (§3: torchrun stopped "
              "the survivor).",
        "zh": "整个作业都会停下：每个集合通信都在等那个挂掉的 rank（§3：torchrun 把幸存的 rank "
              "也停掉了）。"},
    "b.2": {
        "en": "At Llama 3's rate that is {per16k:.1f} unexpected interruptions per day on 16,384 "
              "GPUs, one every {mtbf_h:.1f} h (§4).",
        "zh": "按 Llama 3 的故障率，16,384 个 GPU 每天会有 {per16k:.1f} 次意外中断，平均每 "
              "{mtbf_h:.1f} h 一次（§4）。"},
    "b.3": {
        "en": "Restart from the last good checkpoint (published whole, its checksums holding), on a "
              "spare node or a smaller mesh (resharding, §1).",
        "zh": "从最后一个完好的检查点重启（完整发布、校验和都对得上），换到备用节点上，"
              "或者缩小设备网格继续跑（重新分片，§1）。"},
    "b.4": {
        "en": "Lost per failure: on average tau/2 + C + R = {half:.0f} + {c:.1f} + {r:.0f} = "
              "{lost:.0f} s at Young's interval (R assumed); measured here: {redone} step redone "
              "and {lost_s:.1f} s.",
        "zh": "每次故障的损失：在 Young 间隔下，平均为 tau/2 + C + R = {half:.0f} + {c:.1f} + "
              "{r:.0f} = {lost:.0f} s（R 是假设值）；这里实测：重做了 {redone} 步，损失 "
              "{lost_s:.1f} s。"},
    "b.verdict": {
        "en": "The job stops and restarts from the last checkpoint; several times a day at 16k GPUs.",
        "zh": "作业停下，再从最后一个检查点重启；在 16k 个 GPU 的规模上，一天要发生好几次。"},
    # (c) how often to checkpoint
    "c": {"en": "(c) answer", "zh": "(c) 答案"},
    "c.1": {
        "en": "Young (1974): tau* = sqrt(2 C M). C = {c:.1f} s ({tb:.2f} TB at 2 TB/s), M = "
              "{mtbf_h:.2f} h: {young:,.0f} s (Daly 2006: {daly:,.0f} s); with a {slow_s:.0f} s "
              "stall, {slow_young:,.0f} s.",
        "zh": "Young（1974）：tau* = sqrt(2 C M)。C = {c:.1f} s（{tb:.2f} TB，按 2 TB/s 写），"
              "M = {mtbf_h:.2f} h：得到 {young:,.0f} s（Daly 2006：{daly:,.0f} s）；"
              "若每次停顿 {slow_s:.0f} s，则是 {slow_young:,.0f} s。"},
    "c.2": {
        "en": "It grows only as the square root: halve C (async saves) and tau* shrinks by 1.4x; "
              "double the GPUs and it shrinks by 1.4x too.",
        "zh": "它只按平方根变化：C 减半（异步保存），tau* 缩小 1.4 倍；GPU 数量翻倍，"
              "它也缩小 1.4 倍。"},
    "c.3": {
        "en": "Goodput there: {goodput:.1%} with R = {r:.0f} s ({slow_goodput:.1%} with the "
              "{slow_s:.0f} s stall); Llama 3 reports > 90% (§4).",
        "zh": "此时的有效吞吐（goodput）：R = {r:.0f} s 时为 {goodput:.1%}（停顿 {slow_s:.0f} s "
              "时为 {slow_goodput:.1%}）；Llama 3 报告的是 > 90%（§4）。"},
    "c.verdict": {
        "en": "Every sqrt(2 C M): minutes at Llama 3's failure rate with a seconds-long stall, "
              "~20 minutes with a one-minute one.",
        "zh": "每隔 sqrt(2 C M) 存一次：按 Llama 3 的故障率，停顿只有几秒时是几分钟一次，"
              "停顿一分钟时约 20 分钟一次。"},
    # (d) a straggler
    "d": {"en": "(d) answer", "zh": "(d) 答案"},
    "d.1": {
        "en": "Sets the pace: measured here, DP {normal_ms:.0f} -> {slowed_ms:.0f} ms with one rank "
              "of 4 50% slower (predicted {predicted_ms:.0f} ms) (§5).",
        "zh": "它决定了整体的节奏：这里实测，4 个 rank 里有一个慢 50% 时，DP 每步耗时从 "
              "{normal_ms:.0f} ms 增加到 {slowed_ms:.0f} ms（预测 {predicted_ms:.0f} ms）（§5）。"},
    "d.2": {
        "en": "DP and TP: step = the slowest rank's compute + communication "
              "(<code>cost.synchronous_step</code>). PP: the slow stage sets the steady state; the "
              "formula is an upper bound for 1F1B.",
        "zh": "DP 和 TP：一步的时间 = 最慢 rank 的计算 + 通信（<code>cost.synchronous_step</code>）。"
              "PP：慢的那个 stage 决定稳态速度；对 1F1B 而言这个公式是上界。"},
    "d.3": {
        "en": "Find it by per-rank step times, replace or drain the node; it fails nothing, so no "
              "restart catches it.",
        "zh": "靠每个 rank 的单步耗时把它找出来，再替换或摘除（drain）这个节点；它不会让任何东西"
              "报错，所以重启机制发现不了它。"},
    "d.verdict": {
        "en": "The whole synchronous job runs at the slowest rank's speed.",
        "zh": "整个同步作业都按最慢那个 rank 的速度运行。"},
    # the claim (micro-batches, the bubble and activation memory)
    "claim": {"en": "claim answer", "zh": "这条说法的答案"},
    "claim.1": {
        "en": "The bubble part holds: (P − 1)/(M + P − 1) of the step is idle, and it falls as M "
              "grows, under GPipe and 1F1B alike.",
        "zh": "关于气泡的一半是对的：一步里有 (P − 1)/(M + P − 1) 的时间空闲，M 越大它越小，"
              "GPipe 和 1F1B 都一样。"},
    "claim.2": {
        "en": "The memory part holds only under GPipe, which runs all M forwards first and holds M "
              "micro-batches. 1F1B holds min(P − r, M) on rank r at any M, as measured in "
              "<a href='03_pipeline_parallel.ipynb'>03 · Pipeline parallelism, §5</a>. Rank 0 at "
              "P = 4: {peaks} (<code>cost.pipeline_peak_activations</code>).",
        "zh": "关于显存的一半只在 GPipe 下成立：GPipe 先跑完全部 M 个前向，要同时留着 M 个微批次"
              "的激活值。1F1B 不论 M 多大，rank r 上最多只留 min(P − r, M) 个，实测见 "
              "<a href='03_pipeline_parallel.ipynb'>03 · 流水线并行，§5</a>。P = 4 时 rank 0 上："
              "{peaks}（<code>cost.pipeline_peak_activations</code>）。"},
    "claim.3": {
        "en": "Activation checkpointing (recomputation) is another trade and another 'checkpoint': "
              "it drops a layer's activations in forward and recomputes them in backward, memory "
              "for compute inside one step. This notebook's <b>model checkpoints</b> write the "
              "training state to storage to survive failures; recomputation changes no "
              "checkpoint's size (12 B/param, §2).",
        "zh": "激活检查点（activation checkpointing，即重计算）是另一种取舍，也是另一种"
              "“checkpoint”：前向时丢掉一层的激活值，反向时再重新算出来，在一步之内用计算换显存。"
              "本 notebook 讲的<b>模型检查点</b>是把训练状态写到存储上，好从故障中恢复；"
              "重计算不会改变任何检查点的大小（12 B/参数，§2）。"},
    "claim.verdict": {
        "en": "Half right: the bubble falls with M, but the activation memory rises with M only "
              "under GPipe; 1F1B holds min(P − r, M).",
        "zh": "只对了一半：气泡随 M 增大而减小，但激活显存只有在 GPipe 下才随 M 增长；"
              "1F1B 只留 min(P − r, M) 个。"},
    # the appendix
    "numbers": {"en": "Every number of §6", "zh": "§6 用到的全部数字"},
    "numbers.1": {
        "en": "(a) 405B at 12 B/param: {tb:.2f} TB; per GPU over 16,384: {mb:.0f} MB; sync at "
              "2 TB/s: {c405:.1f} s; a {slow_s:.0f} s stall: {gbs:.0f} GB/s",
        "zh": "(a) 405B 按 12 B/参数：{tb:.2f} TB；分到 16,384 个 GPU 上每个：{mb:.0f} MB；"
              "按 2 TB/s 同步保存：{c405:.1f} s；停顿 {slow_s:.0f} s 对应：{gbs:.0f} GB/s"},
    "numbers.2": {
        "en": "(b) unexpected interruptions per day at 16,384 GPUs: {per16k:.2f}; job interrupted "
              "every {mtbf_h:.2f} h",
        "zh": "(b) 16,384 个 GPU 每天的意外中断次数：{per16k:.2f}；作业平均每 {mtbf_h:.2f} h "
              "中断一次"},
    "numbers.3": {
        "en": "(b) lost per failure at tau*: tau/2 + C + R = {lost:.0f} s (R = {r:.0f} s assumed)",
        "zh": "(b) 在 tau* 下每次故障的损失：tau/2 + C + R = {lost:.0f} s（假设 R = {r:.0f} s）"},
    "numbers.4": {
        "en": "(c) C = {c:.1f} s: tau* Young {young:.0f} s, Daly {daly:.0f} s; goodput "
              "{goodput:.1%}; C = {slow_c:.0f} s: {slow_young:.0f} s, {slow_goodput:.1%}",
        "zh": "(c) C = {c:.1f} s：tau* 按 Young {young:.0f} s，按 Daly {daly:.0f} s；goodput "
              "{goodput:.1%}；C = {slow_c:.0f} s：{slow_young:.0f} s，{slow_goodput:.1%}"},
    "numbers.5": {
        "en": "claim: micro-batches held on rank 0, P = 4: {peaks}",
        "zh": "说法：P = 4 时 rank 0 上同时留着的微批次数：{peaks}"},
}

TEXT = {
    # check_young_interval
    "young_hint": {
        "en": "tau = sqrt(2 C M), with C and M in the same unit (seconds).",
        "zh": "tau = sqrt(2 C M)，C 和 M 要用同一个单位（秒）。"},
    "young_why": {
        "en": "sqrt(2 x {c:g} s x {m:,.0f} s) = {want:,.0f} s ({minutes:.1f} min; Young 1974).",
        "zh": "sqrt(2 x {c:g} s x {m:,.0f} s) = {want:,.0f} s（{minutes:.1f} 分钟；Young 1974）。"},
    # check_interruptions_per_day
    "per_day_hint": {
        "en": "each GPU fails at rate 1/MTBF; n of them at n/MTBF. Hours per day?",
        "zh": "每个 GPU 的故障率是 1/MTBF，n 个就是 n/MTBF。一天有多少小时？"},
    "per_day_why": {
        "en": "24 x {n:,} / ({years:g} x 8,760 h) = {want:.1f} per day: the job stops at any one "
              "of them.",
        "zh": "24 x {n:,} / ({years:g} x 8,760 h) = 每天 {want:.1f} 次：其中任何一次都会让作业停下。"},
    # check_checkpoint_bytes_per_rank
    "per_rank_hint": {
        "en": "what must a resumed AdamW have, per parameter, and in which dtype? Then each rank "
              "writes only its shard.",
        "zh": "恢复后的 AdamW 每个参数需要哪些状态、各是什么 dtype？然后每个 rank 只写自己那一片。"},
    "per_rank_why": {
        "en": "(4 + 4 + 4) B x {n:.3g} / {dp} = {gb:.2f} GB.",
        "zh": "(4 + 4 + 4) B x {n:.3g} / {dp} = {gb:.2f} GB。"},
    # check_resume
    "resume_unwritten": {
        "en": "write {name} (it still raises NotImplementedError)",
        "zh": "写出 {name}（它现在仍然抛出 NotImplementedError）"},
    "resume_not_a_step": {
        "en": "{name} returned {got}: it must return the next step to train, a whole number (the "
              "checkpoint's train_state['step'] holds {at})",
        "zh": "{name} 返回了 {got}：它应当返回下一个要训练的步，一个整数（检查点里的 "
              "train_state['step'] 是 {at}）"},
    "resume_late": {
        "en": "resumed at step {start}, {off} step(s) late: the checkpoint was written after step "
              "{before} and holds step = {at}, the next step to train, which is what to return. ",
        "zh": "从第 {start} 步恢复，晚了 {off} 步：检查点是在第 {before} 步之后写的，里面的 "
              "step = {at} 就是下一个要训练的步，直接返回它即可。"},
    "resume_early": {
        "en": "resumed at step {start}, {off} step(s) early: the checkpoint was written after step "
              "{before} and holds step = {at}, the next step to train, which is what to return. ",
        "zh": "从第 {start} 步恢复，早了 {off} 步：检查点是在第 {before} 步之后写的，里面的 "
              "step = {at} 就是下一个要训练的步，直接返回它即可。"},
    "resume_first_wrong": {
        "en": "Step {k} is the first that differs.",
        "zh": "第 {k} 步是第一个对不上的。"},
    "resume_differs": {
        "en": "step {k} is the first whose loss differs from the uninterrupted run's: {mine:.6f} vs "
              "{base:.6f} (off by {d:.3g}).",
        "zh": "第 {k} 步是第一个 loss 与不中断运行不同的步：{mine:.6f}，而不中断运行是 "
              "{base:.6f}（相差 {d:.3g}）。"},
    "resume_rng": {
        "en": " The RNG state after your function is not the saved one: dropout draws another "
              "mask. Put train_state['rng'] back.",
        "zh": "你的函数执行完后，RNG 状态不是保存时的那个：dropout 会抽出另一个 mask。"
              "把 train_state['rng'] 放回去。"},
    "resume_rng_some_rank": {
        "en": "the losses agree, but some rank's RNG is not the saved state",
        "zh": "loss 都一致，但有的 rank 的 RNG 不是保存时的状态"},
    "resume_ok": {
        "en": "resumed at step {at} on {ranks} ranks from a DCP checkpoint: steps {at}-{last} equal "
              "the uninterrupted run (max |loss diff| {d:.1e}); the dropout masks were the same.",
        "zh": "在 {ranks} 个 rank 上从 DCP 检查点恢复到第 {at} 步：第 {at}-{last} 步与不中断的运行"
              "完全一致（|loss 差| 最大 {d:.1e}）；dropout 的 mask 也相同。"},
    # the goodput explorer (widgets.py): slider labels and its table's rows
    "gpus": {"en": "GPUs", "zh": "GPU 数量"},
    "mtbf": {"en": "GPU-years per interruption", "zh": "每次中断对应的 GPU 年数"},
    "size": {"en": "checkpoint (TB)", "zh": "检查点大小（TB）"},
    "bandwidth": {"en": "storage (GB/s)", "zh": "存储带宽（GB/s）"},
    "restart": {"en": "restart R (s)", "zh": "重启耗时 R（s）"},
    "row_per_day": {"en": "interruptions per day", "zh": "每天中断次数"},
    "row_mtbf": {"en": "job MTBF", "zh": "作业的 MTBF"},
    "row_stall": {"en": "checkpoint stall C", "zh": "检查点停顿 C"},
    "row_young": {"en": "Young's τ* = √(2CM)", "zh": "Young 的 τ* = √(2CM)"},
    "row_daly": {"en": "Daly's τ", "zh": "Daly 的 τ"},
    "row_goodput": {"en": "goodput at τ*", "zh": "τ* 下的有效吞吐（goodput）"},
}
