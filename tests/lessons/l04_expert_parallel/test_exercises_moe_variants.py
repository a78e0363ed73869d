"""Notebook 04's expert-choice exercise (``lessons.l04_expert_parallel.exercises_variants``, re-exported by
``expert_parallel``): the reference passes on 2 and 4 real ranks, each typical wrong
answer is caught with a message saying what is wrong, the placeholder gets "not
answered", and bad checker input is a ValueError naming the field before any rank
starts. The planted answers run on the ranks from their source: self-contained."""

import pytest
import torch
import torch.distributed as dist

from parlab.cost import expert_parallel as cost
from lessons.l04_expert_parallel import exercises as ex04
from lessons.common.checkers import learner
from lessons.l04_expert_parallel import exercises_variants as ex
from parlab.moe import expert_choice

pytestmark = pytest.mark.timeout(180)


def placeholder(logits, capacity, rank, world_size):
    raise NotImplementedError  # your code: return tokens, gates


def _gathered(x, world_size):
    parts = [torch.empty_like(x) for _ in range(world_size)]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts)


def token_choice(logits, capacity, rank, world_size):
    parts = [torch.empty_like(logits) for _ in range(world_size)]
    dist.all_gather(parts, logits.softmax(-1).contiguous())
    gates, tokens = torch.cat(parts).topk(capacity, dim=-1)   # each TOKEN picks experts
    return tokens, gates


def token_choice_local(logits, capacity, rank, world_size):
    gates, tokens = logits.softmax(-1).topk(capacity, dim=-1)
    return tokens, gates


def capacity_plus_one(logits, capacity, rank, world_size):
    parts = [torch.empty_like(logits) for _ in range(world_size)]
    dist.all_gather(parts, logits.softmax(-1).contiguous())
    gates, tokens = torch.cat(parts).t().topk(capacity + 1, dim=-1)
    return tokens, gates


def capacity_minus_one(logits, capacity, rank, world_size):
    parts = [torch.empty_like(logits) for _ in range(world_size)]
    dist.all_gather(parts, logits.softmax(-1).contiguous())
    gates, tokens = torch.cat(parts).t().topk(capacity - 1, dim=-1)
    return tokens, gates


def raw_logits(logits, capacity, rank, world_size):
    parts = [torch.empty_like(logits) for _ in range(world_size)]
    dist.all_gather(parts, logits.contiguous())
    gates, tokens = torch.cat(parts).t().topk(capacity, dim=-1)   # no softmax at all
    return tokens, gates


def gates_not_normalised(logits, capacity, rank, world_size):
    parts = [torch.empty_like(logits) for _ in range(world_size)]
    dist.all_gather(parts, logits.contiguous())
    L = torch.cat(parts)
    tokens = L.softmax(-1).t().topk(capacity, dim=-1).indices
    return tokens, L.t().gather(1, tokens)                        # gates: the logits


def softmax_over_tokens(logits, capacity, rank, world_size):
    parts = [torch.empty_like(logits) for _ in range(world_size)]
    dist.all_gather(parts, logits.softmax(0).contiguous())        # dim 0: over tokens
    gates, tokens = torch.cat(parts).t().topk(capacity, dim=-1)
    return tokens, gates


def gates_renormalised(logits, capacity, rank, world_size):
    parts = [torch.empty_like(logits) for _ in range(world_size)]
    dist.all_gather(parts, logits.softmax(-1).contiguous())
    gates, tokens = torch.cat(parts).t().topk(capacity, dim=-1)
    return tokens, gates / gates.sum(-1, keepdim=True)


def local_choice(logits, capacity, rank, world_size):
    gates, tokens = logits.softmax(-1).t().topk(capacity, dim=-1)  # this rank's tokens only
    return tokens, gates


