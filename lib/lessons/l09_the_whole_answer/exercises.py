"""Notebook 09's exercise: the decision rule as code. ``my_layout`` gets a model's size and
a cluster and returns tp, pp and dp; the checker asks the planner (notebook 06 §4) where
that layout ranks among every layout that fits, for five jobs from 4 to 3072 GPUs. A
layout is right when it fits and the planner cannot tell it from the best: slower than
the best even at the best end of its error band and the worst end of the best's
(``Plan.distinguishable``) is "Not yet"."""

from __future__ import annotations

import re

from parlab import cost, planner
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.checkers.text import TEXT as CHECKS
from lessons.common.i18n import pick, t
from .hints import HINTS
from .text import TEXT
from lessons.common import record

# (model, GPUs, GPU): one node or less, a few nodes, and a large cluster
CASES = (("7B", 4, "A100-80GB"), ("13B", 16, "A100-80GB"), ("70B", 64, "H100"),
         ("175B", 1024, "A100-80GB"), ("megatron-1T", 3072, "A100-80GB"))
GPUS_PER_NODE = 8


def solution_layout(n_params, n_layers, n_heads, n_gpus, gpus_per_node, gpu_memory_gb):
    """Split only what must be split: states must fit in ~70% of the GPU (the rest is for
    activations); TP inside a node first, then PP; data parallelism (with ZeRO) for the rest."""
    budget = 0.7 * gpu_memory_gb * 1e9

    def states(tp, pp):  # bytes per GPU: ZeRO-2 without a pipeline, ZeRO-1 with one
        dp = n_gpus // (tp * pp)
        kept = 2 if pp == 1 else 4  # fp16 weights (and, with a pipeline, fp16 grads) whole
        return n_params / (tp * pp) * (kept + (16 - kept) / dp)

    tp, pp = 1, 1
    while states(tp, pp) > budget and tp < gpus_per_node and n_heads % (2 * tp) == 0 \
            and 2 * tp * pp <= n_gpus:
        tp *= 2
    while states(tp, pp) > budget and n_layers % (2 * pp) == 0 and 2 * tp * pp <= n_gpus:
        pp *= 2
    return {"tp": tp, "pp": pp, "dp": n_gpus // (tp * pp)}


SOLUTIONS = {"my_layout": solution_layout}


def hints(name: str, lang: str | None = None):
    """Hint 1, hint 2, then the reference solution ("my_layout"), each behind a click; the
    hints in ``lang`` (default: the session's, ``lessons.lang``)."""
    lang = pick(lang)
    return core.hints(SOLUTIONS, {k: tuple(h[lang] for h in pair) for k, pair in HINTS.items()},
                      name)


# the planner's reasons for refusing a layout that a learner's rule can produce, as
# patterns: ``planner_why`` says them in the checker's language (text.TEXT "why.*")
_PLANNER_WHY = (
    ("why.no_fit", r"doesn't fit: needs (?P<need>[\d.]+) GB of (?P<cap>[\d.]+) GB per GPU "
                   r"\((?P<short>[\d.]+) GB short\) even at micro-batch (?P<b>\d+), "
                   r"(?P<zero>[^,]+), recompute=(?P<recompute>\w+)(?P<sp>, sequence parallel)?"),
    ("why.heads", r"tp=(?P<tp>\d+) must divide n_heads=(?P<heads>\d+) \(each rank holds whole "
                  r"heads\)"),
    ("why.kv_heads", r"tp=(?P<tp>\d+) must divide n_kv_heads=(?P<kv>\d+) or be a multiple of it"),
    ("why.pp_layers", r"pp=(?P<pp>\d+) must divide n_layers=(?P<layers>\d+) \(equal stages; "
                      r"uneven_stages=True times the slowest one\)"),
    ("why.pp_max", r"pp=(?P<pp>\d+) must be <= n_layers=(?P<layers>\d+) \(a stage needs a "
                   r"layer\)"),
    ("why.batch", r"global_batch=(?P<batch>\d+) must be divisible by dp=(?P<dp>\d+)"),
)


def planner_why(reason: str, lang: str | None = None) -> str:
    """The planner's reason for refusing a layout, in ``lang`` (default: the session's):
    its own sentence in English; one it does not know is left as the planner wrote it."""
    lang = pick(lang)
    for key, pattern in _PLANNER_WHY:
        m = re.fullmatch(pattern, reason)
        if m:
            fields = m.groupdict()
            fields["sp"] = t(TEXT, "why.sp", lang) if fields.get("sp") else ""
            return t(TEXT, key, lang, **fields)
    return reason


def _case_args(model: str, n_gpus: int, gpu: str) -> tuple:
    spec = planner.resolve_model(model)
    n_params = spec.n_layers * cost.layer_params(spec.shape)["total"] + spec.embedding_params()
    return (n_params, spec.n_layers, spec.n_heads, n_gpus, GPUS_PER_NODE,
            planner.resolve_gpu(gpu).memory_gb)


def _judge(model, n_gpus, gpu, got, lang: str = "en") -> str | None:
    """None when ``got`` is a layout the planner cannot tell from the best; else why not,
    in ``lang`` (the planner's reasons too, ``planner_why``)."""
    where = t(TEXT, "where", lang, model=model, n_gpus=n_gpus, gpu=gpu, got=core.shown(got, 60))
    if not isinstance(got, dict) or any(k not in got for k in ("tp", "pp", "dp")):
        return t(TEXT, "no_dict", lang, where=where)
    degrees, why = core.as_numbers([got["tp"], got["pp"], got["dp"]], whole=True)
    if why:
        return t(TEXT, "degrees", lang, where=where, why=why)
    tp, pp, dp = degrees
    if min(degrees) < 1 or tp * pp * dp != n_gpus:
        return t(TEXT, "product", lang, where=where, product=tp * pp * dp, n_gpus=n_gpus)
    p = planner.plan(model, n_gpus, gpu, cps=(1,))
    mine = next((c for c in p.ranked if (c.tp, c.pp) == (tp, pp)), None)
    layout = t(TEXT, "layout", lang, model=model, n_gpus=n_gpus, gpu=gpu, tp=tp, pp=pp, dp=dp)
    if mine is None:
        why = next((planner_why(i.reasons[0], lang) for i in p.infeasible
                    if (i.tp, i.pp) == (tp, pp)), t(TEXT, "no_such", lang))
        return t(TEXT, "infeasible", lang, layout=layout, why=why)
    if p.distinguishable(mine):
        return t(TEXT, "slower", lang, layout=layout, rank=p.ranked.index(mine) + 1,
                 of=len(p.ranked), gap=f"{mine.rank_time / p.best.rank_time - 1:+.0%}",
                 best=p.best.label)
    return None


def _verdict(ok: bool, message: str, lang: str) -> dict:
    """``core.verdict`` with its first word ("Correct." / "Not yet.") in ``lang`` too."""
    v = core.verdict(ok, message)
    return dict(v, message=t(CHECKS, "correct" if ok else "not_yet", lang) + message)


def check_layout(fn, cases=CASES, timeout: float = 30.0, lang: str | None = None) -> dict:
    """``fn(n_params, n_layers, n_heads, n_gpus, gpus_per_node, gpu_memory_gb)`` -> dict
    tp, pp, dp for each case of ``cases`` ((model, GPUs, GPU) with model a
    ``planner.MODELS`` key), judged by the planner. ``fn`` runs in a child process. The
    verdict speaks ``lang`` (default: the session's, ``lessons.lang``)."""
    lang = pick(lang)
    if not cases or any(not isinstance(c, tuple) or len(c) != 3 for c in cases):
        raise ValueError(f"cases={cases!r} must be (model, n_gpus, gpu) tuples")
    for model, n, gpu in cases:
        if model not in planner.MODELS:
            raise ValueError(f"cases: model={model!r} must be one of {', '.join(planner.MODELS)}")
        check_int("n_gpus", n)
        planner.resolve_gpu(gpu)
    core.check_timeout(timeout)
    results, failed = core.call_learner(fn, [_case_args(*c) for c in cases],
                                        label="my_layout", timeout=timeout)
    for case, got in zip(cases, results):
        why = _judge(*case, got, lang=lang)
        if why:
            return _verdict(False, why, lang)
    if failed:
        return failed
    picked = t(TEXT, "picked_sep", lang).join(
        t(TEXT, "picked", lang, model=m, n_gpus=n, tp=g["tp"], pp=g["pp"], dp=g["dp"])
        for (m, n, _), g in zip(cases, results))
    return _verdict(True, t(TEXT, "right", lang, picked=picked), lang)


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
