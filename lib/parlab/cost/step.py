"""One GPU's share of a training step, computation only: a layer's forward and backward
(GEMMs by shape, attention, memory-bound operators), the output layer and loss, and the
optimizer -- from the hardware's peaks and three efficiencies (``Device``). Communication
and the pipeline's schedule are composed on top by ``parlab.planner``.

A layer's time is a sum of kernels, one after another on one stream (what a single CUDA
stream does): ``kernels.gemm_time`` for each of ``transformer.layer_gemms`` -- backward runs
each GEMM twice, for the input's and the weight's gradient (Shoeybi et al. 2019, §3) --,
``kernels.attention_time``, and the bytes of ``transformer.layer_elementwise`` over the
HBM bandwidth. Recomputation (Korthikanti et al. 2022, §5; Chen et al. 2016): "full" runs
the whole forward again before backward, "selective" the attention core when it is
materialized, or the norms and the MLP's activation when attention is fused (what
``memory.activation_memory`` then does not keep); "op" (torchtitan's per-operator policy,
``transformer.op_recomputed``) every elementwise operator and every other matmul, not
attention. FP8
(Micikevicius et al. 2022, §4; Transformer Engine): the linear layers' GEMMs run at the
fp8 peak and each of their inputs is cast (``fp8_cast``), attention and the output layer
stay 16-bit.

The optimizer: Adam reads the fp32 gradient, reads and writes the fp32 master weight and
both moments, and writes the 16-bit weight -- 4 + 8 + 8 + 8 + 2 = 30 bytes a parameter,
memory-bound (mixed-precision Adam, Micikevicius et al. 2018; the states of ZeRO, §5).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..validate import check_bool, check_choice, check_float, check_int, check_whole
from .kernels import (ATTENTION, EAGER_OPS, LOSS_KERNELS, attention_time, elementwise_bytes,
                      gemm_time, loss_bytes)
from .memory import RECOMPUTE_KINDS
from .transformer import (LayerShape, check_shape, layer_elementwise, layer_gemms, logits_gemm,
                          op_recomputed)

ADAM_BYTES_PER_PARAM = 30
_LINEAR = ("qkv", "proj", "fc1", "fc2", "expert_fc1", "expert_fc2")


@dataclass(frozen=True)
class Device:
    """One GPU as the step model sees it: peaks (FLOP/s; ``fp8_flops`` None where it has
    no fp8), HBM bandwidth (B/s), SM count, and the three efficiencies: the share of peak
    a large GEMM sustains, the share of peak a fused attention kernel sustains, the share
    of HBM bandwidth memory-bound kernels reach. ``flops_per_exp``: its 16-bit matmul peak
    over its exponential rate, and ``reference_flops_per_exp`` the same for the GPU the
    attention share was measured on (``kernels.softmax_exp_factor``; None: not known).
    ``attention_dropout_factor``: a fused attention kernel with dropout takes that many
    times its time without (``kernels.attention_time``; 1: as if dropout were free)."""
    peak_flops: float
    hbm_bandwidth: float
    sms: int
    gemm_efficiency: float
    attention_efficiency: float
    memory_efficiency: float
    fp8_flops: float | None = None
    flops_per_exp: float | None = None
    reference_flops_per_exp: float | None = None
    attention_dropout_factor: float = 1.0

    def __post_init__(self):
        check_float("peak_flops", self.peak_flops, 0.0)
        check_float("hbm_bandwidth", self.hbm_bandwidth, 0.0)
        check_int("sms", self.sms)
        for name in ("gemm_efficiency", "attention_efficiency", "memory_efficiency"):
            check_float(name, getattr(self, name), 0.0, high=1.0)
        for name in ("fp8_flops", "flops_per_exp", "reference_flops_per_exp"):
            if getattr(self, name) is not None:
                check_float(name, getattr(self, name), 0.0)
        check_float("attention_dropout_factor", self.attention_dropout_factor, 0.0)

    @property
    def memory_rate(self) -> float:
        return self.hbm_bandwidth * self.memory_efficiency

    @staticmethod
    def check(device) -> "Device":
        if not isinstance(device, Device):
            raise ValueError(f"device={device!r} must be a cost.Device")
        return device

    def gemm(self, m, n, k, count=1, fp8=False) -> float:
        peak = self.fp8_flops if fp8 else self.peak_flops
        return gemm_time(m, n, k, peak, self.hbm_bandwidth, self.sms, self.gemm_efficiency,
                         self.memory_efficiency, count, 1 if fp8 else 2)


# what selective recomputation runs again with fused attention: the norms and the MLP's
# activation, fused or as eager PyTorch runs them
SELECTIVE_OPS = ("norm", "bias_gelu", "swiglu", EAGER_OPS["rmsnorm"], EAGER_OPS["swiglu"])


def layer_time(shape: LayerShape, micro_batch: int, seq_len: int, device: Device, tp: int = 1,
               cp: int = 1, ep: int = 1, sequence_parallel: bool = False,
               recompute: str = "none", attention: str = "fused", fp8: bool = False,
               capacity_factor: float = 1.0, eager: bool = False) -> dict:
    """Seconds one GPU spends on one layer for one micro-batch of ``micro_batch`` sequences
    of ``seq_len`` tokens, of which it holds seq_len / cp (its TP share, tp; its experts,
    ep). Returns {"forward", "backward" (recomputation included), "gemm_forward" (what TP
    communication can overlap with), "attention_forward", "recompute", "parts": {"gemm",
    "attention", "elementwise"} over the whole step}. ``eager``: the elementwise chains as
    eager PyTorch runs them (``layer_elementwise``)."""
    b = check_int("micro_batch", micro_batch)
    s = check_int("seq_len", seq_len)
    t = check_int("tp", tp)
    cp = check_int("cp", cp)
    shape = check_shape(shape)
    device = Device.check(device)
    recompute = check_choice("recompute", recompute, RECOMPUTE_KINDS)
    attention = check_choice("attention", attention, ATTENTION)
    fp8 = check_bool("fp8", fp8)
    share = op_recomputed(shape) if recompute == "op" else {}
    sp = check_bool("sequence_parallel", sequence_parallel)
    if fp8 and device.fp8_flops is None:
        raise ValueError("fp8=True: this GPU has no fp8 peak")
    if s % cp:
        raise ValueError(f"cp={cp} must divide seq_len={s}")
    tokens = b * s // cp
    gemm_f = 0.0
    gemm_redo = 0.0  # "op": the forward GEMM time it runs again
    cast = 0.0
    for name, m, n, k, count in layer_gemms(shape, tokens, t, ep, capacity_factor):
        low = fp8 and name in _LINEAR
        one = device.gemm(m, n, k, count, low)
        gemm_f += one
        gemm_redo += share.get(name, 0.0) * one
        if low:  # cast the input forward and the output gradient backward (per element)
            cast += elementwise_bytes("fp8_cast", (m * k + n * k) * count)
    a = attention_time(b, s // cp, s, shape.n_heads // t,
                       shape.head_dim, device.peak_flops, device.hbm_bandwidth, device.sms,
                       device.gemm_efficiency, device.memory_efficiency,
                       device.attention_efficiency, attention, shape.dropout,
                       device.flops_per_exp, device.reference_flops_per_exp,
                       device.attention_dropout_factor)
    ops = layer_elementwise(shape, tokens, t, sp, eager)
    ew_f = (sum(elementwise_bytes(o, n) for o, n in ops) + cast) / device.memory_rate
    ew_b = (sum(elementwise_bytes(o, n, True) for o, n in ops) + cast) / device.memory_rate
    forward = gemm_f + a["forward"] + ew_f
    cheap = sum(elementwise_bytes(o, n) for o, n in ops if o in SELECTIVE_OPS) / device.memory_rate
    selective = a["forward"] if attention == "materialized" else cheap
    redo = {"none": 0.0, "selective": selective, "op": gemm_redo + ew_f,
            "full": forward}[recompute]
    backward = 2 * gemm_f + a["backward"] + ew_b + redo
    passes = 1 + (recompute == "full")
    return {"forward": forward, "backward": backward, "gemm_forward": gemm_f,
            "attention_forward": a["forward"], "recompute": redo,
            "parts": {"gemm": gemm_f * (3 + (recompute == "full")) + gemm_redo,
                      "attention": a["forward"] * (passes + (recompute == "selective"
                                                             and attention == "materialized"))
                      + a["backward"],
                      "elementwise": ew_f * (passes + (recompute == "op")) + ew_b
                      + (cheap if recompute == "selective" and attention == "fused" else 0.0)}}


def logits_time(tokens: int, d_model: int, vocab_size: int, device: Device, tp: int = 1,
                loss: str = "triton") -> float:
    """Seconds of the output layer and the vocabulary-parallel cross-entropy for ``tokens``
    rows on one GPU of the TP group: its GEMM forward and twice backward, and the loss
    implementation ``loss``'s traffic over tokens x V / tp logits (``kernels.LOSS_KERNELS``)."""
    loss = check_choice("loss", loss, tuple(LOSS_KERNELS))
    _, m, n, k, _ = logits_gemm(tokens, d_model, vocab_size, tp)
    gemm = Device.check(device).gemm(m, n, k)
    ce = (loss_bytes(loss, m * n) + loss_bytes(loss, m * n, True)) / device.memory_rate
    return 3 * gemm + ce


def optimizer_time(n_params: float, device: Device) -> float:
    """Seconds of one Adam step over ``n_params`` parameters on one GPU (its ZeRO shard, if
    sharded): ADAM_BYTES_PER_PARAM bytes each over the memory rate."""
    n_params = check_whole("n_params", n_params)
    return n_params * ADAM_BYTES_PER_PARAM / Device.check(device).memory_rate
