"""Kernels on one GPU: how long a GEMM of a given shape takes, what the memory-bound
(elementwise) operators move, and attention computed fused or materialized.

GEMMs. A GEMM (m x k) @ (k x n) does 2 m n k FLOPs. cuBLAS cuts the output into tiles and
runs one tile per streaming multiprocessor (SM) at a time, so a shape pays twice for not
being a multiple of the machine: *tile quantization* (the last tile in each direction is
partly padding) and *wave quantization* (the last wave of tiles leaves SMs idle) -- NVIDIA,
"Matrix Multiplication Background User's Guide" (docs.nvidia.com/deeplearning/performance/
dl-performance-matrix-multiplication), §"Tile Quantization" and §"Wave Quantization". We take
the best of three common tile shapes (128x128, 128x256, 256x128), as cuBLAS picks one per
shape. The rest of the gap to the datasheet peak, which every large GEMM shows (the H200
runs 4096^3 at 79% of peak in ``gpu-report``), is ``gemm_efficiency``. A GEMM cannot run
faster than its own operands cross HBM either: time = max(compute, traffic) (the roofline,
Williams et al., CACM 2009), which is what makes attention's QK^T with k = d_head slow.

Elementwise operators do a few FLOPs per byte, so they run at memory speed: their time is
the bytes they read and write over ``memory_efficiency`` of the HBM bandwidth. ELEMENTWISE
lists the bytes per element of each operator of a Megatron-style layer, forward and
backward, 16-bit values and 1-byte dropout masks, as its fused kernels move them; and the
chains eager PyTorch runs for a Llama layer's RMSNorm, RoPE and SwiGLU, one kernel per op
(EAGER_OPS), which fused kernels and torch.compile make one.

The loss. Softmax cross-entropy over the vocabulary touches every logit, b x s x V / tp of
them, a few times: how many depends on the implementation a run used, from one Triton
kernel that reads the 16-bit logits once each way to PyTorch ops run one at a time on an fp32
copy. LOSS_KERNELS lists the bytes per logit of each, as the code at the commits named
there moves them; ``loss_bytes`` reads it.

Attention. Materialized (Megatron 2021-22: QK^T, scale-mask-softmax, dropout, AV): two
batched GEMMs per head over the whole s_q x s_k square plus the softmax's elementwise
traffic on it. Fused (FlashAttention, Dao et al. 2022; FlashAttention-2, Dao 2023, §3): the
scores never reach HBM; a causal kernel skips the blocks above the diagonal (half the
square), and its backward recomputes QK^T -- 5 matmuls against the forward's 2, so
backward = 2.5 x forward -- all at ``attention_efficiency`` of peak.

Domains: sizes and counts integers >= 1 (``count`` >= 0 where said); peaks, bandwidths and
efficiencies finite and > 0, efficiencies at most 1; ``bytes_per_value`` > 0.
"""

from __future__ import annotations

import math

from ..validate import check_bool, check_choice, check_float, check_int

GEMM_TILES = ((128, 128), (128, 256), (256, 128))
ATTENTION = ("fused", "materialized")
# a fused kernel's backward against its forward: 5 matmuls (QK^T recomputed) against 2
FUSED_BACKWARD = 2.5

