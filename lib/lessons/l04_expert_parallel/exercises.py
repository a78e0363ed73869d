"""Notebook 04's "Your turn": checkers and reference solutions (MoE, expert parallelism).

Coding exercises, run on real ranks (``core.run_learner``); each rank routes its own
tokens' router logits, and the answer is ``(experts, kept)``: the (n, k) expert
chosen for each token's choice (choice 0 = the largest logit) and the (n, k) bool of
the assignments that fit. Drop priority is GShard's (Lepikhin et al. 2020, Alg. 1),
as ``parlab.moe`` applies it: every first choice before any second choice, and within
one choice, earlier tokens first.

* ``check_route(fn)``: ``fn(logits, top_k, capacity)``, capacity **per rank**: each
  rank caps its own tokens, no communication.
* ``check_global_route(fn)``: ``fn(logits, top_k, capacity, rank, world_size)``,
  capacity over the **global** batch (rank 0's tokens first, then rank 1's ...), as
  ``parlab.moe`` and ``expert_parallel.router`` count it: the ranks must share their
  per-expert counts.
* ``check_expert_choice_route(fn)`` (§8's expert choice, in ``moe_variants``):
  ``fn(logits, capacity, rank, world_size)``, each expert picks its top tokens of the
  whole batch.

Numeric exercises compare with ``parlab.cost`` / ``parlab.moe``. Checkers return
``{"ok", "message"}`` and never raise on a wrong or missing answer.
"""

from __future__ import annotations


import torch
import torch.distributed as dist

from parlab.cost import expert_parallel as cost
from .experiments import MIXTRAL, kept_mask
from parlab.validate import check_int
from lessons.common.checkers import core
from .hints import HINTS
from .text import TEXT
from lessons.common.i18n import t
from lessons.l02_tensor_parallel.exercises import _is_placeholder

__all__ = ["check_route", "check_global_route", "check_capacity", "check_a2a_bytes",
           "check_mixtral_params", "check_dropped", "DROP_CASE", "MIXTRAL", "kept_mask",
           "route_logits", "solution_route", "solution_global_route", "show_solution", "hints",
           "check_expert_choice_route", "solution_expert_choice_route"]

# the routing exercises: tokens per rank, experts, top-k, and the capacities that drop some
TOKENS, EXPERTS, TOP_K = 8, 4, 2
LOCAL_CAPACITY, GLOBAL_CAPACITY = 4, 7   # cf 1.0 per rank; cf 0.875 over 2 ranks' 16 tokens


# --- reference solutions --------------------------------------------------------------------

def solution_route(logits, top_k, capacity):
    experts = logits.topk(top_k, dim=-1).indices             # (n, k), choice 0 = the largest
    onehot = torch.nn.functional.one_hot(experts, logits.size(-1))   # (n, k, E)
    # queue position of each assignment in its expert: all earlier choices of every token,
    # then the same choice of earlier tokens (GShard: first choices before second ones)
    counts = onehot.sum(0)                                   # (k, E)
    before_choice = counts.cumsum(0) - counts                # (k, E) earlier choices
    earlier_tokens = onehot.cumsum(0) - onehot               # (n, k, E) same choice
    position = (earlier_tokens + before_choice).gather(2, experts.unsqueeze(-1)).squeeze(-1)
    return experts, position < capacity


def solution_global_route(logits, top_k, capacity, rank, world_size):
    experts = logits.topk(top_k, dim=-1).indices
    onehot = torch.nn.functional.one_hot(experts, logits.size(-1))
    counts = onehot.sum(0)                                   # (k, E) this rank's
    everyone = [torch.zeros_like(counts) for _ in range(world_size)]
    dist.all_gather(everyone, counts)                        # every rank's (k, E) counts
    everyone = torch.stack(everyone)                         # (W, k, E)
    total = everyone.sum(0)
    # ahead of this rank's choice-c assignments: every rank's earlier choices, and
    # choice c of the ranks that hold earlier tokens
    before = (total.cumsum(0) - total) + everyone[:rank].sum(0)
    earlier_tokens = onehot.cumsum(0) - onehot
    position = (earlier_tokens + before).gather(2, experts.unsqueeze(-1)).squeeze(-1)
    return experts, position < capacity


