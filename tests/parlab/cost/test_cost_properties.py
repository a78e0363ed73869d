"""Property-based tests of parlab.cost (hypothesis).

(a) For inputs in each function's domain the result is finite and keeps the invariant
    the formula stands for (ring all-reduce 2(n-1)/n S, bubble in [0, 1) and falling in m,
    ZeRO stages only lowering memory, DP speedup at most n, ...).
(b) For inputs outside it (NaN, infinities, negatives, fractions where a count is due,
    bools, None, strings) a ValueError whose message names the argument.
"""

import functools
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parlab import cost

FAST = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])

ranks = st.integers(1, 1024)
sizes = st.floats(0, 1e12)
alphas = st.floats(0, 1e-3)
bandwidths = st.floats(1e6, 1e12)
ALGOS = [(op, algo) for op, algos in cost.collectives._SUPPORTED.items() for algo in algos]


def close(a, b, rel=1e-9, abs_=0.0):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


# --- (a) valid input: finite results and the invariants --------------------------------

@FAST
@given(st.sampled_from(ALGOS), sizes, ranks, alphas, bandwidths, st.floats(0, 1e-9), st.data())
def test_collectives_are_finite_and_consistent(op_algo, S, n, alpha, bw, gamma, data):
    op, algo = op_algo
    n = 2 if op == "p2p" else n
    rank = data.draw(st.integers(0, n - 1))
    steps = cost.collective_steps(op, n, algo)
    sent = cost.collective_bytes(op, S, n, algo, rank)
    t = cost.collective_time(op, S, n, alpha, bw, algo, gamma)
    assert isinstance(steps, int) and steps >= 0 and math.isfinite(sent) and sent >= 0
    assert math.isfinite(t) and t >= steps * alpha * (1 - 1e-12)
    assert cost.collective_time(op, 2 * S + 1, n, alpha, bw, algo, gamma) >= t  # more bytes, no faster
    if n == 1:
        assert steps == 0 and sent == 0 and t == 0


@FAST
@given(sizes, ranks)
def test_ring_bytes(S, n):
    assert close(cost.collective_bytes("all_reduce", S, n), 2 * (n - 1) / n * S)
    assert cost.collective_bytes("all_reduce", S, n) <= 2 * S
    for op in ("all_gather", "reduce_scatter", "all_to_all"):
        assert close(cost.collective_bytes(op, S, n), (n - 1) / n * S)
    assert cost.collective_steps("all_reduce", n) == 2 * (n - 1)


@FAST
@given(st.integers(2, 1024), st.floats(1e-7, 1e-3), bandwidths, st.floats(0.01, 0.99))
def test_ring_tree_crossover_separates_the_winners(n, alpha, bw, u):
    s = cost.ring_tree_crossover(n, alpha, bw)
    assert math.isfinite(s) and s >= 0
    ring = lambda S: cost.collective_time("all_reduce", S, n, alpha, bw, "ring")  # noqa: E731
    tree = lambda S: cost.collective_time("all_reduce", S, n, alpha, bw, "tree")  # noqa: E731
    tol = 1e-9 * (ring(s) + tree(s))
    assert abs(ring(s) - tree(s)) <= tol or s == 0
    assert tree(s * u) <= ring(s * u) + tol  # below: latency-bound, the tree's log2 n steps win
    assert ring(s * (1 + u) + 1) <= tree(s * (1 + u) + 1) + tol  # above: the ring's (n-1)/n wins


@FAST
@given(st.sampled_from([op for op in cost.COLLECTIVES]), st.floats(1, 1e12), ranks,
       st.floats(1e-9, 1e3))
def test_bus_bandwidth(op, S, n, seconds):
    n = 2 if op == "p2p" else n
    f = cost.bus_bandwidth_factor(op, n)
    assert 0 <= f < 2
    assert close(cost.bus_bandwidth(op, S, n, seconds), S / seconds * f)
    if op == "all_reduce":  # a ring all-reduce at link speed shows busbw == link bandwidth
        t = cost.collective_time(op, S, n, 0.0, 1e10)
        assert n == 1 or close(cost.bus_bandwidth(op, S, n, t), 1e10, rel=1e-6)


@FAST
@given(st.lists(st.integers(0, 30), min_size=2, max_size=12, unique=True),
       st.floats(1e-7, 1e-3), st.floats(1e-12, 1e-6))
def test_fit_alpha_beta_reproduces_an_exact_line(exponents, alpha, beta):
    xs = [2.0 ** k for k in exponents]
    ys = [alpha + beta * x for x in xs]
    fit = cost.fit_alpha_beta(xs, ys)
    assert all(math.isfinite(v) for v in (fit.alpha, fit.beta, fit.r2))
    assert fit.r2 == pytest.approx(1.0, abs=1e-6)
    for x, y in zip(xs, ys):
        assert fit.predict(x) == pytest.approx(y, rel=1e-6)


@FAST
@given(st.integers(1, 200), st.integers(1, 2 ** 14), st.integers(1, 2 ** 15),
       st.integers(1, 2 ** 17), st.booleans())
def test_compute(L, d, d_ff, T, training):
    n = cost.transformer_params(L, d)
    assert n == 12 * L * d * d and cost.transformer_params(L, d, d_ff) == L * (4 * d * d + 2 * d * d_ff)
    f = cost.flops_per_token(n, L, T, d, training=training)
    assert math.isfinite(f) and f > 0
    assert close(cost.flops_per_token(n, L, T, d),
                 3 * cost.flops_per_token(n, L, T, d, training=False))
    assert close(cost.mfu(1e3, f, 1e15), 1e3 * f / 1e15)
    # Kaplan's count <= PaLM's; recomputation only adds; a GPT shape counted as Megatron-LM
    # does is PaLM's count with the logits' weights in N
    assert cost.flops_per_token(n, L, T, d, count="kaplan") <= cost.flops_per_token(n, L, T, d)
    hw = [cost.flops_per_token(n, L, T, d, recompute=r) for r in cost.RECOMPUTE]
    assert hw[0] <= hw[1] <= hw[2] and close(hw[2], 4 / 3 * hw[0])
    V = 1000
    megatron = cost.flops_per_token(cost.LayerShape(d, 1), L, T, vocab_size=V, count="megatron")
    assert close(megatron, cost.flops_per_token(n + V * d, L, T, d))


@FAST
@given(st.floats(0, 1e25), st.integers(1, 4096), st.floats(1e12, 1e16), st.floats(0.01, 1))
def test_training_time_inverts_mfu(total, n, peak, u):
    t = cost.training_time(total, n, peak, u)
    assert math.isfinite(t) and t >= 0
    assert close(t * n * peak * u, total, rel=1e-9, abs_=1e-6)


@FAST
@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 8), st.integers(1, 8))
def test_data_parallel_degree_times_the_others_is_the_cluster(d, t, p, c):
    assert cost.data_parallel_degree(d * t * p * c, t, p, c) == d
    if t * p * c > 1:
        with pytest.raises(ValueError, match="must divide n_gpus"):
            cost.data_parallel_degree(d * t * p * c + 1, t, p, c)


@FAST
@given(st.integers(1, 512), st.integers(1, 4096), st.integers(1, 16))
def test_bubble(p, m, v):
    f, r = cost.bubble_fraction(p, m, v), cost.bubble_ratio(p, m, v)
    assert 0 <= f < 1 and r >= 0 and math.isfinite(r)
    assert close(r, f / (1 - f))
    later = cost.bubble_fraction(p, m + 1, v)
    assert later < f if p > 1 else later == f == 0  # more micro-batches: less bubble
    assert cost.bubble_fraction(p, m, v + 1) <= f  # more chunks per rank: less bubble
    if p > 1:
        assert (r > 1) == (v * m < p - 1)


