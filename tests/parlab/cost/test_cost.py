"""Cost formulas on hand-computed cases."""

import math
import re

import pytest

from parlab import cost

A, B = 1e-5, 1e9  # 10 us latency, 1 GB/s


def test_ring_all_reduce_by_hand():
    # n=4, S=1000: 2*3 = 6 steps, each rank sends 2*3/4*1000 = 1500 bytes
    assert cost.collective_steps("all_reduce", 4) == 6
    assert cost.collective_bytes("all_reduce", 1000, 4) == 1500
    assert cost.collective_time("all_reduce", 1000, 4, A, B) == pytest.approx(6e-5 + 1.5e-6)


def test_ring_bytes_tend_to_2S_while_steps_grow():
    S = 1e6
    per_rank = [cost.collective_bytes("all_reduce", S, n) for n in (2, 4, 8, 64, 1024)]
    assert per_rank == [1e6, 1.5e6, 1.75e6, 2 * 63 / 64 * 1e6, 2 * 1023 / 1024 * 1e6]
    assert all(b < 2 * S for b in per_rank)
    assert [cost.collective_steps("all_reduce", n) for n in (2, 4, 8)] == [2, 6, 14]


def test_naive_root_carries_n_minus_1_copies():
    assert cost.collective_bytes("all_reduce", 1000, 4, "naive", rank=0) == 3000
    assert cost.collective_bytes("all_reduce", 1000, 4, "naive", rank=2) == 1000
    # root receives 3000 then sends 3000, one peer at a time: 6 steps
    assert cost.collective_time("all_reduce", 1000, 4, A, B, "naive") == \
        pytest.approx(6 * A + 6000 / B)


def test_tree_all_reduce():
    assert cost.collective_steps("all_reduce", 8, "tree") == 6  # 2 log2 8
    assert cost.collective_steps("all_reduce", 5, "tree") == 6  # ceil(log2 5) = 3
    assert cost.collective_bytes("all_reduce", 1000, 8, "tree") == 2000
    assert cost.collective_time("all_reduce", 1000, 8, A, B, "tree") == \
        pytest.approx(6 * A + 2000 / B)


def test_two_ranks_tree_is_the_ring():
    assert cost.collective_time("all_reduce", 1e6, 2, A, B, "tree") == \
        cost.collective_time("all_reduce", 1e6, 2, A, B, "ring")


def test_gamma_term():
    g = 1e-10  # 10 GB/s of additions
    assert cost.reduced_bytes("all_reduce", 1000, 4) == 750
    assert cost.reduced_bytes("all_reduce", 1000, 4, "naive") == 3000
    assert cost.reduced_bytes("all_gather", 1000, 4) == 0
    assert cost.collective_time("all_reduce", 1000, 4, A, B, gamma=g) == \
        pytest.approx(6e-5 + 1.5e-6 + 750 * g)
    assert cost.collective_time("all_reduce", 1000, 4, A, B, "naive", gamma=g) == \
        pytest.approx(6 * A + 6000 / B + 3000 * g)


def test_gather_scatter_all_to_all_p2p():
    assert cost.collective_steps("all_gather", 4) == 3
    assert cost.collective_bytes("all_gather", 1000, 4) == 750
    assert cost.collective_bytes("reduce_scatter", 1000, 4) == 750
    assert cost.collective_bytes("all_to_all", 1000, 4) == 750
    assert cost.collective_bytes("all_gather", 1000, 4, "naive", rank=0) == 3000
    assert cost.collective_bytes("all_gather", 1000, 4, "naive", rank=1) == 250
    assert cost.collective_bytes("reduce_scatter", 1000, 4, "naive", rank=0) == 750
    assert cost.p2p_time(1e6, A, B) == pytest.approx(A + 1e-3)
    assert cost.collective_time("broadcast", 1000, 8, A, B, "tree") == pytest.approx(3 * A + 1e-6)


def test_one_rank_costs_nothing():
    for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"):
        assert cost.collective_steps(op, 1) == 0
        assert cost.collective_bytes(op, 1000, 1) == 0
        assert cost.collective_time(op, 1000, 1, A, B) == 0


