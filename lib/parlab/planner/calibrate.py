"""``calibrate``: the planner's constants for the GPU a ``python -m parlab gpu-report`` ran
on -- its GEMMs' share of peak from the matmul section, the fused attention's from the model
section (the one unknown left once the GEMMs are measured). The H200 figures of
docs/measurements.md (``constants.H200_REPORT``) are the first calibration: they give 0.70 for the
GEMMs (its 16384^3 GEMM, the one long enough to meet the power limit) and the default
attention efficiency."""

from __future__ import annotations

import json
from dataclasses import replace

from .. import cost
from ..hardware import GPUSpec, match_gpu
from .constants import CONSTANTS, Constants
from .estimate import estimate
from .stacks import STACKS


def _gemm_share(rows, dtype: str, sms: int) -> float | None:
    """The largest measured GEMM's TFLOP/s / peak / its tile-and-wave quantization: the
    longest run, the one that lasts until the clocks settle at the power limit (the H200's
    4096^3 and 8192^3 finish at 79% of peak, 16384^3 runs at 70%), as a training step's
    GEMMs do."""
    shares = [(r["n"], r["tflops"] / r["peak_tflops"] / cost.gemm_quantization(r["n"], r["n"], sms))
              for r in rows if r.get("dtype") == dtype and r.get("peak_tflops")]
    return round(min(1.0, max(shares)[1]), 3) if shares else None


def calibrate(gpu_report, constants: Constants = CONSTANTS) -> Constants:
    """Constants for the GPU a ``gpu-report`` ran on (a path to its JSON, or the dict).

    gemm_efficiency (and fp8_gemm_efficiency): the largest measured square GEMM's TFLOP/s
    / the preset's peak / its tile-and-wave quantization (``_gemm_share``). attention_efficiency:
    the value that makes the planner's one-GPU estimate of the report's model run (its
    shape, batch, fused attention, no recomputation, the loss as that run computed it:
    Inductor's fused kernel compiled, PyTorch's ops eager -- ``cost.LOSS_KERNELS``) take the
    measured time, with the GEMM share just measured -- bisection on (0.05, 1].
    attention_dropout_factor: the attention_dropout section's median ratio of SDPA's forward
    and backward with dropout 0.1 to without (torch's kernel on this GPU, standing in for
    Transformer Engine's). memory_efficiency stays (the report has no bandwidth test). The
    measured GPU's entry in ``clock_shares`` goes: its measured share already holds it.
    Sections that did not run leave their constant as it was."""
    report = gpu_report
    if isinstance(report, str):
        with open(report) as f:
            report = json.load(f)
    if not isinstance(report, dict):
        raise ValueError(f"gpu_report={gpu_report!r} must be a gpu-report JSON path or dict")
    mm = report.get("matmul", {})
    spec = match_gpu(mm.get("preset") or mm.get("gpu") or "")
    if mm.get("status") != "ok" or spec is None:
        raise ValueError("gpu_report: its matmul section did not run on a GPU with a preset "
                         f"(status {mm.get('status')!r}, gpu {mm.get('gpu')!r})")
    # the GPU measured here: its GEMMs' share already holds what its clocks sustain
    shares = tuple(p for p in constants.clock_shares if p[0] != spec.name)
    out = replace(constants, source=f"calibrate(gpu-report on {spec.name})", clock_shares=shares)
    bf16 = _gemm_share(mm["rows"], "bf16", spec.sms)
    if bf16:
        out = replace(out, gemm_efficiency=bf16)
    fp8 = _gemm_share(mm["rows"], "fp8", spec.sms)
    if fp8:
        out = replace(out, fp8_gemm_efficiency=fp8)
    drop = report.get("attention_dropout", {})
    if drop.get("status") == "ok" and drop.get("dropout_factor"):
        out = replace(out, attention_dropout_factor=round(drop["dropout_factor"], 3))
    model = report.get("model", {})
    best = model.get("best") or ""
    run = model.get("runs", {}).get(best, {})
    if model.get("status") == "ok" and run.get("status") == "ok":
        # the loss as that run computed it: the compiled or the eager stack's
        loss = STACKS["torch-compile" if best == "compiled" else "pytorch-eager"].loss_kernel
        out = replace(out, attention_efficiency=_attention_share(model["config"], run, spec, out,
                                                                 loss), attention_gpu=spec.name)
    return out


def _attention_share(config: dict, run: dict, spec: GPUSpec, constants: Constants,
                     loss: str) -> float:
    b = run["batch_size"]
    want = b * config["seq_len"] / run["tokens_per_s"]
    shape = cost.LayerShape(config["d_model"], config["n_heads"], dropout=False)

    def step(eff):
        c = replace(constants, attention_efficiency=eff, attention_gpu=spec.name)
        return estimate(config["n_layers"], config["d_model"], config["n_heads"],
                        config["seq_len"], config["vocab_size"], 1, 1, 1, b, b, spec,
                        shape=shape, constants=c, loss_kernel=loss).step_time.total

    lo = 0.05
    hi = 1.0
    if step(hi) > want:  # even a perfect kernel leaves the run slower than measured
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if step(mid) <= want else (mid, hi)
    return round(hi, 3)
