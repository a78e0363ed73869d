"""The answers of §11's interview corner, §8's fold-out on chunking and the appendix's
numbers, as functions of what the notebook computed; the notebook shows each by naming it
(``interview.show("a", n=n)``), closed until the learner clicks (lessons.common.interview).
The words, in English and Chinese, are ``text.INTERVIEW``; each function here computes the
numbers its answer quotes."""

from __future__ import annotations

from dataclasses import replace

from parlab import cost, hardware

from lessons.common.i18n import t
from lessons.common.interview import Answer, Corner, said

from . import experiments
from .text import INTERVIEW

KiB, MiB, GiB = 2 ** 10, 2 ** 20, 2 ** 30


def _one_card() -> dict:
    """GPT-3 at t = 16 with one network card per node: (h) and the appendix quote it."""
    return experiments.gpu_scale("GPT-3 175B", tps=(8, 16), nics_per_node=1)[1]


def _ops(counts: dict) -> str:
    """{"all_reduce": 2} -> "all-reduce × 2" (the operators' names read the same in both languages)."""
    return " + ".join(f"{op.replace('_', '-')} × {k}" for op, k in sorted(counts.items()))


def _a(n) -> Answer:
    a = n["a"]
    return said(INTERVIEW, "a", tp=a["tp"], fwd=_ops(a["measured"]["forward"]),
                bwd=_ops(a["measured"]["backward"]), fwd_formula=_ops(a["formula"]["forward"]),
                bwd_formula=_ops(a["formula"]["backward"]))


def _b(g3, n) -> Answer:
    b_ = n["b"]
    state = cost.zero_memory(cost.transformer_params(96, g3["d_model"]), 1, 0)["total"]
    return said(INTERVIEW, "b", params=b_["params"], param_gb=b_["param_bytes"] / 1e9,
                act_gb=b_["activations"] / 1e9, act_gib=b_["activations"] / GiB,
                act_tp8_gb=b_["activations_tp8"] / 1e9, act_tp8_sp_gb=b_["activations_tp8_sp"] / 1e9,
                param_tp8_gb=b_["param_bytes"] / 8 / 1e9, state_tb=state / 1e12)


def _c(n) -> Answer:
    return said(INTERVIEW, "c", fwd=n["c"]["forward"], bwd=n["c"]["backward"])


def _d(n) -> Answer:
    d_ = n["d"]
    nv = hardware.LINK_PRESETS["NVLink3"]
    one = cost.collective_time("all_reduce", n["e"]["message"], 8, nv.latency_us * 1e-6, nv.gb_per_s_per_direction * 1e9)
    return said(INTERVIEW, "d", links=d_["links"], per_direction=d_["per_direction"], total=d_["total"],
                one_ms=one * 1e3)


def _e(n) -> Answer:
    e = n["e"]
    return said(INTERVIEW, "e", message=e["message"], message_mib=e["message"] / MiB,
                message_mb=e["message"] / 1e6, per_ar_mib=e["per_all_reduce"] / MiB, fwd=_ops(e["forward"]),
                fwd_bytes=e["forward_bytes"], fwd_mib=e["forward_bytes"] / MiB, step_bytes=e["step_bytes"],
                step_mib=e["step_bytes"] / MiB, two_mib=e["two_messages"] / MiB,
                fwd_ratio=e["forward_bytes"] / e["two_messages"], step_ratio=e["step_bytes"] / e["two_messages"])


def _f(n) -> Answer:
    f_ = n["f"]
    fixed = said(INTERVIEW, "f", gpt3_tp_mib=f_["gpt3_tp8"][0] / MiB, gpt3_sp_mib=f_["gpt3_tp8"][1] / MiB)
    rows = [t(INTERVIEW, "f.tp_row", tp=tp, tp_kib=a_ / KiB, sp_kib=b__ / KiB, regather_kib=rg / KiB)
            for tp, (a_, b__, rg) in f_["bytes"].items()]
    acts = [t(INTERVIEW, "f.act_row", tp=tp, without=x, with_sp=y, ratio=y / x)
            for tp, (x, y) in f_.get("activations", {}).items()]
    return replace(fixed, lines=rows + fixed.lines + acts)


