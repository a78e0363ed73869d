"""One page per topic to revise from: the key formulas, each with one worked number that
``parlab.cost`` computes now (so a sheet cannot disagree with the notebooks), in English
and 中文 side by side. ``run.py html`` writes them beside the notebooks' pages
(``build/cheatsheet-NN.html``, and ``build/cheatsheets.html`` linking them); each prints
on one sheet and reads offline (MathJax from ``build/assets``).

A sheet is a list of entries: a name, the formula (TeX), the worked example (its inputs
and result, formatted once and written into both languages), and where it comes from.
"""

from __future__ import annotations

import html
import os

from parlab import cost

from .files import write_whole

GB, MiB = 1e9, 2 ** 20


def _e(name_en, name_zh, formula, example_en, example_zh, source, **numbers):
    """One entry; ``example_*`` are templates over ``numbers`` (formatted once, for both)."""
    return {"name": {"en": name_en, "zh": name_zh}, "formula": formula,
            "example": {"en": example_en.format(**numbers), "zh": example_zh.format(**numbers)},
            "source": source}


def sheets() -> dict[str, dict]:
    """{notebook number: {"title": {en, zh}, "entries": [...]}}, every number from ``cost``."""
    ar8 = cost.collective_bytes("all_reduce", 1 * GB, 8)
    ag8 = cost.collective_bytes("all_gather", 1 * GB, 8)
    seven_b = cost.MODEL_PRESETS["7B"].n_params  # Llama-2-7B's 6.74e9, as the notebooks count
    z = {s: cost.zero_memory(seven_b, 64, s)["total"] / GB for s in (0, 1, 2, 3)}
    bpp = cost.training_bytes_per_param("bf16_mixed")["total"]
    tp = cost.tp_comm_per_layer(1, 2048, 12288, 8)
    act = cost.activation_memory(2048, 1, 12288, 96)
    act_sp = cost.activation_memory(2048, 1, 12288, 96, tp=8, sequence_parallel=True)
    cap = cost.expert_capacity(4096, 8, 1.25, 2)
    a2a = cost.moe_all_to_all_bytes(4096, 4096, 2, 8, 2)
    ring = cost.cp_comm_per_layer(1, 131072, 4096, 8, "ring")
    uly = cost.cp_comm_per_layer(1, 131072, 4096, 8, "ulysses")
    p7 = cost.transformer_params(32, 4096)
    young = cost.young_interval(60, 3 * 3600)
    good = cost.goodput(young, 60, 3 * 3600)["goodput"]
    per_day = cost.interruptions_per_day(16384, 50000)
    return {
        "00": {"title": {"en": "Collectives", "zh": "集合通信"}, "entries": [
            _e("Ring all-reduce: bytes sent per rank", "Ring all-reduce：每个 rank 发送的字节数",
               r"2\,\frac{N-1}{N}\,S",
               "S = 1 GB, N = 8: {v:.2f} GB per rank, almost 2S at any N",
               "S = 1 GB，N = 8：每个 rank 发送 {v:.2f} GB，N 再大也接近 2S",
               "Patarasuk & Yuan 2009; cost.collective_bytes", v=ar8 / GB),
            _e("All-gather, reduce-scatter", "All-gather、reduce-scatter",
               r"\frac{N-1}{N}\,S", "S = 1 GB, N = 8: {v:.3f} GB per rank (half an all-reduce)",
               "S = 1 GB，N = 8：每个 rank {v:.3f} GB（all-reduce 的一半）",
               "cost.collective_bytes", v=ag8 / GB),
            _e("Time of a collective (α-β)", "集合通信耗时（α-β 模型）",
               r"T = \text{steps}\cdot\alpha + \frac{\text{bytes}}{B}",
               "ring all-reduce: 2(N−1) steps; latency dominates small messages, bandwidth large ones",
               "ring all-reduce：2(N−1) 步；小消息看延迟，大消息看带宽",
               "Hockney 1994; cost.collective_time")]},
        "01": {"title": {"en": "Data parallelism and ZeRO", "zh": "数据并行与 ZeRO"}, "entries": [
            _e("Training states per parameter (mixed-precision Adam)", "每个参数的训练状态（混合精度 Adam）",
               r"2 + 2 + 4 + 4 + 4 = 16\ \text{B}",
               "weights, gradients, fp32 master, Adam m and v: {b} B per parameter",
               "权重、梯度、fp32 主权重、Adam 的 m 和 v：每个参数 {b} B",
               "Rajbhandari et al. 2020, §3.1; cost.training_bytes_per_param", b=bpp),
            _e("ZeRO stages, memory per GPU", "ZeRO 各阶段每卡显存",
               r"(2+2+12)\Psi \to 2\Psi+2\Psi+\tfrac{12\Psi}{N_d} \to 2\Psi+\tfrac{14\Psi}{N_d} \to \tfrac{16\Psi}{N_d}",
               "7B on 64 GPUs: {z0:.1f} / {z1:.1f} / {z2:.1f} / {z3:.2f} GB (DDP, ZeRO-1, -2, -3)",
               "7B、64 卡：{z0:.1f} / {z1:.1f} / {z2:.1f} / {z3:.2f} GB（DDP、ZeRO-1、-2、-3）",
               "Rajbhandari et al. 2020, §5, Fig. 1; cost.zero_memory", z0=z[0], z1=z[1], z2=z[2], z3=z[3]),
            _e("Communication per step", "每步通信量",
               r"\text{DDP, ZeRO-1/2: } 2\Psi \qquad \text{ZeRO-3: } 3\Psi",
               "ZeRO-3 adds one all-gather of the parameters: 1.5× the traffic of DDP",
               "ZeRO-3 多一次参数 all-gather：通信量是 DDP 的 1.5 倍",
               "Rajbhandari et al. 2020, §7; cost.zero_comm_volume")]},
        "02": {"title": {"en": "Tensor and sequence parallelism", "zh": "张量并行与序列并行"}, "entries": [
            _e("Collectives per layer per step", "每层每步的集合通信次数",
               r"4\ \text{all-reduces of } b\,s\,h \text{ values (2 forward, 2 backward)}",
               "GPT-3 (h = 12288, s = 2048, b = 1, fp16): message {m:.0f} MiB, {c} all-reduces",
               "GPT-3（h = 12288，s = 2048，b = 1，fp16）：每条消息 {m:.0f} MiB，共 {c} 次 all-reduce",
               "Shoeybi et al. 2019, §3; cost.tp_comm_per_layer", m=tp["message_bytes"] / MiB, c=tp["collectives"]),
            _e("Bytes per GPU per layer per step", "每卡每层每步发送字节数",
               r"8\,b\,s\,h\,\frac{t-1}{t}\ \text{values}",
               "same layer at t = 8: {v:.0f} MiB per GPU; SP sends the same bytes",
               "同一层、t = 8：每卡 {v:.0f} MiB；序列并行的字节数不变",
               "Narayanan et al. 2021, §3.2; Korthikanti et al. 2022, §4.2.2", v=tp["bytes"] / MiB),
            _e("Activations per layer", "每层激活值",
               r"s\,b\,h\left(34 + \frac{5as}{h}\right) \ \xrightarrow{\text{TP+SP}}\ \frac{1}{t}(\cdot)",
               "GPT-3 layer, b = 1: {a:.2f} GB; with t = 8 and SP: {s:.2f} GB",
               "GPT-3 一层，b = 1：{a:.2f} GB；t = 8 加序列并行：{s:.2f} GB",
               "Korthikanti et al. 2022, §4, Table 2; cost.activation_memory", a=act / GB, s=act_sp / GB)]},
        "03": {"title": {"en": "Pipeline parallelism", "zh": "流水线并行"}, "entries": [
            _e("Bubble, as a share of the step", "气泡占一步时间的比例",
               r"\frac{p-1}{m+p-1}", "p = 4, m = 8: {f:.1%} (GPipe and 1F1B alike)",
               "p = 4，m = 8：{f:.1%}（GPipe 与 1F1B 相同）",
               "Huang et al. 2019; cost.bubble_fraction", f=cost.bubble_fraction(4, 8)),
            _e("Bubble against the ideal time", "气泡与理想时间之比",
               r"\frac{p-1}{m} \quad\text{interleaved: } \frac{1}{v}\cdot\frac{p-1}{m}",
               "p = 4, m = 8: {r:.1%}; with v = 2 chunks: {i:.1%}",
               "p = 4，m = 8：{r:.1%}；每卡 v = 2 个 chunk：{i:.1%}",
               "Narayanan et al. 2021, §2.2; cost.bubble_ratio", r=cost.bubble_ratio(4, 8),
               i=cost.bubble_ratio(4, 8, 2)),
            _e("Activations held", "需保存的激活值",
               r"\text{GPipe: } m \qquad \text{1F1B: } \le p \ \text{micro-batches}",
               "1F1B changes memory, not the bubble", "1F1B 改变的是显存，不是气泡",
               "Narayanan et al. 2021, §2.2.1")]},
        "04": {"title": {"en": "MoE and expert parallelism", "zh": "MoE 与专家并行"}, "entries": [
            _e("Expert capacity", "专家容量",
               r"\left\lceil \frac{k\,T}{E}\cdot \text{cf} \right\rceil",
               "T = 4096 tokens, E = 8, top-2, cf = 1.25: {c} slots per expert",
               "T = 4096 个 token，E = 8，top-2，cf = 1.25：每个专家 {c} 个槽位",
               "Fedus et al. 2021, §2.2; cost.expert_capacity", c=cap),
            _e("All-to-all bytes per layer", "每层 all-to-all 字节数",
               r"2 \times k\,T\,h \cdot \tfrac{E_p-1}{E_p} \ \text{(dispatch + combine), ×2 with backward}",
               "T = 4096, h = 4096, top-2, ep = 8, bf16: {d:.0f} MiB dispatch, {t:.0f} MiB per step",
               "T = 4096，h = 4096，top-2，ep = 8，bf16：dispatch {d:.0f} MiB，每步共 {t:.0f} MiB",
               "Lepikhin et al. 2020; cost.moe_all_to_all_bytes", d=a2a["dispatch"] / MiB, t=a2a["total"] / MiB)]},
        "05": {"title": {"en": "Context parallelism", "zh": "上下文并行"}, "entries": [
            _e("Ring attention: K, V around the ring", "Ring attention：K、V 沿环传递",
               r"(cp-1)\ \text{sends of the local } K,V \text{ per layer forward}",
               "s = 128K, h = 4096, cp = 8, bf16: {r:.1f} GB per rank per layer and step",
               "s = 128K，h = 4096，cp = 8，bf16：每个 rank 每层每步 {r:.1f} GB",
               "Liu et al. 2023; cost.cp_comm_per_layer", r=ring["bytes"] / GB),
            _e("Ulysses: all-to-all over heads", "Ulysses：按注意力头做 all-to-all",
               r"4\ \text{all-to-alls per layer forward}, \ \propto \frac{1}{cp}",
               "same shape: {u:.2f} GB per rank; needs heads divisible by cp",
               "同样形状：每个 rank {u:.2f} GB；要求头数能被 cp 整除",
               "Jacobs et al. 2023; cost.cp_comm_per_layer", u=uly["bytes"] / GB)]},
        "06": {"title": {"en": "3D parallelism", "zh": "3D 并行"}, "entries": [
            _e("The mesh", "设备网格",
               r"N = t \times p \times d \ (\times\, cp)", "1T model: t = 8, p = 64, d = 6 on 3072 GPUs",
               "1T 模型：t = 8，p = 64，d = 6，共 3072 张 GPU", "Narayanan et al. 2021, Table 1"),
            _e("Where each goes", "各维度放在哪里",
               r"t \le \text{GPUs per node};\ p \text{ across nodes};\ d \text{ outermost}",
               "TP every layer needs the fastest link; PP sends only at stage edges; DP once per step",
               "张量并行每层都通信，放节点内最快的链路；流水线只在 stage 边界通信；数据并行每步一次",
               "Narayanan et al. 2021, §3")]},
        "07": {"title": {"en": "Mixed precision", "zh": "混合精度"}, "entries": [
            _e("Unit roundoff", "单位舍入误差",
               r"u = 2^{-(m+1)}", "bf16: u = {b:.4g}; fp16: u = {f:.4g}",
               "bf16 的 u = {b:.4g}；fp16 的 u = {f:.4g}", "Higham 2002, §2.1; cost.unit_roundoff",
               b=cost.unit_roundoff("bf16"), f=cost.unit_roundoff("fp16")),
            _e("Why fp32 master weights", "为什么需要 fp32 主权重",
               r"|\Delta w| < u\,|w| \ \Rightarrow\ w + \Delta w = w",
               "in bf16 an update smaller than about {b:.4g} |w| rounds away",
               "在 bf16 中，小于约 {b:.4g} |w| 的更新会被舍入掉",
               "Micikevicius et al. 2018, §3.1", b=cost.unit_roundoff("bf16"))]},
        "08": {"title": {"en": "Checkpoints and failures", "zh": "检查点与故障"}, "entries": [
            _e("Interruptions per day", "每天中断次数",
               r"\frac{24\,N}{\text{MTBF}_{\text{GPU}}}",
               "16,384 GPUs, MTBF 50,000 h per GPU: {d:.2f} a day",
               "16,384 张 GPU，单卡 MTBF 50,000 小时：每天 {d:.2f} 次",
               "cost.interruptions_per_day", d=per_day),
            _e("Checkpoint interval (Young)", "检查点间隔（Young 公式）",
               r"\tau^* = \sqrt{2\,C\,M}",
               "C = 60 s, job MTBF 3 h: τ* = {y:.0f} s, goodput {g:.1%}",
               "C = 60 秒，作业 MTBF 3 小时：τ* = {y:.0f} 秒，有效吞吐 {g:.1%}",
               "Young 1974; cost.young_interval, cost.goodput", y=young, g=good)]},
    }


