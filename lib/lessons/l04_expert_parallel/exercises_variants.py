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
        out = f"returned {type(out).__name__}" + (f" of {len(out)}" if isinstance(out, tuple) else "")
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
        return (f"Your experts chose among one rank's {n} tokens only, numbered 0..{n - 1}. "
                f"Expert choice looks at the WHOLE batch: gather every rank's scores first, "
                f"and number the tokens rank-major (rank r's token t is r*{n} + t)")
    share = [_pick(p, capacity // world_size) + r * n for r, p in enumerate(ranks)]
    if got.size(1) == capacity and torch.equal(got, torch.cat(share, 1).sort(dim=1).values):
        return (f"Each rank gave every expert {capacity // world_size} of its own tokens: the "
                f"experts must choose among all {n * world_size} tokens at once (one rank's "
                f"tokens may win them all)")
    if torch.equal(got, (_pick(probs, capacity) % n).sort(dim=1).values):
        return (f"Right tokens, but numbered within their rank; use global ids, rank-major: "
                f"rank r's token t is r*{n} + t")
    if torch.equal(got, _pick(logits, capacity)):
        return ("Your experts ranked the raw logits (or a softmax over the tokens, which keeps "
                "their order): the scores are S = softmax over each token's experts (dim -1), "
                "which changes which tokens win a column")
    if torch.equal(got, _pick(torch.cat([p.softmax(0) for p in logits.split(n)]), capacity)):
        return ("Your scores are a softmax over each rank's tokens (dim 0): S = softmax over "
                "each token's experts (dim -1)")
    return None


def _wrong_gates(gates, tok, logits, probs) -> str | None:
    """Why the gates differ from S at the chosen tokens, when a typical mistake explains it."""
    E = probs.size(1)
    at = lambda m: torch.stack([m[tok[e], e] for e in range(E)])  # noqa: E731
    close = lambda w: torch.allclose(gates.double(), w.double(), atol=1e-5)  # noqa: E731
    if close(at(logits)):
        return ("the gates are the raw logits, not normalised: G holds the scores "
                "S = softmax over each token's experts (a token's E scores sum to 1)")
    over_tokens = [logits.softmax(0)] + [torch.cat([p.softmax(0) for p in logits.split(TOKENS)])]
    if any(close(at(m)) for m in over_tokens):
        return ("the gates are a softmax over the tokens (dim 0); S is a softmax over each "
                "token's experts (dim -1)")
    want = at(probs)
    if close(want / want.sum(1, keepdim=True)):
        return ("the gates are renormalised within each expert; G is the chosen scores of S "
                "as they are")
    return None


def check_expert_choice_route(fn, world_size: int = 2, seed: int = 1,
                              timeout: float = 30.0) -> dict:
    """Run ``fn(logits, capacity, rank, world_size)`` on real ranks (see the module)."""
    w = core.check_ranks("world_size", world_size, 2)
    check_int("seed", seed, 0)
    core.check_timeout(timeout)
    name = getattr(fn, "__name__", "your function")
    if _is_placeholder(fn):
        return core.missing(f"write {name} (it still raises NotImplementedError)")
    N, E = w * TOKENS, EXPERTS
    cap = expert_capacity(N, E, CAPACITY_FACTOR)
    results, bad = core.run_learner(harness, fn, w, seed, cap, timeout=timeout)
    if bad is not None:
        return bad
    logits = choice_logits(w, seed)
    probs = logits.softmax(-1)
    chosen = expert_choice(probs, cap)                        # parlab.moe's rule, (N, E) bool
    want = torch.stack([chosen[:, e].nonzero().squeeze(-1) for e in range(E)])  # sorted ids
    shape = f"({E}, {cap}): one row per expert, its {cap} tokens"
    for r, res in enumerate(results):
        out = res["out"]
        if isinstance(out, str):
            return core.verdict(False, f"rank {r}: {name} {out}; return (tokens, gates), two "
                                f"tensors of shape {shape}")
        tokens, gates = out
        got_shape = tuple(tokens.shape)
        if got_shape in ((TOKENS, cap), (N, cap), (TOKENS, E), (N, E)) and got_shape != (E, cap):
            return core.verdict(False, f"rank {r}: tokens has shape {got_shape}, one row per "
                                f"token: that is token choice (each token picks experts). In "
                                f"expert choice each EXPERT picks its top {cap} tokens: a top-k "
                                f"over the tokens, expected shape {shape}")
        if tokens.dim() == 2 and tokens.size(0) == E and tokens.size(1) != cap:
            return core.verdict(False, f"rank {r}: each expert took {tokens.size(1)} tokens; "
                                f"capacity is {cap} (n c / E = {N} x {CAPACITY_FACTOR:g} / {E}), "
                                f"and every expert is exactly full")
        if got_shape != (E, cap) or tuple(gates.shape) != (E, cap):
            return core.verdict(False, f"rank {r}: tokens {got_shape}, gates "
                                f"{tuple(gates.shape)}; expected both {shape}")
        if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
            return core.verdict(False, f"rank {r}: tokens are {tokens.dtype}; return token ids "
                                f"as integers (topk's indices)")
        tok, order = tokens.long().sort(dim=1)
        if tok.min() < 0 or tok.max() >= N:
            return core.verdict(False, f"rank {r}: token id {int(tok.max())} is outside the "
                                f"batch's {N} tokens (0..{N - 1}, rank-major)")
        if not torch.equal(tok, want):
            why = _wrong_tokens(tok, logits, probs, cap, w)
            twice = (tok[:, 1:] == tok[:, :-1]).any(1)
            if why is None and twice.any():
                return core.verdict(False, f"rank {r}: expert {int(twice.nonzero()[0])} took "
                                    f"one token twice; it takes {cap} different tokens")
            e = int((tok != want).any(1).nonzero()[0])
            return core.verdict(False, f"rank {r}: expert {e} chose tokens {tok[e].tolist()}, "
                                f"parlab.moe.expert_choice takes {want[e].tolist()}. "
                                + (why + "." if why else "Each expert takes the tokens with "
                                   "the highest scores in its column of S, over all ranks."))
        g = gates.detach().gather(1, order)
        msg = core.compare_tensors(g, torch.stack([probs[want[e], e] for e in range(E)]),
                                   where=f"rank {r}: gates (sorted by token)", atol=1e-5)
        if msg:
            why = _wrong_gates(g, want, logits, probs)
            return core.verdict(False, f"rank {r}: right tokens; " + (why + "." if why else msg))
    per_token = chosen.sum(1)
    moved = [(op, n) for op, ranks, n in results[0]["collectives"]]
    said = (f" Rank 0 sent {sum(n for _, n in moved)} values through "
            f"{', '.join(sorted({op for op, _ in moved}))}." if moved else "")
    return core.verdict(True, f"Every rank's {E} experts took the same {cap} tokens each as "
                        f"parlab.moe.expert_choice over all {N}; {int((per_token == 0).sum())} "
                        f"tokens got no expert, {int((per_token > 1).sum())} got two or more, "
                        f"and nothing was dropped.{said}")
