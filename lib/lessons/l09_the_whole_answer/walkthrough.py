"""The decision walk-through: a model, a number of GPUs and a GPU type in, the strategies
out, in the order an engineer decides them, each with its reason and the planner's
numbers (``planner.plan``: every layout ranked by predicted step time, validated on
published runs in notebook 06 §4).

The order is the lesson: first what must be split for the model states and activations
to fit (ZeRO stage, TP, PP, CP), then the cheapest way to use the GPUs left (DP), and a
fixed recipe ("TP first, then PP, then DP") checked against the ranking, not assumed."""

from __future__ import annotations

from parlab import cost, planner
from lessons.common.i18n import pick, t
from lessons.l06_3d_parallel.experiments import rule_of_thumb
from parlab.validate import check_int
from .text import TEXT, WALK

GB = 1e9
STATE_BYTES = 16  # mixed-precision AdamW: weights, grads, master, two moments (07 §7)


def _kind(c, lang: str = "en") -> str:
    axes = [a for a in ("tp", "pp", "cp", "ep") if getattr(c, a) > 1]
    return t(WALK, "kind.dp_only", lang) if not axes else " + ".join(a.upper() for a in axes) + " + DP"


def _pct(x: float) -> str:  # as planner.reasons writes a share
    return f"{x:.0%}" if x >= 0.01 else f"{x:.1%}"


def reasons(e, lang: str | None = None) -> dict:
    """``planner.reasons``' sentences about TP, PP and DP for the estimate ``e``, in
    ``lang`` (default: the session's): ``{"tp", "pp", "dp"}``. In English they are the
    planner's own words (a test holds them to ``planner.reasons``)."""
    lang = pick(lang)
    st, lay, c = e.step_time, e.layout, e.cluster
    if lay.tp == 1:
        tp = t(WALK, "r.tp1", lang)
    elif not c.crosses(lay.tp, 1):
        tp = t(WALK, "r.tp_node", lang, tp=lay.tp, link=c.intra_link.name,
               pct=_pct(st.tp_comm / st.total))
    else:
        tp = t(WALK, "r.tp_spans", lang, tp=lay.tp, nodes=lay.tp // c.nvlink_domain,
               link=c.inter_link.name, nics=c.nics_per_node, pct=_pct(st.tp_comm / st.total))
    if lay.pp > 1:
        pp = t(WALK, "r.bubble", lang, pct=_pct(st.bubble / st.total), m=e.n_micro_batches,
               chunks=t(WALK, "r.chunks", lang, v=lay.v) if lay.v > 1 else "",
               p2p=st.pp_comm / st.total)
    else:
        pp = t(WALK, "r.pp1", lang)
    if e.dp * lay.cp > 1:
        what = t(WALK, "r.gather" if lay.zero_stage == 3 else "r.sync", lang)
        share = st.dp_comm / st.total
        if not lay.dp_overlap and lay.zero_stage != 3:
            dp = t(WALK, "r.dp_after", lang, dp=e.dp, what=what, share=share)
        elif st.dp_comm > 0:
            dp = t(WALK, "r.dp_exposed", lang, dp=e.dp, what=what, share=share)
        else:
            dp = t(WALK, "r.dp_hidden", lang, dp=e.dp, what=what)
    else:
        dp = t(WALK, "r.dp_none", lang, dp=e.dp)
    return dict(tp=tp, pp=pp, dp=dp)


