"""Notebook 06's exercise on §2's clipping: the global gradient norm of a model split over a
dp x pp x tp mesh, from what each rank holds (the rule of ``parallel_nd/clip.py``).

``my_global_grad_norm(grads, groups)``: ``grads`` is this rank's gradients {name: tensor} of
the lab's small GPT, cut as ``NDRun`` cuts it (its stage's layers, its TP slice of each split
parameter); each tensor's ``tp_split`` is what ``apply_tensor_parallel`` marks: ``(dim,
parts)`` for a TP slice, None for a tensor every TP rank holds whole (layer norms,
row-parallel biases, wpe). ``groups``: this rank's {"tp", "pp", "dp"} process groups
(``Mesh.init()``). Every rank must return one device's ||g||
(``torch.nn.utils.clip_grad_norm_``'s).

The checker cuts one device's gradient over the mesh, runs the function on the ranks and
compares each rank's number with one device's norm. A wrong number is matched against what
each typical mistake gives from the same pieces (``rule_value``): replicated tensors counted
on every TP rank (``cost.clip_norm_overcount``'s factor) or not at all, the sum over TP or PP
missing, a sum over DP too, norms added instead of squares, no root. ``watch.DistWatch``
reads the collectives: a right norm from one all-reduce per tensor is said to be slow.
"""

from __future__ import annotations

import itertools
import math
import numbers
from functools import lru_cache

import torch
import torch.distributed as dist

from parlab import cost
from parlab.mesh import Mesh
from parlab.tensor_parallel.layers import slice_of
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.checkers.watch import DistWatch
from lessons.common.i18n import t as say

from .text import TEXT
from lessons.common import record

__all__ = ["check_global_grad_norm", "solution_global_grad_norm", "one_device_norm", "tp_split",
           "cut", "rule_value"]

MAX_RANKS = 8
REL = 1e-4  # fp32 sums of ~60k squares, added in another order than one device's


def solution_global_grad_norm(grads, groups):
    """Square-sum this rank's share (a tensor every TP rank holds whole: on TP rank 0 only),
    add the partial sums over TP (different slices) and PP (different layers), not over DP
    (the replicas hold the same averaged gradient), and take the root once."""
    tp_rank = dist.get_rank(groups["tp"])
    total = torch.zeros(1)
    for g in grads.values():
        if g.tp_split is None and tp_rank != 0:
            continue  # the same values as TP rank 0's: counted there, once
        total += g.float().pow(2).sum()
    dist.all_reduce(total, group=groups["tp"])
    dist.all_reduce(total, group=groups["pp"])
    return total.sqrt().item()


# --- one device's gradient, cut as NDRun cuts the model ----------------------------------

def config():
    """Notebook 06's small GPT of §2's clipping (``experiments_clip.CLIP_CFG``)."""
    from .experiments_clip import CLIP_CFG
    return CLIP_CFG


@lru_cache(maxsize=1)
def one_device_grads() -> dict:
    """{name: gradient} in the shapes of ``config()``'s parameters: seeded random numbers (the
    rule does not care what they are), each tensor with its own norm and shrinking along the
    dimension TP cuts, so that every stage, slice and the replicated tensors carry a
    different share of ||g|| and each wrong rule gives a number of its own."""
    from parlab.model import GPT
    cfg, gen, out = config(), torch.Generator().manual_seed(6), {}
    for k, (name, p) in enumerate(GPT(cfg).named_parameters()):
        split = tp_split(name, cfg)
        dim = 0 if split is None else split[0]
        ramp = torch.linspace(1.8, 0.2, p.shape[dim]).reshape(
            [-1 if d == dim else 1 for d in range(p.dim())])
        g = torch.randn(p.shape, generator=gen) * ramp
        out[name] = g * ((1 + 0.29 * k) * (0.7 if split is None else 1.0) / g.norm())
    return out


def one_device_norm() -> float:
    """||g|| of ``one_device_grads()`` as ``torch.nn.utils.clip_grad_norm_`` computes it."""
    grads = one_device_grads().values()
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))


def tp_split(name: str, config):
    """How ``tensor_parallel.gpt_plan``, applied, marks parameter ``name`` of the dense GPT:
    (dim, parts) for a TP slice, None for one every TP rank holds whole."""
    if name in ("wte.weight", "lm_head.weight") or name.endswith(("mlp.fc1.weight", "mlp.fc1.bias")):
        return (0, 1)
    if name.endswith(("attn.qkv.weight", "attn.qkv.bias")):
        hd, kv = config.head_dim, config.n_kv_heads
        return (0, (config.n_heads * hd, kv * hd, kv * hd))
    if name.endswith(("attn.proj.weight", "mlp.fc2.weight")):
        return (1, 1)
    return None


def _stage(name: str, config, pp: int) -> int:
    from parlab.pipeline_parallel.stages import split_layers
    if name.startswith("blocks."):
        i = int(name.split(".")[1])
        return next(s for s, r in enumerate(split_layers(config.n_layers, pp)) if i in r)
    return 0 if name.startswith(("wte", "wpe")) else pp - 1


