"""Notebook 07's words in English and Chinese (catalogues of ``lessons.common.i18n``).

``INTERVIEW``: §8's interview answers and the appendix (``interview.py`` computes the
numbers and renders them with ``lessons.common.interview.said``): for an answer ``b``, ``"b"``
is its summary, ``"b.1"``, ``"b.2"``, ... its lines and ``"b.verdict"`` its verdict.
``TEXT``: what the checkers of ``exercises.py`` tell the learner (hints, explanations and
verdicts), rendered with ``i18n.t`` when a check runs.
"""

INTERVIEW = {
    # (a) bf16 or fp16
    "a": {"en": "(a) answer", "zh": "(a) 答案"},
    "a.1": {
        "en": "bf16: 8 exponent bits, smallest normal {bf16_min:.2g} (fp32's); fp16: 5, smallest "
              "normal {fp16_min:.2g}, max {fp16_max:g} (§1).",
        "zh": "bf16：8 个指数位，最小正规数 {bf16_min:.2g}（与 fp32 相同）；fp16：5 个指数位，"
              "最小正规数 {fp16_min:.2g}，最大值 {fp16_max:g}（§1）。"},
    "a.2": {
        "en": "Measured in §3: {below:.1%} of the GPT's gradient elements sit below fp16's normals "
              "unscaled; in bf16 none do.",
        "zh": "§3 的实测：不做缩放时，GPT 的梯度元素中有 {below:.1%} 落在 fp16 的正规数范围以下；"
              "换成 bf16，一个也没有。"},
    "a.3": {
        "en": "The price: bf16's eps is {bf16_eps:g} vs fp16's {fp16_eps:g} — 8x coarser, which is "
              "why updates need a master copy (§2).",
        "zh": "代价是精度：bf16 的 eps 是 {bf16_eps:g}，fp16 是 {fp16_eps:g}，粗了 8 倍，"
              "所以参数更新需要一份主权重副本（§2）。"},
    "a.verdict": {
        "en": "bf16 for training (range), fp16 only with loss scaling.",
        "zh": "训练用 bf16（靠的是表示范围）；fp16 必须配合损失缩放才能用。"},
    # (b) fp32 master weights
    "b": {"en": "(b) answer", "zh": "(b) 答案"},
    "b.1": {
        "en": "An update vanishes when it is at most half the gap to the weight's neighbour on its "
              "side: bf16's gap above 1.0 is {gap:g}, so an increase up to {lost:g} is lost (a "
              "decrease up to half the gap below, finer still); lr = 1e-3 steps on a LayerNorm gain "
              "all vanished ({unchanged:.0%} unchanged, §2).",
        "zh": "一次更新如果不超过权重到该方向上相邻可表示值间距的一半，就会被舍入吞掉：bf16 在 1.0 "
              "之上的间距是 {gap:g}，所以不超过 {lost:g} 的增量全部丢失（向下的减量则以下方间距的"
              "一半为界，下方间距更细）；lr = 1e-3 的步长落在 LayerNorm 的增益上，全部消失了"
              "（{unchanged:.0%} 没有变化，§2）。"},
    "b.2": {
        "en": "In place, {vanished:.0%} of the updates were lost at step 30 and the loss lagged "
              "({bf16:.3f} vs fp32 {fp32:.3f}); master {master:.3f}, Kahan {kahan:.3f}, stochastic "
              "{stochastic:.3f}.",
        "zh": "直接原地更新时，到第 30 步有 {vanished:.0%} 的更新被吞掉，loss 也落在后面"
              "（{bf16:.3f}，而 fp32 是 {fp32:.3f}）；主权重 {master:.3f}，Kahan 补偿求和 "
              "{kahan:.3f}，随机舍入 {stochastic:.3f}。"},
    "b.3": {
        "en": "Cost: 4 B/param (Kahan's buffer: 2).",
        "zh": "代价：每个参数多 4 B（Kahan 的补偿缓冲只要 2 B）。"},
    # (c) 16 bytes per parameter
    "c": {"en": "(c) answer", "zh": "(c) 答案"},
    "c.1": {
        "en": "{weights:g} weights + {grads:g} grads + {master:g} master + {adam_m:g} adam_m + "
              "{adam_v:g} adam_v = {total:g} (ZeRO §3.1, K = 12).",
        "zh": "{weights:g}（权重）+ {grads:g}（梯度）+ {master:g}（主权重）+ {adam_m:g}（Adam 的一阶矩 m）"
              "+ {adam_v:g}（Adam 的二阶矩 v）= {total:g}（ZeRO 论文 §3.1，K = 12）。"},
    "c.2": {
        "en": "Measured with held_bytes: {mixed:.2f} B/param (bf16 mixed), {fp32:.2f} (fp32 Adam): "
              "the same 16.",
        "zh": "用 held_bytes 实测：{mixed:.2f} B/参数（bf16 混合精度），{fp32:.2f}（fp32 Adam）："
              "同样是 16。"},
    "c.3": {
        "en": "7B ({n7:.2f}e9 parameters): {b7:.1f} GB of training states, not the {w7:.1f} GB of "
              "its fp16 weights; it needs ZeRO or more than one 80 GB card.",
        "zh": "7B（{n7:.2f}e9 个参数）：训练状态共 {b7:.1f} GB，而不是 fp16 权重的 {w7:.1f} GB；"
              "得用 ZeRO，或者不止一张 80 GB 的卡。"},
    # (d) a bf16 all-reduce at 1,024 ranks
    "d": {"en": "(d) answer", "zh": "(d) 答案"},
    "d.1": {
        "en": "Replayed ring order at N = {n}: mean relative error {mean:.1%}, max {max:.0%}; "
              "(N-1)u = {bound:.1f} — the bound is void (§5).",
        "zh": "按 ring 的求和顺序重放，N = {n}：平均相对误差 {mean:.1%}，最大 {max:.0%}；"
              "(N-1)u = {bound:.1f}，这个误差上界已经没有意义（§5）。"},
    "d.2": {
        "en": "fp32 accumulation (upcast, reduce, downcast): max {fp32_max:.4f} ≤ u, whatever N.",
        "zh": "用 fp32 累加（先升精度、再归约、最后转回）：最大误差 {fp32_max:.4f} ≤ u，与 N 无关。"},
    "d.3": {
        "en": "So: accumulate in fp32 (twice the bytes), or reduce hierarchically (fewer terms per "
              "bf16 sum).",
        "zh": "所以：要么用 fp32 累加（通信字节数翻倍），要么分层归约（每次 bf16 求和的项数更少）。"},
    "d.verdict": {
        "en": "No, not with bf16 accumulation.",
        "zh": "不安全，至少用 bf16 累加时不安全。"},
    # (e) FP8 scaling
    "e": {"en": "(e) answer", "zh": "(e) 答案"},
    "e.1": {
        "en": "Without outliers both give ~{err:.1%} error (e4m3's 3 mantissa bits, §6).",
        "zh": "没有离群值时，两种缩放的误差都在 {err:.1%} 左右（e4m3 只有 3 个尾数位，§6）。"},
    "e.2": {
        "en": "With a x1e5 outlier channel: per tensor {per_tensor:.0%} error on the other channels "
              "({flushed:.0%} flushed to 0); per 1x128 block {per_block:.1%}.",
        "zh": "出现一个 x1e5 的离群通道时：按张量缩放，其余通道的误差是 {per_tensor:.0%}"
              "（{flushed:.0%} 下溢为 0）；按 1x128 分块缩放则是 {per_block:.1%}。"},
    "e.3": {
        "en": "Per block costs one scale per tile and a GEMM that applies them (DeepSeek-V3 "
              "§3.3.2); delayed scaling saves the amax pass but clamps a tensor that grew.",
        "zh": "分块缩放的代价是每个 tile 一个缩放因子，外加一个能在计算中应用这些因子的 GEMM"
              "（DeepSeek-V3 §3.3.2）；延迟缩放（delayed scaling）省掉了求 amax 的那一遍，"
              "但张量一旦变大就会被截断。"},
    # the appendix
    "numbers": {"en": "Every number of §8", "zh": "§8 用到的全部数字"},
    "numbers.1": {
        "en": "(a) smallest normal bf16 {bf16_min:.3g}, fp16 {fp16_min:.3g}; eps bf16 "
              "{bf16_eps:g}, fp16 {fp16_eps:g}",
        "zh": "(a) 最小正规数 bf16 {bf16_min:.3g}，fp16 {fp16_min:.3g}；eps bf16 {bf16_eps:g}，"
              "fp16 {fp16_eps:g}"},
    "numbers.2": {"en": "(b) final losses: {losses}", "zh": "(b) 最终 loss：{losses}"},
    "numbers.3": {
        "en": "(c) B/param measured: {measured}; 7B bf16 mixed {b7:.1f} GB",
        "zh": "(c) 实测 B/参数：{measured}；7B 用 bf16 混合精度 {b7:.1f} GB"},
    "numbers.4": {
        "en": "(d) N={n} bf16 mean {mean:.3f}, fp32-accumulated max {fp32_max:.4f}",
        "zh": "(d) N={n}：bf16 平均 {mean:.3f}，fp32 累加的最大误差 {fp32_max:.4f}"},
    "numbers.5": {
        "en": "(e) x1e5 outlier, other channels: per tensor {per_tensor:.3f}, per block "
              "{per_block:.3f}",
        "zh": "(e) x1e5 离群通道，其余通道误差：按张量 {per_tensor:.3f}，按分块 {per_block:.3f}"},
}