from .exercises_variants import (check_expert_choice_route, said_returned,  # noqa: E402
                                 solution_expert_choice_route)
from lessons.common import record

SOLUTIONS = {"my_route": solution_route, "my_global_route": solution_global_route,
             "my_expert_choice_route": solution_expert_choice_route}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution of a coding exercise, each behind a click
    ("my_route", "my_global_route", "my_expert_choice_route")."""
    return core.hints(SOLUTIONS, HINTS, name)


def show_solution(name: str) -> None:
    """Print the reference solution of exercise ``name`` ("my_route", "my_global_route",
    "my_expert_choice_route")."""
    core.show_solution(SOLUTIONS, name)


# --- the routing exercises --------------------------------------------------------------------

def route_logits(world_size: int, seed: int = 1, tokens: int = TOKENS, n_experts: int = EXPERTS):
    """Every rank's router logits, (world_size * tokens, E), rank r's rows
    [r tokens, (r+1) tokens): random, expert 0 favoured (a hot expert: drops happen)."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(world_size * tokens, n_experts, generator=g)
    logits[:, 0] += 1.0
    return logits


def _route_harness(source, name, seed, top_k, capacity, global_capacity):
    fn = core.load_learner(source, name)
    r, w = dist.get_rank(), dist.get_world_size()
    logits = route_logits(w, seed)[r * TOKENS:(r + 1) * TOKENS].clone()
    out = fn(logits, top_k, capacity, r, w) if global_capacity else fn(logits, top_k, capacity)
    if isinstance(out, tuple) and len(out) == 2 and all(isinstance(o, torch.Tensor) for o in out):
        return tuple(o.detach().clone() for o in out)
    return returned(out)


def returned(out) -> dict:
    """What a learner's function returned instead of two tensors, as the ranks send it back
    (the words are written by the checker, in the session's language)."""
    return dict(type=type(out).__name__, n=len(out) if isinstance(out, tuple) else None)


def _check_route(fn, world_size: int, seed: int, capacity: int, global_capacity: bool) -> dict:
    core.check_ranks("world_size", world_size, 2)
    check_int("seed", seed, 0)
    name = getattr(fn, "__name__", "your function")
    if _is_placeholder(fn):
        return core.missing(t(TEXT, "write_it", name=name))
    results, bad = core.run_learner(_route_harness, fn, world_size, seed, TOP_K, capacity,
                                    global_capacity)
    if bad:
        return bad
    logits = route_logits(world_size, seed)
    experts = logits.topk(TOP_K, dim=-1).indices
    keep = (kept_mask(experts, EXPERTS, capacity, world_size) if global_capacity else
            torch.cat([kept_mask(p, EXPERTS, capacity) for p in experts.chunk(world_size)]))
    scope = t(TEXT, "scope_global" if global_capacity else "scope_local", capacity=capacity,
              world=world_size)
    for r, res in enumerate(results):
        if isinstance(res, dict):
            return core.verdict(False, t(TEXT, "route_returned", rank=r, name=name, what=said_returned(res),
                                         tokens=TOKENS, top_k=TOP_K))
        got_e, got_k = res
        want_e = experts[r * TOKENS:(r + 1) * TOKENS]
        want_k = keep[r * TOKENS:(r + 1) * TOKENS]
        for what, got, want in (("experts", got_e, want_e), ("kept", got_k, want_k)):
            if tuple(got.shape) != tuple(want.shape):
                return core.verdict(False, t(TEXT, "route_shape", rank=r, what=what,
                                             got=tuple(got.shape), want=tuple(want.shape)))
        diff = (got_e.long() != want_e).nonzero()
        if len(diff):
            i, c = diff[0].tolist()
            return core.verdict(False, t(TEXT, "route_expert", rank=r, token=i, choice=c,
                                         got=int(got_e[i, c]), want=int(want_e[i, c])))
        diff = (got_k.bool() != want_k).nonzero()
        if len(diff):
            i, c = diff[0].tolist()
            return core.verdict(False, t(TEXT, "route_kept" if got_k[i, c] else "route_dropped",
                                         rank=r, token=i, choice=c, expert=int(want_e[i, c]),
                                         scope=scope, n=len(diff), total=want_k.numel()))
    n_drop = int((~keep).sum())
    return core.verdict(True, t(TEXT, "route_ok", scope=scope, dropped=n_drop, total=keep.numel()))


