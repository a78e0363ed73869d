"""The answers of the interview corner, as functions of what the notebook computed; the notebook
shows each by naming it (``interview.show("bytes", ...)``), closed until the learner clicks
(lessons.common.interview). Each function computes its numbers; the words, in English and
Chinese, are ``text.INTERVIEW``'s, rendered in the session's language by ``said``."""

from __future__ import annotations

from parlab import cost, hardware

from lessons.common.i18n import t
from lessons.common.interview import Answer, Corner, said
from .text import INTERVIEW, TEXT

GB = 1e9


def _join(parts, sep: str = "list_sep") -> str:
    """Items of a list inside a sentence, joined as the session's language writes a list."""
    return t(TEXT, sep).join(parts)


def _margin(plan: dict) -> str:
    """A memory plan's "fits, x GB spare" or "does NOT fit, x GB short"."""
    spare = (plan["gpu"] - plan["total"]) / GB
    return (t(INTERVIEW, "seven_b.fits", gb=spare) if plan["fits"]
            else t(INTERVIEW, "seven_b.short", gb=-spare))


def _compression(pays) -> Answer:
    def gbit(b):  # a threshold in bytes/s, said in Gb/s; None: compression never pays
        return (t(INTERVIEW, "compression.never") if b is None
                else t(INTERVIEW, "compression.below", gbit=b * 8 / 1e9))

    cases = [t(INTERVIEW, "compression.case", billions=n_p / 1e9, ranks=n, compute=c,
               fp16=gbit(v["fp16"]), sign=gbit(v["sign"])) for (n_p, n, c), v in pays.items()]
    ratios = [t(INTERVIEW, "compression.ratio", ratio=cost.onebit_adam_volume_ratio(w, 16), warmup=w)
              for w in (0.15, 0.2, 0.25)]
    return said(INTERVIEW, "compression", cases=_join(cases, "case_sep"), ratios=_join(ratios))