@FAST
@given(st.integers(1, 128), st.floats(0.005, 0.995), st.integers(1, 8),
       st.sampled_from(["fraction", "ratio"]))
def test_min_micro_batches_is_the_smallest(p, target, v, normalisation):
    bubble = cost.bubble_fraction if normalisation == "fraction" else cost.bubble_ratio
    m = cost.min_micro_batches(p, target, v, normalisation)
    assert isinstance(m, int) and m >= 1
    assert bubble(p, m, v) <= target
    assert m == 1 or bubble(p, m - 1, v) > target
    assert m == next(k for k in range(1, m + 1) if bubble(p, k, v) <= target)  # brute force


@FAST
@given(st.integers(1, 64), st.integers(1, 256), st.data())
def test_peak_activations(p, m, data):
    stage = data.draw(st.integers(0, p - 1))
    gpipe = cost.pipeline_peak_activations("gpipe", p, m, stage)
    one_f_one_b = cost.pipeline_peak_activations("1f1b", p, m, stage)
    assert gpipe == m and 1 <= one_f_one_b <= min(m, p)
    if stage + 1 < p:
        assert cost.pipeline_peak_activations("1f1b", p, m, stage + 1) <= one_f_one_b


counts = st.one_of(st.integers(0, 10 ** 12), st.integers(0, 10 ** 6).map(lambda k: k * 1e6))
# bytes per element: 0 or a real size (subnormal floats such as 5e-324 underflow to 0 when
# halved, which says nothing about the formulas)
byte_sizes = st.one_of(st.just(0.0), st.floats(1e-3, 64))


@FAST
@given(counts, st.integers(1, 4096), byte_sizes, byte_sizes, byte_sizes)
def test_zero_memory_and_traffic(psi, dp, pb, gb, ob):
    mems = [cost.zero_memory(psi, dp, s, pb, gb, ob) for s in cost.ZERO_STAGES]
    totals = [m["total"] for m in mems]
    assert all(math.isfinite(t) and t >= 0 for t in totals)
    assert all(a >= b for a, b in zip(totals, totals[1:]))  # each stage only lowers memory
    assert close(totals[0], psi * (pb + gb + ob)) and close(totals[3], psi * (pb + gb + ob) / dp)
    for m in mems:
        assert close(m["total"], m["params"] + m["grads"] + m["optimizer"])
    vol = [cost.zero_comm_volume(psi, dp, s, gb) for s in cost.ZERO_STAGES]
    assert vol[0] == vol[1] == vol[2] and close(vol[3], 1.5 * vol[0])
    assert vol[3] <= 3 * psi * gb and close(vol[0], 2 * psi * gb * (dp - 1) / dp)


@FAST
@given(st.integers(1, 2 ** 15), st.integers(1, 64), st.sampled_from([1, 2, 4, 8]),
       st.integers(1, 32), st.integers(1, 128), st.sampled_from([1, 2, 4, 8]),
       st.sampled_from([1, 2, 4]))
def test_activation_memory(s, b, heads_per_tp, head_dim_scale, L, tp, bpv):
    a = heads_per_tp * tp
    h = a * 8 * head_dim_scale
    mem = {(r, sp): cost.activation_memory(s, b, h, a, L, r, tp, sp, bpv)
           for r in cost.RECOMPUTE for sp in (False, True)}
    none, sel, full = (cost.activation_memory(s, b, h, a, L, r, tp, False, bpv) for r in cost.RECOMPUTE)
    assert all(math.isfinite(x) and x > 0 for x in mem.values())
    assert full <= sel <= none  # recomputation only lowers activations
    assert close(cost.activation_memory(s, 2 * b, h, a, L, "none", tp, False, bpv), 2 * none)
    assert cost.activation_memory(s, b, h, a, L, "none", tp, True, bpv) <= none * (1 + 1e-12)
    if tp > 1:
        assert none < cost.activation_memory(s, b, h, a, L, "none", 1, False, bpv)


@FAST
@given(st.sampled_from(sorted(cost.MODEL_PRESETS)), st.sampled_from([1, 2, 8, 64, 1024]),
       st.floats(1, 1000), st.sampled_from(cost.ZERO_STAGES), st.sampled_from(cost.RECOMPUTE),
       st.sampled_from([None, 512, 2048, 8192]))
def test_memory_plan_and_max_micro_batch(model, n, gpu, stage, recompute, seq):
    plans = [cost.memory_plan(model, n, gpu, s, recompute, 1, seq) for s in cost.ZERO_STAGES]
    totals = [p["total"] for p in plans]
    assert all(a >= b for a, b in zip(totals, totals[1:]))
    p = plans[stage]
    assert close(p["total"], p["params"] + p["grads"] + p["optimizer"] + p["activations"])
    b = cost.max_micro_batch(model, n, gpu, stage, recompute, seq)
    assert isinstance(b, int) and b >= 0
    if b:
        assert cost.memory_plan(model, n, gpu, stage, recompute, b, seq)["fits"]
    assert not cost.memory_plan(model, n, gpu, stage, recompute, b + 1, seq)["fits"]


times = st.floats(0, 1e4)


@FAST
@given(st.integers(1, 4096), times, times, times)
def test_data_parallel(n, tf, tb, tc):
    with_overlap, without = cost.dp_step_time(tf, tb, tc), cost.dp_step_time(tf, tb, tc, False)
    assert math.isfinite(without) and tf + tb <= with_overlap <= without
    if tf + tb > 0:
        s, s_no = cost.dp_speedup(n, tf, tb, tc), cost.dp_speedup(n, tf, tb, tc, False)
        assert 0 <= s_no <= s <= n * (1 + 1e-12)
        if tc <= tb:  # communication hidden behind backward
            assert close(s, n)


# --- (b) invalid input: a ValueError naming the argument -------------------------------

def _not_finite_or(pred):
    return st.one_of(
        st.sampled_from([math.nan, math.inf, -math.inf, True, False, None, "1", [1]]),
        st.floats(allow_nan=True, allow_infinity=True).filter(
            lambda x: not (math.isfinite(x) and pred(x))),
        st.integers(-10 ** 6, 10 ** 6).filter(lambda x: not pred(x)))


def _not_int(low, high=None):
    return st.one_of(
        st.sampled_from([math.nan, math.inf, True, False, None, "2", 2.0, 2.5]),
        st.floats(allow_nan=True, allow_infinity=True),  # even 4.0: counts are ints
        st.integers(max_value=low - 1),
        st.integers(min_value=high + 1) if high is not None else st.nothing())


NOT_FINITE = st.sampled_from([math.nan, math.inf, -math.inf, True, False, None, "1", [1]])
NOT_INT1 = _not_int(1)
NOT_NONNEG = _not_finite_or(lambda x: x >= 0)
NOT_POS = _not_finite_or(lambda x: x > 0)
NOT_BOOL = st.sampled_from([0, 1, 1.0, None, "True", math.nan])
NOT_COUNT = st.one_of(  # parameter counts: whole numbers >= 0, as int or float (7.5e9)
    st.sampled_from([math.nan, math.inf, True, None, "1", 0.5, -1.0, 2.5e-3]),
    st.integers(max_value=-1),
    st.floats(allow_nan=True, allow_infinity=True).filter(
        lambda x: not (math.isfinite(x) and x >= 0 and x.is_integer())))
