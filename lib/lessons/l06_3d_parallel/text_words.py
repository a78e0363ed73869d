"""Notebook 06's words outside the interview corner, in English and Chinese (a catalogue of
``lessons.common.i18n``; ``text.TEXT`` names the same dict): what the checkers
(``exercises.py``, ``exercises_clip.py``) tell the learner, the planner explorer's labels
(``widgets.py``), and the small words lists are joined with. The "Correct." / "Not yet."
before a checker's message is the answer boxes' own (``checkers.answers.verdict``).
"""

TEXT = {
    # --- the small words lists are joined with ---------------------------------------------
    "sep.comma": {"en": ", ", "zh": "，"},
    "sep.semi": {"en": "; ", "zh": "；"},
    "setup": {"en": "{model} on {n} {gpu}", "zh": "{model}，{n} 张 {gpu}"},
    "setup.short": {"en": "{model} on {n}", "zh": "{model}（{n} 张）"},

    # --- exercises.py: the numeric answers ----------------------------------------------------
    "coords.not_dict": {"en": "give a dict like {{'dp': 0, 'pp': 1, 'tp': 0}}, got {got}",
                        "zh": "请给出一个 dict，例如 {{'dp': 0, 'pp': 1, 'tp': 0}}，收到的是 {got}"},
    "coords.no_key": {"en": "the dict has no {name}: give 'dp', 'pp' and 'tp'",
                      "zh": "dict 里没有 {name}：请给出 'dp'、'pp' 和 'tp'"},
    "coords.right": {"en": "rank {rank} is {want}.", "zh": "rank {rank} 的坐标是 {want}。"},
    "coords.wrong": {"en": "{wrong} wrong: rank = (dp_i * pp + pp_i) * tp + tp_i, TP varies fastest.",
                     "zh": "{wrong} 不对：rank = (dp_i * pp + pp_i) * tp + tp_i，TP 变化最快。"},
    "tp_group.right": {"en": "{want}: the ranks that differ only in the TP coordinate.",
                       "zh": "{want}：只有 TP 坐标不同的那些 rank。"},
    "tp_group.wrong": {"en": "{got} is not it: a TP group is tp consecutive ranks (TP is innermost).",
                       "zh": "{got} 不对：一个 TP 组是 tp 个连续的 rank（TP 在最内层）。"},
    "bubble.hint": {"en": "idle / total = (p - 1) / (m + p - 1).",
                    "zh": "空闲 / 总时间 = (p - 1) / (m + p - 1)。"},
    "memory.hint": {"en": "the first stage holds L/pp layers of 12 h^2 parameters (plus the "
                          "embedding), split over tp; 16 bytes each.",
                    "zh": "第一个阶段持有 L/pp 层、每层 12 h^2 个参数（外加嵌入层），再按 tp 切分；"
                          "每个参数 16 字节。"},
    "memory.explanation": {"en": "16 bytes for each parameter of the first stage's tp-th share.",
                           "zh": "第一个阶段按 tp 切分后的那一份参数，每个 16 字节。"},

    # --- exercises.py: the 3D groups and the DP gradient sync ---------------------------------
    "unwritten": {"en": "write {name} (it still raises NotImplementedError)",
                  "zh": "请先写出 {name}（它仍然抛出 NotImplementedError）"},
    "groups.not_dict": {"en": "my_groups({rank}, ...) must return a dict with keys 'tp', 'pp', "
                              "'dp', got {got}",
                        "zh": "my_groups({rank}, ...) 必须返回一个带 'tp'、'pp'、'dp' 三个键的 dict，"
                              "收到的是 {got}"},
    "groups.not_list": {"en": "rank {rank}: the {axis} group {why}; each group is a list of ranks",
                        "zh": "rank {rank}：{axis} 组 {why}；每个组都是一个 rank 列表"},
    "groups.wrong": {"en": "rank {rank}, {axis} group: {got}, expected {want} (rank {rank} is "
                           "dp={dp}, pp={pp}, tp={tp}; a {axis} group varies only the {coord} "
                           "coordinate)",
                     "zh": "rank {rank} 的 {axis} 组：{got}，应为 {want}（rank {rank} 的坐标是 "
                           "dp={dp}、pp={pp}、tp={tp}；{axis} 组只改变 {coord} 坐标）"},
    "groups.sum_wrong": {"en": "on the ranks: rank {rank}'s all-reduce over its {axis} group "
                               "summed to {got}, expected {want}",
                         "zh": "在真实 rank 上：rank {rank} 在它的 {axis} 组上做 all-reduce 得到 "
                               "{got}，应为 {want}"},
    "groups.right": {"en": "every rank's groups equal Mesh(dp={dp}, pp={pp}, tp={tp})'s, and on "
                           "{world} real ranks each all-reduce of the rank ids summed its group: "
                           "e.g. rank {last} got tp {tp_sum}, pp {pp_sum}, dp {dp_sum}.",
                     "zh": "每个 rank 的组都与 Mesh(dp={dp}, pp={pp}, tp={tp}) 的一致；在 {world} 个"
                           "真实 rank 上，每次对 rank 编号做的 all-reduce 都正好求出了本组之和：例如 "
                           "rank {last} 得到 tp {tp_sum}、pp {pp_sum}、dp {dp_sum}。"},
    "sync.where": {"en": "rank {rank} (stage {stage}, TP slice {tp})",
                   "zh": "rank {rank}（阶段 {stage}，TP 切片 {tp}）"},
    "sync.world_mean": {"en": "; it is the mean over all ranks: other stages' and TP slices' "
                              "gradients are different parameters, only DP replicas share them",
                        "zh": "；这是所有 rank 上的平均：其他阶段、其他 TP 切片的梯度属于不同的参数，"
                              "只有 DP 副本共享同一份参数"},
    "sync.sum": {"en": "; it is the sum over the DP group {group}: divide by its size",
                 "zh": "；这是 DP 组 {group} 上的和：还要除以组的大小"},
    "sync.right": {"en": "every rank holds the mean over its DP group (e.g. rank 0 with {group}), "
                         "not over the world.",
                   "zh": "每个 rank 都持有它所在 DP 组的平均（例如 rank 0 与 {group}），"
                         "而不是全体 rank 的平均。"},

    # --- exercises_clip.py: the global gradient norm -----------------------------------------
    "clip.hang": {"en": " The stages hold different tensors ({held}): a collective per tensor over "
                        "groups['pp'] never pairs up. Add the squares on the rank, then all-reduce "
                        "one number.",
                  "zh": " 各阶段持有的张量不同（{held}）：在 groups['pp'] 上逐个张量做集合通信，"
                        "永远配不上对。先在本 rank 上把平方加起来，再对这一个数做 all-reduce。"},
    "clip.held": {"en": "stage {stage}: {n}", "zh": "阶段 {stage}：{n} 个"},
    "clip.kind": {"en": "rank {rank} returned a {kind}: return the norm, a float (or a "
                        "one-element tensor)",
                  "zh": "rank {rank} 返回了一个 {kind}：请返回范数，一个 float（或只含一个元素的张量）"},
    "clip.mistake": {"en": "rank 0 returned {got:.6g}, one device's norm is {want:.6g} "
                           "(×{ratio:.3f}): {said}.",
                     "zh": "rank 0 返回了 {got:.6g}，单卡上的范数是 {want:.6g}（×{ratio:.3f}）：{said}。"},
    "clip.and": {"en": "; and ", "zh": "；并且"},
    "clip.every": {"en": "the tensors every TP rank holds whole (tp_split None: layer norms, the "
                         "row-parallel biases, wpe) were counted on all {t} TP ranks, {t} times "
                         "instead of once; alone that makes the norm ×{factor:.3f} "
                         "(cost.clip_norm_overcount)",
                   "zh": "每个 TP rank 都完整持有的张量（tp_split 为 None：LayerNorm、行并行层的偏置、"
                         "wpe）在全部 {t} 个 TP rank 上都被计入，算了 {t} 次而不是只算一次；仅这一点"
                         "就让范数变成 ×{factor:.3f}（cost.clip_norm_overcount）"},
    "clip.never": {"en": "the tensors with tp_split None were not counted at all: count them once, "
                         "on TP rank 0",
                   "zh": "tp_split 为 None 的张量完全没有计入：应在 TP rank 0 上计入一次"},
    "clip.no_tp": {"en": "each TP rank kept its own slice's share: the slices are different pieces "
                         "of the same matrices, so add their squares over groups['tp']",
                   "zh": "每个 TP rank 只保留了自己切片的那一份：各切片是同一批矩阵的不同部分，"
                         "所以要在 groups['tp'] 上把它们的平方相加"},
    "clip.no_pp": {"en": "each rank kept its own stage's norm ({per}): the PP all-reduce is "
                         "missing, and the stages hold different layers",
                   "zh": "每个 rank 只保留了自己阶段的范数（{per}）：缺少 PP 上的 all-reduce，"
                         "而各阶段持有的是不同的层"},
    "clip.stage_norm": {"en": "stage {stage}: {norm:.4g}", "zh": "阶段 {stage}：{norm:.4g}"},
    "clip.dp": {"en": "the squares were also added over groups['dp']: the {d} DP replicas hold the "
                      "same averaged gradient, so it was counted {d} times, norm ×√{d} = "
                      "×{factor:.3f}",
                "zh": "平方和还在 groups['dp'] 上相加了：{d} 个 DP 副本持有的是同一份平均后的梯度，"
                      "所以它被算了 {d} 次，范数 ×√{d} = ×{factor:.3f}"},
    "clip.no_sqrt": {"en": "that is ||g||², the sum of squares: take its square root at the end",
                     "zh": "这是 ||g||²，即平方和：最后还要开平方根"},
    "clip.rank_norms": {"en": "norms were added, not squares: ||a|| + ||b|| is not "
                              "√(||a||² + ||b||²); all-reduce each rank's sum of squares and take "
                              "the root once, at the end",
                        "zh": "加的是范数而不是平方：||a|| + ||b|| 不等于 √(||a||² + ||b||²)；"
                              "应对每个 rank 的平方和做 all-reduce，最后只开一次根"},
    "clip.stage_norms": {"en": "the root was taken before every sum was done, then norms were "
                               "added: add squares all the way, root once at the end",
                         "zh": "还没加完就先开了根，然后把范数相加：应一路都加平方，最后只开一次根"},
    "clip.tensor_norms": {"en": "each tensor's norm was added, not its square: ||g||² is the sum "
                                "of the squares of every element, root once at the end",
                          "zh": "加的是每个张量的范数而不是它的平方：||g||² 是所有元素平方之和，"
                                "最后只开一次根"},
    "clip.wrong": {"en": "rank {rank} returned {got:.6g}, one device's norm is {want:.6g}. Sum the "
                         "squares of this rank's gradients (tp_split None: on TP rank 0 only), "
                         "all-reduce that one number over groups['tp'] and groups['pp'] (not "
                         "groups['dp']), then take the root.",
                   "zh": "rank {rank} 返回了 {got:.6g}，单卡上的范数是 {want:.6g}。先把本 rank 梯度的"
                         "平方相加（tp_split 为 None 的只在 TP rank 0 上加），再在 groups['tp'] 和 "
                         "groups['pp'] 上（不是 groups['dp']）对这一个数做 all-reduce，最后开根。"},
    "clip.right": {"en": "every rank returned {value:.6g}, one device's ||g|| on {size} ranks "
                         "(dp={dp}, pp={pp}, tp={tp}); rank 0 ran {n} {collectives} carrying "
                         "{elements} {element_word}.",
                   "zh": "每个 rank 都返回了 {value:.6g}，即 {size} 个 rank（dp={dp}、pp={pp}、"
                         "tp={tp}）上单卡的 ||g||；rank 0 执行了 {n} {collectives}，共传输 "
                         "{elements} {element_word}。"},
    "clip.collective": {"en": "collective", "zh": "次集合通信"},
    "clip.collectives": {"en": "collectives", "zh": "次集合通信"},
    "clip.element": {"en": "element", "zh": "个元素"},
    "clip.elements": {"en": "elements", "zh": "个元素"},
    "clip.across": {"en": " Note: {op} over {ranks} spans the DP replicas, which hold the same "
                          "gradient: right here, but a collective plain DP does not need.",
                    "zh": " 注意：{ranks} 上的 {op} 跨越了 DP 副本，而它们持有相同的梯度：这里结果"
                          "没错，但在普通 DP 下这是一次多余的集合通信。"},
    "clip.slow": {"en": " It is slow, though: add the squares on the rank first, then one "
                        "all-reduce of one number per group (TP, PP) is enough; each all-reduce "
                        "pays a full latency however small it is.",
                  "zh": " 不过这样很慢：先在本 rank 上把平方加起来，然后每个组（TP、PP）只需对一个数"
                        "做一次 all-reduce；每次 all-reduce 不管多小，都要付一次完整的延迟。"},
    "clip.dp1": {"en": " With dp = 1 an extra sum over DP would not show: try dp=2.",
                 "zh": " dp = 1 时，多做的 DP 求和看不出来：试试 dp=2。"},

    # --- widgets.py: the planner explorer -------------------------------------------------------
    "explorer.model": {"en": "model", "zh": "模型"},
    "explorer.gpu": {"en": "GPU", "zh": "GPU"},
    "explorer.per_node": {"en": "GPUs per node", "zh": "每节点 GPU 数"},
    "explorer.nodes": {"en": "nodes", "zh": "节点数"},
    "explorer.links": {"en": "between nodes", "zh": "节点间互联"},
    "explorer.batch": {"en": "global batch", "zh": "全局 batch"},
    "explorer.seq": {"en": "sequence length", "zh": "序列长度"},
    "explorer.head": {"en": "<b>{model}</b> on {n_gpus} × {gpu}, global batch {global_batch} × "
                            "{seq_len} tokens: {n_ranked} layouts fit. Step: predicted, and the range "
                            "the published runs of its kind were measured at (ranked at its fast end)",
                      "zh": "<b>{model}</b>，{n_gpus} × {gpu}，全局 batch {global_batch} × {seq_len} 个"
                            " token：{n_ranked} 个布局放得下。每步时间：预测值，以及同类已发表训练的实测"
                            "范围（按其快端排名）"},
    "explorer.col_config": {"en": "configuration", "zh": "配置"},
    "explorer.col_step": {"en": "step", "zh": "每步时间"},
    "explorer.col_vs": {"en": "vs #1", "zh": "相对 #1"},
    "explorer.col_why": {"en": "why", "zh": "原因"},
    "explorer.infeasible": {"en": "{n} layouts do not run (click)",
                            "zh": "{n} 个布局跑不起来（点击展开）"},
    "explorer.best": {"en": "best: {label}", "zh": "最优：{label}"},
}
