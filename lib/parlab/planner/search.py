"""``plan``: every (tp, pp, cp) layout of n_gpus, each with the ZeRO stage, recomputation,
sequence parallelism, interleaving and micro-batch that make it fastest, ranked by
predicted step time (``estimate``); the layouts that cannot run, with why.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import cost
from ..validate import check_int
from .estimate import Estimate, _check_layout, estimate
from .presets import CONSTANTS, resolve_gpu, resolve_link, resolve_model

_ZERO = cost.ZERO_STAGE_NAMES


# the layout of a candidate: fields of its Estimate
_LAYOUT = ("dp", "tp", "pp", "cp", "ep", "v", "micro_batch", "zero_stage", "recompute",
           "sequence_parallel")


@dataclass(frozen=True)
class Candidate:
    """A layout that fits: its ``estimate`` (which holds the layout -- ``.dp``, ``.tp``,
    ``.pp``, ``.cp``, ``.ep``, ``.v``, ``.micro_batch``, ``.zero_stage``, ``.recompute``,
    ``.sequence_parallel`` read through to it) and the ``reasons`` it ranks where it does."""
    estimate: Estimate
    reasons: tuple

    def __getattr__(self, name):
        if name in _LAYOUT:
            return getattr(self.estimate, name)
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    @property
    def step_time(self) -> float:
        return self.estimate.step_time.total

    @property
    def label(self) -> str:
        return (f"dp={self.dp} tp={self.tp} pp={self.pp}" + (f" v={self.v}" if self.v > 1 else "")
                + (f" cp={self.cp}" if self.cp > 1 else "") + f" b={self.micro_batch} "
                f"{_ZERO[self.zero_stage]} recompute={self.recompute}"
                + (" +SP" if self.sequence_parallel else ""))


@dataclass(frozen=True)
class Infeasible:
    tp: int
    pp: int
    cp: int
    dp: int | None  # None when n_gpus is not divisible by tp x pp x cp
    reasons: tuple
    shortfall_bytes: float | None = None  # memory: how much the leanest variant lacks

    @property
    def label(self) -> str:
        return f"dp={self.dp} tp={self.tp} pp={self.pp}" + (f" cp={self.cp}" if self.cp > 1 else "")


@dataclass(frozen=True)
class Plan:
    model: dict
    n_gpus: int
    gpu: str
    global_batch: int
    seq_len: int
    ranked: tuple  # Candidates, fastest first: the best variant of each layout
    infeasible: tuple  # Infeasible layouts, with their reasons

    @property
    def best(self) -> Candidate | None:
        return self.ranked[0] if self.ranked else None


def _reasons(e: Estimate, gpn: int, intra: str, inter: str, dp_overlap: bool) -> tuple:
    t, mem = e.step_time, e.memory_per_gpu
    out = []
    if e.tp == 1:
        out.append("TP=1: no tensor-parallel communication")
    elif e.tp <= gpn:
        out.append(f"TP={e.tp} fits in one node ({intra}); its collectives take "
                   f"{t.tp_comm / t.total:.0%} of the step")
    else:
        out.append(f"TP={e.tp} spans {e.tp // gpn} nodes: its collectives cross {inter} "
                   f"and take {t.tp_comm / t.total:.0%} of the step")
    if e.pp > 1:
        out.append(f"bubble {t.bubble / t.total:.0%} at M={e.n_micro_batches}"
                   + (f" with v={e.v} chunks per rank" if e.v > 1 else "")
                   + f"; p2p {t.pp_comm / t.total:.1%}")
    else:
        out.append("PP=1: no bubble")
    if e.cp > 1:
        out.append(f"CP={e.cp}: ring attention exposes {t.cp_comm / t.total:.1%} of the step")
    if e.dp * e.cp > 1:
        how = "overlapped with the last backward" if dp_overlap else "after backward"
        out.append(f"DP={e.dp}: gradient sync exposed {t.dp_comm / t.total:.1%} ({how})")
    out.append(f"{mem.total / 1e9:.1f} of {mem.capacity / 1e9:.0f} GB per GPU "
               f"({_ZERO[e.zero_stage]}, recompute={e.recompute}"
               + (", sequence parallel" if e.sequence_parallel else "") + ")")
    out.append(f"micro-batch {e.micro_batch}: the fastest that fits; MFU {e.mfu:.0%}, "
               f"{e.tflops_per_gpu:.0f} TFLOP/s per GPU executed")
    return tuple(out)


def _pow2_upto(n: int) -> tuple:
    out, k = [], 1
    while k <= n:
        out.append(k)
        k *= 2
    return tuple(out)


def plan(model, n_gpus: int, gpu="A100-80GB", global_batch: int | None = None, *,
         seq_len: int | None = None, gpus_per_node: int = CONSTANTS["gpus_per_node"],
         inter_link=CONSTANTS["inter_link"], tps=None, pps=None, cps=(1,),
         dp_overlap: bool = True) -> Plan:
    """Layouts of ``n_gpus`` for ``model`` ranked by predicted step time.

    ``model``: a key of ``presets.MODELS`` ("70B", "175B", "megatron-1T", ...) or a dict
    with n_layers, d_model, n_heads, seq_len (and vocab_size). ``global_batch``:
    sequences per step; default about 4M tokens (2**22 / seq_len), rounded up to a
    multiple of n_gpus. ``tps``: TP degrees to try (powers of two up to 2 nodes, by
    default); ``pps``: PP degrees (the divisors of n_gpus / tp up to n_layers); ``cps``:
    CP degrees (1). For each layout (tp, pp, cp; dp = the rest) every ZeRO stage (0-1
    with a pipeline, 0-3 without), recomputation, sequence parallelism (tp > 1),
    interleaving v in {1, 2} and micro-batch is estimated and the fastest variant that
    fits is kept (ties: the leaner in memory).

    Returns a Plan: ``.ranked`` (Candidates, fastest first, each with ``.reasons``) and
    ``.infeasible`` (layouts with why: a degree that does not divide, or memory -- how
    far the leanest variant is from fitting).
    """
    shape = resolve_model(model)
    n_gpus = check_int("n_gpus", n_gpus)
    spec, inter = resolve_gpu(gpu), resolve_link(inter_link)
    gpn = check_int("gpus_per_node", gpus_per_node)
    s = shape["seq_len"] if seq_len is None else check_int("seq_len", seq_len)
    if global_batch is None:
        want = max(1, round(2 ** 22 / s))
        global_batch = -(-want // n_gpus) * n_gpus
    global_batch = check_int("global_batch", global_batch)
    L, h, a, V = shape["n_layers"], shape["d_model"], shape["n_heads"], shape["vocab_size"]
    tps = _pow2_upto(min(n_gpus, 2 * gpn)) if tps is None else tuple(tps)
    for name, seq in (("tps", tps), ("cps", cps)):
        for i, x in enumerate(seq):
            check_int(f"{name}[{i}]", x)
    ranked, infeasible = [], []
    for cp in cps:
        for tp in tps:
            rest = n_gpus // (tp * cp) if n_gpus % (tp * cp) == 0 else 0
            layout_pps = (sorted(d for d in range(1, min(rest, L) + 1) if rest % d == 0)
                          if pps is None else tuple(pps))
            if not rest:
                infeasible.append(Infeasible(tp, 1, cp, None, (
                    f"n_gpus={n_gpus} is not divisible by tp*cp={tp * cp}",)))
                continue
            for pp in layout_pps:
                check_int("pp", pp)
                dp = n_gpus // (tp * pp * cp) if n_gpus % (tp * pp * cp) == 0 else None
                try:
                    _check_layout(L, a, s, n_gpus, tp, pp, cp, 1, 1, global_batch, 0, False)
                except ValueError as e:
                    infeasible.append(Infeasible(tp, pp, cp, dp, (str(e),)))
                    continue
                best, leanest = None, None
                for zero in ((0, 1) if pp > 1 else cost.ZERO_STAGES):
                    for rec in cost.RECOMPUTE:
                        for sp in ((False, True) if tp > 1 else (False,)):
                            for v in ((1, 2) if pp > 1 and L % (2 * pp) == 0 else (1,)):
                                try:
                                    e = estimate(L, h, a, s, V, n_gpus, tp, pp, global_batch,
                                                 None, spec, cp=cp, v=v, zero_stage=zero,
                                                 recompute=rec, sequence_parallel=sp,
                                                 gpus_per_node=gpn, inter_link=inter,
                                                 dp_overlap=dp_overlap)
                                except ValueError:
                                    continue  # v = 2 needs m a multiple of pp
                                if e.fits:
                                    key = (e.step_time.total, e.memory_per_gpu.total)
                                    if best is None or key < (best.step_time.total,
                                                              best.memory_per_gpu.total):
                                        best = e
                                elif leanest is None or (e.memory_per_gpu.total
                                                         < leanest.memory_per_gpu.total):
                                    leanest = e
                if best is not None:
                    ranked.append(Candidate(best, _reasons(best, gpn, spec.link, inter.name,
                                                           dp_overlap)))
                elif leanest is not None:
                    m = leanest.memory_per_gpu
                    short = m.total - m.capacity
                    infeasible.append(Infeasible(tp, pp, cp, dp, (
                        f"doesn't fit: needs {m.total / 1e9:.1f} GB of {m.capacity / 1e9:.0f} "
                        f"GB per GPU ({short / 1e9:.1f} GB short) even at micro-batch "
                        f"{leanest.micro_batch}, {_ZERO[leanest.zero_stage]}, recompute="
                        f"{leanest.recompute}" + (", sequence parallel"
                                                  if leanest.sequence_parallel else ""),),
                        short))
                else:
                    infeasible.append(Infeasible(tp, pp, cp, dp, (
                        "no variant is valid (interleaving and micro-batches do not divide)",)))
    ranked.sort(key=lambda c: (c.step_time, c.estimate.memory_per_gpu.total))
    return Plan(shape, n_gpus, spec.name, global_batch, s, tuple(ranked), tuple(infeasible))
