"""Notebook 07's experiments, §6-7: fp8 quantization errors and training, the H200's
recorded fp8 GEMM speed-up, and bytes per parameter by recipe (``experiments`` re-exports
them). Pure functions returning plain data."""

from __future__ import annotations

import torch
import torch.nn as nn

from parlab.memory import held_bytes, optimizer_states
from parlab.model import GPT, GPTConfig, reference_optimizer
from .models import MID, SMALL, _batch, one_thread
from parlab.precision.fp8 import (AmaxHistory, apply_fp8, fake_quantize, fp8_weight_copies,
                                  relative_error)
from parlab.precision.master_weights import MixedAdamW


# --- 6. FP8 -----------------------------------------------------------------------------------

def _captured(config: GPTConfig, steps: int = 2) -> list[dict]:
    """For ``steps`` fp32 training steps: every Linear's weight, input and output gradient."""
    model = GPT(config)
    opt = reference_optimizer(model.parameters(), 1e-3)
    lins = {n: m for n, m in model.named_modules() if isinstance(m, nn.Linear)}
    out = []
    for s in range(steps):
        got = {n: {"weight": m.weight.detach().clone()} for n, m in lins.items()}
        hooks = [m.register_forward_pre_hook(lambda m, a, n=n: got[n].__setitem__("input", a[0].detach()))
                 for n, m in lins.items()]
        hooks += [m.register_full_backward_hook(lambda m, gi, go, n=n: got[n].__setitem__("grad", go[0].detach()))
                  for n, m in lins.items()]
        opt.zero_grad(set_to_none=True)
        model(*_batch(s, config))[1].backward()
        opt.step()
        for h in hooks:
            h.remove()
        out.append(got)
    return out


@one_thread
def quantization_errors(config: GPTConfig = MID, block: int = 128) -> list[dict]:
    """Relative error ||q(x) - x|| / ||x|| of fp8 rounding, per tensor kind (weights and
    activations in e4m3, output gradients in e5m2) and scaling: per tensor (current), per
    block (1 x block for activations and gradients, block x block for weights; current),
    delayed (the previous step's amax, per tensor). The median over the model's Linears."""
    before, now = _captured(config, 2)
    rows = []
    for kind, fmt in (("weight", "e4m3"), ("input", "e4m3"), ("grad", "e5m2")):
        errs = {"per tensor": [], "per block": [], "delayed": []}
        for name, t in now.items():
            x = t[kind].reshape(-1, t[kind].shape[-1])
            tile = (block, block) if kind == "weight" else (1, block)
            if x.shape[-1] % min(tile[1], x.shape[-1]) or x.shape[0] % min(tile[0], x.shape[0]):
                continue
            errs["per tensor"].append(relative_error(x, fake_quantize(x, fmt)))
            errs["per block"].append(relative_error(x, fake_quantize(x, fmt, tile)))
            hist = AmaxHistory(16)
            hist.scale_amax(before[name][kind])
            errs["delayed"].append(relative_error(x, fake_quantize(x, fmt, scale_amax=hist.scale_amax(x))))
        for mode, e in errs.items():
            rows.append({"tensor": kind, "format": fmt, "scaling": mode,
                         "relative error": sorted(e)[len(e) // 2], "tensors": len(e)})
    return rows


@one_thread
def outlier_errors(factors=(1e2, 1e4, 1e5), rows: int = 256, cols: int = 512, block: int = 128,
                   seed: int = 0) -> list[dict]:
    """An activation with one outlier channel (x ``factor``; Dettmers et al. 2022 describe
    such channels in large models): e4m3 error of the *other* channels, and the share of
    their values flushed to zero, per tensor vs per 1 x ``block`` tile."""
    out = []
    for f in factors:
        x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed))
        x[:, 7] *= f
        rest = torch.ones(cols, dtype=torch.bool)
        rest[7] = False
        for label, b in (("per tensor", None), ("per block", (1, block))):
            q = fake_quantize(x, "e4m3", b)
            out.append({"outlier": f, "scaling": label,
                        "error, other channels": relative_error(x[:, rest], q[:, rest]),
                        "flushed to zero": float(((q[:, rest] == 0) & (x[:, rest] != 0)).float().mean())})
    return out


@one_thread
def fp8_runs(steps: int = 30, lr: float = 1e-3) -> dict:
    """Loss curves: fp32, bf16 autocast, fp8-emulated GEMMs (current and delayed scaling)."""
    out = {}
    for label in ("fp32", "bf16 autocast", "fp8 current", "fp8 delayed"):
        model = GPT(SMALL)
        if label.startswith("fp8"):
            apply_fp8(model, scaling=label.split()[1])
        opt = reference_optimizer(model.parameters(), lr)
        losses = []
        for s in range(steps):
            x, y = _batch(s)
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=label == "bf16 autocast"):
                loss = model(x, y)[1]
            loss.backward()
            opt.step()
            losses.append(loss.item())
        out[label] = losses
    return out