NOT_STAGE = st.one_of(st.sampled_from([4, -1, 1.0, True, None, "1", math.nan]),
                      st.integers().filter(lambda s: s not in cost.ZERO_STAGES))


def _not_in(choices):
    return st.one_of(st.sampled_from([None, 0, 1, True, "", "RING", "all-reduce"]),
                     st.text(max_size=6).filter(lambda t: t not in choices))


def _without_none(strategy):
    return strategy.filter(lambda x: x is not None)


P, M = 4, 8
NOT_SHARE = _not_finite_or(lambda x: 0 < x <= 1)
NOT_SHAPE = st.sampled_from([None, 1, "7B", {"d_model": 4096}])
SHAPE = cost.LayerShape(4096, 32, 8, d_ff=14336, mlp="swiglu", biases=False, dropout=False,
                        rope=True)
MOE = cost.LayerShape(4096, 32, 8, d_ff=14336, mlp="swiglu", n_experts=8, top_k=2)
H100 = cost.Device(989.5e12, 3.35e12, 132, 0.7, 0.32, 0.6, 1979e12)


def _variant(func, name, **fixed):
    """``func`` with some arguments fixed, as a CASES key of its own (a named partial)."""
    f = functools.partial(func, **fixed)
    f.__qualname__ = name
    return f


