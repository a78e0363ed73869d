"""cost.kernels, cost.transformer, cost.network, cost.step: GEMMs by shape, attention fused
or materialized, a layer counted (parameters, FLOPs, activations: Korthikanti's and the
published counts), collectives over NVLink or a node's cards, a layer's time on one GPU."""

import math

import pytest

from parlab import cost

A100 = cost.Device(312e12, 2.039e12, 108, 0.7, 0.32, 0.6)
H100 = cost.Device(989.5e12, 3.35e12, 132, 0.7, 0.32, 0.6, 1979e12)
GPT3 = cost.LayerShape(12288, 96)
LLAMA70 = cost.LayerShape(8192, 64, 8, d_ff=28672, mlp="swiglu", biases=False, dropout=False,
                          rope=True)


# --- kernels ------------------------------------------------------------------------------

def test_gemm_quantization_by_hand():
    assert cost.gemm_quantization(128 * 12, 128 * 9, 108) == 1.0  # 108 tiles: one full wave
    # 109 tiles of 128x128 need a second wave of one tile: 109 / 216 -- unless a 128x256
    # tiling does better (55 tiles, one wave of 108: padding 109*128*128 / (55*128*256))
    q = cost.gemm_quantization(128 * 109, 128, 108)
    assert q == pytest.approx(max(109 / 216, 109 / 110 * 55 / 108, 109 / 110 * 55 / 108))
    assert cost.gemm_quantization(129, 128, 1) == pytest.approx(129 / 256)  # padding only
    assert 0 < cost.gemm_quantization(2048, 1536, 132) <= 1


def test_gemm_time_is_the_roofline_of_compute_and_traffic():
    m = n = k = 8192  # compute-bound: 2 m n k / (peak x 0.7 x quantization)
    t = cost.gemm_time(m, n, k, 1e15, 3e12, 128, 0.7, 0.6)
    assert t == pytest.approx(2 * m * n * k / (1e15 * 0.7 * cost.gemm_quantization(m, n, 128)))
    # QK^T with k = d_head = 64: 2 m n k FLOPs but (m k + k n + m n) 2 bytes -> memory-bound
    t = cost.gemm_time(4096, 4096, 64, 1e15, 3e12, 128, 0.7, 0.6)
    assert t == pytest.approx((2 * 4096 * 64 + 4096 ** 2) * 2 / (3e12 * 0.6))


def test_attention_fused_vs_materialized():
    fused = cost.attention_time(1, 4096, 4096, 32, 128, 989.5e12, 3.35e12, 132, 0.7, 0.6, 0.3)
    flops = 4 * 4096 * 4096 * 32 * 128 / 2  # QK^T and AV, the causal half
    assert cost.attention_flops(1, 4096, 4096, 32, 128) == flops
    assert fused["forward"] == pytest.approx(flops / (989.5e12 * 0.3))
    assert fused["backward"] == pytest.approx(2.5 * fused["forward"])  # 5 matmuls against 2
    mat = cost.attention_time(1, 4096, 4096, 32, 128, 989.5e12, 3.35e12, 132, 0.7, 0.6, 0.3,
                              "materialized", dropout=True)
    scores = 32 * 4096 * 4096
    traffic = (cost.elementwise_bytes("softmax", scores) + cost.elementwise_bytes(
        "attn_dropout", scores)) / (3.35e12 * 0.6)
    assert mat["forward"] > traffic  # the scores' traffic alone, plus the batched GEMMs
    assert mat["forward"] > fused["forward"]  # at 4096 tokens materializing costs more


