"""The planner against published runs (``published.RUNS``): each row predicted with one set
of constants, in-sample and out-of-sample errors reported apart.

``validate()`` returns one dict per row: its name, group, source, the published figure and
the predicted one in the source's own metric, ``error`` (predicted / published - 1 for a
throughput; published / predicted - 1 for a step time, so that + means "the planner is
optimistic" either way), whether it is in sample, its known miss if any, and the estimate.
``summary(rows)`` gives the largest and mean |error| of each set, known misses apart.
"""

from __future__ import annotations

import functools
import itertools
import statistics
from dataclasses import replace

from .. import cost
from .constants import CONSTANTS, Constants
from .estimate import divisors, predict
from .presets import cluster_for, resolve_model
from .published import RUNS, PublishedRun
from .spec import Layout, LayoutError

TOLERANCE = 0.15
_CHOICES = {"v": (1, 2, 3, 4, 6, 8), "recompute": cost.RECOMPUTE}


def metric_of(e, metric: str) -> float:
    """An estimate's figure in a source's metric."""
    return {"tflops": e.tflops_per_gpu, "mfu": e.mfu, "model_tflops": e.model_tflops_per_gpu,
            "step_s": e.step_time.total}[metric]


def predict_run(run: PublishedRun, constants: Constants = CONSTANTS):
    """The estimate for a published run: its layout, the framework's defaults for what
    the source does not give (micro-batch 1, no interleaving, no recomputation); if that
    does not fit in memory, the fastest variant of the knobs in ``run.search`` that does
    (micro-batch: every divisor of the replica's batch)."""
    model = resolve_model(run.model)
    cluster = cluster_for(run.gpu, node=run.node)
    base = Layout(**{"micro_batch": 1, **run.layout})
    first = predict(model, cluster, base, run.n_gpus, run.global_batch, constants)
    if first.fits or not run.search:
        return first
    options = []
    for knob in run.search:
        if knob == "micro_batch":
            per = run.global_batch // Layout(**{**run.layout, "micro_batch": 1, "v": 1}).check(
                model, run.n_gpus, run.global_batch)
            options.append([("micro_batch", b) for b in divisors(per)])
        else:
            options.append([(knob, x) for x in _CHOICES[knob]])
    best = None
    why = None
    for combo in itertools.product(*options):
        try:
            e = predict(model, cluster, replace(base, **dict(combo)), run.n_gpus,
                        run.global_batch, constants)
        except LayoutError as err:  # a searched value the layout does not allow
            why = why or err
            continue
        if e.fits and (best is None or e.step_time.total < best.step_time.total):
            best = e
    if best is None:
        raise ValueError(f"{run.name}: no variant of the published layout fits"
                         + (f" ({why})" if why else ""))
    return best


def validate(runs=RUNS, constants: Constants = CONSTANTS) -> list[dict]:
    out = []
    for run in runs:
        e = predict_run(run, constants)
        got = metric_of(e, run.metric)
        err = run.value / got - 1 if run.metric == "step_s" else got / run.value - 1
        out.append({"name": run.name, "group": run.group, "source": run.source,
                    "metric": run.metric, "published": run.value, "predicted": got,
                    "error": err, "in_sample": run.in_sample, "known_miss": run.known_miss,
                    "note": run.note, "estimate": e})
    return out


def summary(rows) -> dict:
    """{"in_sample", "out_of_sample"}: each {"n", "max", "mean" (|error|), "within" (the
    number within TOLERANCE)} over the rows that are not known misses, and "misses"."""
    out = {}
    for key, pick in (("in_sample", True), ("out_of_sample", False)):
        rs = [r for r in rows if r["in_sample"] == pick and not r["known_miss"]]
        errs = [abs(r["error"]) for r in rs]
        out[key] = {"n": len(rs), "max": max(errs, default=0.0),
                    "mean": statistics.fmean(errs) if errs else 0.0,
                    "within": sum(e <= TOLERANCE for e in errs),
                    "misses": [r["name"] for r in rows if r["in_sample"] == pick and r["known_miss"]]}
    return out


@functools.lru_cache(maxsize=None)
def _ratios() -> dict:
    """Measured / predicted throughput of the out-of-sample rows: ZeRO-3's, and the rest
    that are not known misses."""
    out = {"zero3": [], "other": []}
    for r in validate():
        if r["in_sample"] or r["estimate"].constants.stack != "megatron-te":  # plan's stack
            continue
        if r["estimate"].layout.zero_stage == 3 and r["known_miss"]:  # DeepSpeed 2021
            out["zero3"].append(1 / (1 + r["error"]))
        elif not r["known_miss"]:
            out["other"].append(1 / (1 + r["error"]))
    return out


def error_band(layout: Layout) -> tuple:
    """(low, high): the range of measured / predicted throughput over the published runs
    of a layout's kind, out of sample -- ZeRO-3 layouts by the ZeRO-3 rows (the planner
    over-predicts them 1.4-4x), every other layout by the rows that are not known misses."""
    r = _ratios()["zero3" if layout.zero_stage == 3 else "other"]
    return (min(r), max(r)) if r else (1.0, 1.0)