# bytes moved per element (forward, backward) by the operators of a transformer layer,
# 16-bit values (2 B) and 1-byte masks; backward includes summing the residual stream's
# two gradients where the operator sits on it
ELEMENTWISE = {
    "norm": (4, 12),             # LayerNorm/RMSNorm: read x, write y | read x, dy, write dx; + grad add
    "bias_dropout_add": (7, 5),  # Megatron's fused kernel: read x, residual, write out + mask
    "residual_add": (6, 0),      # no dropout: read x, residual, write out | the gradient passes
    "bias_gelu": (4, 6),         # per element of d_ff: read, write | read input, dy, write dx
    "swiglu": (6, 10),           # per output element: read gate, up, write | read 3, write 2
    "rope": (4, 4),              # per element of q and k
    "softmax": (4, 6),           # per score (materialized only): fused scale-mask-softmax
    "attn_dropout": (5, 5),      # per score: read, write + mask | read dy, mask, write
    "moe_permute": (8, 8),       # per routed element: token permute + unpermute
    "fp8_cast": (3, 3),          # per element of an fp8 GEMM's input: read 2, write 1
    # Llama's chains as eager PyTorch runs them, one kernel per op (torchtitan 9dec370,
    # models/norms.py and models/llama/model.py; Hugging Face's LlamaRMSNorm is the same
    # chain): RMSNorm on an fp32 copy -- x.float() (2, 4), pow (4, 4), mean (4), x * rsqrt
    # (4, 4), cast back (4, 2), * weight (2, 2) | * weight and its gradient's product and sum
    # (12), cast (2, 4), the multiply's two gradients (8 + 16), the mean's expanded gradient
    # (4), pow's (12), their sum (12), cast back (4, 2), + the residual gradient (6)
    "rmsnorm_eager": (36, 82),
    # RoPE through complex numbers: float (2, 4), complex multiply (4, 4), cast back (4, 2);
    # backward the same three (per element of q and k)
    "rope_eager": (20, 20),
    # silu(w1 x) * w3 x: silu (2, 2), multiply (4, 2) | the multiply's two gradients (12),
    # silu's (4, 2) (per element of d_ff)
    "swiglu_eager": (10, 18),
}
# what each fused operator becomes in eager PyTorch (``layer_elementwise(..., eager=True)``);
# LayerNorm is one kernel (F.layer_norm) either way, a GPT's GeLU one op
EAGER_OPS = {"rmsnorm": "rmsnorm_eager", "rope": "rope_eager", "swiglu": "swiglu_eager"}

# The loss: bytes per logit (forward, backward) by implementation. The output GEMM writes the
# logits in 16 bits (2 B a value); an fp32 copy moves 4 B a value.
LOSS_KERNELS = {
    # one Triton kernel each way: Transformer Engine's parallel_cross_entropy (triton/
    # cross_entropy.py at 02965d2: an online softmax reads the logits once forward; backward
    # reads them again and writes the gradient over them), flash-attn's CrossEntropyLoss
    # (llm-foundry's MPT default) and torch.compile's fusion of F.cross_entropy alike
    "triton": (2, 4),
    # Megatron-Core's native fusion (fusions/fused_cross_entropy.py, jit_fuser, at f2e5db4):
    # the fp32 copy with its max (read 2, write 4), subtract-exp-sum in place (4, 4), the
    # divide (4, 4) | the gradient's multiply and cast back to 16 bits (4, 2)
    "megatron-jit": (22, 6),
    # Megatron's vocab_parallel_cross_entropy on output.float() one PyTorch op at a time, its
    # default without --cross-entropy-loss-fusion (2021 to 2024): cast (2, 4), max (4),
    # subtract (4, 4), exp (4, 4), sum (4), divide (4, 4) | multiply (4, 4), cast back (4, 2)
    "megatron": (38, 14),
    # PyTorch eager F.cross_entropy on fp32 logits: cast (2, 4), log_softmax over a row too
    # long for one block (max, sum of exp, then read and write: 16) | nll_loss's zeroed
    # gradient (4), log_softmax's backward (a sum over dy, then dy and y read, dx written:
    # 16), cast back (4, 2)
    "torch": (22, 26),
}


def _eff(name, value) -> float:
    return check_float(name, value, 0.0, high=1.0)


def gemm_quantization(m: int, n: int, sms: int, count: int = 1) -> float:
    """Share of the GPU's tile slots that ``count`` (m x n)-output GEMMs launched together
    fill: the best over GEMM_TILES of padding efficiency (m n over the tiles' area) times
    wave efficiency (tiles over sms x waves). 1 for shapes that fill every tile and wave."""
    m, n, sms, count = (check_int(k, v) for k, v in (("m", m), ("n", n), ("sms", sms),
                                                     ("count", count)))
    best = 0.0
    for tm, tn in GEMM_TILES:
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * count
        padding = m * n * count / (tiles * tm * tn)
        waves = math.ceil(tiles / sms)
        best = max(best, padding * tiles / (waves * sms))
    return best


