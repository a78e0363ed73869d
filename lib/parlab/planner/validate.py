"""The planner against published runs (``published.RUNS``): every row predicted with one set
of constants and every row in the score, in-sample and out-of-sample errors reported apart.

``validate()`` returns one dict per row: its name, group, source, the published figure and
the predicted one in the source's own metric, ``error`` (predicted / published - 1 for a
throughput; published / predicted - 1 for a step time, so that + means "the planner is
optimistic" either way), ``within`` (|error| <= TOLERANCE), whether it is in sample, its
``known_miss`` -- an explanation beside the number, never a reason to leave the row out --
and the estimate. Also, for each row:

  convention      the FLOP count of the published figure as the planner reads it
                  (``conventions.METRIC_CONVENTION``), and ``error_causal``: the error if
                  the source counted the attention square causally (None for a step time)
  searched        the knobs the source does not give that were searched (``run.search``):
                  only when the documented default (micro-batch 1, no interleaving, no
                  recomputation) does not fit, the fastest variant that fits is taken. That
                  favours the planner, so the row also carries ``at_default`` (the error at
                  the documented default, and whether it fits) and ``spread`` (the lowest
                  and highest error over every variant that fits)
  memory          the predicted bytes per GPU of the layout as scored (``MemoryPerGPU``:
                  peak allocated, its ``counter``), the capacity, ``fits``, and the row's
                  ``memory_note`` -- why a layout that ran does not fit the model, if so;
                  where the source gives its memory, ``published`` (bytes) and
                  ``published_counter`` (what it counted)

``summary(rows)`` scores every row: for all rows, in sample and out of sample, the count
within TOLERANCE, the median, mean and largest |error|, and the headline "K of N within
15%, median |error| M%"; ``bound`` is the same headline with every searched row taken at
its slowest variant that fits instead of its fastest.
"""

from __future__ import annotations

import functools
import itertools
import statistics
from dataclasses import replace

from .. import cost
from .constants import CONSTANTS, Constants
from .conventions import METRIC_CONVENTION, metric_as
from .estimate import divisors, predict
from .presets import cluster_for, resolve_model
from .published import RUNS, PublishedRun
from .published_dgxc import published_growth, weak_sweeps
from .spec import Layout, LayoutError
from ..validate import check_int

TOLERANCE = 0.15
_CHOICES = {"v": (1, 2, 3, 4, 6, 8), "recompute": cost.RECOMPUTE}


def metric_of(e, metric: str) -> float:
    """An estimate's figure in a source's metric."""
    return {"tflops": e.tflops_per_gpu, "mfu": e.mfu, "model_tflops": e.model_tflops_per_gpu,
            "step_s": e.step_time.total}[metric]


def error_of(run: PublishedRun, predicted: float) -> float:
    """+ = optimistic: predicted / published - 1, or published / predicted - 1 for a time."""
    return run.value / predicted - 1 if run.metric == "step_s" else predicted / run.value - 1


def _variants(run: PublishedRun, constants: Constants):
    """(the estimate at the documented default, [every variant of the knobs in
    ``run.search`` that fits, when the default does not], the first LayoutError met)."""
    model = resolve_model(run.model)
    cluster = cluster_for(run.gpu, node=run.node)
    base = Layout(**{"micro_batch": 1, **run.layout})
    first = predict(model, cluster, base, run.n_gpus, run.global_batch, constants)
    if first.fits or not run.search:
        return first, [], None
    options = []
    for knob in run.search:
        if knob == "micro_batch":
            per = run.global_batch // Layout(**{**run.layout, "micro_batch": 1, "v": 1}).check(
                model, run.n_gpus, run.global_batch)
            options.append([("micro_batch", b) for b in divisors(per)])
        else:
            options.append([(knob, x) for x in _CHOICES[knob]])
    fitting = []
    why = None
    for combo in itertools.product(*options):
        try:
            e = predict(model, cluster, replace(base, **dict(combo)), run.n_gpus,
                        run.global_batch, constants)
        except LayoutError as err:  # a searched value the layout does not allow
            why = why or err
            continue
        if e.fits:
            fitting.append(e)
    return first, fitting, why


