"""``plan``: every (tp, cp, ep, pp) layout of n_gpus, each with the ZeRO stage,
recomputation (or, on a GPU with an NVLink-C2C host link, activation offloading), sequence
parallelism, interleaving and micro-batch that make it fastest,
ranked by predicted step time (``predict``); the layouts that cannot run, with why; and for
each the error bar the published runs give the planner on layouts of its kind
(``validate.error_band``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from .. import cost
from ..validate import check_bool, check_int
from .constants import CONSTANTS, Constants
from .estimate import Estimate, divisors, layer_activations, predict
from .presets import cluster_for, resolve_model
from .spec import Layout, LayoutError, split_error
from .stacks import DEFAULT_STACK

_ZERO = cost.ZERO_STAGE_NAMES
_LAYOUT = ("dp", "tp", "pp", "cp", "ep", "v", "micro_batch", "zero_stage", "recompute",
           "sequence_parallel")


@dataclass(frozen=True)
class Candidate:
    """A layout that fits: its ``estimate`` (``.dp``, ``.tp``, ... read through to it), the
    ``reasons`` it ranks where it does, and ``band``: (low, high) multipliers of its
    predicted throughput that the published runs of its kind were measured at."""
    estimate: Estimate
    reasons: tuple
    band: tuple = (1.0, 1.0)

    def __getattr__(self, name):
        if name in _LAYOUT:
            return getattr(self.estimate, name)
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    @property
    def step_time(self) -> float:
        return self.estimate.step_time.total

    @property
    def rank_time(self) -> float:
        """The step time ranked on: the prediction at the best end of the band, so that a
        kind of layout the planner is known to over-predict (ZeRO-3) is not ranked on an
        optimism the published runs refute."""
        return self.step_time / self.band[1]

    @property
    def label(self) -> str:
        return (f"dp={self.dp} tp={self.tp} pp={self.pp}" + (f" v={self.v}" if self.v > 1 else "")
                + (f" cp={self.cp}" if self.cp > 1 else "") + (f" ep={self.ep}" if self.ep > 1 else "")
                + f" b={self.micro_batch} {zero_name(self.estimate.layout)} recompute={self.recompute}"
                + (f" offload={self.estimate.layout.offload_layers}"
                   if self.estimate.layout.offload_layers else "")
                + (" +SP" if self.sequence_parallel and self.tp > 1 else ""))


@dataclass(frozen=True)
class Infeasible:
    tp: int
    pp: int
    cp: int
    dp: int | None  # None when n_gpus is not divisible by tp x pp x cp
    reasons: tuple
    shortfall_bytes: float | None = None  # memory: how much the leanest variant lacks
    ep: int = 1

    @property
    def label(self) -> str:
        return (f"dp={self.dp} tp={self.tp} pp={self.pp}" + (f" cp={self.cp}" if self.cp > 1 else "")
                + (f" ep={self.ep}" if self.ep > 1 else ""))


@dataclass(frozen=True)
class Plan:
    model: object
    n_gpus: int
    gpu: str
    global_batch: int
    seq_len: int
    ranked: tuple  # Candidates, fastest first: the best variant of each layout
    infeasible: tuple  # Infeasible layouts, with their reasons

    @property
    def best(self) -> Candidate | None:
        return self.ranked[0] if self.ranked else None

    def distinguishable(self, candidate: Candidate) -> bool:
        """Whether ``candidate`` is slower than the best even at the best end of its error
        band and the worst end of the best's: whether the ranking between them is known."""
        b = self.best
        return candidate.step_time / candidate.band[1] > b.step_time / b.band[0]


def zero_name(lay: Layout) -> str:
    """The ZeRO stage in words; ZeRO-3 with a pipeline also says whether it reshards the
    weights after each micro-batch or keeps the stage unsharded across them."""
    name = _ZERO[lay.zero_stage]
    if lay.zero_stage == 3 and (lay.pp > 1 or lay.keeps_unsharded):
        name += " (keep unsharded)" if lay.keeps_unsharded else " (reshard)"
    return name


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 else f"{x:.1%}"


