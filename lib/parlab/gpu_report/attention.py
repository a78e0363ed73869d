"""Attention cores the report swaps into the reference GPT (``parlab.model``):

  sdpa_core          ``F.scaled_dot_product_attention(is_causal=True)``: on a GPU a fused
                     kernel (FlashAttention, memory-efficient or cuDNN) that never stores
                     the s x s scores -- it recomputes them in backward (Dao et al.,
                     "FlashAttention", NeurIPS 2022, §3.1), which is Korthikanti et al.'s
                     selective recomputation done by the kernel
  checkpointed_core  the reference's ``causal_attention`` under ``torch.utils.checkpoint``:
                     selective recomputation as Korthikanti et al. (MLSys 2023, §5) do it

``parlab.model`` is untouched: ``with_attention(model, kind)`` sets the ``core`` of each
attention module (same parameters, same names, same qkv and proj), so every other line
of the model that runs is the reference's."""

from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from ..model import CausalSelfAttention, causal_attention


def sdpa_core(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def checkpointed_core(q, k, v):
    return checkpoint(causal_attention, q, k, v, use_reentrant=False)


# kind -> (core, Korthikanti's name for what it keeps)
ATTENTION = {"math": (causal_attention, "none"),
             "checkpointed": (checkpointed_core, "selective"),
             "sdpa": (sdpa_core, "selective")}


def with_attention(model: nn.Module, kind: str) -> nn.Module:
    """``model`` with every attention module of the reference switched to ``kind``
    ("math": the reference's own, "checkpointed", "sdpa"), in place."""
    if kind not in ATTENTION:
        raise ValueError(f"kind={kind!r} must be one of {sorted(ATTENTION)}")
    for m in model.modules():
        if isinstance(m, CausalSelfAttention):
            m.core = ATTENTION[kind][0]
    return model