CASES = {  # function: (valid keyword arguments, {argument: strategy of invalid values})
    cost.hierarchical_all_reduce_bytes: (dict(nbytes=1e3, nodes=2, per_node=4),
                                         dict(nbytes=NOT_NONNEG, nodes=NOT_INT1, per_node=NOT_INT1)),
    cost.in_network_all_reduce_bytes: (dict(nbytes=1e3, n=8), dict(nbytes=NOT_NONNEG, n=NOT_INT1)),
    cost.onebit_adam_volume_ratio: (dict(warmup_fraction=0.2, compression_ratio=16),
                                    dict(warmup_fraction=_not_finite_or(lambda x: 0 <= x <= 1),
                                         compression_ratio=_not_finite_or(lambda x: x >= 1))),
    cost.fsdp_comm_volume: (dict(n_params=10 ** 9, dp=8, reshard_after_forward=False,
                                 param_bytes=2, grad_bytes=4),
                            dict(n_params=NOT_COUNT, dp=NOT_INT1, reshard_after_forward=NOT_BOOL,
                                 param_bytes=NOT_NONNEG, grad_bytes=_without_none(NOT_NONNEG))),
    cost.fsdp_gathered_peak: (dict(unit_bytes=[4.0, 8.0], root_bytes=2.0,
                                   reshard_after_forward=True, prefetch=True),
                              dict(root_bytes=NOT_NONNEG, reshard_after_forward=NOT_BOOL,
                                   prefetch=NOT_BOOL,
                                   unit_bytes=st.sampled_from([[], None, 3, [math.nan], [-1.0]]))),
    cost.clip_norm_overcount: (dict(sharded_sq=3.0, replicated_sq=1.0, tp=8, dp_summed=2),
                               dict(sharded_sq=NOT_NONNEG, replicated_sq=NOT_NONNEG, tp=NOT_INT1,
                                    dp_summed=NOT_INT1)),
    cost.hsdp_comm_volume: (dict(n_params=10 ** 9, shard=8, replicate=4, param_bytes=2),
                            dict(n_params=NOT_COUNT, shard=NOT_INT1, replicate=NOT_INT1,
                                 reshard_after_forward=NOT_BOOL, param_bytes=NOT_NONNEG)),
    cost.zeropp_comm_volume: (dict(n_params=10 ** 9, param_bytes=2, weight_bits=8, grad_bits=4),
                              dict(n_params=NOT_COUNT, param_bytes=NOT_NONNEG, weight_bits=NOT_POS,
                                   grad_bits=NOT_POS)),
    cost.zero_offload_traffic: (dict(n_params=10 ** 9, param_bytes=2, optimizer_bytes=12),
                                dict(n_params=NOT_COUNT, param_bytes=NOT_NONNEG,
                                     optimizer_bytes=NOT_NONNEG)),
    cost.mfu_from_hfu: (dict(hfu=0.5, model_flops=3.0, hardware_flops=4.0),
                        dict(hfu=NOT_SHARE, model_flops=NOT_POS, hardware_flops=NOT_POS)),
    cost.bytes_per_element: (dict(dtype="nvfp4", n_elements=64),
                             dict(dtype=_not_in(tuple(cost.TRAINING_DTYPES)),
                                  n_elements=NOT_INT1.filter(lambda x: x is not None))),
    cost.mantissa_bits: (dict(fmt="bf16"), dict(fmt=_not_in(tuple(cost.FORMATS)))),
    cost.unit_roundoff: (dict(fmt="fp16"), dict(fmt=_not_in(tuple(cost.FORMATS)))),
    cost.ulp: (dict(value=1.5, fmt="bf16"), dict(value=NOT_FINITE, fmt=_not_in(tuple(cost.FORMATS)))),
    cost.vanishing_update: (dict(weight=1.0, fmt="bf16", direction="down"),
                            dict(weight=NOT_FINITE, fmt=_not_in(tuple(cost.FORMATS)),
                                 direction=_not_in(("up", "down")))),
    cost.summation_error_bound: (dict(n_terms=8, fmt="bf16"),
                                 dict(n_terms=NOT_INT1, fmt=_not_in(tuple(cost.FORMATS)))),
    cost.training_bytes_per_param: (dict(recipe="fp8_mixed", gemm_fraction=0.9),
                                    dict(recipe=_not_in(tuple(cost.RECIPES)),
                                         gemm_fraction=_not_finite_or(lambda x: 0 <= x <= 1))),
    cost.checkpoint_bytes: (dict(n_params=1e9, ranks=8, weights=2),
                            dict(n_params=NOT_POS, ranks=NOT_INT1, master=_not_int(0),
                                 moments=_not_int(0), weights=_not_int(0))),
    cost.interruptions_per_day: (dict(n_gpus=16384, mtbf_gpu_hours=5e4),
                                 dict(n_gpus=NOT_INT1, mtbf_gpu_hours=NOT_POS)),
    cost.job_mtbf_hours: (dict(n_gpus=16384, mtbf_gpu_hours=5e4),
                          dict(n_gpus=NOT_INT1, mtbf_gpu_hours=NOT_POS)),
    cost.implied_gpu_mtbf_hours: (dict(interruptions=419, days=54, n_gpus=16384),
                                  dict(interruptions=NOT_POS, days=NOT_POS, n_gpus=NOT_INT1)),
    cost.checkpoint_seconds: (dict(size_bytes=4.86e12, bandwidth_bytes_per_s=2e12),
                              dict(size_bytes=NOT_POS, bandwidth_bytes_per_s=NOT_POS)),
    cost.young_interval: (dict(c=60, m=11000), dict(c=NOT_POS, m=NOT_POS)),
    cost.daly_interval: (dict(c=60, m=11000), dict(c=NOT_POS, m=NOT_POS)),
    cost.goodput: (dict(tau=1000, c=60, m=11000, r=600),
                   dict(tau=NOT_POS, c=NOT_NONNEG, m=NOT_POS, r=NOT_NONNEG)),
    cost.goodput_curve: (dict(c=60, m=11000, r=600, points=8),
                         dict(c=NOT_NONNEG, m=NOT_POS, r=NOT_NONNEG, points=_not_int(2))),
    cost.restart_for_goodput: (dict(target=0.9, tau=230, c=2.4, m=11000),
                               dict(tau=NOT_POS, c=NOT_NONNEG, m=NOT_POS)),
    cost.pipeline_time_with_straggler: (dict(p=4, m=8, t_fwd=1.0, t_bwd=2.0, slowdown=0.5),
                                        dict(p=NOT_INT1, m=NOT_INT1, t_fwd=NOT_NONNEG,
                                             t_bwd=NOT_NONNEG, slowdown=NOT_NONNEG)),
    cost.synchronous_step: (dict(computes=[1.0, 1.5], comm=0.2), dict(comm=NOT_NONNEG)),
    cost.training_bytes: (dict(n_params=7e9, recipe="bf16_mixed"),
                          dict(n_params=NOT_COUNT, recipe=_not_in(tuple(cost.RECIPES)))),
    cost.collective_steps: (dict(op="all_reduce", n=4, algorithm="ring"),
                            dict(op=_not_in(cost.COLLECTIVES), n=NOT_INT1,
                                 algorithm=_not_in(cost.ALGORITHMS))),
    cost.collective_bytes: (dict(op="all_reduce", nbytes=1e3, n=4, algorithm="naive", rank=1),
                            dict(op=_not_in(cost.COLLECTIVES), nbytes=NOT_NONNEG, n=NOT_INT1,
                                 algorithm=_not_in(cost.ALGORITHMS), rank=_not_int(0, 3))),
    cost.reduced_bytes: (dict(op="reduce_scatter", nbytes=1e3, n=4, algorithm="ring"),
                         dict(nbytes=NOT_NONNEG, n=NOT_INT1)),
    cost.collective_time: (dict(op="all_gather", nbytes=1e3, n=4, alpha=1e-5, bandwidth=1e9,
                                algorithm="ring", gamma=0.0),
                           dict(nbytes=NOT_NONNEG, n=NOT_INT1, alpha=NOT_NONNEG,
                                bandwidth=NOT_POS, gamma=NOT_NONNEG)),
    cost.p2p_time: (dict(nbytes=1e3, alpha=1e-5, bandwidth=1e9),
                    dict(nbytes=NOT_NONNEG, alpha=NOT_NONNEG, bandwidth=NOT_POS)),
    cost.ring_tree_crossover: (dict(n=8, alpha=1e-5, bandwidth=1e9),
                               dict(n=NOT_INT1, alpha=NOT_NONNEG, bandwidth=NOT_POS)),
    cost.bus_bandwidth_factor: (dict(op="all_to_all", n=4),
                                dict(op=_not_in(cost.COLLECTIVES), n=NOT_INT1)),
    cost.bus_bandwidth: (dict(op="all_reduce", nbytes=1e6, n=4, seconds=1e-3),
                         dict(nbytes=NOT_NONNEG, n=NOT_INT1, seconds=NOT_POS)),
    cost.AlphaBetaFit: (dict(alpha=1e-5, beta=1e-9, r2=0.99),
                        dict(alpha=NOT_FINITE, beta=NOT_FINITE,
                             r2=_not_finite_or(lambda x: x <= 1))),
    cost.AlphaBetaFit(1e-5, 1e-9, 1.0).predict: (dict(nbytes=1e3), dict(nbytes=NOT_NONNEG)),
    cost.transformer_params: (dict(n_layers=12, d_model=768, d_ff=3072),
                              dict(n_layers=NOT_INT1, d_model=NOT_INT1, d_ff=_without_none(NOT_INT1))),
    cost.flops_per_token: (dict(model=10 ** 9, n_layers=24, seq_len=2048, d_model=2048,
                                count="kaplan", causal=True, recompute="selective",
                                training=True),
                           dict(model=st.one_of(NOT_COUNT, st.just(SHAPE)), n_layers=NOT_INT1,
                                seq_len=NOT_INT1, d_model=NOT_INT1,
                                vocab_size=_without_none(NOT_INT1),
                                count=_not_in(cost.FLOP_COUNTS), causal=NOT_BOOL,
                                recompute=_not_in(cost.RECOMPUTE_KINDS), training=NOT_BOOL,
                                attention=_not_in(cost.ATTENTION))),
    _variant(cost.flops_per_token, "flops_per_token[megatron]", count="megatron"): (
        dict(model=MOE, n_layers=32, seq_len=4096, vocab_size=32000, causal=False,
             recompute="full", training=True),
        dict(model=st.one_of(NOT_SHAPE, st.just(10 ** 9)), n_layers=NOT_INT1, seq_len=NOT_INT1,
             d_model=_without_none(NOT_INT1), vocab_size=NOT_INT1, causal=NOT_BOOL,
             recompute=_not_in(cost.RECOMPUTE_KINDS), training=NOT_BOOL)),
    cost.mfu: (dict(tokens_per_second=1e4, flops_per_token_=6e9, peak_flops=312e12),
               dict(tokens_per_second=NOT_NONNEG, flops_per_token_=NOT_NONNEG,
                    peak_flops=NOT_POS)),
    cost.training_time: (dict(total_flops=1e23, n_gpus=1024, peak_flops=312e12, utilisation=0.4),
                         dict(total_flops=NOT_NONNEG, n_gpus=NOT_INT1, peak_flops=NOT_POS,
                              utilisation=_not_finite_or(lambda x: 0 < x <= 1))),
    cost.bubble_fraction: (dict(p=P, m=M, v=1), dict(p=NOT_INT1, m=NOT_INT1, v=NOT_INT1)),
    cost.bubble_ratio: (dict(p=P, m=M, v=2), dict(p=NOT_INT1, m=NOT_INT1, v=NOT_INT1)),
    cost.min_micro_batches: (dict(p=P, target=0.2, v=1, normalisation="fraction"),
                             dict(p=NOT_INT1, v=NOT_INT1,
                                  target=_not_finite_or(lambda x: 0 < x < 1),
                                  normalisation=_not_in(("fraction", "ratio")))),
    cost.pipeline_peak_activations: (dict(schedule="1f1b", p=P, m=M, stage=2),
                                     dict(schedule=_not_in(cost.PIPELINE_SCHEDULES), p=NOT_INT1,
                                          m=NOT_INT1, stage=_not_int(0, P - 1))),
    cost.split_backward_bubble: (dict(schedule="zb-h2", p=P, t_f=1.0, t_b=1.0, t_w=0.5),
                                 dict(schedule=_not_in(("1f1b", "zb-h1", "zb-h2")), p=NOT_INT1,
                                      t_f=NOT_POS, t_b=NOT_POS, t_w=NOT_NONNEG)),
    cost.dualpipe_bubble: (dict(p=8, t_fb=1.5, t_b=1.0, t_w=0.5),
                           dict(p=NOT_INT1, t_fb=NOT_POS, t_b=NOT_POS, t_w=NOT_NONNEG)),
    cost.interleaved_memory_factor: (dict(p=P, v=2), dict(p=NOT_INT1, v=NOT_INT1)),
    cost.zero_memory: (dict(n_params=7.5e9, dp=64, stage=1, param_bytes=2, grad_bytes=2,
                            optimizer_bytes=12),
                       dict(n_params=NOT_COUNT, dp=NOT_INT1, stage=NOT_STAGE,
                            param_bytes=NOT_NONNEG, grad_bytes=NOT_NONNEG,
                            optimizer_bytes=NOT_NONNEG)),
    cost.zero_comm_volume: (dict(n_params=10 ** 9, dp=8, stage=3, grad_bytes=2, param_bytes=4),
                            dict(n_params=NOT_COUNT, dp=NOT_INT1, stage=NOT_STAGE,
                                 grad_bytes=NOT_NONNEG, param_bytes=_without_none(NOT_NONNEG))),
    cost.activation_memory: (dict(seq_len=2048, micro_batch=1, d_model=4096, n_heads=32,
                                  n_layers=32, recompute="none", tp=8, sequence_parallel=True,
                                  bytes_per_value=2, layer="korthikanti", attention="fused",
                                  cp=2, gemm_input_bytes=1),
                             dict(seq_len=NOT_INT1, micro_batch=NOT_INT1, d_model=NOT_INT1,
                                  n_heads=NOT_INT1, n_layers=NOT_INT1,
                                  recompute=_not_in(cost.RECOMPUTE_KINDS), tp=NOT_INT1,
                                  sequence_parallel=NOT_BOOL, bytes_per_value=NOT_POS,
                                  layer=st.one_of(_not_in(cost.LAYERS), NOT_SHAPE),
                                  attention=_not_in(cost.ATTENTION), cp=NOT_INT1,
                                  gemm_input_bytes=NOT_POS.filter(lambda x: x is not None))),
    _variant(cost.activation_memory, "activation_memory[lab]", layer="lab"): (
        dict(seq_len=16, micro_batch=8, d_model=32, n_heads=4, n_layers=2, tp=2,
             sequence_parallel=True, recompute="selective", bytes_per_value=4),
        dict(seq_len=NOT_INT1, micro_batch=NOT_INT1, d_model=NOT_INT1, n_heads=NOT_INT1,
             n_layers=NOT_INT1, tp=NOT_INT1, sequence_parallel=NOT_BOOL,
             recompute=_not_in(cost.RECOMPUTE), bytes_per_value=NOT_POS,
             attention=st.just("fused"), cp=st.integers(2, 8))),
    _variant(cost.activation_memory, "activation_memory[shape]", layer=MOE): (
        dict(seq_len=2048, micro_batch=2, n_layers=4, tp=4, sequence_parallel=True,
             recompute="selective", attention="fused", cp=2),
        dict(seq_len=NOT_INT1, micro_batch=NOT_INT1, d_model=_without_none(NOT_INT1),
             n_heads=_without_none(NOT_INT1), tp=NOT_INT1, sequence_parallel=NOT_BOOL,
             recompute=_not_in(cost.RECOMPUTE), attention=_not_in(cost.ATTENTION),
             cp=NOT_INT1)),
    cost.activation_table: (dict(seq_len=2048, micro_batch=1, d_model=12288, n_heads=96, tp=8),
                            dict(seq_len=NOT_INT1, micro_batch=NOT_INT1, d_model=NOT_INT1,
                                 n_heads=NOT_INT1, tp=NOT_INT1)),
    cost.tp_comm_per_layer: (dict(micro_batch=1, seq_len=2048, d_model=12288, tp=8,
                                  sequence_parallel=True, bytes_per_value=2),
                             dict(micro_batch=NOT_INT1, seq_len=NOT_INT1, d_model=NOT_INT1,
                                  tp=NOT_INT1, sequence_parallel=NOT_BOOL,
                                  bytes_per_value=NOT_POS)),
    cost.tp_scaling: (dict(n_layers=2, d_model=1024, n_heads=16, seq_len=1024, micro_batch=2,
                           tp=4, peak_flops=1e14, bandwidth=1e11, alpha=1e-5, efficiency=0.5,
                           sequence_parallel=True, bytes_per_value=2),
                      dict(n_layers=NOT_INT1, d_model=NOT_INT1, n_heads=NOT_INT1,
                           seq_len=NOT_INT1, micro_batch=NOT_INT1, tp=NOT_INT1,
                           peak_flops=NOT_POS, bandwidth=NOT_POS, alpha=NOT_NONNEG,
                           efficiency=_not_finite_or(lambda x: 0 < x <= 1),
                           sequence_parallel=NOT_BOOL, bytes_per_value=NOT_POS)),
    cost.chunked_overlap: (dict(chunk_comm_s=0.1, chunk_compute_s=0.2, chunks=4),
                           dict(chunk_comm_s=NOT_NONNEG, chunk_compute_s=NOT_NONNEG,
                                chunks=NOT_INT1)),
    cost.tp_forward_overlap: (dict(n_layers=2, d_model=1024, n_heads=16, seq_len=1024,
                                   micro_batch=2, tp=4, peak_flops=1e14, bandwidth=1e11,
                                   alpha=1e-5, chunks=4, efficiency=0.5, bytes_per_value=2),
                              dict(n_layers=NOT_INT1, d_model=NOT_INT1, n_heads=NOT_INT1,
                                   seq_len=NOT_INT1, micro_batch=NOT_INT1, tp=NOT_INT1,
                                   peak_flops=NOT_POS, bandwidth=NOT_POS, alpha=NOT_NONNEG,
                                   chunks=NOT_INT1,
                                   efficiency=_not_finite_or(lambda x: 0 < x <= 1),
                                   bytes_per_value=NOT_POS)),
    cost.tp_scaling_curve: (dict(n_layers=2, d_model=1024, n_heads=16, seq_len=1024,
                                 micro_batch=2, tps=[1, 2, 16], gpus_per_node=8,
                                 intra_bandwidth=3e11, intra_alpha=5e-6, inter_bandwidth=2.5e10,
                                 inter_alpha=1e-5, peak_flops=1e14, efficiency=0.5,
                                 sequence_parallel=False, bytes_per_value=2),
                            dict(tps=st.sampled_from([None, 8, "8", [], [0], [2.0], [True], [3],
                                                      [1, math.nan]]),
                                 n_layers=NOT_INT1, d_model=NOT_INT1, n_heads=NOT_INT1,
                                 seq_len=NOT_INT1, micro_batch=NOT_INT1,
                                 efficiency=_not_finite_or(lambda x: 0 < x <= 1),
                                 sequence_parallel=NOT_BOOL, bytes_per_value=NOT_POS,
                                 gpus_per_node=NOT_INT1, intra_bandwidth=NOT_POS,
                                 intra_alpha=NOT_NONNEG, inter_bandwidth=NOT_POS,
                                 inter_alpha=NOT_NONNEG, peak_flops=NOT_POS)),
    cost.cp_comm_per_layer: (dict(micro_batch=1, seq_len=4096, d_model=4096, cp=4,
                                  method="ulysses", bytes_per_value=2, n_heads=32,
                                  n_kv_heads=8),
                             dict(micro_batch=NOT_INT1, seq_len=NOT_INT1, d_model=NOT_INT1,
                                  cp=NOT_INT1, method=_not_in(cost.CP_METHODS),
                                  bytes_per_value=NOT_POS, n_heads=NOT_INT1,
                                  n_kv_heads=_without_none(NOT_INT1))),
    cost.expert_capacity: (dict(tokens=4096, n_experts=8, capacity_factor=1.25, top_k=2),
                           dict(tokens=_not_int(0), n_experts=NOT_INT1, capacity_factor=NOT_POS,
                                top_k=_not_int(1, 8))),
    cost.moe_all_to_all_bytes: (dict(tokens=4096, d_model=4096, top_k=2, ep=8,
                                     bytes_per_value=2, remote_fraction=0.5),
                                dict(tokens=_not_int(0), d_model=NOT_INT1, top_k=NOT_INT1,
                                     ep=NOT_INT1, bytes_per_value=NOT_POS,
                                     remote_fraction=_without_none(
                                         _not_finite_or(lambda x: 0 <= x <= 1)))),
    cost.moe_flops_per_token: (dict(d_model=4096, d_ff=14336, n_experts=8, top_k=2,
                                    capacity_factor=1.25, training=True, gated=True),
                               dict(d_model=NOT_INT1, d_ff=NOT_INT1, n_experts=NOT_INT1,
                                    top_k=_not_int(1, 8), capacity_factor=_without_none(NOT_POS),
                                    training=NOT_BOOL, gated=NOT_BOOL)),
    cost.moe_params: (dict(n_layers=32, d_model=4096, d_ff=14336, n_experts=8, top_k=2,
                           n_heads=32, n_kv_heads=8, vocab_size=32000, gated=True,
                           tied_embeddings=False, norms=2),
                      dict(n_layers=NOT_INT1, d_model=NOT_INT1, d_ff=NOT_INT1,
                           n_experts=NOT_INT1, top_k=_not_int(1, 8), n_heads=NOT_INT1,
                           n_kv_heads=_without_none(NOT_INT1), vocab_size=_not_int(0),
                           gated=NOT_BOOL, tied_embeddings=NOT_BOOL, norms=_not_int(0))),
    cost.causal_work_per_rank: (dict(cp=4, layout="contiguous"),
                                dict(cp=NOT_INT1, layout=_not_in(cost.CP_LAYOUTS))),
    cost.attention_memory_per_rank: (dict(seq_len=4096, micro_batch=1, n_heads=32,
                                          head_dim=128, cp=4, method="ulysses",
                                          bytes_per_value=2, flash=False),
                                     dict(seq_len=NOT_INT1, micro_batch=NOT_INT1,
                                          n_heads=NOT_INT1, head_dim=NOT_INT1, cp=NOT_INT1,
                                          method=_not_in(("ring", "ulysses")),
                                          bytes_per_value=NOT_POS, flash=NOT_BOOL)),
    cost.memory_plan: (dict(model="7B", n_gpus=4, gpu_memory_gb=80.0, stage=3,
                            recompute="full", micro_batch=2, seq_len=4096, param_bytes=2,
                            grad_bytes=2, optimizer_bytes=12),
                       dict(model=_not_in(cost.MODEL_PRESETS), n_gpus=NOT_INT1,
                            gpu_memory_gb=NOT_POS, stage=NOT_STAGE,
                            recompute=_not_in(cost.RECOMPUTE), micro_batch=NOT_INT1,
                            seq_len=_without_none(NOT_INT1), param_bytes=NOT_NONNEG,
                            grad_bytes=NOT_NONNEG, optimizer_bytes=NOT_NONNEG)),
    cost.max_micro_batch: (dict(model="13B", n_gpus=8, gpu_memory_gb=80.0, stage=2,
                                recompute="selective", seq_len=None, optimizer_bytes=12),
                           dict(model=_not_in(cost.MODEL_PRESETS), n_gpus=NOT_INT1,
                                gpu_memory_gb=NOT_POS, stage=NOT_STAGE,
                                recompute=_not_in(cost.RECOMPUTE),
                                seq_len=_without_none(NOT_INT1), optimizer_bytes=NOT_NONNEG)),
    cost.ModelPreset: (dict(name="tiny", n_params=10 ** 6, n_layers=2, d_model=64, n_heads=4,
                            seq_len=128, source="test"),
                       dict(n_params=NOT_INT1, n_layers=NOT_INT1, d_model=NOT_INT1,
                            n_heads=NOT_INT1, seq_len=NOT_INT1)),
    cost.dp_step_time: (dict(forward_s=1.0, backward_s=2.0, comm_s=0.5, overlap=True),
                        dict(forward_s=NOT_NONNEG, backward_s=NOT_NONNEG, comm_s=NOT_NONNEG,
                             overlap=NOT_BOOL)),
    cost.dp_speedup: (dict(n=4, forward_s=1.0, backward_s=2.0, comm_s=0.5, overlap=False),
                      dict(n=NOT_INT1, forward_s=NOT_NONNEG, backward_s=NOT_NONNEG,
                           comm_s=NOT_NONNEG, overlap=NOT_BOOL)),
    cost.LayerShape: (dict(d_model=4096, n_heads=32, n_kv_heads=8, head_dim=128, d_ff=14336,
                           mlp="swiglu", n_experts=8, top_k=2, expert_d_ff=14336,
                           n_shared_experts=1, biases=False, dropout=False, rope=True,
                           norm="rmsnorm"),
                      dict(d_model=NOT_INT1, n_heads=NOT_INT1, n_kv_heads=_without_none(NOT_INT1),
                           head_dim=_without_none(NOT_INT1), d_ff=_without_none(NOT_INT1),
                           mlp=_not_in(cost.MLPS), n_experts=_not_int(0), top_k=_not_int(1, 8),
                           expert_d_ff=_without_none(NOT_INT1), n_shared_experts=_not_int(0),
                           biases=NOT_BOOL, dropout=NOT_BOOL, rope=NOT_BOOL,
                           norm=_not_in(cost.NORMS))),
    cost.layer_params: (dict(shape=SHAPE), dict(shape=NOT_SHAPE)),
    cost.op_recomputed: (dict(shape=SHAPE), dict(shape=NOT_SHAPE)),
    cost.embedding_params: (dict(vocab_size=51200, d_model=4096, seq_len=2048, tied=True),
                            dict(vocab_size=NOT_INT1, d_model=NOT_INT1, seq_len=_not_int(0),
                                 tied=NOT_BOOL)),
    cost.layer_gemms: (dict(shape=MOE, tokens=4096, tp=2, ep=4, capacity_factor=1.0),
                       dict(shape=NOT_SHAPE, tokens=NOT_INT1, tp=NOT_INT1, ep=NOT_INT1)),
    cost.layer_elementwise: (dict(shape=SHAPE, tokens=4096, tp=4, sequence_parallel=True,
                                  eager=True),
                             dict(shape=NOT_SHAPE, tokens=NOT_INT1, tp=NOT_INT1,
                                  sequence_parallel=NOT_BOOL, eager=NOT_BOOL)),
    cost.logits_gemm: (dict(tokens=4096, d_model=4096, vocab_size=32000, tp=8),
                       dict(tokens=NOT_INT1, d_model=NOT_INT1, vocab_size=NOT_INT1, tp=NOT_INT1)),
    cost.gemm_quantization: (dict(m=4096, n=1536, sms=132, count=2),
                             dict(m=NOT_INT1, n=NOT_INT1, sms=NOT_INT1, count=NOT_INT1)),
    cost.gemm_time: (dict(m=4096, n=1536, k=12288, peak_flops=989e12, hbm_bandwidth=3.35e12,
                          sms=132, gemm_efficiency=0.7, memory_efficiency=0.6, count=1,
                          bytes_per_value=2),
                     dict(m=NOT_INT1, n=NOT_INT1, k=NOT_INT1, peak_flops=NOT_POS,
                          hbm_bandwidth=NOT_POS, sms=NOT_INT1, gemm_efficiency=NOT_SHARE,
                          memory_efficiency=NOT_SHARE, count=NOT_INT1, bytes_per_value=NOT_POS)),
    cost.elementwise_bytes: (dict(op="norm", elements=1e6, backward=True),
                             dict(op=_not_in(tuple(cost.ELEMENTWISE)), elements=NOT_NONNEG,
                                  backward=NOT_BOOL)),
    cost.loss_bytes: (dict(kind="megatron", logits=1e6, backward=True),
                      dict(kind=_not_in(tuple(cost.LOSS_KERNELS)), logits=NOT_NONNEG,
                           backward=NOT_BOOL)),
    cost.attention_flops: (dict(micro_batch=1, seq_q=2048, seq_k=8192, n_heads=16, head_dim=128,
                                causal=True),
                           dict(micro_batch=NOT_INT1, seq_q=NOT_INT1, seq_k=NOT_INT1,
                                n_heads=NOT_INT1, head_dim=NOT_INT1, causal=NOT_BOOL)),
    cost.attention_time: (dict(micro_batch=1, seq_q=2048, seq_k=2048, n_heads=16, head_dim=128,
                               peak_flops=312e12, hbm_bandwidth=2e12, sms=108,
                               gemm_efficiency=0.7, memory_efficiency=0.6,
                               attention_efficiency=0.5, kind="materialized", dropout=True,
                               flops_per_exp=512.0, reference_flops_per_exp=256.0,
                               dropout_factor=1.2),
                          dict(micro_batch=NOT_INT1, seq_q=NOT_INT1, seq_k=NOT_INT1,
                               n_heads=NOT_INT1, head_dim=NOT_INT1, peak_flops=NOT_POS,
                               hbm_bandwidth=NOT_POS, sms=NOT_INT1,
                               gemm_efficiency=NOT_SHARE, memory_efficiency=NOT_SHARE,
                               kind=_not_in(cost.ATTENTION), dropout=NOT_BOOL,
                               flops_per_exp=_without_none(NOT_POS),
                               reference_flops_per_exp=_without_none(NOT_POS),
                               dropout_factor=NOT_POS)),
    cost.softmax_exp_factor: (dict(head_dim=128, flops_per_exp=512.0,
                                   reference_flops_per_exp=256.0, backward=True),
                              dict(head_dim=NOT_INT1, flops_per_exp=_without_none(NOT_POS),
                                   reference_flops_per_exp=_without_none(NOT_POS),
                                   backward=NOT_BOOL)),
    cost.members_per_domain: (dict(size=16, stride=2, domain=8),
                              dict(size=NOT_INT1, stride=NOT_INT1, domain=NOT_INT1)),
    cost.group_bandwidth: (dict(op="all_reduce", size=16, stride=1, domain=8,
                                intra_bandwidth=300e9, nic_bandwidth=25e9, nics_per_gpu=0.5),
                           dict(op=_not_in(cost.COLLECTIVES), size=NOT_INT1, stride=NOT_INT1,
                                domain=NOT_INT1, intra_bandwidth=NOT_POS,
                                nic_bandwidth=NOT_POS, nics_per_gpu=NOT_POS)),
    cost.group_collective_time: (dict(op="all_to_all", nbytes=1e8, size=32, stride=1, domain=8,
                                      intra_bandwidth=300e9, intra_alpha=1e-6,
                                      nic_bandwidth=25e9, nic_alpha=5e-6, nics_per_gpu=1.0),
                                 dict(nbytes=NOT_NONNEG, size=NOT_INT1, stride=NOT_INT1,
                                      domain=NOT_INT1, intra_bandwidth=NOT_POS,
                                      intra_alpha=NOT_NONNEG, nic_bandwidth=NOT_POS,
                                      nic_alpha=NOT_NONNEG, nics_per_gpu=NOT_POS)),
    cost.moe_dispatch_time: (dict(tokens=4096.0, d_model=4096, n_experts=128, top_k=8, ep=32,
                                  domain=8, intra_bandwidth=351e9, intra_alpha=1e-6,
                                  nic_bandwidth=48e9, nic_alpha=1e-6, nics_per_gpu=1.0,
                                  dedup=True, bytes_per_value=2),
                             dict(tokens=NOT_NONNEG, d_model=NOT_INT1, top_k=NOT_INT1,
                                  ep=NOT_INT1, intra_bandwidth=NOT_POS, nic_bandwidth=NOT_POS,
                                  nics_per_gpu=NOT_POS, dedup=NOT_BOOL,
                                  bytes_per_value=NOT_POS)),
    cost.moe_remote_copies: (dict(n_experts=128, top_k=8, ep=32, members_per_domain=8,
                                  dedup=True),
                             dict(n_experts=NOT_INT1, top_k=_not_int(1, 128), ep=NOT_INT1,
                                  members_per_domain=NOT_INT1, dedup=NOT_BOOL)),
    cost.fine_grained_experts: (dict(n_experts=16, top_k=2, d_ff=1024, segments=4, n_shared=1),
                                dict(n_experts=NOT_INT1, top_k=_not_int(1, 16), d_ff=NOT_INT1,
                                     segments=NOT_INT1, n_shared=_not_int(0, 7))),
    cost.expert_choice_coverage: (dict(n_experts=8, capacity_factor=2.0, max_experts=2),
                                  dict(n_experts=NOT_INT1, capacity_factor=NOT_POS,
                                       max_experts=_not_int(1, 8))),
    cost.grouped_gemm_rows: (dict(counts=[3, 0, 9, 4], capacity=5, block=4),
                             dict(counts=st.sampled_from([None, [], 3, [1, -1], [1.5], [True]]),
                                  capacity=_without_none(_not_int(0)),
                                  block=_without_none(NOT_INT1))),
    cost.grouped_gemm_flops: (dict(counts=[3, 0, 9, 4], d_model=64, d_ff=256, capacity=5, block=4,
                                   gated=True, training=False),
                              dict(counts=st.sampled_from([None, [], [1, -1]]), d_model=NOT_INT1,
                                   d_ff=NOT_INT1, capacity=_without_none(_not_int(0)),
                                   block=_without_none(NOT_INT1), gated=NOT_BOOL,
                                   training=NOT_BOOL)),
    cost.Device: (dict(peak_flops=989e12, hbm_bandwidth=3.35e12, sms=132, gemm_efficiency=0.7,
                       attention_efficiency=0.3, memory_efficiency=0.6, fp8_flops=1979e12),
                  dict(peak_flops=NOT_POS, hbm_bandwidth=NOT_POS, sms=NOT_INT1,
                       gemm_efficiency=NOT_SHARE, attention_efficiency=NOT_SHARE,
                       memory_efficiency=NOT_SHARE, fp8_flops=_without_none(NOT_POS))),
    cost.layer_time: (dict(shape=MOE, micro_batch=2, seq_len=2048, device=H100, tp=2, cp=2,
                           ep=4, sequence_parallel=True, recompute="selective",
                           attention="fused", fp8=True, capacity_factor=1.0, eager=True),
                      dict(shape=NOT_SHAPE, micro_batch=NOT_INT1, seq_len=NOT_INT1,
                           device=NOT_SHAPE, tp=NOT_INT1, cp=NOT_INT1, ep=NOT_INT1,
                           sequence_parallel=NOT_BOOL, recompute=_not_in(cost.RECOMPUTE_KINDS),
                           attention=_not_in(cost.ATTENTION), fp8=NOT_BOOL, eager=NOT_BOOL)),
    cost.logits_time: (dict(tokens=4096, d_model=4096, vocab_size=32000, device=H100, tp=8,
                            loss="torch"),
                       dict(tokens=NOT_INT1, d_model=NOT_INT1, vocab_size=NOT_INT1,
                            device=NOT_SHAPE, tp=NOT_INT1, loss=_not_in(tuple(cost.LOSS_KERNELS)))),
    cost.optimizer_time: (dict(n_params=7e9, device=H100),
                          dict(n_params=NOT_COUNT, device=NOT_SHAPE)),
    cost.pipeline_p2p_time: (dict(micro_batch=1, seq_len=2048, d_model=4096, p=8, m=32,
                                  alpha=1e-6, bandwidth=25e9, v=2, tp=8, scatter_gather=True,
                                  bytes_per_value=2),
                             dict(micro_batch=NOT_INT1, seq_len=NOT_INT1, d_model=NOT_INT1,
                                  p=NOT_INT1, m=NOT_INT1, alpha=NOT_NONNEG, bandwidth=NOT_POS,
                                  v=NOT_INT1, tp=NOT_INT1, scatter_gather=NOT_BOOL,
                                  bytes_per_value=NOT_POS)),
    cost.dp_grad_sync: (dict(n_params=1.7e9, dp=32, alpha=1e-6, bandwidth=25e9, stage=1,
                             grad_bytes=2, backward_s=1.0, overlap=True),
                        dict(n_params=NOT_COUNT, dp=NOT_INT1, alpha=NOT_NONNEG,
                             bandwidth=NOT_POS, stage=NOT_STAGE, grad_bytes=NOT_NONNEG,
                             backward_s=NOT_NONNEG, overlap=NOT_BOOL)),
    cost.offload_exposed: (dict(layer_bytes=2e9, offloaded=40, layers=80, bandwidth=350e9,
                                forward_s=0.01, backward_s=0.02),
                           dict(layer_bytes=NOT_NONNEG, offloaded=_not_int(0), layers=NOT_INT1,
                                bandwidth=NOT_POS, forward_s=NOT_NONNEG, backward_s=NOT_NONNEG)),
    cost.chunked_sync_exposed: (dict(sync_s=1.0, stage_s=0.5, v=4, p=8),
                                dict(sync_s=NOT_NONNEG, stage_s=NOT_NONNEG, v=NOT_INT1,
                                     p=NOT_INT1)),
    cost.interleaved_peak_activations: (dict(p=8, m=32, v=2),
                                        dict(p=NOT_INT1, m=NOT_INT1, v=NOT_INT1)),
    cost.data_parallel_degree: (dict(n_gpus=3072, tp=8, pp=64, cp=1),
                                dict(n_gpus=NOT_INT1, tp=NOT_INT1, pp=NOT_INT1, cp=NOT_INT1)),
    cost.nccl_latency: (dict(op="all_reduce", n=64, nodes=8, algorithm="tree", hop_intra=1e-6,
                             hop_inter=1e-5),
                        dict(op=_not_in(cost.COLLECTIVES), n=NOT_INT1, nodes=NOT_INT1,
                             algorithm=_not_in(cost.ALGORITHMS), hop_intra=NOT_NONNEG,
                             hop_inter=NOT_NONNEG)),
    cost.nccl_collective_time: (dict(op="all_reduce", nbytes=1e6, n=64, nodes=8, bus_bw=1e11,
                                     hop_intra=1e-6, hop_inter=1e-5, algorithm=None),
                                dict(op=_not_in(cost.COLLECTIVES), nbytes=NOT_NONNEG,
                                     n=NOT_INT1, nodes=NOT_INT1, bus_bw=NOT_POS,
                                     hop_intra=NOT_NONNEG, hop_inter=NOT_NONNEG)),
    cost.network_scaling: (dict(nodes=16), dict(nodes=NOT_INT1)),
    cost.fsdp_unit_messages: (dict(impl="deepspeed2021", matrices=4),
                              dict(impl=_not_in(cost.FSDP_IMPLS), matrices=NOT_INT1)),
    cost.fsdp_unit_exposed: (dict(gather_s=1.0, reduce_s=1.0, forward_s=0.5, backward_s=1.0,
                                  impl="fsdp2", backward_gather=True, reduce=True),
                             dict(gather_s=NOT_NONNEG, reduce_s=NOT_NONNEG,
                                  forward_s=NOT_NONNEG, backward_s=NOT_NONNEG,
                                  impl=_not_in(cost.FSDP_IMPLS), backward_gather=NOT_BOOL,
                                  reduce=NOT_BOOL)),
    cost.fsdp_step_exposed: (dict(gather_s=1.0, reduce_s=1.0, forward_s=0.5, backward_s=1.0,
                                  layers=4, micro_batches=2, impl="fsdp2", keep_unsharded=True),
                             dict(gather_s=NOT_NONNEG, reduce_s=NOT_NONNEG, layers=NOT_INT1,
                                  micro_batches=NOT_INT1, impl=_not_in(cost.FSDP_IMPLS),
                                  keep_unsharded=NOT_BOOL)),
    cost.fsdp_accumulation: (dict(unit_bytes=1e9, layers=4, micro_batches=8,
                                  keep_unsharded=True, param_bytes=2, grad_bytes=2),
                             dict(unit_bytes=NOT_NONNEG, layers=NOT_INT1,
                                  micro_batches=NOT_INT1, keep_unsharded=NOT_BOOL,
                                  param_bytes=NOT_POS, grad_bytes=NOT_NONNEG)),
}
BAD = [pytest.param(f, arg, id=f"{getattr(f, '__qualname__', f)}-{arg}")
       for f, (_, bad) in CASES.items() for arg in bad]