def test_dropout_in_a_fused_kernel_costs_its_measured_factor():
    # a fused kernel with dropout: its time x dropout_factor, forward and backward; without
    # dropout, or materialized (whose dropout is its own pass over the scores), no change
    args = (1, 4096, 4096, 32, 128, 989.5e12, 3.35e12, 132, 0.7, 0.6, 0.3)
    plain = cost.attention_time(*args)
    drop = cost.attention_time(*args, dropout=True, dropout_factor=1.3)
    assert cost.attention_time(*args, dropout=True) == plain  # unmeasured: priced free
    for k in ("forward", "backward"):
        assert drop[k] == pytest.approx(1.3 * plain[k])
    assert cost.attention_time(*args, dropout_factor=1.3) == plain
    mat = [cost.attention_time(*args, "materialized", True, dropout_factor=f) for f in (1.0, 1.3)]
    assert mat[0] == mat[1]
    # a Device carries it into a layer's time: GPT-3's layer (dropout) slows, Llama's does not
    dev = cost.Device(989.5e12, 3.35e12, 132, 0.7, 0.3, 0.6, attention_dropout_factor=1.3)
    bare = cost.Device(989.5e12, 3.35e12, 132, 0.7, 0.3, 0.6)
    gpt3 = cost.LayerShape(4096, 32)
    assert gpt3.dropout and not LLAMA70.dropout
    t, t0 = (cost.layer_time(gpt3, 1, 4096, d)["attention_forward"] for d in (dev, bare))
    assert t == pytest.approx(1.3 * t0)
    t, t0 = (cost.layer_time(LLAMA70, 1, 8192, d, tp=8)["attention_forward"] for d in (dev, bare))
    assert t == t0
    with pytest.raises(ValueError, match="attention_dropout_factor="):
        cost.Device(989.5e12, 3.35e12, 132, 0.7, 0.3, 0.6, attention_dropout_factor=0.0)


def test_softmax_exponentials_against_the_matmuls():
    # FA3 (§3.1): an H100's 989 TFLOP/s of matmul against 3.9 T exponentials/s, 512 matmul
    # FLOPs an exponential forward at d = 128 -> the exponentials take about half the matmuls'
    # time ("50% of the cycle"); backward spends 10 d FLOPs an exponential
    hopper = 989.5 / 3.87
    assert hopper == pytest.approx(256, rel=0.01)
    same = cost.softmax_exp_factor(128, 256.0, 256.0)
    assert same == 1.0 and cost.softmax_exp_factor(128, None, 256.0) == 1.0
    assert cost.softmax_exp_factor(128, 512.0, None, backward=True) == 1.0
    # Blackwell: twice the matmul a clock per SM, the same 16 exponentials -> slower than the
    # H200 the share was measured on, forward (1 + 1) / (1 + 0.5) and backward (1.4 / 1.2)
    assert cost.softmax_exp_factor(128, 512.0, 256.0) == pytest.approx(2 / 1.5)
    assert cost.softmax_exp_factor(128, 512.0, 256.0, backward=True) == pytest.approx(1.4 / 1.2)
    # a wider head spends more matmul per exponential: the SFU matters less
    assert 1 < cost.softmax_exp_factor(256, 512.0, 256.0) < cost.softmax_exp_factor(64, 512.0,
                                                                                   256.0)
    # Ampere's 128 against Hopper's 256: faster than the share says (the direction matters:
    # planted, the ratios swapped give the Blackwell answer for an A100)
    assert cost.softmax_exp_factor(128, 128.0, 256.0) == pytest.approx(1.25 / 1.5)
    assert cost.softmax_exp_factor(128, 256.0, 128.0) > 1
    fused = cost.attention_time(1, 4096, 4096, 32, 128, 2250e12, 8e12, 148, 0.7, 0.6, 0.3,
                                flops_per_exp=512.0, reference_flops_per_exp=256.0)
    flops = 4 * 4096 * 4096 * 32 * 128 / 2
    assert fused["forward"] == pytest.approx(flops / (2250e12 * 0.3) * 2 / 1.5)
    assert fused["backward"] == pytest.approx(2.5 * flops / (2250e12 * 0.3) * 1.4 / 1.2)
    # a materialized softmax runs on the HBM's time, not the fused kernel's SFU balance
    mat = [cost.attention_time(1, 4096, 4096, 32, 128, 2250e12, 8e12, 148, 0.7, 0.6, 0.3,
                               "materialized", flops_per_exp=r, reference_flops_per_exp=256.0)
           for r in (512.0, 256.0)]
    assert mat[0] == mat[1]
    # a Device carries both balances into a layer's time
    dev = cost.Device(2250e12, 8e12, 148, 0.7, 0.3, 0.6, 4500e12, 512.0, 256.0)
    bare = cost.Device(2250e12, 8e12, 148, 0.7, 0.3, 0.6, 4500e12)
    t, t0 = (cost.layer_time(LLAMA70, 1, 8192, d, tp=8)["attention_forward"] for d in (dev, bare))
    assert t == pytest.approx(t0 * cost.softmax_exp_factor(128, 512.0, 256.0))
    with pytest.raises(ValueError, match="flops_per_exp="):
        cost.Device(2250e12, 8e12, 148, 0.7, 0.3, 0.6, 4500e12, -1.0)


