"""cost.expert_parallel: capacity as Switch rounds it, all-to-all bytes, FLOPs, and the
MoE presets' parameter counts recomputed from the published shapes."""
import math

import pytest

from parlab import cost


def test_expert_capacity():
    assert cost.expert_capacity(128, 4, 1.0) == 32
    assert cost.expert_capacity(128, 4, 1.25) == 40       # not 39 (binary 1.25 * 32)
    assert cost.expert_capacity(128, 4, 0.5, top_k=2) == 32
    assert cost.expert_capacity(100, 8, 1.0) == 12        # 12.5 truncated, as Switch's code
    assert cost.expert_capacity(0, 8, 2.0) == 0
    with pytest.raises(ValueError, match="top_k=3"):
        cost.expert_capacity(128, 2, 1.0, top_k=3)


def test_all_to_all_bytes():
    b = cost.moe_all_to_all_bytes(1024, 4096, top_k=2, ep=8, bytes_per_value=2)
    one = 1024 * 2 * 7 / 8 * 4096 * 2
    assert b == {"dispatch": one, "combine": one, "forward": 2 * one, "backward": 2 * one,
                 "total": 4 * one}
    assert cost.moe_all_to_all_bytes(1024, 64, ep=1)["total"] == 0  # nothing leaves


def test_flops_per_token_counts_top_k_experts():
    f1 = cost.moe_flops_per_token(4096, 14336, 8, top_k=1, training=False, gated=True)
    f2 = cost.moe_flops_per_token(4096, 14336, 8, top_k=2, training=False, gated=True)
    assert f2 - f1 == 2 * 3 * 4096 * 14336
    assert cost.moe_flops_per_token(64, 256, 8, 2) == 3 * cost.moe_flops_per_token(
        64, 256, 8, 2, training=False)
    padded = cost.moe_flops_per_token(64, 256, 8, 2, capacity_factor=1.5, training=False)
    assert padded - 2 * 64 * 8 == pytest.approx(1.5 * (f := cost.moe_flops_per_token(
        64, 256, 8, 2, training=False) - 2 * 64 * 8))
    assert f > 0


def test_mixtral_counts_from_its_shapes():
    p = cost.moe_params(32, 4096, 14336, 8, top_k=2, n_heads=32, n_kv_heads=8,
                        vocab_size=32000, gated=True)
    assert round(p["total"] / 1e9, 1) == 46.7 and round(p["active"] / 1e9, 1) == 12.9
    preset = cost.MODEL_PRESETS["mixtral-8x7b"]
    assert (preset.n_params, preset.n_active_params) == (p["total"], p["active"])


def test_switch_base_8_from_t5_base_shapes():
    d, d_ff, V, heads, E = 768, 3072, 32128, 12, 8
    attention = (12 + 2 * 12) * 4 * d * d          # encoder self; decoder self + cross
    ffn = 2 * d * d_ff
    dense, moe = 12 * ffn, 12 * (E * ffn + d * E)  # every other FFN is a Switch layer
    rest = V * d + 62 * d + 2 * 32 * heads          # tied embedding, LayerNorms, rel. bias
    total = attention + dense + moe + rest
    active = attention + dense + 12 * (ffn + d * E) + rest
    preset = cost.MODEL_PRESETS["switch-base-8"]
    assert (preset.n_params, preset.n_active_params) == (total, active)
    assert math.isclose(total / 1e6, 619, abs_tol=0.5)


def test_dense_presets_are_all_active():
    assert all(p.n_active_params == p.n_params for k, p in cost.MODEL_PRESETS.items()
               if k not in ("mixtral-8x7b", "switch-base-8"))
    with pytest.raises(ValueError, match="n_active_params"):
        cost.ModelPreset("x", 10, 1, 8, 1, 8, "", n_active_params=11)