def test_every_public_function_is_covered():
    public = {getattr(cost, n) for n in cost.__all__ if callable(getattr(cost, n))}
    covered = set(CASES) | {cost.AlphaBetaFit.predict, cost.fit_alpha_beta}
    covered = {getattr(f, "__func__", f) for f in covered}
    assert public <= covered, public - covered


@pytest.mark.parametrize("func, arg", BAD)
@settings(max_examples=12, deadline=None, database=None)
@given(data=st.data())
def test_invalid_argument_is_a_value_error_naming_it(func, arg, data):
    valid, bad = CASES[func]
    func(**valid)  # the base case is valid
    value = data.draw(bad[arg], label=arg)
    with pytest.raises(ValueError, match=re.escape(arg) + "="):
        func(**(valid | {arg: value}))


@FAST
@given(st.integers(2, 8), st.integers(0, 7), st.sampled_from(["sizes", "times"]),
       st.one_of(NOT_NONNEG, st.just(0.0)))
def test_fit_alpha_beta_rejects_each_bad_point(n, i, which, value):
    xs, ys = [float(2 ** k) for k in range(n)], [1e-5 + 2 ** k / 1e9 for k in range(n)]
    i %= n
    if which == "sizes" and value == 0.0:
        value = -0.5  # zero is a valid size
    (xs if which == "sizes" else ys)[i] = value
    with pytest.raises(ValueError, match=re.escape(f"{which}[{i}]=")):
        cost.fit_alpha_beta(xs, ys)


def test_tp_must_divide_n_heads():
    with pytest.raises(ValueError, match=r"tp=3 must divide n_heads=32"):
        cost.activation_memory(2048, 1, 4096, 32, 32, tp=3)