# --- a layer, counted ---------------------------------------------------------------------

def test_layer_params_gpt_and_released_models():
    h = 12288
    assert cost.layer_params(GPT3)["total"] == 12 * h * h + 13 * h  # Narayanan et al. Eq. 2
    # Llama 3 70B: 80 layers + untied 128256-token tables = 70.55B (the released checkpoint)
    llama = cost.LayerShape(8192, 64, 8, d_ff=28672, mlp="swiglu", biases=False, dropout=False)
    n = 80 * cost.layer_params(llama)["total"] + cost.embedding_params(128256, 8192, tied=False) + 8192
    assert n == 70_553_706_496
    mixtral = cost.LayerShape(4096, 32, 8, d_ff=14336, mlp="swiglu", n_experts=8, top_k=2,
                              biases=False, dropout=False)
    p = cost.layer_params(mixtral)
    total = 32 * p["total"] + cost.embedding_params(32000, 4096, tied=False) + 4096
    assert total == cost.moe_params(32, 4096, 14336, 8, 2, 32, 8, 32000, gated=True)["total"]


@pytest.mark.parametrize("tp, sp, recompute", [(1, False, "none"), (8, False, "none"),
                                               (8, True, "none"), (8, True, "selective"),
                                               (8, False, "full"), (4, True, "full")])
def test_a_gpt_layer_shape_is_korthikanti_s_layer(tp, sp, recompute):
    got = cost.activation_memory(2048, 2, recompute=recompute, tp=tp, sequence_parallel=sp,
                                 layer=GPT3, attention="materialized")
    assert got == cost.activation_memory(2048, 2, 12288, 96, 1, recompute, tp, sp)


def test_activation_memory_fused_gqa_and_selective():
    def act(recompute, attention):
        return cost.activation_memory(4096, 1, recompute=recompute, tp=8, sequence_parallel=True,
                                      layer=LLAMA70, attention=attention)
    full, sel, mat = act("none", "fused"), act("selective", "fused"), act("none", "materialized")
    assert mat - full == pytest.approx(4096 * (2 * 64 * 4096 / 8 - 4 * 64 / 8))  # scores vs stats
    # selective with a fused kernel: the norms' outputs (4h / t) and fc2's input (2f / t)
    assert full - sel == pytest.approx(4096 * (4 * 8192 + 2 * 28672) / 8)


def test_model_and_hardware_flops_are_the_published_counts():
    # Narayanan et al.'s per-iteration count, 72 (96 with full recomputation) B s l h^2 (...)
    B, s, L, h, V = 1536, 2048, 96, 12288, 51200
    layer = {"none": 72 * h * h + 12 * s * h, "selective": 72 * h * h + 16 * s * h,
             "full": 96 * h * h + 16 * s * h}
    for rec in ("none", "selective", "full"):
        per = cost.flops_per_token(GPT3, L, s, vocab_size=V, count="megatron", recompute=rec)
        assert per == L * layer[rec] + 6 * h * V
        assert per * (B * s) == pytest.approx(
            B * s * L * h * h * (96 if rec == "full" else 72)
            * (1 + s / (6 * h) + V / ((16 if rec == "full" else 12) * L * h))
            + (4 * B * s * s * h * L if rec == "selective" else 0), rel=1e-12)
    # Qwen3-235B-A22B on 256 H100: 19.7 s per step of 2048 x 4096 tokens was published as
    # 245 TFLOP/s per GPU: Megatron's count with the causal half of the attention
    qwen = cost.LayerShape(4096, 64, 4, 128, 12288, "swiglu", 128, 8, 1536, biases=False,
                           dropout=False)
    per = cost.flops_per_token(qwen, 94, 4096, vocab_size=151936, count="megatron", causal=True)
    assert per * 2048 * 4096 / (19.7 * 256) / 1e12 == pytest.approx(245, rel=0.01)


