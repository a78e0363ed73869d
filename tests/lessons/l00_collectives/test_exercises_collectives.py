"""Notebook 00's exercises: every checker passes the reference, fails a planted
mistake with a message naming where, and says "not answered" for the placeholder."""

import pytest
import torch
import torch.distributed as dist

from parlab import cost
from lessons.l00_collectives import exercises as ex


@pytest.fixture(autouse=True)
def _in_english(english):
    """These tests read the checkers' English words, whatever PARLAB_LANG says (the Chinese
    ones: test_text_collectives.py)."""
    yield


# --- planted solutions: they run on the ranks from their source, so self-contained ---

def rs_forgets_own_chunk(x, rank, world_size):
    chunks = x.chunk(world_size)
    out = torch.zeros_like(chunks[rank])  # bug: starts from zero, not from its own chunk
    sends = [dist.isend(chunks[p].contiguous(), p) for p in range(world_size) if p != rank]
    incoming = torch.empty_like(out)
    for p in range(world_size):
        if p != rank:
            dist.recv(incoming, p)
            out += incoming
    for req in sends:
        req.wait()
    return out


def rs_sends_own_chunk(x, rank, world_size):
    chunks = x.chunk(world_size)
    out = chunks[rank].clone()
    # bug: sends chunk `rank` to every peer instead of chunk `peer`
    sends = [dist.isend(chunks[rank].contiguous(), p) for p in range(world_size) if p != rank]
    incoming = torch.empty_like(out)
    for p in range(world_size):
        if p != rank:
            dist.recv(incoming, p)
            out += incoming
    for req in sends:
        req.wait()
    return out