def test_bus_bandwidth_factors_as_nccl_tests():
    assert cost.bus_bandwidth_factor("all_reduce", 8) == 1.75
    assert cost.bus_bandwidth_factor("all_gather", 8) == 0.875
    assert cost.bus_bandwidth_factor("reduce_scatter", 8) == 0.875
    assert cost.bus_bandwidth_factor("all_to_all", 8) == 0.875
    assert cost.bus_bandwidth_factor("broadcast", 8) == 1
    assert cost.bus_bandwidth("all_reduce", 1e9, 8, 1.0) == 1.75e9
    # a ring all-reduce at link speed has busbw == link bandwidth for large S
    S, n = 1e9, 8
    t = cost.collective_time("all_reduce", S, n, 0.0, B)
    assert cost.bus_bandwidth("all_reduce", S, n, t) == pytest.approx(B)


def test_ring_tree_crossover_is_where_times_meet():
    n, a, b = 8, 1e-5, 1e10
    s = cost.ring_tree_crossover(n, a, b)
    assert s == pytest.approx(8 * (8 - 1 - 3) * a * b) and s == pytest.approx(3.2e6)
    ring = cost.collective_time("all_reduce", s, n, a, b, "ring")
    tree = cost.collective_time("all_reduce", s, n, a, b, "tree")
    assert ring == pytest.approx(tree)
    assert cost.collective_time("all_reduce", s / 10, n, a, b, "tree") < \
        cost.collective_time("all_reduce", s / 10, n, a, b, "ring")
    assert cost.collective_time("all_reduce", s * 10, n, a, b, "ring") < \
        cost.collective_time("all_reduce", s * 10, n, a, b, "tree")
    assert cost.ring_tree_crossover(2, a, b) == 0  # same steps: the ring always wins


def test_fit_alpha_beta_recovers_parameters():
    sizes = [2 ** k for k in range(2, 25)]
    fit = cost.fit_alpha_beta(sizes, [3e-5 + s / 2e9 for s in sizes])
    assert fit.alpha == pytest.approx(3e-5)
    assert fit.bandwidth == pytest.approx(2e9)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.predict(1e6) == pytest.approx(3e-5 + 5e-4)
    # multiplicative noise: still close, because the fit weighs relative error
    noisy = [(3e-5 + s / 2e9) * (1.1 if i % 2 else 0.9) for i, s in enumerate(sizes)]
    fit = cost.fit_alpha_beta(sizes, noisy)
    assert 2e-5 < fit.alpha < 4e-5 and 1.5e9 < fit.bandwidth < 2.5e9


def test_flops_and_mfu():
    assert cost.transformer_params(12, 768) == 12 * 12 * 768 ** 2 == 84_934_656  # GPT-2 small
    n, L, T, d = 1_000_000_000, 24, 2048, 2048
    assert cost.flops_per_token(n, L, T, d) == 6 * n + 12 * L * T * d
    assert cost.flops_per_token(n, L, T, d, training=False) == pytest.approx(
        (6 * n + 12 * L * T * d) / 3)
    # Kaplan et al. count one of the two score matmuls; causal halves either count's term
    assert cost.flops_per_token(n, L, T, d, count="kaplan") == 6 * n + 6 * L * T * d
    assert cost.flops_per_token(n, L, T, d, causal=True) == 6 * n + 6 * L * T * d
    assert cost.flops_per_token(n, L, T, d, count="kaplan", causal=True) == 6 * n + 3 * L * T * d
    # hardware FLOPs: full recomputation is a fourth forward (8 N + 16 L T d), selective
    # repeats the attention's forward
    assert cost.flops_per_token(n, L, T, d, recompute="full") == 8 * n + 16 * L * T * d
    assert cost.flops_per_token(n, L, T, d, recompute="selective") == 6 * n + 16 * L * T * d
    assert cost.mfu(1e4, 6e9, 312e12) == pytest.approx(6e13 / 312e12)


