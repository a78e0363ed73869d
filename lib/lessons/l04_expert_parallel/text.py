"""Notebook 04's words in English and Chinese (``lessons.common.i18n`` catalogues).

``INTERVIEW``: the interview corner's answers (§8's question on the variants, §9's (a)-(f),
the 30-second answer and the appendix's numbers), shown by ``interview.py`` through
``lessons.common.interview.said``. ``TEXT``: what the checkers of ``exercises.py`` and
``exercises_variants.py`` tell the learner, and the labels of ``widgets.py``. Every number
is a field, formatted by the same spec in both languages."""

INTERVIEW = {
    # §8: token choice + shared expert vs expert choice
    "variants": {"en": "answer", "zh": "答案"},
    "variants.1": {
        "en": "Expert choice balances perfectly and drops nothing, but measured here {none:.0%} of "
              "tokens got no expert at c = 1 (random choice: {none_random:.0%}), and its top-k over "
              "the batch needs the future tokens: at generation time they do not exist.",
        "zh": "Expert choice 负载完全均衡、不丢任何分配，但这里实测在 c = 1 时有 {none:.0%} 的 token "
              "一个专家也没分到（随机选择时为 {none_random:.0%}）；而且它在整个 batch 上做 top-k，"
              "需要看到后面的 token：自回归生成时这些 token 还不存在。"},
    "variants.2": {
        "en": "Token choice is causal; a shared expert gives every token some FFN even when its routed "
              "copies are dropped, and it sends nothing: {sent_shared:.0f} KiB vs {sent_plain:.0f} KiB "
              "for the same FLOPs without it.",
        "zh": "Token choice 是因果的；共享专家让每个 token 即使路由出去的副本被丢弃也仍然经过一次 FFN，"
              "而且它不产生任何通信：同样的 FLOPs，有共享专家时发送 {sent_shared:.0f} KiB，"
              "没有时 {sent_plain:.0f} KiB。"},
    # §9 (a): what moves
    "a": {"en": "(a) answer", "zh": "(a) 答案"},
    "a.verdict": {"en": "Holds.", "zh": "成立。"},
    "a.1": {
        "en": "Experts stay put (rank g holds experts [gE/ep, (g+1)E/ep)); the router is replicated; "
              "tokens' hidden states move: dispatch all-to-all to their experts' ranks, combine "
              "all-to-all back (§2, §4).",
        "zh": "专家不动（rank g 持有专家 [gE/ep, (g+1)E/ep)），路由器在每个 rank 上都有一份；"
              "移动的是 token 的隐藏状态：dispatch 阶段用 all-to-all 把它们发到所选专家所在的 rank，"
              "combine 阶段再用 all-to-all 发回来（§2、§4）。"},
    "a.2": {
        "en": "Only kept assignments travel: dropped ones skip the expert (§1). Before dispatch the ranks "
              "also exchange counts (here: an all-gather of k x E integers so capacity is global; real "
              "systems cap per local group instead).",
        "zh": "只有保留下来的分配才会被发送，被丢弃的直接跳过专家（§1）。dispatch 之前各 rank 还要交换计数"
              "（这里是一次 k x E 个整数的 all-gather，让容量按全局 batch 计算；实际系统通常改为按本地分组限容）。"},
    "a.3": {
        "en": "Attention and the rest of the block are not expert-parallel: those parameters are "
              "replicated (data parallel).",
        "zh": "注意力和 block 的其余部分不做专家并行：这些参数在各 rank 上复制（数据并行）。"},
    # (b): experts vs devices
    "b": {"en": "(b) answer", "zh": "(b) 答案"},
    "b.verdict": {
        "en": "Does not hold as stated: Mixtral has 8 experts; EP works with experts = devices (Switch) "
              "or a few per device (DeepSeek-V3).",
        "zh": "按原话不成立：Mixtral 只有 8 个专家；专家并行在专家数 = 设备数（Switch）"
              "或每台设备放几个专家（DeepSeek-V3）时都能用。"},
    "b.1": {
        "en": "Mixtral 8x7B: {mix_e} experts per layer, top-{mix_k} ({mix_src}). EP degree cannot exceed "
              "the expert count (EPRun refuses an ep that does not divide n_experts), so at most 8-way "
              "EP — fewer experts than the GPUs such a model is trained on. Not 'far more experts than "
              "devices'.",
        "zh": "Mixtral 8x7B：每层 {mix_e} 个专家，top-{mix_k}（{mix_src}）。专家并行度不能超过专家数"
              "（ep 不能整除 n_experts 时 EPRun 会拒绝），所以最多 8 路专家并行——专家数比训练这种模型所用的 "
              "GPU 数还少，谈不上“专家数远多于设备数”。"},
    "b.2": {
        "en": "Switch-C: {sw_e} experts, top-1 ({sw_src}); Switch recommends one expert per core "
              "(Appendix D) — experts = EP ranks.",
        "zh": "Switch-C：{sw_e} 个专家，top-1（{sw_src}）；Switch 建议每个核心放一个专家"
              "（附录 D）——专家数 = 专家并行的 rank 数。"},
    "b.3": {
        "en": "DeepSeek-V3: {ds_shared} shared + {ds_e} routed experts, top-{ds_k} ({ds_src}); its report "
              "trains with 64-way EP on 2048 H800s: 4 experts per GPU, and far fewer experts than GPUs.",
        "zh": "DeepSeek-V3：{ds_shared} 个共享专家 + {ds_e} 个路由专家，top-{ds_k}（{ds_src}）；"
              "其技术报告在 2048 张 H800 上用 64 路专家并行训练：每张 GPU 4 个专家，专家数远少于 GPU 数。"},
    "b.4": {
        "en": "What EP needs: experts >= EP degree (divisible). More experts per rank is fine (grouped "
              "GEMMs), but it is a design choice, not a condition.",
        "zh": "专家并行真正要求的是：专家数 >= 专家并行度（且能整除）。每个 rank 放更多专家也可以"
              "（用 grouped GEMM），但那是设计选择，不是前提条件。"},
    # (c): hot vs cold experts
    "c": {"en": "(c) answer", "zh": "(c) 答案"},
    "c.verdict": {
        "en": "Plausible but not a constant; measure busiest/mean, which sets the step time.",
        "zh": "有可能，但不是常数；该测的是最忙/平均，它决定每步的时间。"},
    "c.1": {
        "en": "Measured (§3): untilted router at step 0: busiest/coldest {bal_mm:.1f}x, busiest/mean "
              "{bal_mean:.2f}; tilted: {sk_mm:.1f}x and {sk_mean:.2f}; after 30 steps with the aux "
              "loss {aux_mm:.1f}x / {aux_mean:.2f}.",
        "zh": "实测（§3）：未倾斜的路由器在第 0 步，最忙/最闲 {bal_mm:.1f}x，最忙/平均 {bal_mean:.2f}；"
              "倾斜的路由器为 {sk_mm:.1f}x 和 {sk_mean:.2f}；加辅助损失训练 30 步后为 "
              "{aux_mm:.1f}x / {aux_mean:.2f}。"},
    "c.2": {
        "en": "So 10x is possible — and also 3x or 30x: busiest/coldest is unbounded (a cold expert can "
              "get ~0 tokens) and noisy at small batches. It depends on the router's state (init, "
              "training), the balancing (aux loss, bias), the data, the number of experts and tokens "
              "per batch.",
        "zh": "所以 10x 是可能的——3x 或 30x 也可能：最忙/最闲没有上界（冷门专家分到的 token 可能 ~0），"
              "batch 小时噪声也很大。它取决于路由器的状态（初始化、训练进度）、负载均衡手段"
              "（辅助损失、bias）、数据、专家数以及每个 batch 的 token 数。"},
    "c.3": {
        "en": "The number that costs time is busiest/mean (at most E): the layer runs at the pace of the "
              "busiest rank (§5).",
        "zh": "真正耗时的是最忙/平均（最大为 E）：这一层的速度由最忙的 rank 决定（§5）。"},
    # (d): aux loss and capacity factor
    "d": {"en": "(d) answer", "zh": "(d) 答案"},
    "d.verdict": {
        "en": "Half right: the aux loss balances; capacity only caps, and 1.25's drop rate depends on "
              "the imbalance.",
        "zh": "只对一半：辅助损失负责均衡；容量只负责封顶，1.25 下的丢弃率取决于负载有多不均衡。"},
    "d.1": {
        "en": "Aux loss (Switch §2.2, eq. 4): α·E·Σ f_i P_i, α = 10⁻² in Switch (swept 10⁻¹…10⁻⁵). Here, "
              "tilted router, busiest/mean after 30 steps: none {none:.2f}, aux loss {aux:.2f}, "
              "DeepSeek-V3's bias {bias:.2f}: both balancers reduce imbalance.",
        "zh": "辅助损失（Switch §2.2，式 4）：α·E·Σ f_i P_i，Switch 取 α = 10⁻²（扫描过 10⁻¹…10⁻⁵）。"
              "这里用倾斜的路由器，训练 30 步后的最忙/平均：不做均衡 {none:.2f}，辅助损失 {aux:.2f}，"
              "DeepSeek-V3 的 bias {bias:.2f}：两种均衡手段都降低了不均衡。"},
    "d.2": {
        "en": "Capacity does not balance: it caps each expert and drops the excess. Dropped at cf 1.25 "
              "(last 10 steps): balanced {bal:.1f}% (aux {bal_aux:.1f}%), skewed {sk:.1f}% (aux "
              "{sk_aux:.1f}%, bias {sk_bias:.1f}%).",
        "zh": "容量并不做均衡：它只给每个专家封顶，超出的部分丢弃。cf 1.25 时的丢弃率（最后 10 步）："
              "均衡路由 {bal:.1f}%（辅助损失 {bal_aux:.1f}%），倾斜路由 {sk:.1f}%"
              "（辅助损失 {sk_aux:.1f}%，bias {sk_bias:.1f}%）。"},
    "d.3": {
        "en": "Values in the papers: Switch Table 1 compares 1.0, 1.25, 2.0 in training and finds "
              "1.0–1.25 best for speed-quality; Google's T5X MoE configs train at 1.25 and evaluate at "
              "2.0; GShard caps top-2 at 2N/E (cf 1.0 of assignments). The factor is a fixed "
              "hyper-parameter there, not adjusted dynamically.",
        "zh": "论文里的取值：Switch 表 1 在训练中比较了 1.0、1.25、2.0，结论是 1.0–1.25 的速度-质量折中最好；"
              "Google 的 T5X MoE 配置训练用 1.25、评估用 2.0；GShard 对 top-2 的上限是 2N/E"
              "（相当于按分配计 cf 1.0）。在这些工作里它都是固定的超参数，并不动态调整。"},
    "d.4": {
        "en": "1.25 'works well' only when the router is already balanced (by the aux loss): the drop "
              "rate at a given factor is set by the imbalance.",
        "zh": "只有当路由器已经（靠辅助损失）均衡时，1.25 才“效果较好”：给定容量因子下的丢弃率由不均衡程度决定。"},
    # (e): does EP solve MoE scaling
    "e": {"en": "(e) answer", "zh": "(e) 答案"},
    "e.verdict": {
        "en": "Partly: it is what makes large MoE fit and run, with costs of its own.",
        "zh": "部分成立：大 MoE 放得下、跑得动靠的是它，但它也有自己的代价。"},
    "e.1": {
        "en": "It spreads the experts' parameters and FLOPs: Mixtral's experts are {share:.0%} of its "
              "{total_b:.1f}B parameters.",
        "zh": "它把专家的参数和 FLOPs 分摊到多个设备上：Mixtral 的专家占其 {total_b:.1f}B 参数的 {share:.0%}。"},
    "e.2": {
        "en": "It adds two all-to-alls per layer per pass (§4), whose bytes grow with k and (ep-1)/ep "
              "and cross the slowest links.",
        "zh": "它让每层每次前向/反向多出两次 all-to-all（§4），通信量随 k 和 (ep-1)/ep 增长，"
              "并且要走最慢的链路。"},
    "e.3": {
        "en": "It runs at the busiest rank's pace: {slow:.2f}x slower than balanced in §5 — hence aux "
              "losses, bias balancers, capacity and drops.",
        "zh": "它的速度取决于最忙的 rank：§5 中比均衡时慢 {slow:.2f}x——所以才需要辅助损失、"
              "bias 均衡器、容量和丢弃。"},
    "e.4": {
        "en": "Its degree is bounded by the number of experts; attention and embeddings still need "
              "DP/TP/PP.",
        "zh": "它的并行度受专家数限制；注意力和嵌入层仍然需要数据并行/张量并行/流水线并行。"},
    # (f): EP vs TP
    "f": {"en": "(f) answer", "zh": "(f) 答案"},
    "f.verdict": {
        "en": "EP moves tokens (all-to-all), TP moves partial sums (all-reduce); compare per token, not "
              "per message.",
        "zh": "专家并行搬运 token（all-to-all），张量并行搬运部分和（all-reduce）；要按每个 token 比较，"
              "而不是按每条消息比较。"},
    "f.1": {
        "en": "TP (t = 8): all-reduces of the activations, 2 forward + 2 backward per block: {tp8:.0f} MiB "
              "per rank per block at d = 4096, s = 4096, bf16 ({tp8_mlp:.0f} MiB of it for the MLP). All "
              "t ranks process the same tokens.",
        "zh": "张量并行（t = 8）：对激活值做 all-reduce，每个 block 前向 2 次 + 反向 2 次：在 d = 4096、"
              "s = 4096、bf16 下每个 rank 每个 block {tp8:.0f} MiB（其中 MLP 占 {tp8_mlp:.0f} MiB）。"
              "t 个 rank 处理的是同一批 token。"},
    "f.2": {
        "en": "EP (ep = 8, top-2): all-to-alls of routed rows: {ep8:.0f} MiB per rank per MoE layer — 2x "
              "TP's MLP bytes, but each rank brings its own tokens (8x the tokens for that traffic), "
              "and experts stay whole.",
        "zh": "专家并行（ep = 8，top-2）：对路由出去的行做 all-to-all：每个 rank 每个 MoE 层 {ep8:.0f} MiB"
              "——是张量并行 MLP 通信量的 2x，但每个 rank 带来的是自己的 token（同样的流量处理 8x 的 token），"
              "而且专家保持完整、不切分。"},
    "f.3": {
        "en": "TP is for a layer too big for a device, inside NVLink; EP is for many experts, and needs "
              "DP/TP for the dense parts.",
        "zh": "张量并行用于单个设备放不下的层，限于 NVLink 域内；专家并行用于专家很多的情形，"
              "稠密部分仍需数据并行/张量并行。"},
    # §9's question "Answer in 30 seconds" (its fold-out)
    "thirty": {"en": "A 30-second answer", "zh": "30 秒回答"},
    "thirty.1": {
        "en": "A MoE layer routes each token to its top-k experts; EP shards the experts and "
              "all-to-alls the tokens there and back — four all-to-alls per layer per step, "
              "4kT·(ep−1)/ep·d values per rank. Experts have a capacity, ⌊kT/E · cf⌋; overflow is "
              "dropped.",
        "zh": "MoE 层把每个 token 路由到它的 top-k 个专家；专家并行把专家切分到各 rank，用 all-to-all "
              "把 token 发过去再发回来——每层每步四次 all-to-all，每个 rank 发送 4kT·(ep−1)/ep·d 个数值。"
              "每个专家有容量上限 ⌊kT/E · cf⌋，超出的分配被丢弃。"},
    "thirty.2": {
        "en": "Imbalance is the enemy: the layer waits for the busiest rank, and drops grow with it, so "
              "we add Switch's aux loss (α = 10<sup>−2</sup>) or DeepSeek-V3's bias balancer, and pick "
              "cf around 1–1.25 in training.",
        "zh": "最怕的是负载不均：这一层要等最忙的 rank，丢弃也随之增多，所以要加 Switch 的辅助损失"
              "（α = 10<sup>−2</sup>）或 DeepSeek-V3 的 bias 均衡器，训练时 cf 取 1–1.25 左右。"},
    "thirty.3": {
        "en": "Mixtral has only {mix_e} experts, top-{mix_k}; Switch-C {sw_e} with one per core; "
              "DeepSeek-V3 {ds_e} + {ds_shared} shared, top-{ds_k}, on 64-way EP.",
        "zh": "Mixtral 只有 {mix_e} 个专家，top-{mix_k}；Switch-C 有 {sw_e} 个，每个核心一个；"
              "DeepSeek-V3 是 {ds_e} 个 + {ds_shared} 个共享专家，top-{ds_k}，用 64 路专家并行。"},
    # the appendix
    "numbers": {"en": "Every number of §9", "zh": "§9 用到的所有数字"},
    "numbers.1": {"en": "{models}", "zh": "{models}"},
    "numbers.2": {"en": "Mixtral 8x7B: {total:,} parameters, {active:,} active",
                  "zh": "Mixtral 8x7B：{total:,} 个参数，其中激活 {active:,} 个"},
    "numbers.3": {"en": "EP8 top-2 {ep8:,.0f} B vs TP8 {tp8:,.0f} B per rank per layer (MLP share "
                        "{tp8_mlp:,.0f} B)",
                  "zh": "EP8 top-2 每个 rank 每层 {ep8:,.0f} B，TP8 为 {tp8:,.0f} B（其中 MLP 占 "
                        "{tp8_mlp:,.0f} B）"},
    # one model of the appendix's list (numbers.1 joins them)
    "numbers.model": {"en": "{name}: {n} routed experts{shared}, top-{k} ({source})",
              "zh": "{name}：{n} 个路由专家{shared}，top-{k}（{source}）"},
    "numbers.shared": {"en": " + {n} shared", "zh": " + {n} 个共享专家"},
}