def reasons(e: Estimate) -> tuple:
    """Why a layout ranks where it does, in words, from its estimate."""
    t = e.step_time
    mem = e.memory_per_gpu
    c = e.cluster
    lay = e.layout
    out = []
    if lay.tp == 1:
        out.append("TP=1: no tensor-parallel communication")
    elif not c.crosses(lay.tp, 1):
        out.append(f"TP={lay.tp} fits in one node ({c.intra_link.name}); its collectives take "
                   f"{_pct(t.tp_comm / t.total)} of the step")
    else:
        out.append(f"TP={lay.tp} spans {lay.tp // c.nvlink_domain} nodes: its collectives cross "
                   f"{c.inter_link.name} ({c.nics_per_node} cards a node) and take "
                   f"{_pct(t.tp_comm / t.total)} of the step")
    if lay.pp > 1:
        out.append(f"bubble {_pct(t.bubble / t.total)} at M={e.n_micro_batches}"
                   + (f" with v={lay.v} chunks per rank" if lay.v > 1 else "")
                   + f"; p2p {t.pp_comm / t.total:.1%}")
    else:
        out.append("PP=1: no bubble")
    if lay.cp > 1:
        out.append(f"CP={lay.cp} ({lay.cp_kind}): exposes {t.cp_comm / t.total:.1%} of the step")
    if lay.ep > 1:
        out.append(f"EP={lay.ep}: the token exchange takes {_pct(t.ep_comm / t.total)} of the step")
    if e.dp * lay.cp > 1:
        what = ("synchronises the gradients" if lay.zero_stage != 3 else
                "gathers every layer's weights once a step and reduce-scatters its gradients "
                "after the last micro-batch" if lay.keeps_unsharded else
                "gathers and reduce-scatters every layer's weights every micro-batch")
        if not lay.dp_overlap and lay.zero_stage != 3:
            out.append(f"DP={e.dp}: {what} after backward: {t.dp_comm / t.total:.1%} of the step")
        elif t.dp_comm > 0:
            out.append(f"DP={e.dp}: {what}; {t.dp_comm / t.total:.1%} of the step does not fit "
                       "behind the compute it overlaps")
        else:
            out.append(f"DP={e.dp}: {what}, all of it hidden behind compute")
    out.append(f"{mem.total / 1e9:.1f} of {mem.capacity / 1e9:.0f} GB per GPU "
               f"({zero_name(lay)}, recompute={lay.recompute}, {lay.attention} attention"
               + (", sequence parallel" if lay.sequence_parallel and lay.tp > 1 else "") + ")")
    if lay.offload_layers:
        out.append(f"the first {lay.offload_layers} layers' activations wait in host memory "
                   f"(over {c.gpu.host_link}): their copies add {t.offload / t.total:.1%} to the "
                   "step")
    out.append(f"micro-batch {lay.micro_batch}: the fastest that fits; MFU {e.mfu:.0%}, "
               f"{t.total / t.ideal - 1:.0%} over the ideal {t.ideal:.2f} s")
    from .validate import validated_scale  # (validate imports this module)
    beyond = validated_scale(lay, e.n_gpus)
    if beyond:
        lo, hi = beyond["errors"]
        out.append(f"beyond the published runs: {beyond['kind']} is checked up to "
                   f"{beyond['largest']} GPUs (errors {lo:+.0%} to {hi:+.0%} there); at "
                   f"{e.n_gpus} GPUs this prediction extrapolates")
    return tuple(out)


def _pow2_upto(n: int) -> tuple:
    out = []
    k = 1
    while k <= n:
        out.append(k)
        k *= 2
    return tuple(out)


def _ranked_on(e: Estimate) -> tuple:
    """What variants are compared on: the step at the best end of their kind's error band
    (``Candidate.rank_time``), then memory. Layouts are ranked on it, so their variants are
    chosen on it too: a ZeRO-3 variant predicted 2% faster than ZeRO-1 is, by the published
    ZeRO-3 runs, not faster, and keeping it made a DP layout rank far below its ZeRO-1 self."""
    from .validate import error_band
    return e.step_time.total / error_band(e.layout)[1], e.memory_per_gpu.total


# host links the search offloads activations over: NVLink-C2C, where NVIDIA's own GB200 recipes
# do. Over PCIe the copies share the host's memory bandwidth and the network cards' PCIe
# switches with the node's other GPUs, which the model does not price, so the search does not
# offer it there (a Layout may still ask for it)
OFFLOAD_LINKS = ("NVLink-C2C",)


def _offloaded(model, cluster, lay: Layout, n_gpus, B, constants, e: Estimate) -> Estimate:
    """``e`` (a layout without recomputation that does not fit) with the fewest layers'
    activations offloaded to the host that makes it fit (``Layout.offload_layers``, pp 1), or
    ``e`` itself if offloading all but one layer would not."""
    one = layer_activations(model, cluster, lay)
    over = e.memory_per_gpu.total - e.memory_per_gpu.capacity
    k = math.ceil(over / one) + 1 if one > 0 else model.n_layers  # the one in flight stays
    if k >= model.n_layers:
        return e
    off = predict(model, cluster, replace(lay, offload_layers=k), n_gpus, B, constants)
    return off if off.fits else e


