"""Notebook 01's HSDP exercise (lessons.l01_data_parallel.exercises_hsdp, re-exported by
exercises.data_parallel): the reference passes, each typical mistake gets its own
verdict, the placeholder is "not answered", bad settings are a ValueError before any rank
starts, and the shard the checker wants of each rank is the one zero.HybridShard keeps."""

import pytest
import torch
import torch.distributed as dist

import parlab
from lessons.l01_data_parallel import exercises as ex
from lessons.l01_data_parallel import exercises_hsdp as hsdp
from lessons.common.checkers import learner

pytestmark = pytest.mark.timeout(120)


# --- planted answers (module level: the checker sends their source to the ranks) ----------

def placeholder(grad, shard_group, replicate_group):
    raise NotImplementedError  # your code


def flat_all_reduce(grad, shard_group, replicate_group):
    dist.all_reduce(grad)  # right numbers, every byte through rings that cross the nodes
    s = dist.get_world_size(shard_group)
    return grad.chunk(s)[dist.get_rank(shard_group)] / dist.get_world_size()


def whole_gradient_across(grad, shard_group, replicate_group):
    dist.all_reduce(grad, group=replicate_group)  # the whole gradient across: S x the bytes
    s = dist.get_world_size(shard_group)
    mine = torch.empty(grad.numel() // s)
    dist.reduce_scatter(mine, list(grad.chunk(s)), group=shard_group)
    return mine / 4


def node_only(grad, shard_group, replicate_group):
    s = dist.get_world_size(shard_group)
    mine = torch.empty(grad.numel() // s)
    dist.reduce_scatter(mine, list(grad.chunk(s)), group=shard_group)
    return mine / s  # the replicate step is missing: the node's average


def summed(grad, shard_group, replicate_group):
    s = dist.get_world_size(shard_group)
    mine = torch.empty(grad.numel() // s)
    dist.reduce_scatter(mine, list(grad.chunk(s)), group=shard_group)
    dist.all_reduce(mine, group=replicate_group)
    return mine  # not divided


def divided_by_shard(grad, shard_group, replicate_group):
    s = dist.get_world_size(shard_group)
    mine = torch.empty(grad.numel() // s)
    dist.reduce_scatter(mine, list(grad.chunk(s)), group=shard_group)
    dist.all_reduce(mine, group=replicate_group)
    return mine / s  # the shard group's size, not the world's


def wrong_position(grad, shard_group, replicate_group):
    s = dist.get_world_size(shard_group)
    dist.all_reduce(grad, group=shard_group)
    mine = grad.chunk(s)[dist.get_rank(replicate_group)].clone()  # the replica index
    dist.all_reduce(mine, group=replicate_group)
    return mine / 4


def reversed_position(grad, shard_group, replicate_group):
    s = dist.get_world_size(shard_group)
    dist.all_reduce(grad, group=shard_group)
    mine = grad.chunk(s)[s - 1 - dist.get_rank(shard_group)].clone()  # counted from the end
    dist.all_reduce(mine, group=replicate_group)
    return mine / 4


def gathers_back(grad, shard_group, replicate_group):
    s = dist.get_world_size(shard_group)
    mine = torch.empty(grad.numel() // s)
    dist.reduce_scatter(mine, list(grad.chunk(s)), group=shard_group)
    dist.all_reduce(mine, group=replicate_group)
    out = [torch.empty_like(mine) for _ in range(s)]
    dist.all_gather(out, mine, group=shard_group)  # notebook 00's third step
    return torch.cat(out) / 4


def two_level_then_slice(grad, shard_group, replicate_group):
    s = dist.get_world_size(shard_group)
    mine = torch.empty(grad.numel() // s)
    dist.reduce_scatter(mine, list(grad.chunk(s)), group=shard_group)
    dist.all_reduce(mine, group=replicate_group)
    out = [torch.empty_like(mine) for _ in range(s)]
    dist.all_gather(out, mine, group=shard_group)  # gathered, then cut again
    return out[dist.get_rank(shard_group)] / 4


def all_reduce_in_node(grad, shard_group, replicate_group):
    s = dist.get_world_size(shard_group)
    dist.all_reduce(grad, group=shard_group)  # twice a reduce-scatter's bytes
    mine = grad.chunk(s)[dist.get_rank(shard_group)].clone()
    dist.all_reduce(mine, group=replicate_group)
    return mine / 4


def tensor_forms(grad, shard_group, replicate_group):
    s = dist.get_world_size(shard_group)
    mine = torch.empty(grad.numel() // s)
    dist.reduce_scatter_tensor(mine, grad, group=shard_group)
    mine /= s * dist.get_world_size(replicate_group)
    dist.all_reduce(mine, group=replicate_group)
    return mine


def hangs(grad, shard_group, replicate_group):
    if dist.get_rank() != 0:  # a collective only some ranks call
        dist.all_reduce(grad)
    return grad


# --- verdicts ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, words", [
    (ex.solution_hsdp_grad_sync, "Correct. each of the 4 ranks holds its shard"),
    (tensor_forms, "Correct."),
    (flat_all_reduce, "rank 0 ran dist.all_reduce over all 4 ranks"),
    (whole_gradient_across, "all-reduced 8 of the 8 elements across replicate_group, 2x the 4 of its shard"),
    (node_only, "the average over its own node (shard_group) only"),
    (summed, "the sum over all 4 ranks; divide by the world size, 4"),
    (divided_by_shard, "2x the mean: divided by 2"),
    (wrong_position, "all-reduced rank 0 shard 0, rank 2 shard 1; rank 2 keeps shard 0."),
    (reversed_position, "rank 0 keeps shard 0, rank 2 keeps shard 0."),
    (gathers_back, "the whole gradient. HSDP keeps only this rank's shard"),
    (two_level_then_slice, "ran an all-gather inside the node: that is notebook 00's"),
    (all_reduce_in_node, "ran all_reduce inside the node, not a reduce-scatter"),
])
def test_hsdp_grad_sync_verdicts(fn, words):
    v = ex.check_hsdp_grad_sync(fn)
    assert words in v["message"], v["message"]
    assert v["ok"] is v["message"].startswith("Correct.")


def test_placeholder_and_hang_get_a_verdict():
    v = ex.check_hsdp_grad_sync(placeholder)
    assert not v["ok"] and v.get("missing"), v
    assert v["message"].startswith("Not answered yet: write placeholder"), v["message"]
    v = ex.check_hsdp_grad_sync(hangs, timeout=5)
    assert not v["ok"] and "did not finish within 5 s" in v["message"], v["message"]


def test_value_hints_without_ranks():
    """The hint for each wrong shard, computed from the numbers alone (no ranks)."""
    grads = torch.stack([hsdp.inputs(k) for k in range(4)])
    results = [dict(position=k % 2, shard=(k - k % 2, k - k % 2 + 1), replicate=(k % 2, k % 2 + 2))
               for k in range(4)]
    want = hsdp.wanted_shard(grads.mean(0), 2, 1)
    assert "1/4 of the gradient" in hsdp._value_hint(want[:2], grads, results, 1, 2, 2)
    node = hsdp.wanted_shard(grads[[0, 1]].sum(0), 2, 1)
    assert "own node" in hsdp._value_hint(node, grads, results, 1, 2, 2)
    assert hsdp._value_hint(want + 1, grads, results, 1, 2, 2) == ""
    assert hsdp._value_hint(None, grads, results, 1, 2, 2) == ""


@pytest.mark.parametrize("kwargs, named", [
    (dict(shard=1), "shard=1"), (dict(replicate=5), "replicate=5"),
    (dict(shard=2.5), "shard"), (dict(timeout=0), "timeout")])
def test_bad_settings_are_refused_before_any_rank_starts(kwargs, named, monkeypatch):
    def no_ranks(*args, **kwargs):
        raise AssertionError("a rank was started before the settings were checked")
    monkeypatch.setattr(learner, "launch", no_ranks)
    with pytest.raises(ValueError, match=named):
        ex.check_hsdp_grad_sync(ex.solution_hsdp_grad_sync, **kwargs)


def test_hints_and_solution_are_there(capsys):
    assert "my_hsdp_grad_sync" in ex.hints("my_hsdp_grad_sync").data
    ex.show_solution("my_hsdp_grad_sync")
    assert "def my_hsdp_grad_sync(grad, shard_group, replicate_group):" in capsys.readouterr().out


# --- the shard each rank must return is the one HybridShard keeps -------------------------------

class _Flat(torch.nn.Module):
    """One flat parameter whose gradient is the input: loss = (w * x).sum()."""

    def __init__(self, numel):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(numel))

    def forward(self, x):
        return (self.w * x).sum()


def hybrid_worker():
    from parlab import zero
    torch.set_num_threads(1)
    shard, rep = zero.hsdp_groups(2)
    model = zero.HybridShard(_Flat(hsdp.NUMEL), shard, rep)
    model(hsdp.inputs(dist.get_rank())).backward()  # synchronised by its end
    ours = hsdp.solution_hsdp_grad_sync(hsdp.inputs(dist.get_rank()), shard, rep)
    return model.shards[0].grad.clone(), ours, dist.get_rank(shard)


def test_the_wanted_shard_is_hybrid_shards():
    mean = torch.stack([hsdp.inputs(k) for k in range(4)]).mean(0)
    for rank, (theirs, ours, position) in enumerate(parlab.launch(hybrid_worker, 4, timeout=60)):
        want = hsdp.wanted_shard(mean, 2, position)
        assert position == rank % 2
        torch.testing.assert_close(theirs, want)
        torch.testing.assert_close(ours, want)