def _fsdp_network(hsdp, fsdp) -> Answer:
    """13B over 4 nodes x 8 GPUs: flat ZeRO-3, HSDP 8 x 4, no reshard, ZeRO++; the 2 x 2
    HSDP and the FSDP modes as section 6 measured them."""
    n, gpus, shard = cost.MODEL_PRESETS["13B"].n_params, 32, 8
    hybrid = hsdp["rows"][0]
    modes = {r["mode"]: r for r in fsdp["rows"]}
    keep, again = modes["keep (no reshard)"], modes["reshard (ZeRO-3)"]

    def sent(r):
        return r["all-gather measured"] + r["reduce-scatter measured"]

    volume = cost.hsdp_comm_volume(n, shard, gpus // shard)
    zeropp = cost.zeropp_comm_volume(1)
    return said(INTERVIEW, "fsdp_network", psi=2 * n / GB, gpus=gpus, less=gpus - 1,
                flat=cost.fsdp_comm_volume(n, gpus, True)["total"] / GB,
                shard=shard, nodes=gpus // shard,
                intra=volume["intra_node"] / GB, inter=volume["inter_node"] / GB,
                across=hybrid["replicate measured"] / hsdp["psi"],
                inside=hybrid["shard-group measured"] / hsdp["psi"],
                hsdp_shard=2 * n / shard / GB, flat_shard=2 * n / gpus / GB,
                keep=cost.fsdp_comm_volume(n, gpus, False)["total"] / GB,
                fewer=1 - sent(keep) / sent(again),
                peak=keep["peak measured"] / again["peak measured"],
                zeropp=zeropp["zeropp"]["total"] / 2, zero3=zeropp["zero3"]["total"] / 2)


def _bytes(ring_rows, ring_table, wire) -> Answer:
    exact = [r for r in wire if r["setting"].startswith("exact")]
    ring, root = (next(k for k in ring_rows[0] if k.startswith(c)) for c in ("ring GB", "root GB"))
    return said(INTERVIEW, "bytes", table=ring_table.data,
                first=ring_rows[0][ring], last=ring_rows[-1][ring],
                ratios=_join(f"{r['ratio']:.2f}×" for r in exact),
                sizes=_join(str(r["world_size"]) for r in exact), root=ring_rows[-1][root])


def _ring_o1() -> Answer:
    return said(INTERVIEW, "ring_o1")


def _speedup(N, VOCAB, by_link, d, ddp_states, link_table, m7, t_bwd, t_fwd) -> Answer:
    return said(INTERVIEW, "speedup", n_b=N / 1e9, all_b=m7.n_params / 1e9, vocab=VOCAB, d=d,
                t_fwd=t_fwd, t_bwd=t_bwd, table=link_table.data,
                nv_plain=by_link["NVLink3"]["speedup, no overlap"],
                nv_overlap=by_link["NVLink3"]["speedup, overlapped"],
                ib_plain=by_link["IB-HDR"]["speedup, no overlap"],
                ib_gbs=hardware.LINK_PRESETS["IB-HDR"].gb_per_s_per_direction,
                pcie_plain=by_link["PCIe4-x16"]["speedup, no overlap"],
                states=ddp_states / GB,
                card=hardware.GPU_PRESETS["A100-SXM4-80GB"].memory_gb)


def _seven_b(a100, act, acts, best_ddp, ddp, full_extra, m7, micro, nvlink, states, traffic,
             z1, z3) -> Answer:
    return said(INTERVIEW, "seven_b", states=states.data, acts=acts.data, micro=micro.data,
                weights=2 * m7.n_params / GB,
                ddp_states=cost.zero_memory(m7.n_params, 1, 0)["total"] / GB, card=a100,
                best_ddp=best_ddp / GB, ddp_margin=_margin(ddp),
                z1_states=(z1["total"] - z1["activations"]) / GB,
                micro_batch=cost.max_micro_batch("7B", 4, a100, 1, "none"), z1_margin=_margin(z1),
                z2_states=cost.zero_memory(m7.n_params, 4, 2)["total"] / GB,
                z3_states=cost.zero_memory(m7.n_params, 4, 3)["total"] / GB,
                z3_total=z3["total"] / GB, act_none=act["none"],
                act_gpt=cost.activation_memory(m7.seq_len, 1, m7.d_model, m7.n_heads,
                                               m7.n_layers) / GB,
                act_selective=act["selective"], act_full=act["full"], extra=full_extra,
                ratio=traffic[3] / traffic[0], zero3_gb=traffic[3] / GB, ddp_gb=traffic[0] / GB,
                zero3_ms=traffic[3] / nvlink * 1e3, ddp_ms=traffic[0] / nvlink * 1e3,
                nvlink=nvlink / 1e9)


def _seven_b_30s(m7, a100, traffic) -> Answer:
    return said(INTERVIEW, "seven_b_30s", weights=2 * m7.n_params / GB,
                states=cost.zero_memory(m7.n_params, 1, 0)["total"] / GB, card=a100,
                ratio=traffic[3] / traffic[0])


def _sync() -> Answer:
    return said(INTERVIEW, "sync")


def _accumulation() -> Answer:
    return said(INTERVIEW, "accumulation")


def _thirty_seconds(by_link) -> Answer:
    return said(INTERVIEW, "thirty_seconds", ring=cost.collective_bytes("all_reduce", 1, 1024),
                ib_plain=by_link["IB-HDR"]["speedup, no overlap"],
                nv_plain=by_link["NVLink3"]["speedup, no overlap"])


corner = Corner({"compression": _compression, "fsdp_network": _fsdp_network, "bytes": _bytes,
                 "ring_o1": _ring_o1, "speedup": _speedup, "seven_b": _seven_b,
                 "seven_b_30s": _seven_b_30s, "sync": _sync, "accumulation": _accumulation,
                 "thirty_seconds": _thirty_seconds})
show = corner.show