def decide(model: str = "llama3-70B", n_gpus: int = 64, gpu: str = "H100",
           global_batch: int | None = None, lang: str | None = None) -> dict:
    """The walk-through for ``model`` (a ``planner.MODELS`` key) on ``n_gpus`` GPUs of
    type ``gpu`` (a ``planner.GPU_ALIASES`` key): a dict with ``steps`` (question, answer,
    section key, in ``lang``, default the session's) and the plan's rows, for the figure
    and the widget."""
    lang = pick(lang)
    if model not in planner.MODELS:
        raise ValueError(f"model={model!r} must be one of {', '.join(planner.MODELS)}")
    if gpu not in planner.GPU_ALIASES:
        raise ValueError(f"gpu={gpu!r} must be one of {', '.join(planner.GPU_ALIASES)}")
    n_gpus = check_int("n_gpus", n_gpus)
    spec = planner.resolve_model(model)
    p = planner.plan(model, n_gpus, gpu, global_batch)
    cap = planner.resolve_gpu(gpu).memory_gb * GB
    n_params = spec.n_layers * cost.layer_params(spec.shape)["total"] + spec.embedding_params()
    states = STATE_BYTES * n_params
    say = lambda key, **kw: t(WALK, key, lang, **kw)  # noqa: E731
    steps = [dict(q=say("q.fit_one"), key="bytes16", a=say(
        "a.fit_one", params_b=n_params / 1e9, state_bytes=STATE_BYTES, states_gb=states / GB,
        cap_gb=cap / GB, verdict=say("a.fit_yes") if states < cap
        else say("a.fit_no", times=states / cap)))]
    if p.best is None:
        short = min((i for i in p.infeasible if i.shortfall_bytes), default=None,
                    key=lambda i: i.shortfall_bytes)
        closest = say("a.closest", label=short.label, short_gb=short.shortfall_bytes / GB) \
            if short else ""
        steps.append(dict(q=say("q.which_fits"), key="fits",
                          a=say("a.none_fits", n_gpus=n_gpus, gpu=gpu, closest=closest)))
        return dict(model=model, n_gpus=n_gpus, gpu=gpu, steps=steps, rows=[], best=None)
    best, ranked = p.best, list(p.ranked)
    e = best.estimate
    need = [a for a in ("tp", "pp", "cp", "ep") if getattr(best, a) > 1]
    steps.append(dict(q=say("q.split"), key="fits", a=say(
        "a.split", label=best.label,
        need=say("a.sep").join(f"{a.upper()} = {getattr(best, a)}" for a in need) if need
        else say("a.no_split"), zero=best.zero_stage, mem_gb=e.memory_per_gpu.total / GB,
        cap_gb=cap / GB, attention=t(TEXT, f"attention.{e.layout.attention}", lang))))
    why = reasons(e, lang)
    if best.tp == 1:
        tp_text = say("a.tp_none")
    elif _tp_spans_nodes(e):
        tp_text = say("a.tp_spans", reason=why["tp"])
    else:
        tp_text = say("a.tp_node", reason=why["tp"])
    steps.append(dict(q=say("q.tp"), key="3d_interview", a=tp_text))
    steps.append(dict(q=say("q.pp"), key="bubble", a=say(
        "a.pp_deep" if best.pp > 1 else "a.pp_none", reason=why["pp"])))
    steps.append(dict(q=say("q.dp"), key="zero", a=say("a.dp", reason=why["dp"])))
    rule = rule_of_thumb(p)
    if rule.get("rank"):
        picked = ranked[rule["rank"] - 1]
        steps.append(dict(q=say("q.rule"), key="3d_interview", a=say(
            "a.rule", label=rule["label"], rank=rule["rank"], of=rule["of"],
            gap=picked.rank_time / best.rank_time - 1,
            outcome=say("a.rule_costs" if p.distinguishable(picked) else "a.rule_fine"))))
    speed = say("a.speed", mfu=e.mfu, hfu=e.hfu, step_s=e.step_time.total,
                batch=p.global_batch, seq=p.seq_len, lo=best.band[0], hi=best.band[1])
    beyond = planner.validated_scale(e.layout, e.n_gpus)
    if beyond:  # no published run of this kind was this large: say so with the answer
        speed += say("a.beyond", kind=say(f"kind.{beyond['kind']}"), largest=beyond["largest"],
                     lo=beyond["errors"][0], hi=beyond["errors"][1], n=e.n_gpus)
    steps.append(dict(q=say("q.speed"), key="planner", a=speed))
    # ranked (and compared) as plan ranks them: at the best end of each one's error band
    # (a kind the published runs show slower than predicted is not flattered)
    kinds: dict[str, object] = {}
    for c in ranked:
        kinds.setdefault(_kind(c, lang), c)
    # ``ranked_s`` is the time the ranking and ``slower`` use, shown beside the prediction:
    # where bands differ, a row can predict less than #1 and still rank below it
    rows = [dict(kind=k, layout=c.label, step_s=c.step_time, ranked_s=c.rank_time,
                 mfu=c.estimate.mfu, memory_gb=c.estimate.memory_per_gpu.total / GB,
                 slower=c.rank_time / best.rank_time - 1, rank=ranked.index(c) + 1)
            for k, c in kinds.items()]
    return dict(model=model, n_gpus=n_gpus, gpu=gpu, steps=steps, rows=rows, best=best.label,
                infeasible=len(p.infeasible), of=len(ranked))


def _tp_spans_nodes(e) -> bool:
    """Whether the estimate's TP group spans more than one node."""
    return e.cluster.crosses(e.layout.tp, 1)


def rank_of(model: str, n_gpus: int, gpu: str, tp: int, pp: int) -> dict:
    """Where the layout (tp, pp, dp the rest, no CP/EP) ranks in ``plan``: rank, of,
    slower (vs the best, as ranked) and whether the planner can tell it from the best."""
    p = planner.plan(model, n_gpus, gpu)
    for k, c in enumerate(p.ranked):
        if (c.tp, c.pp, c.cp, c.ep) == (tp, pp, 1, 1):
            return dict(rank=k + 1, of=len(p.ranked), label=c.label,
                        slower=c.rank_time / p.best.rank_time - 1,
                        distinguishable=p.distinguishable(c))
    return dict(rank=None, of=len(p.ranked), label=None, slower=None, distinguishable=None)