TEXT = {
    # exercises.py: the routing checkers (capacity per rank, over the global batch)
    "scope_global": {"en": "capacity {capacity} per expert over all {world} ranks' tokens",
                     "zh": "每个专家容量 {capacity}，按全部 {world} 个 rank 的 token 计"},
    "scope_local": {"en": "capacity {capacity} per expert on each rank",
                    "zh": "每个专家容量 {capacity}，每个 rank 各自计"},
    "write_it": {"en": "write {name} (it still raises NotImplementedError)",
                 "zh": "请实现 {name}（它现在仍然抛出 NotImplementedError）"},
    "returned": {"en": "returned {type}", "zh": "返回了 {type}"},
    "returned_of": {"en": "returned {type} of {n}", "zh": "返回了长度为 {n} 的 {type}"},
    "route_returned": {
        "en": "rank {rank}: {name} {what}; return (experts, kept), two ({tokens}, {top_k}) tensors",
        "zh": "rank {rank}：{name} {what}；应返回 (experts, kept)，两个形状为 ({tokens}, {top_k}) 的张量"},
    "route_shape": {
        "en": "rank {rank}: {what} has shape {got}, expected {want} (tokens, top_k)",
        "zh": "rank {rank}：{what} 的形状是 {got}，应为 {want}（tokens, top_k）"},
    "route_expert": {
        "en": "rank {rank}, token {token}, choice {choice}: expert {got}, expected expert {want} "
              "(choice 0 is the largest logit, choice 1 the next: topk keeps that order).",
        "zh": "rank {rank}，token {token}，第 {choice} 个选择：你给的是专家 {got}，应为专家 {want}"
              "（第 0 个选择是最大的 logit，第 1 个是次大的：topk 保持这个顺序）。"},
    "route_kept": {
        "en": "rank {rank}, token {token}, choice {choice} (expert {expert}): you kept it, parlab.moe "
              "drops it ({scope}; every first choice before any second choice, then earlier tokens "
              "first); {n} of {total} assignments differ on rank {rank}.",
        "zh": "rank {rank}，token {token}，第 {choice} 个选择（专家 {expert}）：你保留了它，parlab.moe "
              "会丢弃它（{scope}；所有第一选择排在任何第二选择之前，同一选择内先到的 token 优先）；"
              "rank {rank} 上 {total} 个分配中有 {n} 个不一致。"},
    "route_dropped": {
        "en": "rank {rank}, token {token}, choice {choice} (expert {expert}): you dropped it, "
              "parlab.moe keeps it ({scope}; every first choice before any second choice, then "
              "earlier tokens first); {n} of {total} assignments differ on rank {rank}.",
        "zh": "rank {rank}，token {token}，第 {choice} 个选择（专家 {expert}）：你丢弃了它，parlab.moe "
              "会保留它（{scope}；所有第一选择排在任何第二选择之前，同一选择内先到的 token 优先）；"
              "rank {rank} 上 {total} 个分配中有 {n} 个不一致。"},
    "route_ok": {
        "en": "Every rank's choices and drops match parlab.moe ({scope}: {dropped} of {total} "
              "assignments dropped).",
        "zh": "每个 rank 的专家选择和丢弃都与 parlab.moe 一致（{scope}：{total} 个分配中丢弃 {dropped} 个）。"},
    # exercises.py: the numeric checkers
    "capacity_hint": {"en": "tokens x top_k / experts x capacity factor, rounded down.",
                      "zh": "tokens x top_k / 专家数 x 容量因子，向下取整。"},
    "a2a_hint": {
        "en": "Count dispatch and combine, forward and backward, and only the rows that leave the "
              "rank ((ep-1)/ep of them).",
        "zh": "dispatch 和 combine、前向和反向都要算上，并且只算离开本 rank 的行（占 (ep-1)/ep）。"},
    "mixtral_missing": {"en": "give both total and active (numbers of parameters)",
                        "zh": "请同时给出 total 和 active（参数个数）"},
    "mixtral_hint": {
        "en": "Only the expert MLPs are 8x; attention, norms and embeddings are shared, and 2 of 8 "
              "experts run per token.",
        "zh": "只有专家 MLP 是 8 份；注意力、归一化层和嵌入层是共享的，每个 token 只运行 8 个专家中的 2 个。"},
    "mixtral_ok": {"en": "{total:.1f}B total, {active:.1f}B active.",
                   "zh": "总参数 {total:.1f}B，激活参数 {active:.1f}B。"},
    "dropped_missing": {"en": "answer a list of (token, choice) pairs, e.g. [(0, 1), (4, 1)]",
                        "zh": "请回答一个 (token, choice) 对的列表，例如 [(0, 1), (4, 1)]"},
    "dropped_unreadable": {"en": "answer {answer} could not be read as a list ({error})",
                           "zh": "答案 {answer} 无法读成列表（{error}）"},
    "dropped_not_list": {"en": "answer a list of (token, choice) pairs, got {answer}",
                         "zh": "请回答一个 (token, choice) 对的列表，收到的是 {answer}"},
    "dropped_pair": {"en": "pair {i} of your list {why}: each is (token, choice)",
                     "zh": "你的列表中第 {i} 对 {why}：每一对应为 (token, choice)"},
    "dropped_ok": {"en": "{want}.", "zh": "{want}。"},
    "dropped_extra": {"en": "kept by the rule: {extra}. ", "zh": "按规则这些是保留的：{extra}。"},
    "dropped_lost": {"en": "{n} more dropped assignment(s) to find. ",
                     "zh": "还有 {n} 个被丢弃的分配没找到。"},
    "dropped_rule": {
        "en": "Every first choice goes before any second choice; within a choice, earlier tokens first.",
        "zh": "所有第一选择排在任何第二选择之前；同一选择内，先到的 token 优先。"},
    # exercises_variants.py: expert choice across ranks
    "ec_one_rank": {
        "en": "Your experts chose among one rank's {n} tokens only, numbered 0..{last}. Expert choice "
              "looks at the WHOLE batch: gather every rank's scores first, and number the tokens "
              "rank-major (rank r's token t is r*{n} + t)",
        "zh": "你的专家只在一个 rank 的 {n} 个 token 中挑选，编号 0..{last}。Expert choice 看的是"
              "整个 batch：先 gather 所有 rank 的分数，再按 rank 优先的顺序给 token 编号"
              "（rank r 的 token t 编号为 r*{n} + t）"},
    "ec_shares": {
        "en": "Each rank gave every expert {each} of its own tokens: the experts must choose among all "
              "{total} tokens at once (one rank's tokens may win them all)",
        "zh": "每个 rank 给每个专家各分了自己的 {each} 个 token：专家必须一次在全部 {total} 个 token "
              "中挑选（可能全被同一个 rank 的 token 占满）"},
    "ec_local_ids": {
        "en": "Right tokens, but numbered within their rank; use global ids, rank-major: rank r's token "
              "t is r*{n} + t",
        "zh": "token 选对了，但编号是 rank 内的局部编号；请用按 rank 优先的全局编号："
              "rank r 的 token t 编号为 r*{n} + t"},
    "ec_raw_logits": {
        "en": "Your experts ranked the raw logits (or a softmax over the tokens, which keeps their "
              "order): the scores are S = softmax over each token's experts (dim -1), which changes "
              "which tokens win a column",
        "zh": "你的专家是按原始 logits 排序的（或者对 token 维做了 softmax，这不改变顺序）：分数应是 "
              "S = 对每个 token 的各专家做 softmax（dim -1），这会改变每一列中胜出的 token"},
    "ec_softmax_rank": {
        "en": "Your scores are a softmax over each rank's tokens (dim 0): S = softmax over each token's "
              "experts (dim -1)",
        "zh": "你的分数是对每个 rank 的 token 做的 softmax（dim 0）：S 应是对每个 token 的各专家做 softmax"
              "（dim -1）"},
    "ec_gates_raw": {
        "en": "the gates are the raw logits, not normalised: G holds the scores S = softmax over each "
              "token's experts (a token's E scores sum to 1)",
        "zh": "gates 是未归一化的原始 logits：G 存的应是分数 S = 对每个 token 的各专家做 softmax"
              "（一个 token 的 E 个分数之和为 1）"},
    "ec_gates_tokens": {
        "en": "the gates are a softmax over the tokens (dim 0); S is a softmax over each token's "
              "experts (dim -1)",
        "zh": "gates 是对 token 维做的 softmax（dim 0）；S 是对每个 token 的各专家做 softmax（dim -1）"},
    "ec_gates_renorm": {
        "en": "the gates are renormalised within each expert; G is the chosen scores of S as they are",
        "zh": "gates 在每个专家内部又做了归一化；G 应是 S 中被选中的分数原样保留"},
    "ec_shape": {"en": "({experts}, {cap}): one row per expert, its {cap} tokens",
                 "zh": "({experts}, {cap})：每个专家一行，即它的 {cap} 个 token"},
    "ec_returned": {
        "en": "rank {rank}: {name} {what}; return (tokens, gates), two tensors of shape {shape}",
        "zh": "rank {rank}：{name} {what}；应返回 (tokens, gates)，两个形状为 {shape} 的张量"},
    "ec_token_choice": {
        "en": "rank {rank}: tokens has shape {got}, one row per token: that is token choice (each token "
              "picks experts). In expert choice each EXPERT picks its top {cap} tokens: a top-k over "
              "the tokens, expected shape {shape}",
        "zh": "rank {rank}：tokens 的形状是 {got}，每个 token 一行：这是 token choice（每个 token 挑专家）。"
              "Expert choice 是每个专家挑自己分数最高的 {cap} 个 token：在 token 维上做 top-k，"
              "期望形状为 {shape}"},
    "ec_capacity": {
        "en": "rank {rank}: each expert took {took} tokens; capacity is {cap} (n c / E = {n} x {cf:g} / "
              "{experts}), and every expert is exactly full",
        "zh": "rank {rank}：每个专家取了 {took} 个 token；容量是 {cap}（n c / E = {n} x {cf:g} / "
              "{experts}），而且每个专家都恰好装满"},
    "ec_shapes": {"en": "rank {rank}: tokens {tokens}, gates {gates}; expected both {shape}",
                  "zh": "rank {rank}：tokens 为 {tokens}，gates 为 {gates}；两者都应为 {shape}"},
    "ec_dtype": {"en": "rank {rank}: tokens are {dtype}; return token ids as integers (topk's indices)",
                 "zh": "rank {rank}：tokens 的类型是 {dtype}；token 编号应以整数返回（topk 的 indices）"},
    "ec_outside": {
        "en": "rank {rank}: token id {id} is outside the batch's {n} tokens (0..{last}, rank-major)",
        "zh": "rank {rank}：token 编号 {id} 超出了 batch 的 {n} 个 token（0..{last}，按 rank 优先编号）"},
    "ec_twice": {"en": "rank {rank}: expert {expert} took one token twice; it takes {cap} different tokens",
                 "zh": "rank {rank}：专家 {expert} 把同一个 token 取了两次；它应取 {cap} 个不同的 token"},
    "ec_wrong_tokens": {
        "en": "rank {rank}: expert {expert} chose tokens {got}, parlab.moe.expert_choice takes {want}. ",
        "zh": "rank {rank}：专家 {expert} 选了 token {got}，parlab.moe.expert_choice 选的是 {want}。"},
    "ec_why": {"en": "{why}.", "zh": "{why}。"},
    "ec_column": {
        "en": "Each expert takes the tokens with the highest scores in its column of S, over all ranks.",
        "zh": "每个专家在 S 中自己那一列里、跨所有 rank 取分数最高的 token。"},
    "ec_gates_where": {"en": "rank {rank}: gates (sorted by token)",
                       "zh": "rank {rank}：gates（按 token 排序）"},
    "ec_right_tokens": {"en": "rank {rank}: right tokens; {why}", "zh": "rank {rank}：token 选对了；{why}"},
    "ec_sent": {"en": " Rank 0 sent {n} values through {ops}.",
                "zh": "rank 0 通过 {ops} 发送了 {n} 个数值。"},
    "ec_ok": {
        "en": "Every rank's {experts} experts took the same {cap} tokens each as "
              "parlab.moe.expert_choice over all {n}; {none} tokens got no expert, {many} got two or "
              "more, and nothing was dropped.{sent}",
        "zh": "每个 rank 上的 {experts} 个专家各自选中的 {cap} 个 token 都与 parlab.moe.expert_choice "
              "在全部 {n} 个 token 上的结果一致；{none} 个 token 没有分到专家，{many} 个分到两个或更多，"
              "并且没有任何丢弃。{sent}"},
    # widgets.py: the explorer
    "w_experts": {"en": "experts", "zh": "专家数"},
    "w_top_k": {"en": "top-k", "zh": "top-k"},
    "w_capacity_factor": {"en": "capacity factor", "zh": "容量因子"},
    "w_skew": {"en": "routing skew", "zh": "路由偏斜"},
    "w_degree": {"en": "EP degree", "zh": "专家并行度"},
    "w_run": {"en": "run live on CPU ranks", "zh": "在 CPU rank 上实际运行"},
    "w_running": {"en": "running ...", "zh": "运行中 ..."},
    "w_press": {"en": "press <i>run live</i>", "zh": "请点击<i>在 CPU rank 上实际运行</i>"},
    "w_no_limit": {"en": "no limit", "zh": "不限"},
    "w_ep_divides": {"en": "ep={ep} must divide n_experts={experts}",
                     "zh": "ep={ep} 必须整除 n_experts={experts}"},
    "w_why": {
        "en": "Left: a made-up router, expert e drawn with popularity ∝ (e+1)<sup>−skew</sup>, so "
              "expert 0 is the hot one by construction. Right: the GPT's own router, whose hot expert "
              "and skew come from its random initial weights (skew &gt; 0 only picks the seed that "
              "starts skewed). Compare each side with its capacity rule, not the sides' numbers with "
              "each other.",
        "zh": "左侧：一个虚构的路由器，专家 e 被选中的概率 ∝ (e+1)<sup>−skew</sup>，所以专家 0 天生就是热门专家。"
              "右侧：GPT 自己的路由器，它的热门专家和偏斜程度来自随机初始化的权重（skew &gt; 0 只是挑了一个"
              "一开始就偏斜的随机种子）。请把每一侧和它自己的容量规则对照，不要拿两侧的数字互相比较。"},
    "w_over": {"en": " ({n} over capacity)", "zh": "（超出容量 {n}）"},
    "w_expert": {"en": "expert {e}", "zh": "专家 {e}"},
    "w_predicted": {"en": "predicted: one routed batch, one MoE layer",
                    "zh": "预测：路由一个 batch，一个 MoE 层"},
    "w_capacity": {"en": "capacity per expert", "zh": "每个专家的容量"},
    "w_dropped_assignments": {"en": "dropped assignments", "zh": "被丢弃的分配"},
    "w_busiest_expert": {"en": "busiest expert / mean", "zh": "最忙专家 / 平均"},
    "w_busiest_rank": {"en": "busiest rank / mean", "zh": "最忙 rank / 平均"},
    "w_dispatch": {"en": "dispatch bytes sent, per rank", "zh": "每个 rank 的 dispatch 发送字节数"},
    "w_balanced_formula": {"en": " (balanced formula {bytes})", "zh": "（均衡时的公式值 {bytes}）"},
    "w_layer_time": {"en": "layer forward: compute + all-to-all", "zh": "层前向：计算 + all-to-all"},
    "w_layer_ms": {"en": "{compute:.2f} + {comm:.2f} ms (balanced compute {balanced:.2f} ms)",
                   "zh": "{compute:.2f} + {comm:.2f} ms（均衡时计算 {balanced:.2f} ms）"},
    "w_measured": {"en": "measured here, on CPU ranks", "zh": "在这里的 CPU rank 上实测"},
    "w_step": {"en": "step time (median)", "zh": "每步时间（中位数）"},
    "w_step_ms": {"en": "{ms:.1f} ms", "zh": "{ms:.1f} ms"},
    "w_per_expert": {"en": "assignments per expert (block 0, step 0)",
                     "zh": "每个专家的分配数（block 0，第 0 步）"},
    "w_dropped": {"en": "dropped", "zh": "丢弃"},
    "w_dropped_rule": {"en": "{rate:.1%} (capacity rule on these counts: {rule:.1%})",
                       "zh": "{rate:.1%}（按这些计数套用容量规则：{rule:.1%}）"},
    "w_rows": {"en": "rows computed per rank", "zh": "每个 rank 计算的行数"},
    "w_a2a": {"en": "a2a bytes per rank, block 0 (traced)", "zh": "每个 rank 的 a2a 字节数，block 0（跟踪所得）"},
    "w_formula": {"en": "formula, balanced", "zh": "公式（均衡时）"},
}