def test_layer_gemms_split_over_tp_and_experts():
    g = dict((n, (m, nn, k, c)) for n, m, nn, k, c in cost.layer_gemms(GPT3, 2048, 8))
    assert g["qkv"] == (2048, 3 * 12288 // 8, 12288, 1) and g["fc2"] == (2048, 12288, 6144, 1)
    moe = cost.LayerShape(4096, 32, 8, d_ff=14336, mlp="swiglu", n_experts=8, top_k=2)
    e = {n: (m, nn, k, c) for n, m, nn, k, c in cost.layer_gemms(moe, 4096, 1, 4)}
    assert e["expert_fc1"] == (4096 * 4 * 2 // 8, 2 * 14336, 4096, 2)  # 2 local experts
    with pytest.raises(ValueError, match="ep=3"):
        cost.layer_gemms(moe, 4096, 1, 3)


# --- the network --------------------------------------------------------------------------

def test_rings_use_every_card_all_to_all_one():
    nv, card = 234e9, 24e9
    assert cost.members_per_domain(8, 1, 8) == 8 and cost.members_per_domain(16, 1, 8) == 8
    assert cost.members_per_domain(64, 8, 8) == 1  # a DP group across nodes: one per node
    # TP 16 over two DGX nodes: the 8 members of a node drive its 8 cards (nccl#812)
    assert cost.group_bandwidth("all_reduce", 16, 1, 8, nv, card) == 8 * card
    assert cost.group_bandwidth("all_reduce", 64, 8, 8, nv, card) == card
    assert cost.group_bandwidth("all_reduce", 16, 1, 8, nv, card, 0.5) == 4 * card  # 4 cards
    assert cost.group_bandwidth("all_to_all", 16, 1, 8, nv, card) == card  # nccl-tests#267
    assert cost.group_bandwidth("all_reduce", 64, 1, 72, nv, card) == nv  # inside an NVL72 rack
    S = 1e9
    a2a = cost.group_collective_time("all_to_all", S, 16, 1, 8, nv, 0.0, card, 0.0)
    assert a2a == pytest.approx(S * 8 / 16 / card)  # half the buffer leaves the node
    ring = cost.group_collective_time("all_gather", S, 16, 1, 8, nv, 0.0, card, 0.0)
    # across nodes NCCL's base latency (8.4 us, its tuning model) and its hops (at least its
    # NVLink hop, 3.4 us, per step) come on top
    hop = cost.NCCL_HOP_US["ring"]["nvlink"] * 1e-6
    lat = cost.NCCL_BASE_US["ring"] * 1e-6 + cost.nccl_latency("all_gather", 16, 2, "ring", hop, hop)
    assert ring == pytest.approx(lat + S * 15 / 16 / (8 * card))


def test_moe_dispatch_dedup_sends_a_token_once_per_node():
    assert cost.moe_remote_copies(128, 8, 32, 8) == 8 * 24 / 32
    assert cost.moe_remote_copies(4, 2, 4, 2, dedup=True) == pytest.approx(5 / 6)
    dedup = cost.moe_remote_copies(128, 8, 32, 8, dedup=True)
    assert 2 < dedup < 3 < 8 * 24 / 32
    args = (4096.0, 4096, 128, 8, 32, 8, 351e9, 1e-6, 48e9, 1e-6)
    assert cost.moe_dispatch_time(*args, dedup=True) < cost.moe_dispatch_time(*args)


def test_moe_dispatch_dedup_sends_a_token_once_per_rank():
    # DeepEP marks whether a token goes to a rank (is_token_in_rank): inside one NVLink domain
    # a token reaches each rank holding any of its experts once. Qwen3-30B-A3B on 8 GPUs
    # (128 experts, top 8): 4.67 other ranks, against 7 copies for a plain all-to-all
    p = 1 - math.comb(112, 8) / math.comb(128, 8)  # a rank holds 16 of the 128 experts
    assert cost.moe_remote_copies(128, 8, 8, 1, dedup=True) == pytest.approx(7 * p)
    assert 7 * p == pytest.approx(4.67, abs=0.01)
    T, h, nv = 4096.0, 2048, 351e9
    one = (T, h, 128, 8, 8, 8, nv, 0.0, 48e9, 0.0)
    plain, dedup = cost.moe_dispatch_time(*one), cost.moe_dispatch_time(*one, dedup=True)
    assert plain == pytest.approx(T * 7 * h * 2 / nv)  # 7 of 8 copies leave the GPU
    assert dedup == pytest.approx(T * 7 * p * h * 2 / nv)
    # across domains: one network copy a domain, then NVLink to each other rank hit there and
    # in the token's own domain: D (m - 1) p over NVLink (slow NVLink here, so it is the limit)
    p32 = 1 - math.comb(124, 8) / math.comb(128, 8)  # 4 experts a rank, EP 32
    slow_nv = (T, h, 128, 8, 32, 8, 1e9, 0.0, 1e12, 0.0)
    assert cost.moe_dispatch_time(*slow_nv, dedup=True) == pytest.approx(
        T * 4 * 7 * p32 * h * 2 / 1e9)
    assert cost.moe_dispatch_time(*slow_nv) == pytest.approx(T * 8 * 7 / 32 * h * 2 / 1e9)
    assert cost.moe_dispatch_time(T, h, 128, 8, 1, 8, nv, 0.0, 48e9, 0.0, dedup=True) == 0.0


# --- a layer's time ------------------------------------------------------------------------

def test_layer_time_parts_add_up():
    lt = cost.layer_time(LLAMA70, 1, 4096, H100, tp=8, sequence_parallel=True)
    assert lt["recompute"] == 0 and lt["backward"] > 2 * lt["gemm_forward"]
    assert sum(lt["parts"].values()) == pytest.approx(lt["forward"] + lt["backward"])
    full = cost.layer_time(LLAMA70, 1, 4096, H100, tp=8, sequence_parallel=True, recompute="full")
    assert full["backward"] == pytest.approx(lt["backward"] + lt["forward"])
    sel = cost.layer_time(LLAMA70, 1, 4096, H100, tp=8, sequence_parallel=True,
                          recompute="selective")
    assert 0 < sel["recompute"] < 0.1 * lt["forward"]  # norms and the activation only
    fp8 = cost.layer_time(LLAMA70, 1, 4096, H100, tp=8, sequence_parallel=True, fp8=True)
    assert fp8["gemm_forward"] < 0.6 * lt["gemm_forward"]
    with pytest.raises(ValueError, match="fp8"):
        cost.layer_time(LLAMA70, 1, 4096, A100, fp8=True)
    two = cost.layer_time(LLAMA70, 2, 4096, H100, tp=8, sequence_parallel=True)
    assert 1.8 < (two["forward"] + two["backward"]) / (lt["forward"] + lt["backward"]) < 2.2


def test_the_loss_by_implementation():
    # bytes per logit as each implementation's code moves them (cost.kernels.LOSS_KERNELS):
    # one Triton kernel each way reads the 16-bit logits once forward, reads them and writes
    # the gradient backward; Megatron's unfused loss makes an fp32 copy and six passes
    k = cost.LOSS_KERNELS
    assert k["triton"] == (2, 4) and sum(k["megatron"]) == 52 and sum(k["torch"]) == 48
    assert sum(k["triton"]) < sum(k["megatron-jit"]) < sum(k["torch"]) < sum(k["megatron"])
    assert cost.loss_bytes("megatron", 10) == 380 and cost.loss_bytes("megatron", 10, True) == 140
    # the output layer's time grows by exactly the loss's extra bytes over the memory rate
    tokens, d, V, tp = 4096, 4096, 128256, 1
    fused, unfused = (cost.logits_time(tokens, d, V, H100, tp, loss)
                      for loss in ("triton", "megatron"))
    logits = tokens * V
    assert unfused - fused == pytest.approx((52 - 6) * logits / H100.memory_rate)
    # planted: a 128k-vocabulary loss unfused is a real share of a Llama 3 8B layer stack's step
    assert (unfused - fused) / unfused > 0.25
    with pytest.raises(ValueError, match="loss="):
        cost.logits_time(tokens, d, V, H100, tp, "fused")


def test_offloaded_copies_hide_behind_the_other_layers():
    # 40 of 80 layers' 2 GB each over 350 GB/s: 0.229 s each way, behind 79 layers' 10 ms
    # forward (0.79 s) and 20 ms backward: nothing shows; over 35 GB/s 2.29 s each way shows
    assert cost.offload_exposed(2e9, 40, 80, 350e9, 0.01, 0.02) == 0.0
    slow = cost.offload_exposed(2e9, 40, 80, 35e9, 0.01, 0.02)
    assert slow == pytest.approx((80e9 / 35e9 - 0.79) + (80e9 / 35e9 - 1.58))
    assert cost.offload_exposed(2e9, 0, 80, 35e9, 0.01, 0.02) == 0.0
    with pytest.raises(ValueError, match="offloaded=80"):
        cost.offload_exposed(2e9, 80, 80, 350e9, 0.01, 0.02)


def test_logits_and_optimizer():
    t = cost.logits_time(4096, 8192, 128256, H100, 8)
    gemm = H100.gemm(4096, 128256 // 8 + 1, 8192)
    assert t > 3 * gemm
    assert cost.optimizer_time(1e9, H100) == pytest.approx(30e9 / (3.35e12 * 0.6))
    assert math.isfinite(t)


LLAMA = cost.LayerShape(4096, 32, 8, d_ff=14336, mlp="swiglu", biases=False, dropout=False,
                        rope=True, norm="rmsnorm")


def test_eager_pytorch_runs_llamas_chains_an_op_at_a_time():
    eager = cost.layer_elementwise(LLAMA, 1000, eager=True)
    fused = cost.layer_elementwise(LLAMA, 1000)
    assert [o for o, _ in eager] == ["rmsnorm_eager", "residual_add", "rmsnorm_eager",
                                     "residual_add", "swiglu_eager", "rope_eager"]
    assert [n for _, n in eager] == [n for _, n in fused]  # the same elements, more passes
    # a GPT layer's LayerNorm and GeLU are one kernel each either way
    assert cost.layer_elementwise(GPT3, 1000, eager=True) == cost.layer_elementwise(GPT3, 1000)
    # RMSNorm at torchtitan 9dec370 (norms.py): x.float(), pow, mean, x * rsqrt, cast back,
    # * weight -- each reads and writes the whole tensor
    assert cost.ELEMENTWISE["rmsnorm_eager"][0] == (2 + 4) + (4 + 4) + 4 + (4 + 4) + (4 + 2) + (2 + 2)
    assert cost.ELEMENTWISE["rmsnorm_eager"][1] == 12 + 6 + 24 + 4 + 12 + 12 + 6 + 6
    # layer_time: the difference is those bytes over the memory rate, forward and backward
    t = {e: cost.layer_time(LLAMA, 1, 2048, H100, eager=e) for e in (False, True)}
    extra = {d: sum(cost.elementwise_bytes(o, n, d == "backward") for o, n in
                    cost.layer_elementwise(LLAMA, 2048, eager=True))
             - sum(cost.elementwise_bytes(o, n, d == "backward") for o, n in
                   cost.layer_elementwise(LLAMA, 2048)) for d in ("forward", "backward")}
    for d in ("forward", "backward"):
        assert t[True][d] - t[False][d] == pytest.approx(extra[d] / H100.memory_rate)
    assert extra["forward"] > 0 and extra["backward"] > 0
