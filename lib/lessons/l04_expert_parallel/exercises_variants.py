"""Notebook 04's exercise on §8's expert choice (Zhou et al. 2022, "Mixture-of-Experts
with Expert Choice Routing"), run on real ranks as expert parallelism runs it: each rank
holds only its own tokens' router logits, but every expert chooses among the tokens of
the WHOLE batch.

``my_expert_choice_route(logits, capacity, rank, world_size)`` gets this rank's (n, E)
logits and returns the paper's ``(I, G)`` for the global batch, the same on every rank:
``tokens[e]`` the ``capacity`` tokens expert e takes (global ids, rank-major: rank r's
token t is r n + t) and ``gates[e]`` their scores, where S = softmax(x W_g) over each
token's experts and I, G = TopK(S^T, capacity). The checker compares every rank's answer
with ``parlab.moe.expert_choice`` (the rule ``EPMoE`` applies under expert parallelism)
on the whole batch, order within an expert free, and names the typical mistakes: token
choice (a top-k over experts), a capacity off by one, experts choosing among one rank's
tokens, per-rank token ids, ranking raw logits, gates not normalised or normalised over
the wrong dimension. It says which collectives carried the scores (``watch.DistWatch``).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from parlab.cost.expert_parallel import expert_capacity
from parlab.moe_ops import expert_choice
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.l02_tensor_parallel.exercises import _is_placeholder
from lessons.common.checkers.watch import DistWatch
from lessons.common.i18n import t

from lessons.common import record

from .text import TEXT


def said_returned(res: dict) -> str:
    """What a learner's function returned instead of its tensors, in words, as the ranks
    record it ({"type", "n"}): "returned Tensor", "returned tuple of 3"."""
    if res["n"] is None:
        return t(TEXT, "returned", type=res["type"])
    return t(TEXT, "returned_of", type=res["type"], n=res["n"])


__all__ = ["check_expert_choice_route", "solution_expert_choice_route", "choice_logits",
           "TOKENS", "EXPERTS", "CAPACITY_FACTOR"]

TOKENS, EXPERTS, CAPACITY_FACTOR = 8, 4, 1.0  # per rank; capacity n W c / E over the batch


def solution_expert_choice_route(logits, capacity, rank, world_size):
    scores = logits.softmax(dim=-1)                        # S: each token's scores over experts
    everyone = [torch.empty_like(scores) for _ in range(world_size)]
    dist.all_gather(everyone, scores.contiguous())         # the whole batch's S on every rank
    S = torch.cat(everyone)                                # (W n, E): row r n + t = rank r's t
    gates, tokens = S.t().topk(capacity, dim=-1)           # each expert's top-capacity tokens
    return tokens, gates


def choice_logits(world_size: int, seed: int = 1, tokens: int = TOKENS,
                  n_experts: int = EXPERTS) -> torch.Tensor:
    """Every rank's router logits (world_size tokens, E), rank r's rows [r n, (r+1) n):
    random, rank r's tokens leaning r / 2 towards expert 0, so an expert's choice is
    not spread evenly over the ranks (one rank's tokens alone would choose otherwise)."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(world_size * tokens, n_experts, generator=g)
    logits[:, 0] += 0.5 * torch.arange(world_size).repeat_interleave(tokens)
    return logits


def harness(source: str, name: str, seed: int, capacity: int):
    """On a rank: this rank's logits, the learner's answer, the collectives it ran."""
    fn = core.load_learner(source, name)
    r, w = dist.get_rank(), dist.get_world_size()
    logits = choice_logits(w, seed)[r * TOKENS:(r + 1) * TOKENS].clone()
    with DistWatch() as watch:
        out = fn(logits, capacity, r, w)
    if isinstance(out, tuple) and len(out) == 2 and all(isinstance(o, torch.Tensor) for o in out):
        out = tuple(o.detach().clone() for o in out)
    else:
        out = dict(type=type(out).__name__, n=len(out) if isinstance(out, tuple) else None)
    return dict(out=out, collectives=watch.collectives)


def _pick(scores: torch.Tensor, capacity: int) -> torch.Tensor:
    """(E, capacity) token ids, sorted: each column's top ``capacity`` rows."""
    return scores.topk(min(capacity, scores.size(0)), dim=0).indices.t().sort(dim=1).values


def _wrong_tokens(got, logits, probs, capacity, world_size) -> str | None:
    """Why the chosen tokens differ from the rule, when a typical mistake explains it."""
    n = TOKENS
    ranks = list(probs.split(n))
    local = [_pick(p, capacity) for p in ranks]
    if got.max() < n and any(torch.equal(got, x) for x in local):
        return t(TEXT, "ec_one_rank", n=n, last=n - 1)
    share = [_pick(p, capacity // world_size) + r * n for r, p in enumerate(ranks)]
    if got.size(1) == capacity and torch.equal(got, torch.cat(share, 1).sort(dim=1).values):
        return t(TEXT, "ec_shares", each=capacity // world_size, total=n * world_size)
    if torch.equal(got, (_pick(probs, capacity) % n).sort(dim=1).values):
        return t(TEXT, "ec_local_ids", n=n)
    if torch.equal(got, _pick(logits, capacity)):
        return t(TEXT, "ec_raw_logits")
    if torch.equal(got, _pick(torch.cat([p.softmax(0) for p in logits.split(n)]), capacity)):
        return t(TEXT, "ec_softmax_rank")
    return None


def _wrong_gates(gates, tok, logits, probs) -> str | None:
    """Why the gates differ from S at the chosen tokens, when a typical mistake explains it."""
    E = probs.size(1)
    at = lambda m: torch.stack([m[tok[e], e] for e in range(E)])  # noqa: E731
    close = lambda w: torch.allclose(gates.double(), w.double(), atol=1e-5)  # noqa: E731
    if close(at(logits)):
        return t(TEXT, "ec_gates_raw")
    over_tokens = [logits.softmax(0)] + [torch.cat([p.softmax(0) for p in logits.split(TOKENS)])]
    if any(close(at(m)) for m in over_tokens):
        return t(TEXT, "ec_gates_tokens")
    want = at(probs)
    if close(want / want.sum(1, keepdim=True)):
        return t(TEXT, "ec_gates_renorm")
    return None


def check_expert_choice_route(fn, world_size: int = 2, seed: int = 1,
                              timeout: float = 30.0) -> dict:
    """Run ``fn(logits, capacity, rank, world_size)`` on real ranks (see the module)."""
    w = core.check_ranks("world_size", world_size, 2)
    check_int("seed", seed, 0)
    core.check_timeout(timeout)
    name = getattr(fn, "__name__", "your function")
    if _is_placeholder(fn):
        return core.missing(t(TEXT, "write_it", name=name))
    N, E = w * TOKENS, EXPERTS
    cap = expert_capacity(N, E, CAPACITY_FACTOR)
    results, bad = core.run_learner(harness, fn, w, seed, cap, timeout=timeout)
    if bad is not None:
        return bad
    logits = choice_logits(w, seed)
    probs = logits.softmax(-1)
    chosen = expert_choice(probs, cap)                        # parlab.moe's rule, (N, E) bool
    want = torch.stack([chosen[:, e].nonzero().squeeze(-1) for e in range(E)])  # sorted ids
    shape = t(TEXT, "ec_shape", experts=E, cap=cap)
    for r, res in enumerate(results):
        out = res["out"]
        if isinstance(out, dict):
            return core.verdict(False, t(TEXT, "ec_returned", rank=r, name=name, what=said_returned(out),
                                         shape=shape))
        tokens, gates = out
        got_shape = tuple(tokens.shape)
        if got_shape in ((TOKENS, cap), (N, cap), (TOKENS, E), (N, E)) and got_shape != (E, cap):
            return core.verdict(False, t(TEXT, "ec_token_choice", rank=r, got=got_shape, cap=cap,
                                         shape=shape))
        if tokens.dim() == 2 and tokens.size(0) == E and tokens.size(1) != cap:
            return core.verdict(False, t(TEXT, "ec_capacity", rank=r, took=tokens.size(1), cap=cap,
                                         n=N, cf=CAPACITY_FACTOR, experts=E))
        if got_shape != (E, cap) or tuple(gates.shape) != (E, cap):
            return core.verdict(False, t(TEXT, "ec_shapes", rank=r, tokens=got_shape,
                                         gates=tuple(gates.shape), shape=shape))
        if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
            return core.verdict(False, t(TEXT, "ec_dtype", rank=r, dtype=tokens.dtype))
        tok, order = tokens.long().sort(dim=1)
        if tok.min() < 0 or tok.max() >= N:
            return core.verdict(False, t(TEXT, "ec_outside", rank=r, id=int(tok.max()), n=N,
                                         last=N - 1))
        if not torch.equal(tok, want):
            why = _wrong_tokens(tok, logits, probs, cap, w)
            twice = (tok[:, 1:] == tok[:, :-1]).any(1)
            if why is None and twice.any():
                return core.verdict(False, t(TEXT, "ec_twice", rank=r,
                                             expert=int(twice.nonzero()[0]), cap=cap))
            e = int((tok != want).any(1).nonzero()[0])
            return core.verdict(False, t(TEXT, "ec_wrong_tokens", rank=r, expert=e,
                                         got=tok[e].tolist(), want=want[e].tolist())
                                + (t(TEXT, "ec_why", why=why) if why else t(TEXT, "ec_column")))
        g = gates.detach().gather(1, order)
        msg = core.compare_tensors(g, torch.stack([probs[want[e], e] for e in range(E)]),
                                   where=t(TEXT, "ec_gates_where", rank=r), atol=1e-5)
        if msg:
            why = _wrong_gates(g, want, logits, probs)
            return core.verdict(False, t(TEXT, "ec_right_tokens", rank=r,
                                         why=t(TEXT, "ec_why", why=why) if why else msg))
    per_token = chosen.sum(1)
    moved = [(op, n) for op, ranks, n in results[0]["collectives"]]
    said = (t(TEXT, "ec_sent", n=sum(n for _, n in moved),
              ops=", ".join(sorted({op for op, _ in moved}))) if moved else "")
    return core.verdict(True, t(TEXT, "ec_ok", experts=E, cap=cap, n=N,
                                none=int((per_token == 0).sum()), many=int((per_token > 1).sum()),
                                sent=said))


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
