"""Section "attention_dropout": what dropout on the attention probabilities costs a fused
attention kernel on this GPU.

GPT-3-style runs keep dropout 0.1 there (Megatron-LM's default ``--attention-dropout``,
NeMo's GPT-3 configs). A fused kernel cannot drop a score it never stores, so it draws a
random number per score inside the kernel (Philox), beside the exponentials and the
matmuls; on Hopper, FlashAttention-2 also halves its key block when dropout is on
(``_get_block_size_n`` in flash_attn/flash_attn_interface.py). Ma, Liu and Krashinsky
(arXiv 2410.07531, abstract) find that hiding the random numbers behind a GEMM makes a
whole transformer block 1.14-1.23 times faster on an H100 in FP8: the cost is not small,
and no table we have gives it per kernel.

Times ``F.scaled_dot_product_attention(is_causal=True)``, forward and backward together,
16-bit, head dimension 128, with ``dropout_p`` 0.1 and 0.0 at each sequence length, the two
interleaved round by round. ``dropout_factor`` is the median of the per-length ratios, which
``planner.calibrate`` hands to the planner (``Constants.attention_dropout_factor``). torch
picks the kernel (FlashAttention-2, memory-efficient or cuDNN) and may pick another one with
dropout than without: the factor is SDPA's on this GPU and this torch, a stand-in for
Transformer Engine's."""

from __future__ import annotations

import statistics

import torch
import torch.nn.functional as F

from .. import cost
from .common import empty_cache, gpu_name, tflops, time_op

P = 0.1
HEAD_DIM = 128
HEADS = 16
TOKENS = 16384          # batch x sequence of every row: the same work per token row
QUICK_SEQS = (2048,)
FULL_SEQS = (2048, 4096, 8192)
ROUNDS = 3


def causal_flops(batch: int, seq: int, heads: int, head_dim: int) -> float:
    """Forward and backward of causal attention, as the planner counts them
    (``cost.attention_flops``, the backward ``cost.FUSED_BACKWARD`` times the forward)."""
    return (1 + cost.FUSED_BACKWARD) * cost.attention_flops(batch, seq, seq, heads, head_dim)


def _step(batch: int, seq: int, heads: int, head_dim: int, p: float, device, dtype):
    shape = (batch, heads, seq, head_dim)
    q, k, v = (torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
               for _ in range(3))
    grad = torch.randn(shape, device=device, dtype=dtype)

    def step():
        F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True).backward(grad)
    return step


def measure(seq: int, device="cuda", tokens: int | None = None, heads: int | None = None,
            head_dim: int | None = None, rounds: int = ROUNDS) -> dict:
    """One sequence length: seconds of a forward and backward with dropout P and without,
    interleaved over ``rounds`` (the median of each), and their ratio (None: TOKENS, HEADS,
    HEAD_DIM)."""
    tokens, heads, head_dim = tokens or TOKENS, heads or HEADS, head_dim or HEAD_DIM
    if tokens % seq:
        raise ValueError(f"seq={seq} must divide tokens={tokens}")
    batch = tokens // seq
    cuda = torch.device(device).type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    steps = {p: _step(batch, seq, heads, head_dim, p, device, dtype) for p in (P, 0.0)}
    times = {p: [] for p in steps}
    for _ in range(rounds):
        for p, fn in steps.items():
            times[p].append(time_op(fn, device, warmup=2, iters=5, rounds=1))
    with_, without = (statistics.median(times[p]) for p in (P, 0.0))
    flops = causal_flops(batch, seq, heads, head_dim)
    return {"seq": seq, "batch": batch, "heads": heads, "head_dim": head_dim,
            "dtype": str(dtype).replace("torch.", ""), "seconds_dropout": with_,
            "seconds_plain": without, "tflops_dropout": tflops(flops, with_),
            "tflops_plain": tflops(flops, without), "ratio": with_ / without}


def section(quick: bool, device="cuda") -> dict:
    rows = []
    for seq in QUICK_SEQS if quick else FULL_SEQS:
        rows.append(measure(seq, device))
        empty_cache(device)
    return {"gpu": gpu_name(device), "dropout_p": P, "rows": rows,
            "dropout_factor": statistics.median(r["ratio"] for r in rows)}


def lines(rec: dict) -> list[str]:
    out = [f"  SDPA causal, head dim {rec['rows'][0]['head_dim']}, forward + backward, "
           f"dropout {rec['dropout_p']} against none"]
    for r in rec["rows"]:
        out.append(f"  s={r['seq']:<6} b={r['batch']:<3} {r['tflops_plain']:7.1f} -> "
                   f"{r['tflops_dropout']:7.1f} TFLOP/s  x{r['ratio']:.2f}")
    out.append(f"  dropout factor (median): x{rec['dropout_factor']:.2f}")
    return out
