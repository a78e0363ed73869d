"""Attention variants the report swaps into the reference GPT (``parlab.model``):

  SDPAttention           ``F.scaled_dot_product_attention(is_causal=True)``: on a GPU a
                         fused kernel (FlashAttention, memory-efficient or cuDNN) that never
                         stores the s x s scores -- it recomputes them in backward (Dao et al.,
                         "FlashAttention", NeurIPS 2022, §3.1), which is Korthikanti et al.'s
                         selective recomputation done by the kernel
  CheckpointedAttention  the reference's ``causal_attention`` under ``torch.utils.checkpoint``:
                         selective recomputation as Korthikanti et al. (MLSys 2023, §5) do it

``parlab.model`` is untouched: ``with_attention(model, kind)`` changes the class of each
attention module (same parameters, same names, same qkv and proj), so every other line
of the model that runs is the reference's."""

from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from ..model import CausalSelfAttention, causal_attention


class _Attention(CausalSelfAttention):
    """The reference's forward with the attention core as a method."""

    def core(self, q, k, v):
        raise NotImplementedError

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
        return self.proj(self.core(q, k, v).transpose(1, 2).reshape(B, T, -1))


class SDPAttention(_Attention):
    def core(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class CheckpointedAttention(_Attention):
    def core(self, q, k, v):
        return checkpoint(causal_attention, q, k, v, use_reentrant=False)


# kind -> (class, Korthikanti's name for what it keeps)
ATTENTION = {"math": (CausalSelfAttention, "none"),
             "checkpointed": (CheckpointedAttention, "selective"),
             "sdpa": (SDPAttention, "selective")}


def with_attention(model: nn.Module, kind: str) -> nn.Module:
    """``model`` with every attention module of the reference switched to ``kind``
    ("math": the reference's own, "checkpointed", "sdpa"), in place."""
    if kind not in ATTENTION:
        raise ValueError(f"kind={kind!r} must be one of {sorted(ATTENTION)}")
    for m in model.modules():
        if isinstance(m, CausalSelfAttention):
            m.__class__ = ATTENTION[kind][0]
    return model