def rs_uses_the_collective(x, rank, world_size):
    out = torch.empty(x.numel() // world_size)
    dist.reduce_scatter(out, list(x.chunk(world_size)))
    return out


def ring_passes_whole_buffer(x, rank, world_size):
    total, current, incoming = x.clone(), x.clone(), torch.empty_like(x)
    for _ in range(world_size - 1):
        req = dist.isend(current, (rank + 1) % world_size)
        dist.recv(incoming, (rank - 1) % world_size)
        req.wait()
        current = incoming.clone()
        total += current
    return total


def ring_all_gather_off_by_one(x, rank, world_size):
    chunks = x.chunk(world_size)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    incoming = torch.empty_like(chunks[0])
    for s in range(world_size - 1):
        req = dist.isend(chunks[(rank - s - 1) % world_size].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[(rank - s - 2) % world_size].add_(incoming)
    for s in range(world_size - 1):  # bug: reuses the reduce-scatter's chunk indices
        req = dist.isend(chunks[(rank - s - 1) % world_size].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[(rank - s - 2) % world_size].copy_(incoming)
    return x


def ring_hangs(x, rank, world_size):
    dist.recv(x, (rank - 1) % world_size)  # everyone waits, nobody sends
    return x


def my_reduce_scatter(x, rank, world_size):
    raise NotImplementedError  # your code


# --- coding exercises ---------------------------------------------------------------

def test_references_pass():
    for check, fn in [(ex.check_reduce_scatter, ex.solution_reduce_scatter),
                      (ex.check_ring_all_reduce, ex.solution_ring_all_reduce)]:
        v = check(fn)
        assert v["ok"], v["message"]
    v = ex.check_ring_all_reduce(ex.solution_ring_all_reduce, world_size=3)
    assert v["ok"], v["message"]


def test_reduce_scatter_forgetting_own_chunk_names_rank_element_and_whose_part():
    v = ex.check_reduce_scatter(rs_forgets_own_chunk)
    assert not v["ok"]
    m = v["message"]
    # rank 0's chunk 0 = sum over r of 100 (r + 1) + [0, 1, 2] = [1000, 1004, 1008]; got 900...
    assert "rank 0" in m and "element [0]" in m and "is 900" in m and "expected 1000" in m
    assert "off by 100" in m and "rank 0's contribution is missing" in m
    assert "rank(s) 1, 2, 3" in m


def test_reduce_scatter_sending_the_wrong_chunk_is_caught():
    v = ex.check_reduce_scatter(rs_sends_own_chunk)
    assert not v["ok"] and "rank 0" in v["message"] and "element [0]" in v["message"]
    assert "expected 1000" in v["message"]


def test_reduce_scatter_built_on_the_collective_is_refused():
    v = ex.check_reduce_scatter(rs_uses_the_collective)
    assert not v["ok"] and "dist.reduce_scatter" in v["message"] and "send/recv" in v["message"]


def test_ring_sending_whole_buffers_is_right_but_too_many_bytes():
    v = ex.check_ring_all_reduce(ring_passes_whole_buffer)
    S = 4 * 4 * ex.PER_CHUNK
    assert not v["ok"]
    assert f"sent {3 * S} bytes" in v["message"]
    assert f"{cost.collective_bytes('all_reduce', S, 4):g} suffice" in v["message"]


def test_ring_with_wrong_all_gather_indices_names_rank_and_element():
    v = ex.check_ring_all_reduce(ring_all_gather_off_by_one)
    assert not v["ok"] and "rank 0: element [" in v["message"] and "off by" in v["message"]


def test_placeholder_is_not_answered_and_hang_is_a_timeout():
    v = ex.check_reduce_scatter(my_reduce_scatter)
    assert not v["ok"] and v["message"].startswith("Not answered yet")
    v = ex.check_ring_all_reduce(ring_hangs, timeout=4)
    assert not v["ok"] and "did not finish within 4 s" in v["message"] and "rank 0" in v["message"]


def test_show_solution_prints_the_reference(capsys):
    ex.show_solution("my_ring_all_reduce")
    assert "def my_ring_all_reduce(" in capsys.readouterr().out
    ex.show_solution("tree")
    assert "no solution named 'tree'" in capsys.readouterr().out


# --- numeric exercises ----------------------------------------------------------------

@pytest.mark.parametrize("check, right, wrong, word", [
    (ex.check_ring_bytes, 700, 400, "MB"),  # 2·7/8·400 MB; S itself is wrong
    (ex.check_allreduce_time, 7.65, 7.5, "ms"),  # 30·5 µs + 2·15/16·100 MB / 25 GB/s
    (ex.check_all_gather_bytes, 1.75, 3.5, "GB"),  # 7/8·2 GB; the all-reduce's is wrong
])
def test_numeric_checkers(check, right, wrong, word):
    ok = check(right)
    assert ok["ok"], ok["message"]
    bad = check(wrong)
    assert not bad["ok"] and word in bad["message"] and "off by a factor" in bad["message"]
    assert check(None)["message"].startswith("Not answered yet")
    assert not check("seven")["ok"]


def test_questions_state_the_checked_numbers():
    assert "400 MB" in ex.QUESTIONS["ring_bytes"] and "N = 8" in ex.QUESTIONS["ring_bytes"]
    q = ex.QUESTIONS["allreduce_time"]
    assert "100 MB" in q and "N = 16" in q and "5 µs" in q and "25 GB/s" in q
    assert "2 GB" in ex.QUESTIONS["all_gather_bytes"]


def ring_with_batched_p2p(x, rank, world_size):
    chunks = x.chunk(world_size)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    incoming = torch.empty_like(chunks[0])

    def step(send_c):
        ops = [dist.P2POp(dist.isend, chunks[send_c].contiguous(), right),
               dist.P2POp(dist.irecv, incoming, left)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()

    for s in range(world_size - 1):
        step((rank - s - 1) % world_size)
        chunks[(rank - s - 2) % world_size].add_(incoming)
    for s in range(world_size - 1):
        step((rank - s) % world_size)
        chunks[(rank - s - 1) % world_size].copy_(incoming)
    return x


def test_batched_p2p_ops_are_counted_too():
    v = ex.check_ring_all_reduce(ring_with_batched_p2p)
    assert v["ok"], v["message"]


# --- exercise 5: the two-level all-reduce on 2 "nodes" of 2 ---------------------------------

def two_level_flat(x, node_group, network_group):
    dist.all_reduce(x)  # right sum, every byte across the network
    return x


def two_level_node_only(x, node_group, network_group):
    dist.all_reduce(x, group=node_group)  # planted: the step across the nodes is missing
    return x


def two_level_whole_buffer_across(x, node_group, network_group):
    dist.all_reduce(x, group=node_group)
    dist.all_reduce(x, group=network_group)  # right sum, g times the network bytes
    return x


def two_level_tensor_forms(x, node_group, network_group):
    g = dist.get_world_size(node_group)
    mine = torch.empty(x.numel() // g)
    dist.reduce_scatter_tensor(mine, x, group=node_group)
    dist.all_reduce(mine, group=network_group)
    out = torch.empty_like(x)
    dist.all_gather_into_tensor(out, mine, group=node_group)
    return out


@pytest.mark.parametrize("fn, words", [
    (ex.solution_two_level_all_reduce, "Correct. every rank holds the sum of all 4"),
    (two_level_tensor_forms, "Correct."),
    (two_level_flat, "over all 4 ranks"),
    (two_level_node_only, "the step across the nodes (on network_group) is missing"),
    (two_level_whole_buffer_across, "carried 8 of the 8 elements")])
def test_two_level_all_reduce(fn, words):
    assert words in ex.check_two_level_all_reduce(fn)["message"]


def test_two_level_checker_refuses_bad_settings():
    with pytest.raises(ValueError, match="nodes"):
        ex.check_two_level_all_reduce(ex.solution_two_level_all_reduce, nodes=1)
    with pytest.raises(ValueError, match="gpus_per_node"):
        ex.check_two_level_all_reduce(ex.solution_two_level_all_reduce, gpus_per_node=9)