def _g(n) -> Answer:
    g_ = n["g"]
    m = g_["measured"]
    return said(INTERVIEW, "g", tp=m["tp"], gain=m["gain"], load=m["load"], comm=g_["comm_fraction"],
                best=g_["best_gain"], sp_comm=g_["sp_comm_fraction"], sp_bwd=g_["sp_backward_gain"],
                sp_c4=g_["sp_chunked_gain"][4], sp_c8=g_["sp_chunked_gain"][8], sp_full=g_["sp_full_gain"])


def _h(g3, n) -> Answer:
    h8, h16 = n["h"][8], n["h"][16]
    peak, ib = hardware.peak_flops("A100-SXM4-80GB", "bf16"), hardware.LINK_PRESETS["IB-HDR"]
    no_alpha = cost.tp_scaling(g3["n_layers"], g3["d_model"], g3["n_heads"], g3["seq_len"], 1, 16, peak, h16["bandwidth"], 0.0)
    return said(INTERVIEW, "h", link8=h8["link_name"], mfu8=h8["mfu"], comm8=h8["comm_fraction"],
                link16=h16["link_name"], bw16_gb=h16["bandwidth"] / 1e9, mfu16=h16["mfu"],
                comm16=h16["comm_fraction"], ib_gb=ib.gb_per_s_per_direction, port_mfu=_one_card()["mfu"],
                no_alpha=no_alpha["comm_s"] / h16["comm_s"], bw_ratio=h8["bandwidth"] / h16["bandwidth"])


def _i(n) -> Answer:
    i_ = n["i"]
    box = next(p for p, (gpu, _) in experiments.PLATFORMS.items() if gpu == "A100-PCIe-80GB")
    pcie = {r["tp"]: r for r in experiments.gpu_scale("13B", box, (4, 8))}
    rows = i_["rows"]
    return said(INTERVIEW, "i", comm4=rows[4]["comm_fraction"], comm8=rows[8]["comm_fraction"],
                mfu4=rows[4]["mfu"], mfu8=rows[8]["mfu"], bytes4_mib=i_["comm_bytes"][4] / MiB,
                bytes8_mib=i_["comm_bytes"][8] / MiB, pcie4=pcie[4]["comm_fraction"], pcie8=pcie[8]["comm_fraction"])


def _j() -> Answer:
    return said(INTERVIEW, "j")


def _thirty_seconds() -> Answer:
    """§7's time model: GPT-3 at t = 8 and 16 with a card per GPU, and with one card per node."""
    h8, h16 = experiments.gpu_scale("GPT-3 175B", tps=(8, 16))
    return said(INTERVIEW, "thirty_seconds", mfu8=h8["mfu"], mfu16=h16["mfu"], port_mfu=_one_card()["mfu"])


def _chunking() -> Answer:
    return said(INTERVIEW, "chunking")


def _numbers(n) -> Answer:
    g_, h_ = n["g"], n["h"]
    return said(INTERVIEW, "numbers", fwd=_ops(n["a"]["measured"]["forward"]),
                bwd=_ops(n["a"]["measured"]["backward"]), params=n["b"]["params"],
                param_gb=n["b"]["param_bytes"] / 1e9, act_gb=n["b"]["activations"] / 1e9,
                per_direction=n["d"]["per_direction"], total=n["d"]["total"], message=n["e"]["message"],
                step_bytes=n["e"]["step_bytes"], fwd_bytes=n["e"]["forward_bytes"],
                gpt3_tp=n["f"]["gpt3_tp8"][0], gpt3_sp=n["f"]["gpt3_tp8"][1], comm=g_["comm_fraction"],
                best=g_["best_gain"], sp_comm=g_["sp_comm_fraction"], sp_bwd=g_["sp_backward_gain"],
                sp_c4=g_["sp_chunked_gain"][4], sp_c8=g_["sp_chunked_gain"][8], sp_full=g_["sp_full_gain"],
                mfu8=h_[8]["mfu"], link8=h_[8]["link_name"], mfu16=h_[16]["mfu"], link16=h_[16]["link_name"],
                bw16_gb=h_[16]["bandwidth"] / 1e9, port_mfu=_one_card()["mfu"],
                comm4=n["i"]["rows"][4]["comm_fraction"], comm8=n["i"]["rows"][8]["comm_fraction"])


corner = Corner({"a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "f": _f, "g": _g, "h": _h, "i": _i, "j": _j,
                 "thirty_seconds": _thirty_seconds, "chunking": _chunking, "numbers": _numbers})
show = corner.show