def gemm_time(m: int, n: int, k: int, peak_flops: float, hbm_bandwidth: float, sms: int,
              gemm_efficiency: float, memory_efficiency: float, count: int = 1,
              bytes_per_value: float = 2) -> float:
    """Seconds of ``count`` (m x k) @ (k x n) GEMMs run as one batched kernel: the larger of
    2 m n k count / (peak x gemm_efficiency x ``gemm_quantization``) and their operands'
    and result's bytes, (m k + k n + m n) count x bytes_per_value, over memory_efficiency x
    the HBM bandwidth."""
    k = check_int("k", k)
    peak_flops = check_float("peak_flops", peak_flops, 0.0)
    hbm_bandwidth = check_float("hbm_bandwidth", hbm_bandwidth, 0.0)
    g = _eff("gemm_efficiency", gemm_efficiency)
    mem = _eff("memory_efficiency", memory_efficiency)
    bpv = check_float("bytes_per_value", bytes_per_value, 0.0)
    q = gemm_quantization(m, n, sms, count)
    compute = 2 * m * n * k * count / (peak_flops * g * q)
    traffic = (m * k + k * n + m * n) * count * bpv / (hbm_bandwidth * mem)
    return max(compute, traffic)


def elementwise_bytes(op: str, elements: float, backward: bool = False) -> float:
    """Bytes operator ``op`` of ELEMENTWISE moves over ``elements`` elements, forward (or
    backward)."""
    op = check_choice("op", op, tuple(ELEMENTWISE))
    elements = check_float("elements", elements, 0.0, strict=False)
    return ELEMENTWISE[op][1 if check_bool("backward", backward) else 0] * elements


def loss_bytes(kind: str, logits: float, backward: bool = False) -> float:
    """Bytes the loss implementation ``kind`` of LOSS_KERNELS moves over ``logits`` logits,
    forward (or backward)."""
    kind = check_choice("kind", kind, tuple(LOSS_KERNELS))
    logits = check_float("logits", logits, 0.0, strict=False)
    return LOSS_KERNELS[kind][1 if check_bool("backward", backward) else 0] * logits


def attention_flops(micro_batch: int, seq_q: int, seq_k: int, n_heads: int, head_dim: int,
                    causal: bool = True) -> float:
    """Forward matmul FLOPs of attention for ``n_heads`` heads: QK^T and AV, 2 x 2 b s_q s_k
    d_head each head -- halved when ``causal`` (a fused kernel skips the masked half)."""
    b, sq, sk = check_int("micro_batch", micro_batch), check_int("seq_q", seq_q), \
        check_int("seq_k", seq_k)
    a = check_int("n_heads", n_heads)
    d = check_int("head_dim", head_dim)
    return 4.0 * b * sq * sk * a * d * (0.5 if check_bool("causal", causal) else 1.0)


# matmul FLOPs a fused attention kernel runs per exponential, a score each: forward QK^T and
# PV (2 d each); backward recomputes the scores' exponentials once beside its five matmuls
# (S = QK^T again, dV, dP, dQ, dK: 10 d)
SOFTMAX_FLOPS_PER_EXP = {"forward": 4, "backward": 10}


def softmax_exp_factor(head_dim: int, flops_per_exp: float | None,
                       reference_flops_per_exp: float | None, backward: bool = False) -> float:
    """How much longer (>1) or shorter (<1) a fused attention kernel runs on a GPU than the
    attention share measured on the reference GPU says, from the two GPUs' balance of matmul
    and exponentials: ``flops_per_exp`` = the 16-bit matmul peak over the special-function
    units' exponential rate (FA3, Shah et al. 2024, §3.1: 989 / 3.9 = 254 on an H100; 512 on
    Blackwell, 256 on Blackwell Ultra: ``hardware.GPUSpec.flops_per_exp``). A kernel spends (SOFTMAX_FLOPS_PER_EXP x head_dim) matmul FLOPs
    per exponential, so its exponentials take rho = flops_per_exp / (4 d) of its matmuls'
    time forward (0.50 on an H100 at d = 128, FA3's "50% of the cycle"), / (10 d) backward.
    The factor is (1 + rho) / (1 + rho_reference): the exponentials added to the matmuls, none
    hidden -- FA3's ping-pong schedule and FA4 hide part of them, so this is the largest
    effect the SFU can have. 1 when either rate is unknown."""
    d = check_int("head_dim", head_dim)
    per = SOFTMAX_FLOPS_PER_EXP["backward" if check_bool("backward", backward) else "forward"] * d
    ratios = _exp_ratios(flops_per_exp, reference_flops_per_exp)
    if None in ratios:
        return 1.0
    return (1.0 + ratios[0] / per) / (1.0 + ratios[1] / per)