def check_route(fn, world_size: int = 2, seed: int = 1) -> dict:
    """Coding exercise 1: top-k routing with capacity per rank."""
    return _check_route(fn, world_size, seed, LOCAL_CAPACITY, global_capacity=False)


def check_global_route(fn, world_size: int = 2, seed: int = 1) -> dict:
    """Coding exercise 2: the same, capacity over the global batch (counts shared)."""
    return _check_route(fn, world_size, seed, GLOBAL_CAPACITY, global_capacity=True)


# --- numeric exercises (answer_box) -----------------------------------------------------------

def check_capacity(answer, tokens: int = 4096, n_experts: int = 64, capacity_factor: float = 1.25,
                   top_k: int = 2) -> dict:
    """One expert's capacity (``cost.expert_capacity``, Switch eq. 3)."""
    want = cost.expert_capacity(tokens, n_experts, capacity_factor, top_k)
    return core.check_number(answer, want, rel_tol=0, unit="assignments",
                             hint=t(TEXT, "capacity_hint"))


def check_a2a_bytes(answer, tokens: int = 4096, d_model: int = 4096, top_k: int = 2, ep: int = 8,
                    bytes_per_value: int = 2) -> dict:
    """Bytes one rank sends in one MoE layer's all-to-alls in one training step, balanced
    routing (``cost.moe_all_to_all_bytes``)."""
    want = cost.moe_all_to_all_bytes(tokens, d_model, top_k, ep, bytes_per_value)["total"]
    return core.check_number(answer, want, unit="bytes", hint=t(TEXT, "a2a_hint"))


def check_mixtral_params(total, active=None) -> dict:
    """Mixtral 8x7B's total and active parameters (``cost.moe_params``), within 2%."""
    p = cost.moe_params(**MIXTRAL)
    if total is None or active is None:
        return core.missing(t(TEXT, "mixtral_missing"))
    hint = t(TEXT, "mixtral_hint")
    a = core.check_number(total, p["total"], rel_tol=0.02, name="total", hint=hint)
    b = core.check_number(active, p["active"], rel_tol=0.02, name="active", hint=hint)
    if a["ok"] and b["ok"]:
        return core.verdict(True, t(TEXT, "mixtral_ok", total=p["total"] / 1e9,
                                    active=p["active"] / 1e9))
    return core.verdict(False, "; ".join(f"{k}: " + v.get("detail", v["message"])
                                         for k, v in (("total", a), ("active", b))))


DROP_CASE = dict(choices=[[2, 0], [2, 1], [0, 2], [2, 3], [1, 2], [0, 2]], n_experts=4,
                 capacity=2)


def check_dropped(answer, case: dict = DROP_CASE) -> dict:
    """Which (token, choice) assignments are dropped, by ``parlab.moe``'s rule."""
    keep = kept_mask(torch.tensor(case["choices"]), case["n_experts"], case["capacity"])
    want = sorted(tuple(x) for x in (~keep).nonzero().tolist())
    if core.blank(answer):
        return core.missing(t(TEXT, "dropped_missing"))
    try:
        if hasattr(answer, "tolist"):  # a numpy / torch array of pairs
            answer = answer.tolist()
        pairs = list(answer) if isinstance(answer, (list, tuple, set)) else None
    except Exception as e:  # a meta tensor, a learner's list type whose iteration raises
        return core.verdict(False, t(TEXT, "dropped_unreadable", answer=core.shown(answer),
                                     error=type(e).__name__))
    if pairs is None:
        return core.verdict(False, t(TEXT, "dropped_not_list", answer=core.shown(answer)))
    got = []
    for i, pair in enumerate(pairs):
        pair, why = core.as_numbers(pair, count=2, whole=True)
        if why:
            return core.verdict(False, t(TEXT, "dropped_pair", i=i, why=why))
        got.append(tuple(pair))
    got = sorted(got)
    if got == want:
        return core.verdict(True, t(TEXT, "dropped_ok", want=want))
    extra, lost = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    return core.verdict(False, (t(TEXT, "dropped_extra", extra=extra) if extra else "") +
                        (t(TEXT, "dropped_lost", n=len(lost)) if lost else "") +
                        t(TEXT, "dropped_rule"))


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