@pytest.mark.parametrize("call, match", [
    (lambda: cost.collective_bytes("allreduce", 1, 2), "op="),
    (lambda: cost.collective_bytes("all_to_all", 1, 2, "tree"), "not modelled"),
    (lambda: cost.collective_steps("all_reduce", 0), "n="),
    (lambda: cost.collective_steps("all_reduce", 2.0), "n="),
    (lambda: cost.collective_bytes("p2p", 1, 3), "p2p"),
    (lambda: cost.collective_bytes("all_reduce", -1, 2), "nbytes"),
    (lambda: cost.collective_time("all_reduce", 1, 2, 1e-5, 0), "bandwidth"),
    (lambda: cost.fit_alpha_beta([1, 1], [1, 2]), "distinct"),
    (lambda: cost.fit_alpha_beta([1, 2], [1, 0]), "times"),
    (lambda: cost.mfu(1, 1, 0), "peak"),
    (lambda: cost.bus_bandwidth("all_reduce", 1, 2, 0), "seconds"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_log2_helper_is_ceil():
    assert [cost.collectives._log2(n) for n in (1, 2, 3, 4, 5, 8, 9)] == [0, 1, 2, 2, 3, 3, 4]
    assert math.isclose(cost.collective_time("all_reduce", 0, 3, A, B, "tree"), 4 * A)


# --- pipeline bubble, ZeRO memory / traffic, activation memory ---------------------------

def test_bubble_fraction_and_ratio():
    assert cost.bubble_fraction(1, 8) == 0.0
    assert cost.bubble_fraction(4, 8) == pytest.approx(3 / 11)      # 27.3 %
    assert cost.bubble_ratio(4, 8) == pytest.approx(3 / 8)          # 37.5 %: same bubble, other unit
    assert cost.bubble_fraction(4, 8, v=2) == pytest.approx(3 / 19)
    f = cost.bubble_fraction(4, 2)
    assert cost.bubble_ratio(4, 2) == pytest.approx(f / (1 - f))
    for bad in [(0, 4), (4, 0), (4, 4, 0), (2.5, 4), (True, 4)]:
        with pytest.raises(ValueError):
            cost.bubble_fraction(*bad)


def test_pipeline_peak_activations():
    assert cost.pipeline_peak_activations("gpipe", 4, 8) == 8
    assert [cost.pipeline_peak_activations("1f1b", 4, 8, s) for s in range(4)] == [4, 3, 2, 1]
    assert cost.pipeline_peak_activations("1f1b", 4, 2, 0) == 2
    with pytest.raises(ValueError):
        cost.pipeline_peak_activations("interleaved", 4, 8)
    with pytest.raises(ValueError):
        cost.pipeline_peak_activations("1f1b", 4, 8, stage=4)


def test_zero_memory_matches_paper_figure_1():
    # ZeRO paper Fig. 1: Psi = 7.5B, N_d = 64, K = 12 -> 120 / 31.4 / 16.6 / 1.88 GB
    expect = {0: 120e9, 1: 31.4e9, 2: 16.6e9, 3: 1.88e9}
    for stage, total in expect.items():
        m = cost.zero_memory(7.5e9, 64, stage)
        assert m["total"] == pytest.approx(total, rel=0.01)
        assert m["total"] == m["params"] + m["grads"] + m["optimizer"]
    assert cost.zero_memory(10, 1, 3) == cost.zero_memory(10, 1, 0)   # dp=1: nothing to shard
    for bad in [dict(stage=4), dict(stage=-1), dict(dp=0), dict(param_bytes=-1)]:
        kw = dict(n_params=10, dp=2, stage=1) | bad
        with pytest.raises(ValueError):
            cost.zero_memory(**kw)


def test_zero_comm_volume():
    psi = 1e9 * 2
    assert cost.zero_comm_volume(1e9, 2, 0) == pytest.approx(psi)          # 2 Psi (n-1)/n
    assert cost.zero_comm_volume(1e9, 2, 1) == cost.zero_comm_volume(1e9, 2, 2) == pytest.approx(psi)
    assert cost.zero_comm_volume(1e9, 2, 3) == pytest.approx(1.5 * psi)
    assert cost.zero_comm_volume(1e9, 1, 3) == 0
    with pytest.raises(ValueError):
        cost.zero_comm_volume(1e9, 2, 5)


def test_activation_memory_korthikanti():
    s, b, h, a, L = 2048, 1, 4096, 32, 1
    sbh = s * b * h
    assert cost.activation_memory(s, b, h, a, L) == sbh * (34 + 5 * a * s / h)
    assert cost.activation_memory(s, b, h, a, L, "selective") == sbh * 34
    assert cost.activation_memory(s, b, h, a, L, "full") == 2 * sbh
    assert cost.activation_memory(s, b, h, a, L, tp=8) == sbh * (10 + 24 / 8 + 5 * a * s / (h * 8))
    assert cost.activation_memory(s, b, h, a, L, tp=8, sequence_parallel=True) == \
        pytest.approx(sbh * (34 + 5 * a * s / h) / 8)
    # fp32 doubles the 16-bit values (32 sbh + 4 as^2 b) but not the 1-byte dropout masks
    # (2 sbh + as^2 b): a mask is a byte whatever the precision (this used to double them too)
    assert cost.activation_memory(s, b, h, a, 3, bytes_per_value=4) == \
        3 * (2 * (32 * sbh + 4 * a * s * s * b) + 2 * sbh + a * s * s * b)
    with pytest.raises(ValueError):
        cost.activation_memory(s, b, h, a, L, recompute="some")


def test_model_presets_counts_follow_from_the_shapes():
    def llama(L, d, d_ff, kv_heads, heads, V=32000):
        d_kv = d // heads * kv_heads  # grouped-query attention: fewer K and V heads
        return L * (2 * d * d + 2 * d * d_kv + 3 * d * d_ff + 2 * d) + 2 * V * d + d
    P = cost.MODEL_PRESETS
    assert P["7B"].n_params == llama(32, 4096, 11008, 32, 32)
    assert P["13B"].n_params == llama(40, 5120, 13824, 40, 40)
    assert P["70B"].n_params == llama(80, 8192, 28672, 8, 64)
    assert P["1.3B"].n_params == cost.transformer_params(24, 2048) + 50257 * 2048 + 2048 * 2048
    # (n_layers, d_model, n_heads, seq_len) as the papers' tables print them
    shapes = {"1.3B": (24, 2048, 24, 2048),  # GPT-3 Table 2.1: 24 heads (of d_head 128, so
              # 24 x 128 = 3072 != d_model: the table's own inconsistency, see cost.memory)
              "7B": (32, 4096, 32, 2048), "13B": (40, 5120, 40, 2048), "70B": (80, 8192, 64, 4096),
              # MoE presets (their counts: tests/parlab/cost/test_cost_ep.py)
              "mixtral-8x7b": (32, 4096, 32, 32768), "switch-base-8": (24, 768, 12, 512)}
    assert set(P) == set(shapes)
    for name, p in P.items():
        assert (p.n_layers, p.d_model, p.n_heads, p.seq_len) == shapes[name] and p.source
    for name in ("7B", "13B", "70B"):  # LLaMA / Llama 2: heads of d_model / n_heads = 128
        assert P[name].d_model % P[name].n_heads == 0 and P[name].d_model // P[name].n_heads == 128


def test_memory_plan_7b_on_four_a100():
    # The seed's "7B fits easily on one 80 GB card, just use DDP": with mixed-precision
    # Adam the model states alone are 16 bytes x 6.74e9 = 108 GB per GPU.
    dp = cost.memory_plan("7B", 4, 80, stage=0)
    assert dp["params"] + dp["grads"] + dp["optimizer"] == 16 * 6_738_415_616
    assert not dp["fits"] and "does NOT fit" in dp["verdict"]
    z3 = cost.memory_plan("7B", 4, 80, stage=3, recompute="full")
    assert z3["fits"] and "fits" in z3["verdict"]
    assert z3["params"] == pytest.approx(2 * 6_738_415_616 / 4)
    assert z3["total"] == z3["params"] + z3["grads"] + z3["optimizer"] + z3["activations"]
    assert z3["activations"] == cost.activation_memory(2048, 1, 4096, 32, 32, "full")
    # stages only ever lower the total; recomputation only lowers activations
    totals = [cost.memory_plan("7B", 4, 80, s)["total"] for s in range(4)]
    assert totals == sorted(totals, reverse=True)
    acts = [cost.memory_plan("7B", 4, 80, 1, r)["activations"] for r in ("none", "selective", "full")]
    assert acts == sorted(acts, reverse=True)
    with pytest.raises(ValueError):
        cost.memory_plan("8B")
    with pytest.raises(ValueError):
        cost.memory_plan("7B", gpu_memory_gb=0)
    with pytest.raises(ValueError):
        cost.memory_plan("7B", stage=4)


def test_max_micro_batch():
    for stage, rc in [(1, "none"), (2, "selective"), (3, "full")]:
        b = cost.max_micro_batch("7B", 4, 80, stage, rc)
        assert b >= 1
        assert cost.memory_plan("7B", 4, 80, stage, rc, b)["fits"]
        assert not cost.memory_plan("7B", 4, 80, stage, rc, b + 1)["fits"]
    assert cost.max_micro_batch("7B", 4, 80, 0, "full") == 0  # model states alone overflow


def test_dp_step_time_and_speedup():
    # no overlap: everything in sequence; overlap: comm hides behind backward up to t_b
    assert cost.dp_step_time(1.0, 2.0, 0.5, overlap=False) == 3.5
    assert cost.dp_step_time(1.0, 2.0, 0.5) == 3.0
    assert cost.dp_step_time(1.0, 2.0, 5.0) == 6.0  # comm longer than backward: it shows
    assert cost.dp_speedup(4, 1.0, 2.0, 0.5) == 4.0
    assert cost.dp_speedup(4, 1.0, 2.0, 0.5, overlap=False) == pytest.approx(4 * 3 / 3.5)
    assert cost.dp_speedup(1, 1.0, 2.0, 0.0) == 1.0
    with pytest.raises(ValueError):
        cost.dp_step_time(1.0, -1.0, 0.0)
    with pytest.raises(ValueError):
        cost.dp_speedup(0, 1.0, 1.0, 0.0)


# --- the package keeps every name of the old flat module -------------------------------

OLD_NAMES = ["ALGORITHMS", "AlphaBetaFit", "COLLECTIVES", "MODEL_PRESETS", "ModelPreset",
             "PIPELINE_SCHEDULES", "ZERO_STAGES", "activation_memory", "bubble_fraction",
             "bubble_ratio", "bus_bandwidth", "bus_bandwidth_factor",
             "collective_bytes", "collective_steps", "collective_time", "dp_speedup",
             "dp_step_time", "fit_alpha_beta", "flops_per_token", "max_micro_batch",
             "memory_plan", "mfu", "p2p_time", "pipeline_peak_activations", "reduced_bytes",
             "ring_tree_crossover", "transformer_params", "zero_comm_volume", "zero_memory"]


def test_every_old_name_is_still_offered():
    for name in OLD_NAMES:
        assert name in cost.__all__ and getattr(cost, name) is not None
    assert not hasattr(cost, "check_int")  # validation lives in parlab.validate, once
    assert cost.PIPELINE_SCHEDULES == ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v",
                                       "dualpipe", "dualpipev")
    assert cost.ZERO_STAGES == (0, 1, 2, 3)


def test_cost_imports_only_the_standard_library():
    import ast
    import pathlib
    import sys
    for path in pathlib.Path(cost.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = [node.module.split(".")[0]]
            elif isinstance(node, ast.ImportFrom):  # relative: siblings, or ..validate only
                assert node.level == 1 or node.module == "validate", (path.name, node.module)
                continue
            else:
                continue
            for root in roots:
                assert root == "__future__" or root in sys.stdlib_module_names, (path.name, root)


def test_numpy_integers_count_as_integers():
    np = pytest.importorskip("numpy")
    assert cost.bubble_fraction(np.int64(4), np.int32(8)) == cost.bubble_fraction(4, 8)
    assert cost.collective_bytes("all_reduce", np.float32(1000), np.int64(4)) == 1500
    assert cost.zero_memory(np.int64(10), np.int64(2), np.int64(3)) == cost.zero_memory(10, 2, 3)


# --- bad input found by fault testing: each one a ValueError naming the argument ----------

@pytest.mark.parametrize("call, name", [
    (lambda: cost.dp_speedup(4, 1.0, 2.0, comm_s=math.nan), "comm_s"),
    (lambda: cost.dp_step_time(1.0, math.nan, 0.5), "backward_s"),
    (lambda: cost.dp_step_time(1.0, 2.0, math.inf), "comm_s"),
    (lambda: cost.fit_alpha_beta([1, 2, 3], [1e-5, math.nan, 3e-5]), "times[1]"),
    (lambda: cost.fit_alpha_beta([1, math.nan, 3], [1e-5, 2e-5, 3e-5]), "sizes[1]"),
    (lambda: cost.transformer_params(-1, 768), "n_layers"),
    (lambda: cost.transformer_params(12, 768.5), "d_model"),
    (lambda: cost.flops_per_token(-1, 24, 2048, 2048), "model"),
    (lambda: cost.flops_per_token(1e9, 24, 2048.5, 2048), "seq_len"),
    (lambda: cost.flops_per_token(1e9, 24, 2048), "d_model"),
    (lambda: cost.flops_per_token(1e9, 24, 2048, 2048, count="chinchilla"), "count"),
    (lambda: cost.flops_per_token(1e9, 24, 2048, 2048, vocab_size=51200), "vocab_size"),
    (lambda: cost.flops_per_token(cost.LayerShape(2048, 16), 24, 2048), "model"),
    (lambda: cost.flops_per_token(1e9, 24, 2048, 2048, count="megatron"), "model"),
    (lambda: cost.flops_per_token(cost.LayerShape(2048, 16), 24, 2048, count="megatron"),
     "vocab_size"),
    (lambda: cost.flops_per_token(cost.LayerShape(2048, 16), 24, 2048, 4096, vocab_size=5,
                                  count="megatron"), "d_model"),
    (lambda: cost.flops_per_token(1e9, 24, 2048, 2048, recompute="full", training=False),
     "recompute"),
    (lambda: cost.mfu(-1e4, 6e9, 312e12), "tokens_per_second"),
    (lambda: cost.mfu(1e4, math.nan, 312e12), "flops_per_token_"),
    (lambda: cost.zero_comm_volume(-1e9, 2, 0), "n_params"),
    (lambda: cost.zero_comm_volume(2.5, 2, 0), "n_params"),
    (lambda: cost.zero_comm_volume(1e9, 2, 0, grad_bytes=-2), "grad_bytes"),
    (lambda: cost.pipeline_peak_activations("1f1b", 4, 8, stage=2.5), "stage"),
    (lambda: cost.pipeline_peak_activations("1f1b", 4, 8, stage=-1), "stage"),
    (lambda: cost.ring_tree_crossover(-8, 1e-5, 1e10), "n"),
    (lambda: cost.ring_tree_crossover(8.5, 1e-5, 1e10), "n"),
    (lambda: cost.ring_tree_crossover(8, -1e-5, 1e10), "alpha"),
    (lambda: cost.collective_time("all_reduce", math.nan, 4, A, B), "nbytes"),
    (lambda: cost.collective_time("all_reduce", 1, 4, math.inf, B), "alpha"),
    (lambda: cost.collective_time("all_reduce", 1, 4, A, math.inf), "bandwidth"),
    (lambda: cost.collective_bytes("all_reduce", 1, 4, "naive", rank=4), "rank"),
    (lambda: cost.bus_bandwidth("all_reduce", math.nan, 4, 1.0), "nbytes"),
    (lambda: cost.activation_memory(2048, 1, 4096, 32, 32, tp=3), "tp"),
    (lambda: cost.activation_memory(2048, 1, 4096, 32, 32, sequence_parallel=1), "sequence_parallel"),
    (lambda: cost.activation_memory(2048, 1, 4096, None, 32), "n_heads"),
    (lambda: cost.activation_memory(2048, 1, 4096, 32, layer="gpt"), "layer"),
    (lambda: cost.activation_memory(2048, 1, 4096, 16, layer=cost.LayerShape(4096, 32)),
     "n_heads"),
    (lambda: cost.activation_memory(2048, 1, 4096, 32, layer="lab", attention="fused"),
     "attention"),
    (lambda: cost.memory_plan("7B", n_gpus=0), "n_gpus"),
    (lambda: cost.memory_plan("7B", micro_batch=1.5), "micro_batch"),
    (lambda: cost.max_micro_batch("7B", gpu_memory_gb=math.nan), "gpu_memory_gb"),
    (lambda: cost.zero_memory(7.5e9, 64, 1.0), "stage"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=re.escape(name) + "="):
        call()


# --- the fewest micro-batches for a bubble target ---------------------------------------

def _brute_force_min_m(p, target, v, bubble):
    return next(m for m in range(1, 10 ** 6) if bubble(p, m, v) <= target)


def test_min_micro_batches_by_hand():
    # P=4: idle/total (3)/(M+3) <= 1/2 at M=3, <= 20% at M=12 (3/15 = 0.2 exactly), GPipe's
    # M = 4P gives 3/19 = 15.8%; idle/ideal 3/M <= 15% at M=20.
    assert cost.min_micro_batches(4, 0.5) == 3
    assert cost.min_micro_batches(4, 0.2) == 12  # the float bound is 12.000000000000002
    assert cost.min_micro_batches(4, 0.15) == 17
    assert cost.min_micro_batches(4, 0.15, normalisation="ratio") == 20
    assert cost.min_micro_batches(4, 0.2, v=2) == 6
    assert cost.min_micro_batches(1, 0.01) == 1  # one stage: no bubble at all
    assert cost.min_micro_batches(8, 2.0, normalisation="ratio") == 4  # ratio may exceed 1


def test_min_micro_batches_matches_brute_force():
    targets = [0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 1 / 3, 0.5, 0.75, 0.9, 0.99]
    for p in (1, 2, 3, 4, 5, 8, 16, 33):
        for v in (1, 2, 3, 4):
            for t in targets:
                assert cost.min_micro_batches(p, t, v) == \
                    _brute_force_min_m(p, t, v, cost.bubble_fraction), (p, v, t)
                assert cost.min_micro_batches(p, t, v, "ratio") == \
                    _brute_force_min_m(p, t, v, cost.bubble_ratio), (p, v, t)


@pytest.mark.parametrize("kw, name", [
    (dict(target=0.0), "target"), (dict(target=1.0), "target"), (dict(target=1.5), "target"),
    (dict(target=math.nan), "target"), (dict(target=-0.1), "target"),
    (dict(target=0.0, normalisation="ratio"), "target"),
    (dict(target=math.inf, normalisation="ratio"), "target"),
    (dict(p=0), "p"), (dict(p=4.0), "p"), (dict(v=0), "v"), (dict(v=True), "v"),
    (dict(normalisation="percent"), "normalisation"),
    (dict(target=1e-300), "target"),  # M beyond 2**53
])
def test_min_micro_batches_bad_input(kw, name):
    with pytest.raises(ValueError, match=re.escape(name) + "="):
        cost.min_micro_batches(**(dict(p=4, target=0.2) | kw))


def test_fit_alpha_beta_keeps_its_parameters_physical():
    # time = -1 us + 1 ns/B would fit exactly, but a latency cannot be negative
    sizes = [1e3, 1e4, 1e5, 1e6]
    fit = cost.fit_alpha_beta(sizes, [1e-9 * s - 1e-6 for s in sizes])
    assert fit.alpha == 0.0 and fit.beta > 0 and math.isfinite(fit.bandwidth)
    with pytest.raises(ValueError, match="do not grow"):
        cost.fit_alpha_beta(sizes, [4e-6, 3e-6, 2e-6, 1e-6])


def test_llama_activations_count_its_own_layer():
    """LLaMA has no dropout and a SwiGLU MLP of width d_ff: memory_plan counts that layer
    (activation_memory with its LayerShape), not GPT's 34 + 5as/h."""
    for name in ("7B", "13B", "70B"):
        m = cost.MODEL_PRESETS[name]
        shape = cost.LayerShape(m.d_model, m.n_heads, n_kv_heads=m.n_kv_heads, d_ff=m.d_ff,
                                mlp="swiglu", dropout=False, biases=False)
        for recompute in ("none", "selective", "full"):
            plan = cost.memory_plan(name, 8, 80, 1, recompute)
            assert plan["activations"] == cost.activation_memory(
                m.seq_len, 1, n_layers=m.n_layers, recompute=recompute, layer=shape)
        # Korthikanti's inventory in the paper's form, with LLaMA's widths: 8 outside TP,
        # Q, projection 4 and K, V 4 g/a, SwiGLU 6 f/h inside, scores 2 a s/h (no dropout)
        s, h, a, g, f = m.seq_len, m.d_model, m.n_heads, m.n_kv_heads or m.n_heads, m.d_ff
        assert cost.memory_plan(name, 8, 80, 1)["activations"] == pytest.approx(
            m.n_layers * s * h * (8 + 4 + 4 * g / a + 6 * f / h + 2 * a * s / h), rel=1e-12)
    seven = cost.memory_plan("7B", 4, 80, 1)["activations"]
    assert seven == pytest.approx(17.21e9, rel=1e-3)  # sbh (32.125 + 2as/h) x 32 layers
    # the GPT count (dropout, GeLU 4h) would give 30.6 GB: the old, wrong figure for LLaMA
    gpt = cost.activation_memory(2048, 1, 4096, 32, 32)
    assert gpt == pytest.approx(30.60e9, rel=1e-3) and gpt > 1.7 * seven
    # a GPT layer is still Korthikanti's 34 + 5as/h, bit for bit
    s, b, h, a = 2048, 1, 2048, 16
    assert cost.activation_memory(s, b, h, a, 1) == s * b * h * (34 + 5 * a * s / h)
    assert cost.activation_memory(s, b, layer=cost.LayerShape(h, a)) == \
        s * b * h * (34 + 5 * a * s / h)
    # GPT-3 XL's 24 heads do not divide its 2048: the named layer takes them as printed
    assert cost.MODEL_PRESETS["1.3B"].layer == "korthikanti"
    assert cost.activation_memory(2048, 1, 2048, 24) == 2048 * 2048 * (34 + 5 * 24)


def test_onebit_adam_volume_ratio():
    # the warm-up bounds it: all steps compressed gives r, no compression 1
    assert cost.onebit_adam_volume_ratio(0.0, 32) == 32
    assert cost.onebit_adam_volume_ratio(1.0, 32) == 1
    assert cost.onebit_adam_volume_ratio(0.15, 16) == pytest.approx(1 / (0.15 + 0.85 / 16))
    assert 4 < cost.onebit_adam_volume_ratio(0.15, 16) < 5 < cost.onebit_adam_volume_ratio(0.15, 32)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="warmup_fraction"):
            cost.onebit_adam_volume_ratio(bad)
    with pytest.raises(ValueError, match="compression_ratio"):
        cost.onebit_adam_volume_ratio(0.2, 0.5)


def test_mfu_from_hfu():
    # Narayanan et al.'s 1T row: 52% counted with full recomputation is ~39% of model FLOPs
    one_t = dict(model=cost.LayerShape(25600, 160), n_layers=128, seq_len=2048,
                 vocab_size=51200, count="megatron")
    hw = cost.flops_per_token(**one_t, recompute="full")
    model = cost.flops_per_token(**one_t)
    assert cost.mfu_from_hfu(0.52, model, hw) == pytest.approx(0.39, abs=0.005)
    assert cost.mfu_from_hfu(0.5, 1.0, 1.0) == 0.5  # no recomputation: the same
    with pytest.raises(ValueError, match="model_flops=2 must be <= hardware_flops=1"):
        cost.mfu_from_hfu(0.5, 2.0, 1.0)
    with pytest.raises(ValueError, match="hfu"):
        cost.mfu_from_hfu(1.5, 1.0, 1.0)


def test_clip_norm_overcount():
    # S = 3, R = 1 at t = 2: sqrt((3 + 2) / 4); no replicated part or t = 1: right norm
    assert cost.clip_norm_overcount(3.0, 1.0, 2) == pytest.approx(math.sqrt(5 / 4))
    assert cost.clip_norm_overcount(3.0, 0.0, 8) == 1 == cost.clip_norm_overcount(3.0, 1.0, 1)
    assert cost.clip_norm_overcount(0.0, 1.0, 4) == pytest.approx(2)  # all replicated: sqrt(t)
    assert cost.clip_norm_overcount(1.0, 1e6, 4) < 2  # tends to sqrt(t), never past it
    # added over DP replicas too: sqrt(dp) on top, whatever S and R are
    assert cost.clip_norm_overcount(3.0, 0.0, 2, dp_summed=4) == pytest.approx(2)
    assert cost.clip_norm_overcount(3.0, 1.0, 2, dp_summed=2) == pytest.approx(math.sqrt(5 / 2))
    for kw, name in ((dict(sharded_sq=-1.0), "sharded_sq"), (dict(replicated_sq=float("nan")),
                     "replicated_sq"), (dict(tp=0), "tp"), (dict(dp_summed=1.5), "dp_summed"),
                     (dict(sharded_sq=0.0, replicated_sq=0.0), "must be > 0")):
        with pytest.raises(ValueError, match=name):
            cost.clip_norm_overcount(**{"sharded_sq": 3.0, "replicated_sq": 1.0, "tp": 2, **kw})


def test_vanishing_update_depends_on_the_side_of_a_power_of_two():
    # bf16 around 1.0: the next value up is 1 + 2^-7, down 1 - 2^-8 (the binade below is
    # finer), so an increase is lost up to 2^-8 and a decrease only up to 2^-9
    # (torch: 1 - 0.002 in bf16 is 0.99609375). The old one-sided ulp(w)/2 said 2^-8 both ways.
    assert cost.vanishing_update(1.0, "bf16", "up") == 2 ** -8
    assert cost.vanishing_update(1.0, "bf16", "down") == 2 ** -9
    assert cost.vanishing_update(1.0, "bf16", "down") != cost.ulp(1.0, "bf16") / 2
    # a negative weight mirrors it: "up" is toward zero there
    assert cost.vanishing_update(-1.0, "bf16", "up") == 2 ** -9
    assert cost.vanishing_update(-1.0, "bf16", "down") == 2 ** -8
    # inside a binade both sides are one ulp; at the smallest normal the gap below is the
    # subnormals' spacing, the same as above
    assert cost.vanishing_update(1.5, "fp16", "up") == cost.vanishing_update(1.5, "fp16", "down") == 2 ** -11
    assert cost.vanishing_update(2 ** -14, "fp16", "down") == cost.vanishing_update(2 ** -14, "fp16", "up") == 2 ** -25
    with pytest.raises(ValueError, match="direction"):
        cost.vanishing_update(1.0, "bf16", "either")