def _exp_ratios(flops_per_exp, reference_flops_per_exp) -> tuple:
    """The two balances, each a positive number or None (unknown)."""
    return tuple(None if v is None else check_float(name, v, 0.0)
                 for name, v in (("flops_per_exp", flops_per_exp),
                                 ("reference_flops_per_exp", reference_flops_per_exp)))


def attention_time(micro_batch: int, seq_q: int, seq_k: int, n_heads: int, head_dim: int,
                   peak_flops: float, hbm_bandwidth: float, sms: int, gemm_efficiency: float,
                   memory_efficiency: float, attention_efficiency: float,
                   kind: str = "fused", dropout: bool = False,
                   flops_per_exp: float | None = None,
                   reference_flops_per_exp: float | None = None,
                   dropout_factor: float = 1.0) -> dict:
    """Seconds of one attention core (n_heads heads on this GPU, queries seq_q, keys seq_k),
    {"forward", "backward"}. fused: ``attention_flops`` (causal) at attention_efficiency
    of peak, backward 2.5 x forward, each times ``softmax_exp_factor`` (this GPU's balance
    of matmul and exponentials against the reference GPU's, where attention_efficiency was
    measured) and, with dropout, ``dropout_factor``: the kernel then draws a random number
    per score inside it, and on Hopper FlashAttention-2 halves its key block (1 -- free --
    unless measured: ``gpu-report``'s attention_dropout section). materialized: QK^T and AV
    as ``count`` = b x heads batched GEMMs by ``gemm_time``, the scores' softmax (and
    dropout) by ELEMENTWISE; backward runs each GEMM twice (gradients of both operands)."""
    kind = check_choice("kind", kind, ATTENTION)
    b, sq, sk = check_int("micro_batch", micro_batch), check_int("seq_q", seq_q), \
        check_int("seq_k", seq_k)
    heads, d, sms = check_int("n_heads", n_heads), check_int("head_dim", head_dim), \
        check_int("sms", sms)
    peak = check_float("peak_flops", peak_flops, 0.0)
    mem = check_float("hbm_bandwidth", hbm_bandwidth, 0.0) * _eff("memory_efficiency",
                                                                   memory_efficiency)
    g, a = _eff("gemm_efficiency", gemm_efficiency), _eff("attention_efficiency",
                                                           attention_efficiency)
    dropout = check_bool("dropout", dropout)
    drop = check_float("dropout_factor", dropout_factor, 0.0) if dropout else 1.0
    ratios = _exp_ratios(flops_per_exp, reference_flops_per_exp)
    if kind == "fused":
        fwd = drop * attention_flops(b, sq, sk, heads, d) / (peak * a)
        return {"forward": fwd * softmax_exp_factor(d, *ratios),
                "backward": FUSED_BACKWARD * fwd * softmax_exp_factor(d, *ratios,
                                                                      backward=True)}
    count = b * heads
    args = (peak, hbm_bandwidth, sms, g, memory_efficiency, count)
    gemms = gemm_time(sq, sk, d, *args) + gemm_time(sq, d, sk, *args)
    scores = float(count * sq * sk)
    ops = ("softmax", "attn_dropout") if dropout else ("softmax",)
    fwd_b = sum(elementwise_bytes(o, scores) for o in ops)
    bwd_b = sum(elementwise_bytes(o, scores, True) for o in ops)
    return {"forward": gemms + fwd_b / mem, "backward": 2 * gemms + bwd_b / mem}