TEXT = {
    # check_bytes_per_param
    "bytes_hint": {
        "en": "count the weights, the gradients, and what Adam keeps (in which dtype?)",
        "zh": "把权重、梯度和 Adam 要保存的状态都算上（各自是什么 dtype？）"},
    "bytes_why": {"en": "{parts} = {total:g} B.", "zh": "{parts} = {total:g} B。"},
    "part_weights": {"en": "weights", "zh": "权重"},
    "part_fp8_weights": {"en": "fp8_weights", "zh": "fp8 权重副本"},
    "part_grads": {"en": "grads", "zh": "梯度"},
    "part_master": {"en": "master", "zh": "主权重"},
    "part_adam_m": {"en": "adam_m", "zh": "Adam 一阶矩"},
    "part_adam_v": {"en": "adam_v", "zh": "Adam 二阶矩"},
    # check_fp16_smallest_normal
    "normal_hint": {
        "en": "5 exponent bits, bias 15: the smallest normal exponent is 1 - 15.",
        "zh": "5 个指数位，偏置 15：正规数的最小指数是 1 - 15。"},
    "normal_why": {
        "en": "2^-14 = {want:.6g}; subnormals go on down to 2^-24.",
        "zh": "2^-14 = {want:.6g}；次正规数还能一直往下到 2^-24。"},
    # check_vanishing_update
    "vanish_other_side": {
        "en": "{got:g} is where an increase stops vanishing ({w} + d rounds back for d up to "
              "{other:g}). {w} is a power of two: the {fmt} values below it are not spaced like "
              "those on the other side.",
        "zh": "{got:g} 是增量不再被吞掉的界限（d 不超过 {other:g} 时，{w} + d 都舍入回原值）。"
              "{w} 是二的整数次幂：它下方的 {fmt} 值与另一侧的间距不一样。"},
    "vanish_other_side_up": {
        "en": "{got:g} is where a decrease stops vanishing ({w} - d rounds back for d up to "
              "{other:g}). {w} is a power of two: the {fmt} values above it are not spaced like "
              "those on the other side.",
        "zh": "{got:g} 是减量不再被吞掉的界限（d 不超过 {other:g} 时，{w} - d 都舍入回原值）。"
              "{w} 是二的整数次幂：它上方的 {fmt} 值与另一侧的间距不一样。"},
    "vanish_tie_even": {
        "en": "up to {want:g}: the tie at {want:g} goes to the even neighbour, {w} itself",
        "zh": "不超过 {want:g}（恰在中点 {want:g} 时按“就近取偶”舍入到 {w} 本身）"},
    "vanish_tie_odd": {
        "en": "below {want:g}: the tie at {want:g} goes to the even neighbour, {nxt}",
        "zh": "小于 {want:g}（恰在中点 {want:g} 时按“就近取偶”舍入到另一侧的 {nxt}）"},
    "vanish_hint_down": {
        "en": "{fmt} has {bits} mantissa bits. Which {fmt} value is next below {w}, how far is "
              "it, and where between the two does rounding switch?",
        "zh": "{fmt} 有 {bits} 个尾数位。{w} 下方紧挨着的 {fmt} 值是多少、离它多远？"
              "两者之间，舍入在哪里换边？"},
    "vanish_hint_up": {
        "en": "{fmt} has {bits} mantissa bits. Which {fmt} value is next above {w}, how far is "
              "it, and where between the two does rounding switch?",
        "zh": "{fmt} 有 {bits} 个尾数位。{w} 上方紧挨着的 {fmt} 值是多少、离它多远？"
              "两者之间，舍入在哪里换边？"},
    "vanish_why_down": {
        "en": "The {fmt} value next below {w} is {nxt}, {gap:g} away; {w} - d rounds back to {w} "
              "for d {tie}.",
        "zh": "{w} 下方紧挨着的 {fmt} 值是 {nxt}，相距 {gap:g}；{w} - d 舍入回 {w} 的条件是 d {tie}。"},
    "vanish_why_up": {
        "en": "The {fmt} value next above {w} is {nxt}, {gap:g} away; {w} + d rounds back to {w} "
              "for d {tie}.",
        "zh": "{w} 上方紧挨着的 {fmt} 值是 {nxt}，相距 {gap:g}；{w} + d 舍入回 {w} 的条件是 d {tie}。"},
    # check_bf16_allreduce_bound
    "bound_hint": {
        "en": "u = 2^-8 for bf16; a ring adds n terms with n - 1 roundings.",
        "zh": "bf16 的 u = 2^-8；ring 把 n 项加起来，要做 n - 1 次舍入。"},
    "bound_why": {
        "en": "({n} - 1) x 2^-8 = {want:.3g}: above 1, the bound says nothing is left of the sum's "
              "precision.",
        "zh": "({n} - 1) x 2^-8 = {want:.3g}：超过 1 时，这个上界等于说和的精度已经一点不剩。"},
    # check_scaled_step
    "step_skipped": {
        "en": "skipped steps {mine}, expected {ref}: the step with the planted overflow "
              "({overflow_at}) must not update the weights.",
        "zh": "跳过的步是 {mine}，应当是 {ref}：埋了溢出的那一步（{overflow_at}）不能更新权重。"},
    "step_scale": {
        "en": "step {s} used scale {a:g}, GradScaler used {b:g} (scales so far: yours {mine}, "
              "GradScaler's {ref}). Back off x0.5 on an overflow; x2 after growth_interval good "
              "steps.",
        "zh": "第 {s} 步用的缩放系数是 {a:g}，GradScaler 用的是 {b:g}（到这一步为止的缩放系数："
              "你的 {mine}，GradScaler 的 {ref}）。溢出时乘 0.5 退让；连续 growth_interval "
              "个正常步之后乘 2。"},
    "step_params": {
        "en": "same scales and skipped steps, but after {steps} steps {name} is off by {d:.3g} from "
              "GradScaler's run: are the gradients divided by the scale before the optimizer "
              "steps?",
        "zh": "缩放系数和跳过的步都一样，但 {steps} 步之后 {name} 与 GradScaler 那次运行差了 "
              "{d:.3g}：优化器更新之前，梯度除以缩放系数了吗？"},
    "step_ok": {
        "en": "{steps} steps of real training, equal to GradScaler: scales {scales}, step "
              "{overflow_at} skipped, every parameter the same.",
        "zh": "真实训练 {steps} 步，结果与 GradScaler 完全一致：缩放系数 {scales}，第 "
              "{overflow_at} 步被跳过，每个参数都相同。"},
}