def predict_run(run: PublishedRun, constants: Constants = CONSTANTS):
    """The estimate for a published run: its layout, the framework's defaults for what
    the source does not give (micro-batch 1, no interleaving, no recomputation); if that
    does not fit in memory, the fastest variant of the knobs in ``run.search`` that does
    (micro-batch: every divisor of the replica's batch) -- ``validate`` says so per row."""
    return _pick(run, *_variants(run, constants))


def _pick(run, first, fitting, why):
    if not fitting:
        if first.fits or not run.search:
            return first
        raise ValueError(f"{run.name}: no variant of the published layout fits"
                         + (f" ({why})" if why else ""))
    return min(fitting, key=lambda e: e.step_time.total)


def validate(runs=RUNS, constants: Constants = CONSTANTS) -> list[dict]:
    out = []
    for run in runs:
        first, fitting, why = _variants(run, constants)
        e = _pick(run, first, fitting, why)
        got = metric_of(e, run.metric)
        err = error_of(run, got)
        conv = METRIC_CONVENTION[run.metric]
        errs = [error_of(run, metric_of(x, run.metric)) for x in fitting]
        mem = e.memory_per_gpu
        out.append({"name": run.name, "group": run.group, "source": run.source,
                    "metric": run.metric, "published": run.value, "predicted": got,
                    "error": err, "within": abs(err) <= TOLERANCE, "in_sample": run.in_sample,
                    "known_miss": run.known_miss, "note": run.note, "estimate": e,
                    "convention": "seconds per step" if conv is None else
                    f"{conv[0]} FLOPs, attention square {conv[1]}",
                    "error_causal": None if conv is None else
                    error_of(run, metric_as(e, run.metric, "causal")),
                    "searched": tuple(run.search) if fitting else (),
                    "at_default": {"error": error_of(run, metric_of(first, run.metric)),
                                   "fits": first.fits},
                    "spread": (min(errs), max(errs)) if errs else (err, err),
                    "memory": {"predicted": mem.total, "capacity": mem.capacity,
                               "fits": e.fits, "counter": mem.counter,
                               "published": run.extra["memory_gib"] * 2 ** 30
                               if "memory_gib" in run.extra else None,
                               "published_counter": run.extra.get("memory_counter")},
                    "memory_note": run.memory_note})
    return out


def headline(stats: dict) -> str:
    """ "K of N within 15%, median |error| M%" for one set of ``summary``."""
    return (f"{stats['within']} of {stats['n']} within {TOLERANCE:.0%}, "
            f"median |error| {stats['median']:.1%}")


def _stats(errors: list, names: list, notes: list) -> dict:
    errs = [abs(x) for x in errors]
    s = {"n": len(errs), "within": sum(x <= TOLERANCE for x in errs),
         "median": statistics.median(errs) if errs else 0.0,
         "mean": statistics.fmean(errs) if errs else 0.0, "max": max(errs, default=0.0),
         "outside": [n for n, x in zip(names, errs) if x > TOLERANCE],
         "explained": [n for n, note in zip(names, notes) if note]}
    s["headline"] = headline(s)
    return s


def summary(rows) -> dict:
    """{"all", "in_sample", "out_of_sample"}: each {"n", "within" (|error| <= TOLERANCE),
    "median", "mean", "max" (of |error|), "outside" (the rows beyond TOLERANCE), "explained"
    (the rows with a known_miss, scored like the rest), "headline", and "bound": the same
    over the errors with every searched row at its slowest variant that fits}."""
    out = {}
    for key, pick in (("all", None), ("in_sample", True), ("out_of_sample", False)):
        rs = [r for r in rows if pick is None or r["in_sample"] == pick]
        names = [r["name"] for r in rs]
        notes = [r["known_miss"] for r in rs]
        out[key] = _stats([r["error"] for r in rs], names, notes)
        slow = [r["spread"][0] if r["searched"] else r["error"] for r in rs]
        out[key]["bound"] = _stats(slow, names, notes)
    return out


@functools.lru_cache(maxsize=None)
def _ratios() -> dict:
    """Measured / predicted throughput of the out-of-sample rows, every one of them:
    ZeRO-3's, and the rest."""
    out = {"zero3": [], "other": []}
    for r in validate():
        if r["in_sample"] or r["estimate"].constants.stack != "megatron-te":  # plan's stack
            continue
        out[_band_key(r["estimate"].layout)].append(1 / (1 + r["error"]))
    return out


