"""Gradient compression with error feedback, for data parallelism.

A compressor turns a flat fp32 tensor into a uint8 payload (the bytes that go on the
wire) and back. ``CompressedDP`` is ``data_parallel.NaiveDP`` with its exchange
replaced by compressed payloads; pick it with ``DPRun(variant="naive",
compression="fp16" | "topk" | "sign")``.
"""

from __future__ import annotations

import math

import torch
from .. import comm, trace
from .ddp import NaiveDP
from .grad_sync import trainable, used_parameters

COMPRESSORS = (None, "fp16", "topk", "sign")

# A compressor turns a flat fp32 tensor into a uint8 payload (the bytes that go on the
# wire) and back. Error feedback (Seide et al., "1-Bit Stochastic Gradient Descent and
# its Application to Data-Parallel Distributed Training of Speech DNNs", Interspeech
# 2014; Karimireddy et al., "Error Feedback Fixes SignSGD and other Gradient
# Compression Schemes", ICML 2019, Alg. 2): each rank compresses p = g + e and keeps
# e <- p - decompress(compress(p)), so what was not sent this step is sent later.
#   fp16  cast to half: 2 bytes per element. Exchanged with an all-reduce (a sum of
#         halves is still a half), like DDP's fp16_compress_hook.
#   topk  the k = ceil(ratio * numel) largest |values|, as (fp32 value, int32 index)
#         pairs: 8 k bytes (Lin et al., "Deep Gradient Compression", ICLR 2018, §2;
#         we keep its residual accumulation, not its momentum correction).
#   sign  1 bit per element plus one fp32 scale, mean |p| (EF-signSGD, Karimireddy
#         et al. Alg. 1): ceil(numel / 8) + 4 bytes.
# top-k and sign payloads cannot be summed on the wire, so they are all-gathered and
# every rank decodes and averages all W payloads itself.

_BIT_SHIFTS = torch.tensor([7, 6, 5, 4, 3, 2, 1, 0], dtype=torch.uint8)


def topk_count(numel: int, ratio: float) -> int:
    return min(numel, max(1, math.ceil(ratio * numel)))


def payload_bytes(numel: int, kind: str | None, topk_ratio: float = 0.01) -> int:
    """Bytes one rank puts on the wire for one tensor of ``numel`` fp32 elements."""
    sizes = {None: lambda: 4 * numel, "fp16": lambda: 2 * numel,
             "topk": lambda: 8 * topk_count(numel, topk_ratio),
             "sign": lambda: math.ceil(numel / 8) + 4}
    if kind not in sizes:
        raise ValueError(f"compression={kind!r} must be one of {COMPRESSORS}")
    return sizes[kind]()


def pack_bits(bits: torch.Tensor) -> torch.Tensor:
    """Booleans -> uint8, 8 per byte, first element in the high bit (as numpy.packbits)."""
    padded = torch.zeros(math.ceil(bits.numel() / 8) * 8, dtype=torch.uint8, device=bits.device)
    padded[:bits.numel()] = bits.reshape(-1)
    return (padded.view(-1, 8) << _BIT_SHIFTS.to(bits.device)).sum(1).to(torch.uint8)


def unpack_bits(packed: torch.Tensor, numel: int) -> torch.Tensor:
    return ((packed.reshape(-1, 1) >> _BIT_SHIFTS.to(packed.device)) & 1).reshape(-1)[:numel].bool()


def compress(x: torch.Tensor, kind: str, topk_ratio: float = 0.01) -> torch.Tensor:
    """The uint8 payload of tensor ``x`` (any shape, fp32)."""
    x = x.detach().reshape(-1).float()
    if kind == "fp16":
        return x.half().view(torch.uint8)
    if kind == "topk":
        idx = x.abs().topk(topk_count(x.numel(), topk_ratio), sorted=False).indices
        return torch.cat([x[idx].view(torch.uint8), idx.int().view(torch.uint8)])
    if kind == "sign":
        scale = x.abs().mean().reshape(1)
        return torch.cat([scale.view(torch.uint8), pack_bits(x >= 0)])
    raise ValueError(f"compression={kind!r} must be one of {COMPRESSORS[1:]}")


def decompress(payload: torch.Tensor, kind: str, numel: int,
               topk_ratio: float = 0.01) -> torch.Tensor:
    """Inverse of ``compress``: a flat fp32 tensor of ``numel`` elements."""
    payload = payload.clone()  # fresh storage: aligned for the dtype views below
    if kind == "fp16":
        return payload.view(torch.float16).float()
    if kind == "topk":
        k = topk_count(numel, topk_ratio)
        out = torch.zeros(numel, device=payload.device)
        out[payload[4 * k:].view(torch.int32).long()] = payload[:4 * k].view(torch.float32)
        return out
    if kind == "sign":
        scale = payload[:4].view(torch.float32)
        return torch.where(unpack_bits(payload[4:], numel), scale, -scale)
    raise ValueError(f"compression={kind!r} must be one of {COMPRESSORS[1:]}")


class CompressedDP(NaiveDP):
    """NaiveDP with compressed gradients. All tensors' payloads travel as one message,
    through the hand-written ring collectives of ``parlab.comm``, so the trace counts
    every byte sent (``bytes_modelled=False``)."""

    def __init__(self, module: torch.nn.Module, group=None, kind: str = "fp16",
                 topk_ratio: float = 0.01, error_feedback: bool = True):
        if kind not in COMPRESSORS[1:]:
            raise ValueError(f"compression={kind!r} must be one of {COMPRESSORS[1:]}")
        super().__init__(module, group)
        self.kind = kind
        self.ratio = topk_ratio
        self.params = [p for _, p in reversed(trainable(module))]
        self.residual = [torch.zeros_like(p) for p in self.params] if error_feedback else None

    def _finish(self) -> None:
        used_parameters(trainable(self.module), False)  # raises, naming any without a gradient
        with trace.span("compress", kind="compute"):
            payloads = []
            for i, p in enumerate(self.params):
                x = p.grad + self.residual[i] if self.residual is not None else p.grad
                payloads.append(compress(x, self.kind, self.ratio))
                if self.residual is not None:  # what this step's message leaves out
                    sent = decompress(payloads[-1], self.kind, x.numel(), self.ratio)
                    self.residual[i] = x - sent.view_as(x)
        sizes = [pl.numel() for pl in payloads]
        if self.kind == "fp16":
            summed = comm.ring_all_reduce(torch.cat(payloads).view(torch.float16), self.group)
            totals = summed.float().split([s // 2 for s in sizes])
        else:
            everyone = comm.ring_all_gather(torch.cat(payloads), self.group).view(self.world, -1)
            with trace.span("decompress", kind="compute"):
                totals = [torch.zeros(p.numel(), device=p.device) for p in self.params]
                for row in everyone:
                    for total, piece in zip(totals, row.split(sizes)):
                        total += decompress(piece, self.kind, total.numel(), self.ratio)
        for p, total in zip(self.params, totals):
            p.grad.copy_(total.view_as(p).div_(self.world))