def local_share(logits, capacity, rank, world_size):
    n = logits.size(0)
    gates, tokens = logits.softmax(-1).t().topk(capacity // world_size, dim=-1)
    parts = [torch.empty_like(tokens) for _ in range(world_size)]
    dist.all_gather(parts, (tokens + rank * n).contiguous())
    gparts = [torch.empty_like(gates) for _ in range(world_size)]
    dist.all_gather(gparts, gates.contiguous())
    return torch.cat(parts, 1), torch.cat(gparts, 1)


def local_ids(logits, capacity, rank, world_size):
    parts = [torch.empty_like(logits) for _ in range(world_size)]
    dist.all_gather(parts, logits.softmax(-1).contiguous())
    gates, tokens = torch.cat(parts).t().topk(capacity, dim=-1)
    return tokens % logits.size(0), gates                       # ids within each rank


def not_a_pair(logits, capacity, rank, world_size):
    return logits


def float_ids(logits, capacity, rank, world_size):
    parts = [torch.empty_like(logits) for _ in range(world_size)]
    dist.all_gather(parts, logits.softmax(-1).contiguous())
    gates, tokens = torch.cat(parts).t().topk(capacity, dim=-1)
    return tokens.float(), gates


@pytest.mark.parametrize("w", [2, 4])
def test_reference_passes_and_says_what_moved(w):
    v = ex.check_expert_choice_route(ex.solution_expert_choice_route, w)
    assert v["ok"], v["message"]
    assert "nothing was dropped" in v["message"] and "all_gather" in v["message"]
    assert f"sent {ex.TOKENS * ex.EXPERTS} values through all_gather" in v["message"]


def test_reexported_where_notebook_04_looks():
    assert ex04.check_expert_choice_route is ex.check_expert_choice_route
    assert ex04.SOLUTIONS["my_expert_choice_route"] is ex.solution_expert_choice_route


def test_the_case_tells_the_mistakes_apart():
    """The logits make each planted mistake give a different answer than the rule."""
    w, n = 2, ex.TOKENS
    L = ex.choice_logits(w)
    S = L.softmax(-1)
    cap = cost.expert_capacity(w * n, ex.EXPERTS, ex.CAPACITY_FACTOR)
    rule = expert_choice(S, cap)
    want = S.topk(cap, dim=0).indices.t().sort(1).values
    assert torch.equal(want, torch.stack([rule[:, e].nonzero().squeeze(-1) for e in range(4)]))
    assert not torch.equal(L.topk(cap, dim=0).indices.t().sort(1).values, want)   # raw logits
    local = torch.cat([S[:n].topk(cap, 0).indices, S[n:].topk(cap, 0).indices + n])
    assert not torch.equal(local.t().sort(1).values[:, :cap], want)               # one rank
    assert (rule.sum(1) == 0).any() and (rule.sum(1) > 1).any()                   # 0 and 2+


def test_placeholder_says_not_answered():
    v = ex.check_expert_choice_route(placeholder)
    assert v.get("missing") and not v["ok"] and "placeholder" in v["message"]


@pytest.mark.parametrize("fn, said", [
    (token_choice, "that is token choice"),
    (token_choice_local, "that is token choice"),
    (capacity_plus_one, "each expert took 5 tokens; capacity is 4"),
    (capacity_minus_one, "each expert took 3 tokens; capacity is 4"),
    (raw_logits, "ranked the raw logits"),
    (softmax_over_tokens, "a softmax over each rank's tokens (dim 0)"),
    (gates_not_normalised, "the gates are the raw logits, not normalised"),
    (gates_renormalised, "renormalised within each expert"),
    (local_choice, "chose among one rank's 8 tokens only"),
    (local_share, "Each rank gave every expert 2 of its own tokens"),
    (local_ids, "numbered within their rank"),
    (not_a_pair, "return (tokens, gates)"),
    (float_ids, "as integers"),
])
def test_planted_mistakes_are_named(fn, said):
    v = ex.check_expert_choice_route(fn)
    assert not v["ok"] and said in v["message"], v["message"]
    assert "rank 0" in v["message"]


def test_a_wrong_signature_is_the_ranks_error():
    v = ex.check_expert_choice_route(ex04.solution_route)   # (logits, top_k, capacity)
    assert not v["ok"] and "TypeError" in v["message"]


@pytest.mark.parametrize("kwargs, named", [
    (dict(world_size=1), "world_size=1"), (dict(world_size=0), "world_size=0"),
    (dict(world_size=2.0), "world_size"), (dict(seed=-1), "seed=-1"),
    (dict(timeout=0), "timeout=0"), (dict(timeout=float("nan")), "timeout=nan"),
])
def test_bad_input_is_refused_before_any_rank_starts(kwargs, named, monkeypatch):
    def no_ranks(*args, **kw):
        raise AssertionError("a rank was started before the parameters were checked")
    monkeypatch.setattr(learner, "launch", no_ranks)
    with pytest.raises(ValueError, match=named):
        ex.check_expert_choice_route(ex.solution_expert_choice_route, **kwargs)


def test_hints_and_solution(capsys):
    page = ex04.hints("my_expert_choice_route").data
    assert page.count("<details>") == 3 and "all_gather" in page
    ex04.show_solution("my_expert_choice_route")
    out = capsys.readouterr().out
    assert out.startswith("def my_expert_choice_route(") and "topk" in out
