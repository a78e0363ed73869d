"""Section "model": our GPT (``parlab.model.GPT`` with SDPA attention) trained on one GPU
at a realistic size: tokens/s, MFU and peak memory.

nanoGPT's recipe, which reaches ~40-50% MFU for a ~1B model on one modern GPU: fp32
weights and AdamW (fused), bf16 autocast, fused attention, ``torch.compile`` where it
works (the eager run is always measured too, so the gain shows). The data are random
token ids: speed does not depend on them.

MFU (PaLM, Chowdhery et al. 2022, §4.1 and App. B) = tokens/s x ``cost.flops_per_token``
(6 N + 12 L T d, N the non-embedding parameters, lm_head included) / the preset's dense
bf16 peak. Peak memory (``torch.cuda.max_memory_allocated``) is set beside
``cost.memory_plan`` for the same shapes: fp32 weights and gradients (4 + 4 B) and AdamW's
two moments (8 B) per parameter, activations by Korthikanti et al. with selective
recomputation (the fused attention keeps no s x s scores)."""

from __future__ import annotations

import gc
import time

import torch

from .. import cost, hardware
from ..launch.devices import half_dtype
from ..model import ADAMW_BETAS, GPT, GPTConfig
from .attention import with_attention
from .common import ERROR, OK, empty_cache, gpu_name, ratio, short, synchronize

# ~1.0 B parameters (0.91 B without the embedding tables; head size 128), GPT-2's vocabulary
# padded to a multiple of 64 as nanoGPT does; and a ~0.2 B model for --quick
FULL = {"config": GPTConfig(vocab_size=50304, seq_len=2048, d_model=2048, n_heads=16, n_layers=16),
        "batch_size": 8, "warmup": 2, "steps": 10}
QUICK = {"config": GPTConfig(vocab_size=50304, seq_len=1024, d_model=1024, n_heads=8, n_layers=8),
         "batch_size": 8, "warmup": 2, "steps": 6}


def build(config: GPTConfig, device, seed: int = 0) -> GPT:
    """The reference GPT (its own initialisation) with SDPA attention, on ``device``."""
    return with_attention(GPT(config, seed), "sdpa").to(device)


def flops_per_token(model: GPT) -> float:
    """PaLM's training FLOPs per token for ``model``: 6 N + 12 L T d (``cost``)."""
    c = model.config
    return cost.flops_per_token(model.num_params(include_embeddings=False), c.n_layers,
                                c.seq_len, c.d_model)


