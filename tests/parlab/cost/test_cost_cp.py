"""parlab.cost for context parallelism: what a layer sends (ring, Ulysses, Megatron SP),
how causal work spreads over the ranks (contiguous vs zigzag), the attention's working
memory per rank. Counted-vs-formula checks on real ranks are in test_context_parallel."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parlab import cost

FAST = settings(max_examples=60, deadline=None, database=None)


@FAST
@given(b=st.integers(1, 8), chunks=st.integers(1, 64), h=st.sampled_from([32, 64, 4096]),
       n=st.integers(1, 16), bpv=st.sampled_from([1, 2, 4]))
def test_ring_sends_3cp_minus_2_messages_of_two_shards(b, chunks, h, n, bpv):
    s = chunks * n
    r = cost.cp_comm_per_layer(b, s, h, n, "ring", bpv)
    S = b * (s // n) * h * bpv  # one K shard
    if n == 1:
        assert r["messages"] == 0 and r["bytes"] == 0
        return
    assert r["forward"] == {"p2p": n - 1} and r["backward"] == {"p2p": 2 * n - 1}
    assert r["message_bytes"] == 2 * S
    assert r["forward_bytes"] == (n - 1) * 2 * S
    assert r["backward_bytes"] == ((n - 1) + n) * 2 * S
    assert r["bytes"] == pytest.approx((3 * n - 2) * 2 * S, rel=1e-12)


@FAST
@given(b=st.integers(1, 8), chunks=st.integers(1, 64), h=st.sampled_from([32, 64, 4096]),
       n=st.integers(2, 16))
def test_ulysses_is_eight_all_to_alls_of_the_local_tensor(b, chunks, h, n):
    s = chunks * n
    r = cost.cp_comm_per_layer(b, s, h, n, "ulysses", 2)
    M = b * s / n * h * 2
    assert r["forward"] == r["backward"] == {"all_to_all": 4}
    assert r["bytes"] == pytest.approx(8 * (n - 1) / n * M, rel=1e-12)
    # Jacobs et al.: the forward is 4Nh/P per link (aggregate 4Nh over P links), here
    # per rank: 4 (P-1)/P of N h/P values
    assert r["forward_bytes"] == pytest.approx(4 * (n - 1) / n * M, rel=1e-12)


def test_megatron_sp_is_tensor_parallel_with_sequence_parallelism():
    for n in (2, 4, 8):
        r = cost.cp_comm_per_layer(1, 2048, 4096, n, "megatron_sp")
        tp = cost.tp_comm_per_layer(1, 2048, 4096, n, True)
        assert r["bytes"] == tp["bytes"] and r["messages"] == tp["collectives"]
        assert r["forward_bytes"] + r["backward_bytes"] == pytest.approx(tp["bytes"])


def test_ulysses_traffic_falls_with_cp_megatron_and_ring_do_not():
    # per rank per layer at GPT-3 width, 32K tokens: Ulysses' all-to-alls shrink as 1/cp,
    # Megatron SP's collectives move whole activations, ring's total stays ~6 shards of K/V
    rows = {n: {m: cost.cp_comm_per_layer(1, 32768, 12288, n, m)["bytes"]
                for m in cost.CP_METHODS} for n in (2, 4, 8, 16)}
    assert rows[16]["ulysses"] < rows[8]["ulysses"] < rows[4]["ulysses"] < rows[2]["ulysses"]
    assert rows[16]["megatron_sp"] > rows[2]["megatron_sp"]
    for n in (4, 8, 16):
        assert rows[n]["megatron_sp"] / rows[n]["ulysses"] > n / 2


def test_grouped_query_attention_shrinks_the_kv_traffic():
    full = cost.cp_comm_per_layer(1, 4096, 4096, 4, "ring", n_heads=32)
    gqa = cost.cp_comm_per_layer(1, 4096, 4096, 4, "ring", n_heads=32, n_kv_heads=8)
    assert gqa["bytes"] == pytest.approx(full["bytes"] / 4)
    uly = cost.cp_comm_per_layer(1, 4096, 4096, 4, "ulysses", n_heads=32, n_kv_heads=8)
    plain = cost.cp_comm_per_layer(1, 4096, 4096, 4, "ulysses")
    assert uly["bytes"] == pytest.approx(plain["bytes"] * (2 + 2 / 4) / 4)  # q, out full
    with pytest.raises(ValueError, match="n_kv_heads=5 must divide n_heads=32"):
        cost.cp_comm_per_layer(1, 4096, 4096, 4, n_heads=32, n_kv_heads=5)
    with pytest.raises(ValueError, match="cp=3 must divide n_heads=32"):
        cost.cp_comm_per_layer(1, 4095, 4096, 3, "ulysses", n_heads=32)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8, 16])
def test_causal_work(n):
    c, z = cost.causal_work_per_rank(n, "contiguous"), cost.causal_work_per_rank(n, "zigzag")
    assert c["blocks"] == [r + 1 for r in range(n)]
    assert z["blocks"] == [(n + 1) / 2] * n and z["imbalance"] == 1
    assert c["total"] == z["total"] == n * (n + 1) / 2
    assert c["imbalance"] == pytest.approx(2 * n / (n + 1))
    assert sum(c["share"]) == pytest.approx(1) and sum(z["share"]) == pytest.approx(1)
    assert c["causal_fraction"] == pytest.approx((n + 1) / (2 * n))


def test_causal_imbalance_at_cp4():
    assert cost.causal_work_per_rank(4, "contiguous")["imbalance"] == 1.6
    assert cost.causal_work_per_rank(4, "contiguous")["share"] == [0.1, 0.2, 0.3, 0.4]


def test_attention_memory():
    args = dict(seq_len=8192, micro_batch=1, n_heads=32, head_dim=128, bytes_per_value=2)
    ring = {n: cost.attention_memory_per_rank(**args, cp=n) for n in (1, 2, 4, 8)}
    uly = {n: cost.attention_memory_per_rank(**args, cp=n, method="ulysses")
           for n in (1, 2, 4, 8)}
    assert ring[1] == uly[1] + 2 * 8192 * 32 * 128 * 2  # one rank: + the receive buffers
    c = 8192 // 4
    assert ring[4] == (32 * c * c + 6 * c * 32 * 128) * 2  # Liu et al.'s 6bch + one score block
    # scores: 1/cp^2 for ring, 1/cp for Ulysses
    flash = {n: cost.attention_memory_per_rank(**args, cp=n, flash=True) for n in (2, 4)}
    assert (ring[2] - flash[2]) / (ring[4] - flash[4]) == 4
    uflash = {n: cost.attention_memory_per_rank(**args, cp=n, method="ulysses", flash=True)
              for n in (2, 4)}
    assert (uly[2] - uflash[2]) / (uly[4] - uflash[4]) == 2
    with pytest.raises(ValueError, match="cp=3 must divide seq_len"):
        cost.attention_memory_per_rank(**args, cp=3)
    with pytest.raises(ValueError, match="cp=64 must divide n_heads=32"):
        cost.attention_memory_per_rank(**args, cp=64, method="ulysses")