def _best_variant(model, cluster, base: Layout, n_gpus, B, constants, pp, tp,
                  zero3_with_pp: bool = False):
    """The fastest variant of a layout that fits (ranked as ``plan`` ranks layouts), and the
    leanest one (for the reason why nothing fits). Micro-batches rise until memory stops
    fitting (activations grow with it).

    With a pipeline the stages are ZeRO 0 and 1, then (``zero3_with_pp``) ZeRO-3 (FSDP2),
    only where it can win: at the micro-batches where ZeRO-1 with the same sequence
    parallelism, interleaving and recomputation does not fit. Where ZeRO-1 fits, ZeRO-3 cannot be faster: the same
    compute, bubble and optimizer step, and its traffic is the same bytes in a collective
    per layer, each hidden behind one layer's compute, where ZeRO-1 hides one collective
    behind the whole stage's (FSDP2 has ZeRO-1's error band: it cannot rank better either).
    So only resharding after each micro-batch is tried: keeping the stage unsharded holds
    ZeRO-1's whole weights and gradients and the shards besides -- more memory, no less
    traffic. Without ``dp_overlap`` ZeRO-1 exposes all its traffic while FSDP2 still
    prefetches: both ZeRO-3 variants are then tried at every micro-batch.
    (``test_planner_zero3_pp`` checks the rule against trying everything.)
    """
    best = None
    leanest = None
    L = model.n_layers
    dp = base.check(model, n_gpus, B)
    per = B // dp
    # (zero_stage, fsdp_keep_unsharded): ZeRO-2 cannot run with a pipeline (spec.Layout.check)
    kinds = [(z, None) for z in cost.ZERO_STAGES]
    prune = pp > 1 and base.dp_overlap
    if pp > 1:
        kinds = [(0, None), (1, None)] + (([(3, False)] + ([] if prune else [(3, True)]))
                                          if zero3_with_pp else [])
    zero1_stops = {}  # (sp, v, recompute) -> the first micro-batch ZeRO-1 cannot fit
    # interleaving needs m = per / b to be a multiple of pp: b must divide per / pp; the
    # chunks split as the layout allows (spec.split_error), uneven ones a layer or more each
    vs = [v for v in (1, 2, 4, 8) if v == 1 or (
        pp > 1 and per % pp == 0 and (base.ends_as_layers or pp * v <= L)
        and split_error(L, pp, v, base.uneven_stages, base.ends_as_layers) is None)]
    for zero, keep in kinds:
        for sp in ((False, True) if tp > 1 else (False,)):
            for v in vs:
                for rec in _recompute_kinds(base, model):  # ever more recomputed
                    bs = divisors(per // pp if v > 1 else per)  # smallest first
                    if zero == 3 and prune:
                        first = zero1_stops.get((sp, v, rec))
                        if first is None:  # ZeRO-1 fits every micro-batch, here and beyond
                            break
                        bs = bs[bs.index(first):]
                    stop = None  # the first micro-batch that does not fit
                    for b in bs:
                        lay = replace(base, zero_stage=zero, fsdp_keep_unsharded=keep,
                                      recompute=rec, sequence_parallel=sp, v=v, micro_batch=b)
                        e = predict(model, cluster, lay, n_gpus, B, constants)
                        if not e.fits and rec == "none" and pp == 1 and \
                                cluster.gpu.host_link in OFFLOAD_LINKS:
                            e = _offloaded(model, cluster, lay, n_gpus, B, constants, e)
                        if not e.fits:
                            if leanest is None or e.memory_per_gpu.total < leanest.memory_per_gpu.total:
                                leanest = e
                            stop = b
                            break  # a larger micro-batch holds more
                        if best is None or _ranked_on(e) < _ranked_on(best):
                            best = e
                    if zero == 1:
                        zero1_stops[(sp, v, rec)] = stop
                    if stop is None:
                        break  # recomputing more is slower at every micro-batch: nothing to gain
    return best, leanest


def _recompute_kinds(base: Layout, model) -> tuple:
    """The recomputation a layout's stack offers, least first (less memory, more time, in
    that order): Megatron-LM's none / selective / full (``cost.RECOMPUTE``) on the default
    stack; on PyTorch's (eager, compile, float8: torchtitan's activation_checkpoint modes)
    none / per-operator "op" / full, "op" only for a dense model with fused attention, the
    layers ``cost.op_recomputed`` counts."""
    if base.stack == DEFAULT_STACK:
        return cost.RECOMPUTE
    if model.shape.moe or base.attention != "fused":
        return ("none", "full")
    return ("none", "op", "full")


def _degrees(name: str, value, default: tuple) -> tuple:
    """``value`` (a degree list given to ``plan``) as a tuple of distinct integers >= 1, or
    ``default`` when it is None. A bare integer is refused rather than read as (value,):
    ``tps=8`` could as well mean "up to 8", and a wrong guess would plan something else
    without saying so."""
    if value is None:
        return default
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name}={value!r} must be a sequence of integers >= 1, e.g. "
                         f"{name}=({value!r},) for that degree alone")
    out = tuple(value)
    if not out:
        raise ValueError(f"{name}={value!r} must list at least one degree (None: the "
                         "default search)")
    for i, x in enumerate(out):
        check_int(f"{name}[{i}]", x)
    if len(set(out)) < len(out):
        raise ValueError(f"{name}={value!r} lists a degree twice")
    return out


