"""Notebook 09's checker messages, in English and Chinese (``i18n.t`` formats them; every
number is formatted once, by the checker). The "Correct." / "Not yet." before them is the
answer boxes' own (``checkers.answers.verdict``)."""

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
