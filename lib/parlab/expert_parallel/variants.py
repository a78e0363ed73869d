"""The MoE variants as configs of the lab's GPT (the layer is ``parlab.moe``; expert
parallelism runs every one of them unchanged, ``layers.EPMoE``):

* ``deepseek_moe``: fine-grained expert segmentation + shared expert isolation
  (DeepSeekMoE, Dai et al. 2024, §3.1-3.2; DeepSeek-V3, DeepSeek-AI 2024, §2.1.2);
* ``expert_choice``: each expert picks its top n c / E tokens (Zhou et al. 2022, §3.2, Eq. 1-2);
* ``dropless``: no capacity, every expert on all of its tokens; ``expert_gemm="padded"``
  runs them as one batched GEMM over groups padded to the busiest expert, the dense
  stand-in for MegaBlocks' block-sparse GEMMs (Gale et al. 2022, §3-5).

What each costs (``parlab.cost``): ``fine_grained_experts`` (expert sets per token, rows
dispatched per token), ``expert_choice_coverage`` (tokens with 0 / 1 / 2+ experts if the
experts chose at random), ``grouped_gemm_rows`` (rows computed: loop, padded, blocks,
capacity).
"""

from __future__ import annotations

from dataclasses import replace

from ..cost.expert_parallel import fine_grained_experts
from ..model import GPTConfig


def deepseek_moe(config: GPTConfig, segments: int = 2, n_shared: int = 1) -> GPTConfig:
    """``config``'s N experts of top-K cut into ``segments`` m pieces of d_ff / m each:
    mN routed experts, top-(mK - n_shared), and ``n_shared`` always-on experts of the
    same width -- each token still computes K d_ff of FFN width (same FLOPs), but
    dispatches mK - n_shared rows instead of K (``cost.fine_grained_experts``)."""
    f = fine_grained_experts(config.n_experts, config.top_k, config.d_ff, segments, n_shared)
    return replace(config, n_experts=f["n_experts"], top_k=f["top_k"], d_ff=f["d_ff"],
                   n_shared_experts=f["n_shared"])


def expert_choice(config: GPTConfig, capacity_factor: float = 2.0) -> GPTConfig:
    """``config`` routed by expert choice with the paper's c (EC-CF2: c = 2, §4)."""
    return replace(config, router="expert_choice", capacity_factor=capacity_factor)


def dropless(config: GPTConfig, expert_gemm: str = "padded") -> GPTConfig:
    """``config`` without capacity (nothing dropped), experts run by ``expert_gemm``."""
    return replace(config, capacity_factor=None, expert_gemm=expert_gemm)


def experts_per_token(stats: dict) -> dict:
    """{0, 1, "2+"}: shares of tokens with that many experts, from one layer's expert
    choice stats (``experts_per_token`` counts)."""
    h = stats["experts_per_token"]
    n = sum(h)
    return {0: h[0] / n, 1: h[1] / n, "2+": sum(h[2:]) / n}
