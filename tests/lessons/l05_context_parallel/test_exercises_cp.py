"""Notebook 05's "Your turn" (``lessons.l05_context_parallel.exercises``): every checker passes
the reference solution, fails a planted wrong one with a message naming where (rank,
head, position, slot), and says "not answered" for the notebook's placeholder."""

import torch
import torch.distributed as dist  # noqa: F401  (the learner functions below run on the ranks)

from parlab import cost
from lessons.l05_context_parallel import exercises as ex


def test_numeric_checkers():
    assert ex.check_zigzag_positions([2, 3, 12, 13])["ok"]
    bad = ex.check_zigzag_positions([4, 5, 6, 7])  # contiguous's answer
    assert not bad["ok"] and "chunk" in bad["message"]
    assert ex.check_zigzag_positions(None).get("missing")
    want = cost.cp_comm_per_layer(1, 131072, 4096, 8, "ring", 2)["bytes"]
    assert want == (3 * 8 - 2) * 2 * 131072 // 8 * 4096 * 2
    assert ex.check_ring_bytes(want)["ok"]
    assert "factor" in ex.check_ring_bytes(want * 8 / 22)["message"]
    assert ex.check_ring_bytes(None).get("missing")
    assert ex.check_imbalance(1.6)["ok"] and not ex.check_imbalance(2.0)["ok"]
    assert ex.check_imbalance(4 / 3, cp=2)["ok"] and ex.check_imbalance(None).get("missing")
    assert ex.check_ulysses_cap("A")["ok"] and ex.check_ulysses_cap("a")["ok"]
    assert not any(ex.check_ulysses_cap(x)["ok"] for x in ("B", "C", "Z", None))


def placeholder(x, rank, world_size):
    raise NotImplementedError  # your code


def contiguous_shard(x, rank, world_size):
    return x.chunk(world_size)[rank]


def test_zigzag_shard_on_ranks():
    v = ex.check_zigzag_shard(ex.solution_zigzag_shard)
    assert v["ok"] and v["work"] == [34] * 4, v
    v = ex.check_zigzag_shard(contiguous_shard)
    assert not v["ok"] and "rank 0, local slot 2" in v["message"] and "expected 14" in v["message"]
    assert ex.check_zigzag_shard(placeholder).get("missing")


def ring_placeholder(q, k, v, rank, world_size):
    raise NotImplementedError  # your code


def ring_no_rescale(q, k, v, rank, world_size):
    """Planted: the old accumulator is not rescaled when the running max grows."""
    scale = q.shape[-1] ** -0.5
    m = torch.full(q.shape[:-1] + (1,), float("-inf"))
    l = torch.zeros(q.shape[:-1] + (1,))
    acc = torch.zeros_like(q)
    kv = torch.stack([k, v]).contiguous()
    for step in range(world_size):
        if step < world_size - 1:
            incoming = torch.empty_like(kv)
            reqs = [dist.isend(kv, (rank + 1) % world_size), dist.irecv(incoming, (rank - 1) % world_size)]
        s = q @ kv[0].transpose(-1, -2) * scale
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        l = l * torch.exp(m - m_new) + p.sum(-1, keepdim=True)
        acc = acc + p @ kv[1]
        m = m_new
        if step < world_size - 1:
            for r in reqs:
                r.wait()
            kv = incoming
    return acc / l


def ring_not_passed(q, k, v, rank, world_size):
    """Planted: the K/V block never leaves the rank."""
    s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    return torch.softmax(s, -1) @ v


def ring_hangs(q, k, v, rank, world_size):
    """Planted: every rank receives first, nobody sends."""
    buf = torch.empty_like(k)
    dist.recv(buf, (rank - 1) % world_size)
    return q


def test_ring_attention_on_ranks():
    assert ex.check_ring_attention(ex.solution_ring_attention)["ok"]
    v = ex.check_ring_attention(ring_no_rescale)
    assert not v["ok"] and "rank 0, head 0, position" in v["message"] and "off by" in v["message"]
    v = ex.check_ring_attention(ring_not_passed)
    assert not v["ok"] and "passed on" in v["message"] and "rank 0" in v["message"]
    assert ex.check_ring_attention(ring_placeholder).get("missing")
    v = ex.check_ring_attention(ring_hangs, timeout=4)
    assert not v["ok"] and "did not finish" in v["message"]


def test_show_solution(capsys):
    ex.show_solution("my_ring_attention")
    out = capsys.readouterr().out
    assert out.startswith("def my_ring_attention(q, k, v, rank, world_size):") and "isend" in out
    ex.show_solution("nope")
    assert "no solution" in capsys.readouterr().out


def test_placeholder_answered_without_ranks():
    import time
    t0 = time.perf_counter()
    assert ex.check_ring_attention(ring_placeholder).get("missing")
    assert time.perf_counter() - t0 < 1.0  # no launch for an unwritten function
    assert "&lt;" not in ex.solution_html("my_zigzag_shard") and "<pre>" in ex.solution_html("my_ring_attention")
