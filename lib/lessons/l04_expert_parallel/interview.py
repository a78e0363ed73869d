"""The answer to §8's question on the variants, §9's interview corner, its 30-second answer and
the appendix's numbers, as functions of what the notebook computed; the notebook shows each by
naming it (``interview.show("a", n=n)``), closed until the learner clicks
(lessons.common.interview). The words, in English and Chinese, are ``text.INTERVIEW``."""

from __future__ import annotations

from lessons.common.i18n import t
from lessons.common.interview import Answer, Corner, said

from .text import INTERVIEW

MiB = 2 ** 20


def _variants(ds, ec) -> Answer:
    c1 = ec[0]
    return said(INTERVIEW, "variants", none=c1["none"], none_random=c1["none_random"],
                sent_shared=ds[2]["sent_kib"], sent_plain=ds[1]["sent_kib"])


def _a() -> Answer:
    return said(INTERVIEW, "a")


def _models(m) -> dict:
    """The three models' expert counts, top-k and sources, as the answers' fields."""
    mix, sw, ds = m["Mixtral 8x7B"], m["Switch-C"], m["DeepSeek-V3"]
    return dict(mix_e=mix["n_experts"], mix_k=mix["top_k"], mix_src=mix["source"],
                sw_e=sw["n_experts"], sw_src=sw["source"], ds_shared=ds["shared"],
                ds_e=ds["n_experts"], ds_k=ds["top_k"], ds_src=ds["source"])


def _b(n) -> Answer:
    return said(INTERVIEW, "b", **_models(n["models"]))


def _c(n) -> Answer:
    sw = n["sweep"]
    sk, bal, aux = sw[(1.0, "none")]["first"], sw[(0.0, "none")]["first"], sw[(1.0, "aux loss")]["last"]
    return said(INTERVIEW, "c", bal_mm=bal["max_over_min"], bal_mean=bal["max_over_mean"],
                sk_mm=sk["max_over_min"], sk_mean=sk["max_over_mean"],
                aux_mm=aux["max_over_min"], aux_mean=aux["max_over_mean"])


def _d(n) -> Answer:
    sw = n["sweep"]
    pct = {k: 100 * v["drops_last"][1.25] for k, v in sw.items()}
    last = {k: sw[(1.0, k)]["last"]["max_over_mean"] for k in ("none", "aux loss", "bias")}
    return said(INTERVIEW, "d", none=last["none"], aux=last["aux loss"], bias=last["bias"],
                bal=pct[(0.0, "none")], bal_aux=pct[(0.0, "aux loss")], sk=pct[(1.0, "none")],
                sk_aux=pct[(1.0, "aux loss")], sk_bias=pct[(1.0, "bias")])


def _e(bus, p) -> Answer:
    return said(INTERVIEW, "e", share=p["experts"] / p["total"], total_b=p["total"] / 1e9,
                slow=bus[0]["predicted_s"] / bus[0]["balanced_s"])


def _f(e) -> Answer:
    return said(INTERVIEW, "f", tp8=e["tp8"] / MiB, tp8_mlp=e["tp8_mlp_only"] / MiB,
                ep8=e["ep8"] / MiB)


def _thirty() -> Answer:
    from .experiments import MOE_MODELS
    return said(INTERVIEW, "thirty", **_models(MOE_MODELS))


def _numbers(e, n, p) -> Answer:
    models = "<br>".join(
        t(INTERVIEW, "numbers.model", name=name, n=x["n_experts"], k=x["top_k"], source=x["source"],
          shared=t(INTERVIEW, "numbers.shared", n=x["shared"]) if x["shared"] else "")
        for name, x in n["models"].items())
    return said(INTERVIEW, "numbers", models=models, total=p["total"], active=p["active"],
                ep8=e["ep8"], tp8=e["tp8"], tp8_mlp=e["tp8_mlp_only"])


corner = Corner({"variants": _variants, "a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "f": _f,
                 "thirty": _thirty, "numbers": _numbers})
show = corner.show