def cut(pp: int, tp: int) -> dict:
    """{(stage, tp rank): {name: (gradient piece, tp_split)}}: what each rank holds."""
    cfg = config()
    out = {(s, t): {} for s in range(pp) for t in range(tp)}
    for name, g in one_device_grads().items():
        split, s = tp_split(name, cfg), _stage(name, cfg, pp)
        for t in range(tp):
            out[s, t][name] = (g.clone() if split is None else slice_of(g, *split, tp, t), split)
    return out


# --- what each rule gives ----------------------------------------------------------------

REPLICATED = ("once", "every", "never")  # counted on TP rank 0 / on every TP rank / nowhere
SUMMED = (("tp", "pp"), ("tp",), ("pp",), (), ("tp", "pp", "dp"), ("tp", "dp"), ("pp", "dp"), ("dp",))
ROOTS = ("squares", "no_sqrt", "rank_norms", "stage_norms", "tensor_norms")


def _sums(pieces: dict) -> dict:
    """{(stage, tp rank): (squares, norms added per tensor), each (TP-split, replicated)}."""
    out = {}
    for key, named in pieces.items():
        sq, nm = [0.0, 0.0], [0.0, 0.0]
        for g, split in named.values():
            k = int(split is None)
            sq[k] += float(g.double().pow(2).sum())
            nm[k] += float(g.double().norm())
        out[key] = (tuple(sq), tuple(nm))
    return out


def rule_value(sums: dict, mesh: Mesh, rank: int, replicated: str, summed: tuple, root: str) -> float:
    """The number ``rank`` gets when it counts the replicated tensors ``replicated``, adds
    over the axes ``summed``, and roots as ``root`` says (``"squares"``: sum squares, one
    root; ``"no_sqrt"``: no root; ``"rank_norms"``: each rank's norm added;
    ``"stage_norms"``: the root inside each TP group, norms added over the rest;
    ``"tensor_norms"``: every tensor's norm added)."""
    me = mesh.coords(rank)
    members = [c for c in map(mesh.coords, range(mesh.size))
               if all(c[a] == me[a] for a in ("dp", "pp", "tp") if a not in summed)]

    def local(c, k):  # k = 0: squares, 1: norms per tensor
        split, rep = sums[c["pp"], c["tp"]][k]
        times = {"once": c["tp"] == 0, "every": 1, "never": 0}[replicated]
        return split + rep * times

    if root == "stage_norms":
        outer = {(c["dp"], c["pp"]) for c in members}
        return sum(math.sqrt(sum(local(c, 0) for c in members if (c["dp"], c["pp"]) == o))
                   for o in outer)
    if root == "tensor_norms":
        return sum(local(c, 1) for c in members)
    if root == "rank_norms":
        return sum(math.sqrt(local(c, 0)) for c in members)
    total = sum(local(c, 0) for c in members)
    return total if root == "no_sqrt" else math.sqrt(total)


def _mistakes():
    """Every wrong (replicated, summed, root), fewest mistakes first."""
    rules = [(r, s, o) for r, s, o in itertools.product(REPLICATED, SUMMED, ROOTS)
             if (r, s, o) != ("once", ("tp", "pp"), "squares")]
    return sorted(rules, key=lambda x: (x[0] != "once") + (x[2] != "squares")
                  + len({"tp", "pp"} - set(x[1])) + ("dp" in x[1]))


def _said(rule, mesh: Mesh, sums: dict, values: list) -> list[str]:
    """One sentence per mistake in ``rule``."""
    replicated, summed, root = rule
    t, p, d = mesh.shape["tp"], mesh.shape["pp"], mesh.shape["dp"]
    S = sum(sq[0] for sq, _ in sums.values())
    R = sum(sq[1] for (_, ti), (sq, _) in sums.items() if ti == 0)
    out = []
    if replicated == "every" and t > 1:
        out.append(say(TEXT, "clip.every", t=t, factor=cost.clip_norm_overcount(S, R, t)))
    if replicated == "never":
        out.append(say(TEXT, "clip.never"))
    if "tp" not in summed and t > 1:
        out.append(say(TEXT, "clip.no_tp"))
    if "pp" not in summed and p > 1:
        per = say(TEXT, "sep.comma").join(
            say(TEXT, "clip.stage_norm", stage=s, norm=values[mesh.rank(dp=0, pp=s, tp=0)])
            for s in range(p))
        out.append(say(TEXT, "clip.no_pp", per=per))
    if "dp" in summed and d > 1:
        out.append(say(TEXT, "clip.dp", d=d, factor=math.sqrt(d)))
    if root != "squares":
        out.append(say(TEXT, f"clip.{root}"))
    return out


# --- the checker --------------------------------------------------------------------------

def _number(out):
    if isinstance(out, torch.Tensor) and out.numel() == 1:
        return float(out.detach().reshape(()))
    if isinstance(out, numbers.Real) and not isinstance(out, bool):
        return float(out)
    return None


