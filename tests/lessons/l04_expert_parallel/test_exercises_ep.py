"""Notebook 04's "Your turn" (``lessons.l04_expert_parallel.exercises``): every checker passes
the reference solution, fails a planted wrong one naming the rank, token and choice that
differ, and says "not answered" for the placeholder without raising. The routing
exercises run on real ranks (2 and 4)."""

import pytest
import torch

from parlab.cost import expert_parallel as cost
from lessons.l04_expert_parallel import exercises as ex
from parlab.moe import positions_before, slot_positions


def placeholder(logits, top_k, capacity):
    raise NotImplementedError  # your code


def global_placeholder(logits, top_k, capacity, rank, world_size):
    raise NotImplementedError  # your code


def token_order_only(logits, top_k, capacity):
    experts = logits.topk(top_k, dim=-1).indices
    flat = torch.nn.functional.one_hot(experts.reshape(-1), logits.size(-1))
    pos = (flat.cumsum(0) - flat).gather(1, experts.reshape(-1, 1)).reshape(experts.shape)
    return experts, pos < capacity                    # second choices compete with first ones


def local_counts_only(logits, top_k, capacity, rank, world_size):
    experts = logits.topk(top_k, dim=-1).indices
    onehot = torch.nn.functional.one_hot(experts, logits.size(-1))
    counts = onehot.sum(0)
    pos = (onehot.cumsum(0) - onehot + counts.cumsum(0) - counts).gather(
        2, experts.unsqueeze(-1)).squeeze(-1)
    return experts, pos < capacity                    # other ranks' tokens ignored


def wrong_order(logits, top_k, capacity):
    experts = logits.topk(top_k, dim=-1).indices.flip(-1)
    return experts, torch.ones_like(experts, dtype=torch.bool)


def not_a_pair(logits, top_k, capacity):
    return logits


@pytest.mark.parametrize("w", [2, 4])
def test_reference_solutions_pass(w):
    v = ex.check_route(ex.solution_route, w)
    assert v["ok"] and "dropped" in v["message"], v["message"]
    assert ex.check_global_route(ex.solution_global_route, w)["ok"]


def test_the_cases_drop_something_and_local_differs_from_global():
    logits = ex.route_logits(2)
    e = logits.topk(ex.TOP_K, dim=-1).indices
    local = torch.cat([ex.kept_mask(p, ex.EXPERTS, ex.LOCAL_CAPACITY) for p in e.chunk(2)])
    glob = ex.kept_mask(e, ex.EXPERTS, ex.GLOBAL_CAPACITY, 2)
    assert (~local).any() and (~glob).any()
    # kept_mask is parlab.moe's rule on one slice
    counts = torch.nn.functional.one_hot(e, ex.EXPERTS).sum(0).unsqueeze(0)
    assert torch.equal(ex.kept_mask(e, ex.EXPERTS, 9),
                       slot_positions(e, ex.EXPERTS, positions_before(counts, 0)) < 9)


def test_placeholders_say_not_answered():
    assert ex.check_route(placeholder).get("missing")
    assert ex.check_global_route(global_placeholder).get("missing")


def test_planted_mistakes_name_rank_token_choice():
    v = ex.check_route(token_order_only)
    assert not v["ok"] and "rank 0, token 2, choice 1 (expert 0): you kept it" in v["message"]
    assert "first choice before any second choice" in v["message"]
    v = ex.check_global_route(local_counts_only)
    assert not v["ok"] and "token" in v["message"] and "over all 2 ranks" in v["message"]
    v = ex.check_route(wrong_order)
    assert not v["ok"] and "choice 0: expert" in v["message"] and "largest" in v["message"]
    v = ex.check_route(not_a_pair)
    assert not v["ok"] and "return (experts, kept)" in v["message"]
    v = ex.check_global_route(ex.solution_route)      # wrong signature: the ranks' error
    assert not v["ok"] and "TypeError" in v["message"]


def test_show_solution(capsys):
    ex.show_solution("my_global_route")
    out = capsys.readouterr().out
    assert out.startswith("def my_global_route(") and "all_gather" in out


def test_numeric_checkers():
    assert ex.check_capacity(160)["ok"] and not ex.check_capacity(80)["ok"]
    assert not ex.check_capacity(161)["ok"]        # capacity is an integer: exact
    want = cost.moe_all_to_all_bytes(4096, 4096, 2, 8, 2)["total"]
    assert ex.check_a2a_bytes(want)["ok"]
    v = ex.check_a2a_bytes(want / 4)
    assert not v["ok"] and "factor 0.25" in v["message"]
    assert ex.check_mixtral_params(46.7e9, 12.9e9)["ok"]
    v = ex.check_mixtral_params(56e9, 14e9)
    assert not v["ok"] and v["message"].count("off by") == 2
    assert ex.check_mixtral_params(46.7e9, None).get("missing")
    right = [(0, 1), (2, 1), (3, 0), (4, 1), (5, 1)]
    assert ex.check_dropped(right)["ok"]
    v = ex.check_dropped([(3, 0), (5, 1), (1, 0)])
    assert not v["ok"] and "kept by the rule: [(1, 0)]" in v["message"]
    assert not ex.check_dropped("nonsense")["ok"]
    assert all(c(None).get("missing") for c in (ex.check_capacity, ex.check_a2a_bytes,
                                                ex.check_dropped))