def page(number: str, sheet: dict, mathjax_url: str) -> str:
    """One sheet as a page: English and 中文 side by side, MathJax from ``mathjax_url``."""
    rows = "".join(
        f"<tr><td><b>{html.escape(e['name']['en'])}</b><br>{html.escape(e['example']['en'])}</td>"
        f"<td class='f'>\\[{html.escape(e['formula'])}\\]</td>"
        f"<td lang='zh'><b>{html.escape(e['name']['zh'])}</b><br>{html.escape(e['example']['zh'])}</td></tr>"
        f"<tr class='src'><td colspan='3'>{html.escape(e['source'])}</td></tr>" for e in sheet["entries"])
    title = f"{number} · {sheet['title']['en']} · {sheet['title']['zh']}"
    return ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title>"
            f"<script src='{html.escape(mathjax_url)}'></script>"
            "<style>body{font-family:system-ui,sans-serif;max-width:60em;margin:1.5em auto;padding:0 1em}"
            "table{border-collapse:collapse;width:100%}td{vertical-align:top;padding:.4em .5em;"
            "border-top:1px solid #ddd}td.f{text-align:center;width:36%}tr.src td{border:0;"
            "color:#666;font-size:80%;padding-top:0}@page{size:A4 landscape;margin:12mm}</style>"
            f"</head><body><h1>{html.escape(title)}</h1><table>{rows}</table>"
            "<p style='color:#666;font-size:80%'>Every number is computed by <code>parlab.cost</code> "
            "when the page is built. 每个数字都在生成页面时由 <code>parlab.cost</code> 计算。</p>"
            "</body></html>\n")


def write_all(build: str, mathjax_url: str) -> list[str]:
    """Every sheet as ``build/cheatsheet-NN.html`` and an index, ``build/cheatsheets.html``,
    each written whole; returns the files' paths. ``mathjax_url`` is relative to ``build``."""
    out, links = [], []
    for number, sheet in sheets().items():
        name = f"cheatsheet-{number}.html"
        out.append(write_whole(os.path.join(build, name), page(number, sheet, mathjax_url)))
        links.append(f"<li><a href='{name}'>{number} · {html.escape(sheet['title']['en'])} · "
                     f"{html.escape(sheet['title']['zh'])}</a></li>")
    index = ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Cheat sheets · 速查表</title>"
             "</head><body style='font-family:system-ui,sans-serif;max-width:40em;margin:2em auto'>"
             f"<h1>Cheat sheets · 速查表</h1><ul>{''.join(links)}</ul></body></html>\n")
    out.append(write_whole(os.path.join(build, "cheatsheets.html"), index))
    return out