def harness(source: str, name: str, dp: int, pp: int, tp: int, pieces: dict):
    """On a rank: the mesh's groups, this rank's gradients marked with ``tp_split``, the
    learner's call, its number and the collectives it ran."""
    fn = core.load_learner(source, name)
    mesh = Mesh(dp=dp, pp=pp, tp=tp).init()
    c = mesh.coords(dist.get_rank())
    grads = {}
    for n, (g, split) in pieces[c["pp"], c["tp"]].items():
        grads[n] = g.clone()
        grads[n].tp_split = split
    with DistWatch() as watch:
        out = fn(grads, {a: mesh.group(a) for a in ("tp", "pp", "dp")})
    return dict(value=_number(out), kind=type(out).__name__, collectives=watch.collectives)


def _check_mesh(dp, pp, tp) -> Mesh:
    cfg, n = config(), {}
    for name, v in (("dp", dp), ("pp", pp), ("tp", tp)):
        n[name] = check_int(name, v, 1, MAX_RANKS)
    if cfg.n_heads % n["tp"]:
        raise ValueError(f"tp={tp} must divide n_heads={cfg.n_heads}")
    if n["pp"] > cfg.n_layers:
        raise ValueError(f"pp={pp} must be at most n_layers={cfg.n_layers}")
    if dp * pp * tp > MAX_RANKS:
        raise ValueError(f"dp * pp * tp = {dp * pp * tp} ranks: this exercise runs on at most "
                         f"{MAX_RANKS}")
    return Mesh(dp=dp, pp=pp, tp=tp)


def check_global_grad_norm(fn, dp: int = 2, pp: int = 2, tp: int = 2, timeout: float = 30.0) -> dict:
    """Run ``fn(grads, groups)`` on a dp x pp x tp mesh; every rank must return one device's
    ||g||. A wrong number is named by the mistake that gives it."""
    from lessons.l05_context_parallel.exercises import _unwritten
    mesh = _check_mesh(dp, pp, tp)
    core.check_timeout(timeout)
    if _unwritten(fn):
        return core.missing(say(TEXT, "unwritten", name=fn.__name__))
    pieces = cut(pp, tp)
    results, bad = core.run_learner(harness, fn, mesh.size, dp, pp, tp, pieces, timeout=timeout)
    held = {s: len(pieces[s, 0]) for s in range(pp)}
    if bad and bad.get("timed_out") and len(set(held.values())) > 1:
        return core.verdict(False, bad["detail"] + say(TEXT, "clip.hang", held=say(
            TEXT, "sep.comma").join(say(TEXT, "clip.held", stage=s, n=n) for s, n in held.items())))
    if bad:
        return bad
    for rank, res in enumerate(results):
        if res["value"] is None:
            return core.verdict(False, say(TEXT, "clip.kind", rank=rank, kind=res["kind"]))
    sums, values, want = _sums(pieces), [res["value"] for res in results], one_device_norm()

    def err(v, w):
        return abs(v / w - 1) if math.isfinite(v) else math.inf

    if all(err(v, want) <= REL for v in values):
        return _right(values[0], results[0]["collectives"], mesh)
    fits = [(max(err(v, rule_value(sums, mesh, r, *rule)) for r, v in enumerate(values)), rule)
            for rule in _mistakes()]  # fewest mistakes first
    best = min(e for e, _ in fits)
    if best <= REL:  # the simplest rule that fits as well as the best one
        rule = next(rule for e, rule in fits if e <= 2 * best + 1e-12)
        return core.verdict(False, say(TEXT, "clip.mistake", got=values[0], want=want,
                                       ratio=values[0] / want, said=say(TEXT, "clip.and").join(
                                           _said(rule, mesh, sums, values))))
    wrong = next(r for r, v in enumerate(values) if err(v, want) > REL)
    return core.verdict(False, say(TEXT, "clip.wrong", rank=wrong, got=values[wrong], want=want))


def _right(value: float, collectives: list, mesh: Mesh) -> dict:
    """The verdict for a right norm, with what rank 0's collectives say about its cost."""
    n, elements = len(collectives), sum(k for _, _, k in collectives)
    msg = say(TEXT, "clip.right", value=value, size=mesh.size, dp=mesh.shape["dp"],
              pp=mesh.shape["pp"], tp=mesh.shape["tp"], n=n, elements=elements,
              collectives=say(TEXT, "clip.collective" if n == 1 else "clip.collectives"),
              element_word=say(TEXT, "clip.element" if elements == 1 else "clip.elements"))
    across = [(op, ranks) for op, ranks, _ in collectives
              if ranks and len({mesh.coords(r)["dp"] for r in ranks}) > 1]
    if across:
        op, ranks = across[0]
        msg += say(TEXT, "clip.across", op=op, ranks=list(ranks))
    if n > 2 or elements > 2 * max(n, 1):
        msg += say(TEXT, "clip.slow")
    if mesh.shape["dp"] == 1:
        msg += say(TEXT, "clip.dp1")
    return core.verdict(True, msg)


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
