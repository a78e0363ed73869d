"""Notebook 01's words in English and Chinese (中文), as catalogues (``lessons.common.i18n``).

``INTERVIEW``: the interview corner's answers (``interview.py`` computes the numbers and
renders them with ``lessons.common.interview.said``): for an answer ``b``, its summary
``"b"``, its lines ``"b.1"``, ``"b.2"``, ... and its verdict ``"b.verdict"``; pieces an
answer repeats inside one line (one case of a list) have keys ``"b.<name>"``.

``TEXT``: what the checkers (``exercises*.py``) tell the learner, the numeric exercises'
questions (``exercises.QUESTIONS``), and every label, title and status line of the
widgets (``widgets*.py``) and of the bucket sweep's caption (``experiments.sweep_caption``).

Each text is rendered with ``i18n.t`` when it is shown, in the session's language; a
number is a format field both languages share, so it reads the same in both.
"""

from .text_interview import INTERVIEW  # noqa: F401  (in their own file: this one holds the rest)

TEXT = {
    # --- lists inside a sentence ---------------------------------------------------------------
    "list_sep": {"en": ", ", "zh": "、"},
    "case_sep": {"en": "; ", "zh": "；"},

    # --- exercise 1: naive DP's exchange ---------------------------------------------------------
    "exchange_where": {"en": "rank {rank}, gradient of {name}", "zh": "rank {rank}，{name} 的梯度"},
    "exchange_ok": {
        "en": "On {world} ranks every one of the {tensors} gradient tensors equals the mean of the ranks' "
              "gradients -- the full batch's gradient.",
        "zh": "在 {world} 个 rank 上，全部 {tensors} 个梯度张量都等于各 rank 梯度的平均，也就是整个 batch "
              "的梯度。"},
    "exchange_sum": {
        "en": ". It is {world}x the mean: the sum over ranks -- divide by world_size.",
        "zh": "。它是平均值的 {world}x：这是各 rank 的和，还要除以 world_size。"},
    "exchange_own": {
        "en": ". It is still this rank's own gradient: was this tensor exchanged? (every tensor in grads "
              "must be, in the same order on every rank)",
        "zh": "。它还是本 rank 自己的梯度：这个张量交换过吗？（grads 里的每个张量都必须交换，而且每个 rank "
              "上的顺序要一致）"},

    # --- exercise 2: ZeRO-1's step ---------------------------------------------------------------
    "zero1_where": {"en": "step {step}, rank {rank}, params", "zh": "第 {step} 步，rank {rank}，params"},
    "zero1_state": {
        "en": "The parameters are right, but rank {rank}'s state holds {held} numbers and its shard has "
              "{shard}: ZeRO-1 keeps the optimizer state (the momentum) of its own shard only -- that is its "
              "whole memory saving.",
        "zh": "参数是对的，但 rank {rank} 的 state 存了 {held} 个数，而它的分片只有 {shard} 个：ZeRO-1 "
              "只保存自己分片的优化器状态（动量），省显存全靠这一点。"},
    "zero1_ok": {
        "en": "{steps} steps on {world} ranks equal single-device SGD with momentum, and each rank holds the "
              "momentum of its {shard} parameters only (1/{world} of the optimizer state).",
        "zh": "{world} 个 rank 上的 {steps} 步与单卡带动量的 SGD 一致，且每个 rank 只保存自己 {shard} 个参数"
              "的动量（优化器状态的 1/{world}）。"},
    "zero1_not_gathered": {
        "en": ". Rank {rank}'s own shard [{lo}:{hi}] is right, the rest was not updated: all-gather the "
              "parameters after the update.",
        "zh": "。rank {rank} 自己的分片 [{lo}:{hi}] 是对的，其余部分没有更新：更新之后要对参数做 "
              "all-gather。"},
    "zero1_misplaced": {
        "en": ". Rank {rank}'s own shard [{lo}:{hi}] is right, the other shards are not: does the all-gather "
              "put every rank's shard at its place?",
        "zh": "。rank {rank} 自己的分片 [{lo}:{hi}] 是对的，其他分片不对：all-gather 有没有把每个 rank "
              "的分片放到它该在的位置？"},
    "zero1_summed": {
        "en": ". The update is {world}x too large: the reduce-scatter sums the gradients -- divide by "
              "world_size.",
        "zh": "。更新量大了 {world}x：reduce-scatter 得到的是梯度之和，还要除以 world_size。"},

    # --- exercise 3: HSDP's gradient sync --------------------------------------------------------
    "hsdp_where": {"en": "rank {rank}", "zh": "rank {rank}"},
    "hsdp_traffic": {"en": "right shards, but rank {rank} {problem}.",
                     "zh": "分片都对，但 rank {rank} {problem}。"},
    "hsdp_op": {"en": "{op} on {group}", "zh": "{group} 上的 {op}"},
    "hsdp_ok": {
        "en": "each of the {world} ranks holds its shard ({part} of {numel} elements, the one its place in "
              "shard_group names) of the mean over all {world}; across the replicas each rank all-reduced "
              "{part} elements (1/{shard}), and no gradient was gathered back: {ops}.",
        "zh": "{world} 个 rank 各自持有全部 {world} 个 rank 平均梯度中属于自己的分片（{numel} 个元素中的 "
              "{part} 个，由它在 shard_group 中的位置决定）；跨副本时每个 rank 只 all-reduce 了 {part} 个"
              "元素（1/{shard}），也没有把梯度 gather 回来：{ops}。"},
    "hsdp_whole": {
        "en": ": that is the whole gradient. HSDP keeps only this rank's shard, 1/{shard} of it: no "
              "all-gather of gradients (the next forward all-gathers the parameters)",
        "zh": "：这是整个梯度。HSDP 只保留本 rank 的分片，即它的 1/{shard}：梯度不做 all-gather（下一次"
              "前向 all-gather 的是参数）"},
    "hsdp_too_small": {
        "en": ": that is 1/{world} of the gradient. HSDP shards over the {shard} ranks of shard_group only "
              "(each shard is kept on all {replicas} replicas): a shard has {part} elements",
        "zh": "：这是梯度的 1/{world}。HSDP 只在 shard_group 的 {shard} 个 rank 之间分片（每个分片在全部 "
              "{replicas} 个副本上都有一份）：一个分片有 {part} 个元素"},
    "hsdp_sum": {
        "en": ": that is the sum over all {world} ranks; divide by the world size, {world}",
        "zh": "：这是全部 {world} 个 rank 的和；还要除以 world size，即 {world}"},
    "hsdp_one_group": {"en": "one group", "zh": "一个组"},
    "hsdp_divided_by_group": {
        "en": ": that is {factor}x the mean: divided by {size}, the size of {group}; the mean is over all "
              "{shard} x {replicas} = {world} ranks",
        "zh": "：这是平均值的 {factor}x：只除以了 {group} 的大小 {size}；平均要对全部 {shard} x {replicas} "
              "= {world} 个 rank 求"},
    "hsdp_node_only": {
        "en": ": that is the average over its own node (shard_group) only: the all-reduce of the shard "
              "across replicate_group is missing",
        "zh": "：这只是本节点（shard_group）内的平均：缺了分片在 replicate_group 上的 all-reduce"},
    "hsdp_took": {"en": "rank {rank} shard {shard}", "zh": "rank {rank} 的分片 {shard}"},
    "hsdp_keeps": {"en": "rank {rank} keeps shard {shard}", "zh": "rank {rank} 保留的是分片 {shard}"},
    "hsdp_misplaced": {
        "en": ": its replicate group all-reduced {took}; {keeps}. A rank keeps the shard at its place in "
              "shard_group (dist.get_rank(shard_group)), as HybridShard lays the shards out: the same shard "
              "as its replicas",
        "zh": "：它的 replicate group all-reduce 的是 {took}；而 {keeps}。一个 rank 保留的是它在 shard_group "
              "中位置对应的分片（dist.get_rank(shard_group)），与 HybridShard 的分片布局一致：和它的副本"
              "持有同一个分片"},
    "hsdp_flat": {
        "en": "ran dist.{op} over all {world} ranks: a flat collective runs the whole gradient through rings "
              "that cross the nodes. Use shard_group inside the node, then replicate_group across",
        "zh": "在全部 {world} 个 rank 上运行了 dist.{op}：扁平的集合通信会让整个梯度走跨节点的 ring。"
              "节点内用 shard_group，节点间再用 replicate_group"},
    "hsdp_gathered": {
        "en": "ran an all-gather inside the node: that is notebook 00's two-level all-reduce. HSDP stops "
              "after the all-reduce across: each rank keeps its gradient shard, and the next forward "
              "all-gathers the parameters",
        "zh": "在节点内做了 all-gather：这是 notebook 00 的两级 all-reduce。HSDP 做完跨节点的 all-reduce "
              "就停：每个 rank 保留自己的梯度分片，下一次前向再 all-gather 参数"},
    "hsdp_no_replicate": {
        "en": "ran no collective on replicate_group: the checker reads torch.distributed's collectives with "
              "the groups given",
        "zh": "没有在 replicate_group 上运行任何集合通信：检查器读取的是带着所给 group 调用的 "
              "torch.distributed 集合通信"},
    "hsdp_too_much_across": {
        "en": "all-reduced {across} of the {numel} elements across replicate_group, {times:g}x the {part} of "
              "its shard, all that HSDP sends across nodes. Reduce-scatter inside the node first, then "
              "all-reduce only your shard",
        "zh": "在 replicate_group 上 all-reduce 了 {numel} 个元素中的 {across} 个，是其分片 {part} 个元素的 "
              "{times:g}x，而 HSDP 跨节点只发送这个分片。先在节点内做 reduce-scatter，再只对自己的分片做 "
              "all-reduce"},
    "hsdp_no_reduce_scatter": {
        "en": "ran {ops} inside the node, not a reduce-scatter: a reduce-scatter leaves each rank just its "
              "shard of the node's sum, for half an all-reduce's bytes",
        "zh": "在节点内运行的是 {ops}，不是 reduce-scatter：reduce-scatter 只给每个 rank 留下节点内求和结果"
              "中自己的分片，字节数只有 all-reduce 的一半"},
    "hsdp_nothing": {"en": "nothing", "zh": "什么都没有"},

    # --- exercises 4-7: numbers --------------------------------------------------------------------
    "q_zero_memory": {
        "en": "LLaMA-13B (cost.MODEL_PRESETS['13B']) with mixed-precision Adam (16 bytes per parameter) on "
              "8 GPUs under ZeRO-2: GB of model states per GPU?",
        "zh": "LLaMA-13B（cost.MODEL_PRESETS['13B']）用混合精度 Adam（每个参数 16 字节），在 8 张 GPU "
              "上跑 ZeRO-2：每张 GPU 的模型状态是多少 GB？"},
    "q_zero3_traffic": {
        "en": "The same 13B model on 8 GPUs under ZeRO-3, fp16 weights and gradients: GB each GPU sends per "
              "training step (ring collectives)?",
        "zh": "同一个 13B 模型在 8 张 GPU 上跑 ZeRO-3，权重和梯度均为 fp16：每张 GPU 每个训练步发送多少 "
              "GB（ring 集合通信）？"},
    "q_dp_allreduce": {
        "en": "Plain DP of a 1.3B model (GPT-3 XL) on 16 GPUs with fp16 gradients: GB each GPU sends in the "
              "step's ring all-reduce?",
        "zh": "1.3B 模型（GPT-3 XL）在 16 张 GPU 上做普通数据并行，梯度为 fp16：每步的 ring all-reduce "
              "中每张 GPU 发送多少 GB？"},
    "q_hsdp_traffic": {
        "en": "Llama 2 70B (cost.MODEL_PRESETS['70B']) on 8 nodes of 8 GPUs as HSDP: sharded within each "
              "node, replicated across nodes, 2-byte gradients: GB each GPU sends across nodes per step?",
        "zh": "Llama 2 70B（cost.MODEL_PRESETS['70B']）以 HSDP 方式跑在 8 个节点、每节点 8 张 GPU 上："
              "节点内分片、节点间复制，梯度 2 字节：每张 GPU 每步跨节点发送多少 GB？"},
    "that_is": {"en": "That is {name}.", "zh": "这是{name}。"},
    "zero_memory_dp": {"en": "plain DP's figure (nothing sharded)", "zh": "普通数据并行的数值（什么都不分片）"},
    "zero_memory_stage": {"en": "ZeRO stage {stage}'s figure", "zh": "ZeRO-{stage} 的数值"},
    "zero_memory_hint": {
        "en": "ZeRO-2 keeps the fp16 weights whole (2 bytes each) and 1/8 of the gradients (2) and "
              "optimizer states (12).",
        "zh": "ZeRO-2 保留完整的 fp16 权重（每个 2 字节），梯度（2）和优化器状态（12）只保留 1/8。"},
    "zero_memory_why": {"en": "= 2 Psi + (2 + 12) Psi / 8 bytes (ZeRO §5.2).",
                        "zh": "= 2 Psi + (2 + 12) Psi / 8 字节（ZeRO §5.2）。"},
    "zero3_traffic_dp": {"en": "plain DP's (or ZeRO-1/2's) 2 Psi, not ZeRO-3's",
                         "zh": "普通数据并行（或 ZeRO-1/2）的 2 Psi，不是 ZeRO-3 的"},
    "zero3_traffic_no_ring": {"en": "3 Psi without the ring's (N-1)/N",
                              "zh": "没乘 ring 的 (N-1)/N 的 3 Psi"},
    "zero3_traffic_hint": {
        "en": "ZeRO-3: all-gather the weights for forward, again for backward, reduce-scatter the "
              "gradients: 3 x (N-1)/N x 2 bytes x Psi.",
        "zh": "ZeRO-3：前向 all-gather 一次权重，反向再 all-gather 一次，梯度做 reduce-scatter："
              "3 x (N-1)/N x 2 字节 x Psi。"},
    "zero3_traffic_why": {"en": "= 3 (N-1)/N x 2 bytes x Psi: 1.5x plain DP (ZeRO §7.2.2).",
                          "zh": "= 3 (N-1)/N x 2 字节 x Psi：普通数据并行的 1.5x（ZeRO §7.2.2）。"},
    "dp_allreduce_2s": {"en": "2S: the ring sends 2(N-1)/N S, a little under 2S",
                        "zh": "2S：ring 发送的是 2(N-1)/N S，比 2S 略少"},
    "dp_allreduce_s": {"en": "S: an all-reduce is a reduce-scatter plus an all-gather, each (N-1)/N S",
                       "zh": "S：all-reduce 是一次 reduce-scatter 加一次 all-gather，各发送 (N-1)/N S"},
    "dp_allreduce_hint": {"en": "ring all-reduce: 2 (N-1)/N x S bytes per rank, S = 2 bytes x Psi.",
                          "zh": "ring all-reduce：每个 rank 发送 2 (N-1)/N x S 字节，S = 2 字节 x Psi。"},
    "dp_allreduce_why": {"en": "= 2 (N-1)/N x S, S = 2 bytes x {billions:.2f} B parameters.",
                         "zh": "= 2 (N-1)/N x S，S = 2 字节 x {billions:.2f} B 个参数。"},
    "hsdp_traffic_flat": {"en": "flat ZeRO-3 over all 64 GPUs' volume",
                          "zh": "在全部 64 张 GPU 上做扁平 ZeRO-3 的通信量"},
    "hsdp_traffic_whole": {"en": "an all-reduce of the whole gradient, not of this GPU's 1/8 shard",
                           "zh": "对整个梯度做 all-reduce 的量，而不是只对这张 GPU 的 1/8 分片"},
    "hsdp_traffic_hint": {
        "en": "only the all-reduce of this GPU's gradient shard (2 bytes x Psi / 8) over the 8 replicas "
              "crosses nodes: a ring sends 2 (R-1)/R of it.",
        "zh": "跨节点的只有这张 GPU 的梯度分片（2 字节 x Psi / 8）在 8 个副本间的 all-reduce：ring 发送它的 "
              "2 (R-1)/R。"},
    "hsdp_traffic_why": {"en": "= 2 (Psi x 2 B / 8)(7/8), 1/8 of a plain-DP all-reduce (Zhao et al. §3.2.2).",
                         "zh": "= 2 (Psi x 2 B / 8)(7/8)，是普通数据并行 all-reduce 的 1/8（Zhao 等 §3.2.2）。"},

    # --- widgets: bucket sweep, compression payoff ---------------------------------------------------
    "bucket_size": {"en": "bucket size", "zh": "桶大小"},
    "sweep_caption_1": {
        "en": "{label}: {buckets} all-reduce per step, step {step_ms:.1f} ms (median), overlap {overlap}, "
              "exposed comm {exposed_ms:.1f} ms",
        "zh": "{label}：每步 {buckets} 次 all-reduce，步长 {step_ms:.1f} ms（中位数），重叠 {overlap}，"
              "暴露的通信 {exposed_ms:.1f} ms"},
    "sweep_caption": {
        "en": "{label}: {buckets} all-reduces per step, step {step_ms:.1f} ms (median), overlap {overlap}, "
              "exposed comm {exposed_ms:.1f} ms",
        "zh": "{label}：每步 {buckets} 次 all-reduce，步长 {step_ms:.1f} ms（中位数），重叠 {overlap}，"
              "暴露的通信 {exposed_ms:.1f} ms"},
    "not_applicable": {"en": "n/a", "zh": "无"},
    "parameters": {"en": "parameters", "zh": "参数量"},
    "compute_per_step": {"en": "compute / step (s)", "zh": "每步计算 (s)"},
    "ranks": {"en": "ranks", "zh": "rank 数"},
    "link_bandwidth": {"en": "link bandwidth", "zh": "链路带宽"},
    "per_direction": {"en": "per direction; GB = 1e9 bytes", "zh": "单向；GB = 1e9 字节"},
    "codec_cost": {"en": "add the codec cost (measured on this CPU)", "zh": "计入编解码开销（在本机 CPU 上实测）"},
    "payoff_title": {
        "en": "predicted step time, {ranks} ranks<br><sub>at {gb_s:.3g} GB/s: fastest {best}, {speedup:.2f}x "
              "exact</sub>",
        "zh": "预测的步长时间，{ranks} 个 rank<br><sub>{gb_s:.3g} GB/s 时最快的是 {best}，为精确交换的 "
              "{speedup:.2f}x</sub>"},
    "payoff_x": {"en": "link bandwidth per direction (bytes/s)", "zh": "单向链路带宽 (bytes/s)"},
    "step_time": {"en": "step time (s)", "zh": "步长时间 (s)"},
    "chosen": {"en": "chosen", "zh": "所选"},

    # --- widget: the memory calculator ------------------------------------------------------------
    "model": {"en": "model", "zh": "模型"},
    "gpus_dp": {"en": "GPUs (dp)", "zh": "GPU 数 (dp)"},
    "zero_stage": {"en": "ZeRO stage", "zh": "ZeRO 阶段"},
    "plain_ddp": {"en": "plain DP (DDP)", "zh": "普通数据并行 (DDP)"},
    "recomputation": {"en": "recomputation", "zh": "重计算"},
    "recompute_none": {"en": "none", "zh": "不重算"},
    "recompute_selective": {"en": "selective", "zh": "选择性"},
    "recompute_full": {"en": "full", "zh": "完全"},
    "micro_batch_per_gpu": {"en": "micro-batch / GPU", "zh": "每 GPU 微批次"},
    "stage_0": {"en": "plain DP", "zh": "普通数据并行"},
    "plan_fits": {"en": "fits, {gb:.1f} GB spare", "zh": "放得下，还剩 {gb:.1f} GB"},
    "plan_short": {"en": "does NOT fit, {gb:.1f} GB short", "zh": "放不下，还差 {gb:.1f} GB"},
    "plan_verdict": {
        "en": "{model}, {stage} on {gpus} GPUs, micro-batch {micro_batch} x {seq} tokens, "
              "recompute={recompute}, materialized attention: {states:.1f} GB model states + {acts:.1f} GB "
              "activations = {total:.1f} GB of {card:.1f} GB per GPU: {margin}",
        "zh": "{model}，{stage}，{gpus} 张 GPU，微批次 {micro_batch} x {seq} 个 token，重计算：{recompute}，"
              "注意力分数显式存储：{states:.1f} GB 模型状态 + {acts:.1f} GB 激活值 = {total:.1f} GB，"
              "每张 GPU 共 {card:.1f} GB：{margin}"},
    "calculator_title": {
        "en": "{model} on {gpus} x {gpu}, micro-batch {micro_batch}, recompute={recompute}",
        "zh": "{model}，{gpus} x {gpu}，微批次 {micro_batch}，重计算：{recompute}"},
}