def train_speed(model: GPT, batch_size: int, steps: int, warmup: int, device, forward=None) -> dict:
    """Tokens/s of ``steps`` AdamW steps (after ``warmup`` more) on one fixed random batch,
    bf16 autocast. ``forward``: what to call instead of ``model`` (a compiled model)."""
    device = torch.device(device)
    c = model.config
    forward = model if forward is None else forward  # not `or`: a compiled module refuses bool() on torch 2.11
    model.zero_grad(set_to_none=True)  # nothing left over from a run that ran out of memory
    g = torch.Generator(device=device).manual_seed(0)
    x, y = (torch.randint(c.vocab_size, (batch_size, c.seq_len), device=device, generator=g)
            for _ in range(2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=ADAMW_BETAS,
                            **({"fused": True} if device.type == "cuda" else {}))

    def step():
        with torch.autocast(device.type, dtype=half_dtype(device)):  # fp16 where bf16 is missing (T4)
            _, loss = forward(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
    synchronize(device)
    warmup_s = time.perf_counter() - t0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    synchronize(device)
    seconds = (time.perf_counter() - t0) / steps
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    del opt
    return {"batch_size": batch_size, "tokens_per_step": batch_size * c.seq_len,
            "step_seconds": seconds, "tokens_per_s": batch_size * c.seq_len / seconds,
            "warmup_seconds": warmup_s, "peak_memory_bytes": peak, "loss": loss.item()}


def _fit(fn, batch_size: int) -> dict:
    """``fn(batch)``, halving the batch after each out-of-memory error (a smaller GPU)."""
    while True:
        try:
            return fn(batch_size)
        except torch.cuda.OutOfMemoryError:
            if batch_size == 1:
                raise
            batch_size //= 2
            gc.collect()
            torch.cuda.empty_cache()  # only a GPU raises OutOfMemoryError


def memory_plan(model: GPT, batch_size: int, gpu_bytes: float) -> dict:
    """``cost.memory_plan`` for this model trained as here, on one GPU of ``gpu_bytes``."""
    c = model.config
    preset = cost.ModelPreset(f"parlab GPT {model.num_params() / 1e9:.2f}B", model.num_params(),
                              c.n_layers, c.d_model, c.n_heads, c.seq_len,
                              "parlab.model.GPT with SDPA attention (parlab.gpu_report)")
    plan = cost.memory_plan(preset, n_gpus=1, gpu_memory_gb=gpu_bytes / 1e9, stage=0,
                            recompute="selective", micro_batch=batch_size, param_bytes=4,
                            grad_bytes=4, optimizer_bytes=8)
    out = {k: plan[k] for k in ("params", "grads", "optimizer", "activations", "total", "verdict")}
    out["left_out"] = ("logits and the loss's fp32 copies (b x T x vocab), autocast's bf16 copies of "
                       "the weights, fp32 values on the residual stream and LayerNorms under "
                       "autocast, cuBLAS workspaces, the allocator's rounding; the activations "
                       "count dropout masks this model does not have")
    return out


def measure(setup: dict, device, peak_flops: float | None, compile_: bool = True) -> dict:
    """Eager, then compiled (unless ``compile_`` is False or compiling fails: the reason is
    kept), each with tokens/s, MFU and peak memory; the best of them under "best"."""
    model = build(setup["config"], device)
    fpt = flops_per_token(model)
    runs = {}

    def add(mode, fn):
        try:
            r = _fit(fn, setup["batch_size"])
            r["mfu"] = cost.mfu(r["tokens_per_s"], fpt, peak_flops) if peak_flops else None
            runs[mode] = {"status": OK, **r}
        except Exception as e:  # noqa: BLE001  (compile failing is a finding, not a crash)
            runs[mode] = {"status": ERROR, "reason": short(e)}
        gc.collect()
        empty_cache(device)

    speed = lambda fwd: lambda b: train_speed(model, b, setup["steps"], setup["warmup"], device, fwd)  # noqa: E731
    add("eager", speed(None))
    if not compile_:
        runs["compiled"] = {"status": "skipped", "reason": "--no-compile"}
    elif not hasattr(torch, "compile"):
        runs["compiled"] = {"status": "skipped", "reason": f"torch {torch.__version__} has no torch.compile"}
    else:
        try:  # some torch / Python pairs refuse here already, others at the first call
            compiled = torch.compile(model)
        except Exception as e:  # noqa: BLE001
            runs["compiled"] = {"status": ERROR, "reason": short(e)}
        else:
            add("compiled", speed(compiled))
    done = {m: r for m, r in runs.items() if r["status"] == OK}
    best = max(done, key=lambda m: done[m]["tokens_per_s"]) if done else None
    out = {"config": vars(setup["config"]).copy(), "attention": "sdpa", "precision": "bf16 autocast, fp32 weights",
           "n_params": model.num_params(), "n_params_non_embedding": model.num_params(False),
           "flops_per_token": fpt, "peak_flops": peak_flops, "runs": runs, "best": best}
    if best:
        b = done[best]
        out.update(tokens_per_s=b["tokens_per_s"], mfu=b["mfu"])
        if torch.device(device).type == "cuda":
            plan = memory_plan(model, b["batch_size"], torch.cuda.get_device_properties(device).total_memory)
            out["memory_plan"] = plan
            out["peak_memory_vs_plan"] = ratio(b["peak_memory_bytes"], plan["total"])
    return out


def section(quick: bool, compile_: bool = True, device="cuda") -> dict:
    spec = hardware.match_gpu(gpu_name(device))
    peak = hardware.peak_flops(spec, "bf16") if spec and "bf16" in spec.peak_tflops else None
    out = measure(QUICK if quick else FULL, device, peak, compile_)
    if peak is None:
        out["note"] = "no bf16 peak for this GPU in hardware.GPU_PRESETS: MFU not computed"
    return out


def lines(rec: dict) -> list[str]:
    c = rec["config"]
    out = [f"  GPT {rec['n_params'] / 1e9:.2f}B ({rec['n_params_non_embedding'] / 1e9:.2f}B non-embedding): "
           f"L={c['n_layers']} d={c['d_model']} heads={c['n_heads']} T={c['seq_len']} "
           f"vocab={c['vocab_size']}, {rec['precision']}, SDPA; {rec['flops_per_token'] / 1e9:.2f} GFLOP/token"]
    for mode, r in rec["runs"].items():
        if r["status"] != OK:
            out.append(f"  {mode:<8} {r['status']}: {r['reason']}")
            continue
        mfu = f", MFU {r['mfu']:.1%}" if r.get("mfu") is not None else ""
        peak = r["peak_memory_bytes"]
        mem = f", peak memory {peak / 1e9:.1f} GB" if peak else ""
        out.append(f"  {mode:<8} batch {r['batch_size']}: {r['tokens_per_s']:,.0f} tokens/s "
                   f"({r['step_seconds'] * 1e3:.0f} ms/step){mfu}{mem}; first steps "
                   f"{r['warmup_seconds']:.0f} s" + (" (compiling)" if mode == "compiled" else ""))
    if "memory_plan" in rec:
        p = rec["memory_plan"]
        out.append(f"  cost.memory_plan: {p['total'] / 1e9:.1f} GB (states "
                   f"{(p['params'] + p['grads'] + p['optimizer']) / 1e9:.1f} + activations "
                   f"{p['activations'] / 1e9:.1f}); measured peak / plan = {rec['peak_memory_vs_plan']:.2f}")
    return out
