"""Hand-written collectives against torch.distributed, and their traced byte counts."""

import pytest
import torch

import parlab
import workers
from parlab import comm, cost

SIZES = [1, 2, 3, 5, 7, 8, 33, 1000, 1001, 4099]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_float_results_match_torch(n):
    for rank_result in parlab.launch(workers.compare_ring_with_torch, n, SIZES):
        for numel, op, expected, ring, naive, rs, rs_expected, ag in rank_result:
            where = f"n={n} numel={numel} op={op}"
            # summation order differs from gloo's: equal up to float rounding
            torch.testing.assert_close(ring, expected, rtol=1e-6, atol=1e-6, msg=where)
            torch.testing.assert_close(naive, expected, rtol=1e-6, atol=1e-6, msg=where)
            torch.testing.assert_close(rs, rs_expected, rtol=1e-6, atol=1e-6, msg=where)
            assert torch.equal(ag, expected), where  # all-gather only copies


@pytest.mark.parametrize("n", [3, 4])
def test_integer_results_are_exact(n):
    results = parlab.launch(workers.compare_ring_with_torch, n, [1, 4, 13, 64],
                            ("sum", "max", "min", "prod"), torch.int64)
    for rank_result in results:
        for numel, op, expected, ring, naive, rs, rs_expected, ag in rank_result:
            assert torch.equal(ring, expected) and torch.equal(naive, expected), (numel, op)
            assert torch.equal(rs, rs_expected) and torch.equal(ag, expected), (numel, op)


def test_subgroup_of_three_out_of_four():
    results = parlab.launch(workers.compare_ring_with_torch, 4, [1, 10, 101], ("sum",),
                            torch.int64, [1, 2, 3])
    assert results[0] is None
    for rank_result in results[1:]:
        for numel, op, expected, ring, naive, rs, rs_expected, ag in rank_result:
            assert torch.equal(ring, expected) and torch.equal(naive, expected)
            assert torch.equal(rs, rs_expected) and torch.equal(ag, expected)


def test_non_contiguous_and_average():
    for x, expected in parlab.launch(workers.ring_2d_noncontiguous, 3):
        assert torch.equal(x, expected)
    for got, expected in parlab.launch(workers.ring_avg, 3, 10):  # gloo has no AVG: ours does
        torch.testing.assert_close(got, expected)


def _expected_ring_bytes(numel, n, r, elem=4):
    """Independent of comm.py: which chunks rank r sends and receives in each phase.
    Reduce-scatter: sends every chunk but its own (r), receives every chunk but r-1's.
    All-gather: sends every chunk but r+1's, receives every chunk but its own."""
    sizes = [e - s for s, e in comm.chunk_bounds(numel, n)]
    total = sum(sizes)
    sent = (total - sizes[r]) + (total - sizes[(r + 1) % n])
    recv = (total - sizes[(r - 1) % n]) + (total - sizes[r])
    return sent * elem, recv * elem


@pytest.mark.parametrize("n, numel", [(2, 1000), (4, 1000), (4, 1001), (5, 3), (8, 4096)])
def test_ring_traced_bytes_are_exact(n, numel):
    for r, (sent, recv, events, measured) in enumerate(
            parlab.launch(workers.traced_bytes, n, numel, "ring")):
        assert (sent, recv) == _expected_ring_bytes(numel, n, r)
        assert measured  # counted, not modelled
        empty = sum(1 for s, e in comm.chunk_bounds(numel, n) if s == e)
        assert events == 2 * (n - 1) or empty  # one exchange per step
        if numel % n == 0:  # and then exactly the textbook 2(n-1)/n S
            assert sent == cost.collective_bytes("all_reduce", 4 * numel, n, "ring")


@pytest.mark.parametrize("n", [2, 4, 8])
def test_naive_traced_bytes_load_the_root(n):
    S = 4 * 256
    for r, (sent, recv, events, _) in enumerate(parlab.launch(workers.traced_bytes, n, 256,
                                                              "naive")):
        assert sent == recv == cost.collective_bytes("all_reduce", S, n, "naive", rank=r)
        assert sent == ((n - 1) * S if r == 0 else S)
        assert events == (2 * (n - 1) if r == 0 else 2)


def test_empty_exchange_is_skipped_and_traced_with_zero_bytes():
    for r, (buf, events) in enumerate(parlab.launch(workers.exchange_empty, 2)):
        assert buf == [float(1 - r)] * 3
        assert [(e["bytes_sent"], e["bytes_recv"]) for e in events] == [(0, 0), (12, 12)]


def test_torch_wrappers_compute_and_model_bytes():
    n = 3
    for r, (vals, events) in enumerate(parlab.launch(workers.torch_wrappers, n)):
        ar, ag, rs, a2a, bc = vals
        assert ar == [6.0] * 4
        assert ag == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
        assert rs == [n * 2.0 * r, n * (2.0 * r + 1)]
        assert a2a == [0.0, 1.0, 2.0]
        assert bc == [2.0] * 3
        by_name = {e["name"]: e for e in events}
        assert by_name["barrier"]["kind"] == "wait"
        for name, S in [("all_reduce", 16), ("all_gather", 24), ("reduce_scatter", 24),
                        ("all_to_all", 12), ("broadcast", 12)]:
            e = by_name[name]
            assert e["bytes_modelled"] and e["kind"] == "comm"
            assert e["bytes_sent"] == int(cost.collective_bytes(name, S, n, "ring"))
            assert e["meta"]["op"] == name
        assert by_name["all_reduce labelled"]["meta"]["op"] == "all_reduce"


def test_chunk_bounds():
    assert comm.chunk_bounds(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert comm.chunk_bounds(2, 4) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    assert comm.chunk_bounds(0, 3) == [(0, 0)] * 3


def test_bad_op():
    with pytest.raises(ValueError, match="op="):
        comm._op_name("median")
    assert comm._op_name(torch.distributed.ReduceOp.MAX) == "max"