def _band_key(layout: Layout) -> str:
    # DeepSpeed's ZeRO-3 of 2021 misses by more than the mechanism explains (its rows'
    # known-miss note); FSDP2-style ZeRO-3 is scored like every other layout
    deepspeed = layout.zero_stage == 3 and layout.fsdp_impl == "deepspeed2021"
    return "zero3" if deepspeed else "other"


def _scale_key(layout: Layout) -> str:
    """The kind of layout a published run vouches for at its scale: ZeRO-3 by implementation
    (FSDP2 and DeepSpeed's of 2021 scale differently), everything else together. ZeRO-3
    keeping a pipeline stage whole across its micro-batches (Llama 3's FSDP) moves ZeRO-1's
    bytes -- one gather and one reduce-scatter a step, not one per unit and micro-batch -- so
    it counts with the Megatron-style layouts."""
    if layout.zero_stage != 3 or (layout.pp > 1 and layout.keeps_unsharded):
        return "Megatron-style layouts (ZeRO 0-2)"
    return {"fsdp2": "FSDP2-style ZeRO-3", "deepspeed2021": "DeepSpeed's ZeRO-3 of 2021"}[
        layout.fsdp_impl]


@functools.lru_cache(maxsize=None)
def _largest_runs() -> dict:
    """{kind: (the most GPUs a published run of that kind used, the errors of the rows at
    that scale)}, over every row, in sample or not and on any stack: the scale the planner
    has been checked at, and how well it did there."""
    out = {}
    for r in validate():
        e = r["estimate"]
        key = _scale_key(e.layout)
        if key not in out or e.n_gpus > out[key][0]:
            out[key] = (e.n_gpus, [])
        if e.n_gpus == out[key][0]:
            out[key][1].append(r["error"])
    return {k: (n, (min(errs), max(errs))) for k, (n, errs) in out.items()}


def validated_scale(layout: Layout, n_gpus: int) -> dict | None:
    """None when a published run of ``layout``'s kind used at least ``n_gpus`` GPUs;
    otherwise {"kind", "largest" (its GPUs), "errors" (the planner's lowest and highest
    error on the rows at that scale)}: the prediction extrapolates beyond every run the
    planner was checked on. FSDP2-style ZeRO-3, for one, is checked up to llm-foundry's
    512 H100s (MPT-70b -9%, MPT-7b +12% there; MPT-7b +0.1% on 8 GPUs, the row its stack's
    Hopper share was fitted on: the error grows with the group)."""
    n_gpus = check_int("n_gpus", n_gpus)
    key = _scale_key(layout)
    largest, errors = _largest_runs().get(key, (0, (0.0, 0.0)))
    if n_gpus <= largest:
        return None
    return {"kind": key, "largest": largest, "errors": errors}


def error_band(layout: Layout) -> tuple:
    """(low, high): the range of measured / predicted throughput over the published runs
    of a layout's kind, out of sample -- ZeRO-3 layouts by the ZeRO-3 rows, every other
    layout by all the other rows (explained misses included)."""
    r = _ratios()[_band_key(layout)]
    return (min(r), max(r)) if r else (1.0, 1.0)


def weak_scaling(constants: Constants = CONSTANTS) -> list[dict]:
    """The weak-scaling sweeps (``published_dgxc.weak_sweeps``: the work per GPU fixed, the
    GPUs and the batch doubling, more than one scale), each scale predicted: per
    table and precision {"release", "gpu", "table", "model", "dtype", "gpus", "published",
    "predicted" (seconds per step at each scale), "whole" (the index of the first scale that
    runs the whole model: Llama 3.1 405B's smaller scales cut its layers), "growth":
    {"published", "predicted"}} -- how much longer a step takes at the largest scale than at
    that first whole-model one."""
    out = []
    for t in weak_sweeps():
        runs = [PublishedRun(**r) for r in t["rows"]]
        steps = [predict_run(r, constants).step_time.total for r in runs]
        first, grew = published_growth(t["rows"])
        out.append({"release": t["release"], "gpu": t["gpu"], "table": t["table"],
                    "model": t["model"], "dtype": t["dtype"],
                    "gpus": [r.n_gpus for r in runs], "published": [r.value for r in runs],
                    "predicted": steps, "whole": first,
                    "growth": {"published": grew, "predicted": steps[-1] / steps[first] - 1}})
    return out
