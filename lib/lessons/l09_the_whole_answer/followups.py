"""The seed's follow-up questions with answers (numbers from ``facts()``, each sentence
with the section that measures it), and the table of its claims: what holds, what does
not, and the figure that settles each. The words are in ``text.py`` (``FOLLOW_UPS``,
``CLAIMS``), in English and Chinese; each function renders them in the session's language
(``lessons.lang``) or the ``lang`` it is given, every number formatted once, by the same
field in both."""

from __future__ import annotations

from lessons.common.i18n import pick, t
from .facts import facts
from .seed_claims import SEED_CLAIMS, VERDICTS
from .text import CLAIMS, FOLLOW_UPS, TEXT


def fields(lang: str | None = None) -> dict:
    """Every number the follow-ups and the claims quote, by the field name their texts use
    (the attention kind's name in ``lang``)."""
    f = facts()
    b, tp, g, cap = f["bubble"], f["tp"], f["gpt3_seed"], f["capacity"]
    best, layer, nv = f["7b_best_layout"], f["gpt3_layer"], f["nvlink3"]
    thirteen, rule13 = f["thirteen"], f["order"]["13B on 8 A100"]
    m = max(b["peak"])  # the most micro-batches 03 §5 holds: GPipe keeps all of them
    return dict(
        # TP (02)
        message_mib=tp["message_mib"], collectives=tp["collectives"], forward=tp["forward"],
        backward=tp["collectives"] - tp["forward"], step_mib=tp["step_mib"],
        seed_mib=tp["seed_mib"], sp_step_mib=tp["sp_step_mib"],
        layer_params=layer["params"], layer_param_gb=layer["param_gb"], layer_act_gb=layer["act_gb"],
        nv_dir=nv["per_direction"], nv_total=nv["total"], ib_hdr=f["ib_hdr"],
        # PP (03)
        fraction=b["fraction"], p=b["p"], m=b["m"], ratio=b["ratio"], m20=b["m20"],
        at_4p_4=b["at_4p"][4], at_4p_64=b["at_4p"][64], at_4p_1024=b["at_4p"][1024],
        interleaved_v2=b["interleaved_v2"], peak_m=m, gpipe_peak=b["peak"][m][0],
        f1b_peak=b["peak"][m][1],
        # DP, ZeRO and the 7B (00, 01)
        ring8=f["ring"][8], ring1024=f["ring"][1024], ring_steps=f["ring_steps"][1024],
        weak_n=f["weak"]["sweeps"], weak_gpus=f["weak"]["gpus"], weak_max=f["weak"]["max"],
        fp16_gb=f["7b_fp16_gb"], params_e9=f["7b_params"] / 1e9,
        bytes_per_param=f["bytes_per_param"], ddp_none_gb=f["7b_ddp_none"]["total"] / 1e9,
        ddp_full_gb=f["7b_ddp"]["total"] / 1e9, zero1_gb=f["7b_zero1"]["total"] / 1e9,
        zero1_full_gb=f["7b_zero1_full"]["total"] / 1e9,
        zero3_full_gb=f["7b_zero3_full"]["total"] / 1e9,
        act_materialized_gb=best["act_materialized"] / 1e9, act_fused_gb=best["act_fused"] / 1e9,
        best_7b=f["7b_best"], best_gb=best["total"] / 1e9,
        shards=t(TEXT, f"zero_shards.{best['stage']}", lang),
        attention=t(TEXT, f"attention.{best['attention']}", lang),
        materialized_gb=best["materialized"] / 1e9, max_b_materialized=best["max_b_materialized"],
        # 3D (06)
        thirteen_rank=thirteen["rank"], thirteen_of=thirteen["of"],
        thirteen_slower=thirteen["slower"], best13=rule13["best"], rule13_rank=rule13["rank"],
        rule13_of=rule13["of"], gpt3_gpus=g["product"], layers_per_stage=g["layers_per_stage"],
        at_52=g["at_52"], mfu_1t=f["mfu_1t"],
        # EP (04)
        top_k=cap["top_k"], slots=cap["slots"], tokens=cap["tokens"], experts=cap["experts"])


# follow-up n: its question (both languages: it shows before the click) and the section
# each sentence of its answer ("fu{n}.1", "fu{n}.2", ... in FOLLOW_UPS) is measured in
_FOLLOW_UPS = (
    ({"en": "You said TP communicates a lot. How much exactly, and how do you cut it?",
      "zh": "张量并行的通信量到底是多少？有哪些办法减少或掩盖它？"},
     ("tp_count", "tp_interview", "sp", "tp_overlap")),
    ({"en": "How do you compute the pipeline bubble? How much better is 1F1B than GPipe?",
      "zh": "流水线气泡的比例如何计算？1F1B 相比 GPipe 究竟改进了什么？"},
     ("bubble", "pp_memory", "bubble", "interleave")),
    ({"en": "You have one 7B model and 4 A100-80GB. Which strategy?",
      "zh": "手上有 4 张 80GB 的 A100，要训练 7B 模型，你会用哪种并行方式？为什么？"},
     ("seven_b", "fits", "fits", "fits", "seven_b", "speedup")),
    ({"en": "Give a concrete hybrid layout and justify it.",
      "zh": "举一个具体的混合并行配置，并解释每个并行度的取值理由。"},
     ("3d_interview", "3d_interview", "planner")),
)