def plan(model, n_gpus: int, gpu="A100-80GB", global_batch: int | None = None, *,
         seq_len: int | None = None, gpus_per_node: int | None = None,
         nics_per_node: int | None = None, inter_link=None, nvlink_domain: int | None = None,
         tps=None, pps=None, cps=None, eps=None, dp_overlap: bool = True,
         cp_kind: str = "ring", attention: str = "fused", dtype: str | None = None,
         tp_comm_overlap: bool = False, uneven_stages: bool = False,
         ends_as_layers: bool = False,
         constants: Constants = CONSTANTS, stack: str = "megatron-te",
         zero3_with_pp: bool = False, loss_kernel: str | None = None) -> Plan:
    """Layouts of ``n_gpus`` for ``model`` ranked by predicted step time.

    ``model``: a key of ``presets.MODELS`` ("llama3-70B", "mixtral-8x7B", "175B", ...), a
    ``ModelSpec``, or a dict with n_layers, d_model, n_heads, seq_len (and vocab_size).
    ``global_batch``: sequences per step; default about 4M tokens (2**22 / seq_len), rounded
    up to a multiple of n_gpus. Degrees tried: ``tps`` (powers of two up to 2 NVLink
    domains), ``cps`` (powers of two up to 16 while seq_len / cp >= 4096), ``eps`` (MoE:
    powers of two dividing n_experts), ``pps`` (every divisor of what is left, up to the
    layers). For each layout every ZeRO stage (0-3 without a pipeline; with one 0 and 1,
    and with ``zero3_with_pp`` also 3 -- FSDP2 resharding after each micro-batch or keeping
    the stage unsharded, tried only where ZeRO-1 does not fit: ``_best_variant``. Off by
    default: no published run in ``validate`` checks ZeRO-3 resharding with a pipeline (Llama
    3's keep the stage whole), and where it wins it wins by memory alone, e.g. dropping
    recomputation), recomputation (the stack's own kinds: ``_recompute_kinds``), sequence
    parallelism (tp > 1), interleaving v in {1, 2, 4, 8} and micro-batch is estimated and
    the fastest variant that fits is kept (ties: the leaner).
    The cluster, attention, dtype, overlaps, ``uneven_stages`` (pp not dividing the
    layers: the slowest stage timed), ``ends_as_layers`` (the pipeline split counts the
    embedding and the loss as a layer each: pp x v must divide n_layers + 2, as Llama 3.1
    405B's 126 do at pp 16 or 8), ``stack`` and ``loss_kernel`` (the cross-entropy's
    implementation; default the stack's) are as for ``estimate``. ``attention``: "fused" by
    default (a FlashAttention-style kernel: no s x s scores kept, in time and memory),
    where ``cost.memory_plan`` counts materialized scores; each candidate's reasons say
    which. ``tps``, ``pps``, ``cps``,
    ``eps``: None (the default search) or a non-empty sequence of distinct integers >= 1
    -- ``tps=(8,)``, not ``tps=8``.

    Every argument is checked first: a bad one is a ValueError naming it. Only a layout
    the model cannot run (``spec.LayoutError``: tp not dividing the heads, pp the layers,
    dp the batch...) or that does not fit in memory is filed under ``.infeasible``.

    Returns a Plan: ``.ranked`` (Candidates, each with ``.reasons`` and ``.band``, fastest
    first by ``Candidate.rank_time``: the predicted step at the best end of its band) and
    ``.infeasible`` (layouts with why: a degree that does not divide, or
    memory -- how far the leanest variant is from fitting).
    """
    from .validate import error_band
    spec = resolve_model(model)
    n_gpus = check_int("n_gpus", n_gpus)
    if seq_len is not None:
        spec = replace(spec, seq_len=check_int("seq_len", seq_len))
    cluster = cluster_for(gpu, gpus_per_node, nics_per_node, inter_link, nvlink_domain)
    S = spec.seq_len
    s = spec.shape
    if global_batch is None:
        want = max(1, round(2 ** 22 / S))
        global_batch = -(-want // n_gpus) * n_gpus
    B = check_int("global_batch", global_batch)
    if not isinstance(constants, Constants):
        raise ValueError(f"constants={constants!r} must be a planner.Constants")
    tps = _degrees("tps", tps, _pow2_upto(min(n_gpus, 2 * cluster.nvlink_domain)))
    cps = _degrees("cps", cps, tuple(c for c in _pow2_upto(16)
                                     if S // c >= 4096 and S % (2 * c) == 0 or c == 1))
    eps = _degrees("eps", eps, tuple(e for e in _pow2_upto(min(n_gpus, s.n_experts))
                                     if s.n_experts % e == 0) if s.moe else (1,))
    if not s.moe and eps != (1,):  # would file every layout as infeasible for one reason
        raise ValueError(f"eps={eps!r}: expert parallelism needs a mixture-of-experts model; "
                         f"{spec.name} is dense (n_experts=0)")
    pps = _degrees("pps", pps, None)  # None: every divisor of what tp x cp leave
    zero3_with_pp = check_bool("zero3_with_pp", zero3_with_pp)
    # the options every layout shares, checked here so that a bad one is raised, not
    # reported as every layout being infeasible
    base = Layout(dp_overlap=dp_overlap, cp_kind=cp_kind, attention=attention, dtype=dtype,
                  tp_comm_overlap=tp_comm_overlap, uneven_stages=uneven_stages,
                  ends_as_layers=ends_as_layers, stack=stack, loss_kernel=loss_kernel)
    base.dtype_on(cluster.gpu)
    ranked = []
    infeasible = []
    for cp in cps:
        for tp in tps:
            rest = n_gpus // (tp * cp) if n_gpus % (tp * cp) == 0 else 0
            if not rest:
                infeasible.append(Infeasible(tp, 1, cp, None, (
                    f"n_gpus={n_gpus} is not divisible by tp*cp={tp * cp}",)))
                continue
            layout_pps = pps if pps is not None else tuple(
                itertools.takewhile(lambda d: d <= spec.n_layers, divisors(rest)))
            for pp in layout_pps:
                for ep in eps:
                    dp = n_gpus // (tp * pp * cp) if n_gpus % (tp * pp * cp) == 0 else None
                    lay = replace(base, tp=tp, pp=pp, cp=cp, ep=ep)
                    try:
                        lay.check(spec, n_gpus, B)
                    except LayoutError as err:  # this layout cannot run; anything else is a bug
                        infeasible.append(Infeasible(tp, pp, cp, dp, (str(err),), ep=ep))
                        continue
                    best, leanest = _best_variant(spec, cluster, lay, n_gpus, B, constants, pp,
                                                  tp, zero3_with_pp)
                    if best is not None:
                        ranked.append(Candidate(best, reasons(best), error_band(best.layout)))
                    elif leanest is not None:
                        m = leanest.memory_per_gpu
                        short = m.total - m.capacity
                        infeasible.append(Infeasible(tp, pp, cp, dp, (
                            f"doesn't fit: needs {m.total / 1e9:.1f} GB of {m.capacity / 1e9:.0f} "
                            f"GB per GPU ({short / 1e9:.1f} GB short) even at micro-batch "
                            f"{leanest.micro_batch}, {zero_name(leanest.layout)}, recompute="
                            f"{leanest.recompute}" + (", sequence parallel"
                                                      if leanest.sequence_parallel else ""),),
                            short, ep))
    ranked.sort(key=lambda c: (c.rank_time, c.estimate.memory_per_gpu.total))
    return Plan(spec, n_gpus, cluster.gpu.name, B, S, tuple(ranked), tuple(infeasible))