def fp8_gemm(n: int = 4096) -> dict:
    """The H200's bf16 vs fp8 GEMM TFLOP/s as recorded by ``gpu-report`` (planner.H200_REPORT),
    and a live measurement where an fp8-capable GPU is present (else the reason it is skipped)."""
    from parlab.gpu_report.matmul import fp8_reason, measure_gemm
    from parlab.planner import H200_REPORT
    rows = H200_REPORT["matmul"]["rows"]
    recorded = {r["n"]: {} for r in rows}
    for r in rows:
        recorded[r["n"]][r["dtype"]] = r["tflops"]
    out = {"recorded": {k: {**v, "speedup": v["fp8"] / v["bf16"]} for k, v in recorded.items()},
           "gpu": H200_REPORT["matmul"]["gpu"]}
    why = fp8_reason(torch.cuda.get_device_capability() if torch.cuda.is_available() else None)
    if why:
        out["skipped"] = why
    else:
        bf, f8 = measure_gemm(n, "bf16"), measure_gemm(n, "fp8")
        out["live"] = {"n": n, "bf16": bf["tflops"], "fp8": f8["tflops"],
                       "speedup": f8["tflops"] / bf["tflops"]}
    return out


# --- 7. bytes per parameter --------------------------------------------------------------

@one_thread
def bytes_per_param(config: GPTConfig = SMALL) -> dict:
    """{recipe: held bytes by kind / number of parameters} after one training step, counted
    by ``memory.held_bytes``: fp32 (AdamW), bf16_mixed (bf16 weights and grads, fp32 master
    and moments: MixedAdamW "master"), fp8_mixed (the same plus the fp8 weight copies the
    Fp8Linear layers keep)."""
    out = {}
    for recipe in ("fp32", "bf16_mixed", "fp8_mixed"):
        model = GPT(config)
        n = model.num_params()
        x, y = _batch(0, config)
        if recipe == "fp32":
            opt = reference_optimizer(model.parameters(), 1e-3)
            model(x, y)[1].backward()
            opt.step()
            held = held_bytes(weights=list(model.parameters()), grads=[p.grad for p in model.parameters()],
                              optimizer=[t for t in optimizer_states(opt) if t.dim() > 0])
        else:
            model = model.to(torch.bfloat16)
            if recipe == "fp8_mixed":
                apply_fp8(model)
            opt = MixedAdamW(model.parameters(), mode="master")
            model(x, y)[1].float().backward()
            opt.step()
            st = opt.states()
            held = held_bytes(weights=list(model.parameters()), fp8_weights=fp8_weight_copies(model),
                              grads=[p.grad for p in model.parameters()], master=st["master"],
                              optimizer=st["optimizer"])
        out[recipe] = {k: v / n for k, v in held.items()}
        out[recipe]["n_params"] = n
    gemm = sum(m.weight.numel() for m in GPT(config).modules() if isinstance(m, nn.Linear))
    out["gemm_fraction"] = gemm / GPT(config).num_params()
    return out