def follow_ups(lang: str | None = None) -> list[dict]:
    """Each: ``q`` (en, zh), ``origin`` (where in the interview text it comes from, a
    sentence), ``answer`` [(sentence, section key)], ``verdict``: in ``lang`` (default: the
    session's)."""
    lang = pick(lang)
    values = fields(lang)
    out = []
    for n, (q, keys) in enumerate(_FOLLOW_UPS, 1):
        say = lambda key: t(FOLLOW_UPS, f"fu{n}.{key}", lang, **values)  # noqa: E731
        out.append(dict(q=q, origin=say("origin"),
                        answer=[(say(i), k) for i, k in enumerate(keys, 1)],
                        verdict=say("verdict")))
    return out


def claims(lang: str | None = None) -> list[dict]:
    """Every claim of the interview text (``seed_claims.SEED_CLAIMS``, in its order), each
    with a verdict (one of ``VERDICTS``; ``verdict_text`` says it in ``lang``), why, the
    figure that settles it ("" when none) and the section that measures it. ``claim``: in
    Chinese the interview text's own words, quoted; in English ours."""
    lang = pick(lang)
    values = fields(lang)
    judged = {  # id: (verdict, section key); the why and the figure are CLAIMS' "{id}.why", "{id}.figure"
        "four_kinds": ("half right", "cp_why"), "dp_idea": ("holds", "dp_exact"),
        "dp_when": ("half right", "zero"), "dp_linear": ("wrong", "ring"),
        "ddp_ring": ("half right", "collectives_interview"), "ring_o1": ("half right", "ring"),
        "cross_node_batch": ("half right", "dp_buckets"),
        "compression_cost": ("holds", "compression"),
        "compression_10g": ("half right", "compression"), "tp_idea": ("holds", "tp_split"),
        "tp_columns": ("holds", "tp_split"), "tp_once": ("wrong", "tp_count"),
        "tp_layer_gb": ("wrong", "tp_interview"), "tp_fwd_bwd_once": ("wrong", "tp_count"),
        "nvlink_600": ("half right", "tp_interview"),
        "tp_cross_node": ("half right", "tp_interview"), "pp_idea": ("holds", "stages"),
        "pp_schedules": ("holds", "schedules"), "pp_when": ("depends", "3d_interview"),
        "bubble_50_20": ("wrong", "bubble"), "m_4p_hide": ("half right", "bubble"),
        "more_m_memory": ("half right", "pp_memory"), "recompute_trade": ("holds", "recompute"),
        "three_d": ("holds", "mesh"), "placement": ("holds", "3d_interview"),
        "gpt3_layout": ("wrong", "3d_interview"), "gpt3_312": ("wrong", "planner"),
        "tune_ratio": ("half right", "planner"), "tp_first": ("depends", "3d_interview"),
        "ep_idea": ("holds", "routing"), "mixtral_experts": ("wrong", "routing"),
        "hot_10x": ("depends", "capacity"), "aux_loss": ("half right", "capacity"),
        "cf_125": ("half right", "capacity"), "topology": ("holds", "planner"),
        "must_3d": ("depends", "3d_interview"), "tp_two_fwd": ("holds", "tp_count"),
        "tp_48mb": ("holds", "tp_interview"), "tp_96mb": ("wrong", "tp_interview"),
        "sp_comm": ("wrong", "sp"), "layernorm_overlap": ("wrong", "tp_overlap"),
        "overlap_5_10": ("depends", "tp_overlap"), "bubble_formula": ("holds", "bubble"),
        "gpipe_vs_1f1b": ("wrong", "bubble"), "under_15": ("wrong", "bubble"),
        "7b_14gb": ("holds", "seven_b"), "7b_one_card": ("wrong", "seven_b"),
        "no_tp_pp": ("holds", "fits"), "speedup_35": ("depends", "speedup"),
        "grad_accum": ("holds", "grad_accum"), "recompute_20gb": ("wrong", "seven_b"),
        "async": ("holds", "async"), "tp_vs_pp_comm": ("holds", "mesh"),
        "thirteen_b": ("half right", "3d_interview"), "ref_megatron": ("holds", "tp_split"),
        "ref_gpipe": ("holds", "bubble"), "ref_deepspeed": ("holds", "zero"),
        "ref_narayanan": ("holds", "planner"), "ref_sp": ("half right", "tp_interview"),
    }
    rows = []
    for cid, part, claim in SEED_CLAIMS:
        verdict, key = judged[cid]
        if verdict not in VERDICTS:
            raise ValueError(f"{cid}: verdict={verdict!r} must be one of {VERDICTS}")
        figure = f"{cid}.figure"
        rows.append(dict(id=cid, part=t(TEXT, f"part.{part}", lang), claim=claim[lang],
                         verdict=verdict, verdict_text=t(TEXT, f"verdict.{verdict}", lang),
                         why=t(CLAIMS, f"{cid}.why", lang, **values),
                         figure=t(CLAIMS, figure, lang, **values) if figure in CLAIMS else "",
                         key=key))
    return rows
