"""Notebook 07's experiments: pure functions over the lab's GPT and the parts of this
folder, returning plain data for ``figures``. Every number the notebook shows comes from
here or from ``parlab.cost``. Exercises and their checkers: ``lessons.l07_mixed_precision.exercises``."""

from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from parlab import cost
from parlab.launch import launch
from parlab.model import GPT, GPTConfig, reference_optimizer
from parlab.precision import communication as cm
from parlab.precision.loss_scaling import DynamicLossScaler, to_fp16_grads, underflow
from parlab.precision.master_weights import MixedAdamW

from .models import BATCH, MID, SMALL, _batch, one_thread  # noqa: E402,F401  (the shared setup)


def layer_of(name: str) -> str:
    """A parameter's layer for the per-layer tables: "blocks.0.attn.qkv.weight" -> "blocks.0.attn.qkv"."""
    return name.rsplit(".", 1)[0]


# --- 2. why fp32 master weights ------------------------------------------------------------

@one_thread
def master_weight_runs(steps: int = 40, lr: float = 3e-4, modes=("bf16", "master", "kahan",
                       "stochastic"), config: GPTConfig = SMALL) -> dict:
    """{mode: {"losses", "vanished" (fraction of moving elements whose bf16 weight did not
    change, per step)}} training the GPT with bf16 weights, plus "fp32" (fp32 weights and
    AdamW, the reference). Same init, data and lr in every run."""
    out = {}
    for mode in ("fp32",) + tuple(modes):
        model = GPT(config)  # fp32 tensors; MixedAdamW rounds them to bf16 values
        opt = MixedAdamW(model.parameters(), lr=lr, mode=mode)
        losses, vanished = [], []
        for s in range(steps):
            x, y = _batch(s, config)
            _, loss = model(x, y)
            opt.zero_grad()
            loss.float().backward()
            opt.step()
            losses.append(loss.item())
            vanished.append(opt.vanished / max(opt.nonzero, 1))
        out[mode] = {"losses": losses, "vanished": vanished}
    return out


@one_thread
def vanished_by_layer(steps: int = 10, lr: float = 3e-4, config: GPTConfig = SMALL) -> list[dict]:
    """bf16 weights updated in place: per layer, the share of Adam updates lost at the last
    step, with the layer's typical |weight| and half an ulp of it (the gap away from zero):
    a step that moves |w| up by less is lost; one toward zero is lost up to half the gap
    below, which is half as large where |w| is a power of two (``cost.vanishing_update``)."""
    model = GPT(config)
    opt = MixedAdamW(model.parameters(), lr=lr, mode="bf16")
    names = {p: n for n, p in model.named_parameters()}
    for s in range(steps):
        before = {p: p.detach().clone() for p in opt.params}
        x, y = _batch(s, config)
        opt.zero_grad()
        model(x, y)[1].float().backward()
        opt.step()
    rows = []
    for p in opt.params:
        same = (p == before[p]).float().mean().item()
        w = p.detach().float().abs().median().item()
        rows.append({"parameter": names[p], "median |w|": w,
                     "half ulp": cost.ulp(w, "bf16") / 2 if w else 0.0,
                     "unchanged": same})
    return rows


# --- 3. loss scaling ------------------------------------------------------------------------

@one_thread
def gradients(config: GPTConfig = SMALL, step: int = 0, batch_size: int = BATCH) -> dict:
    """{parameter name: fp32 gradient} of one backward of the fp32 GPT."""
    model = GPT(config)
    model(*_batch(step, config, batch_size))[1].backward()
    return {n: p.grad.clone() for n, p in model.named_parameters()}


def underflow_rows(grads: dict, scales: dict) -> list[dict]:
    """Per parameter and per named scale: what fp16 storage of grad x scale loses."""
    rows = []
    for name, g in grads.items():
        for label, s in scales.items():
            u = underflow(g, torch.float16, s)
            rows.append({"parameter": name, "scaling": label, "scale": s, **u})
    return rows


def _scaled_training(scaler, steps, overflow_at, config=SMALL, lr=1e-3):
    """Train with fp16-rounded gradients through ``scaler`` (ours or torch's GradScaler);
    at step ``overflow_at`` the scaled loss is multiplied by 2^24 (a planted overflow)."""
    model = GPT(config)
    opt = reference_optimizer(model.parameters(), lr)
    scales, skipped, losses = [], [], []
    for s in range(steps):
        x, y = _batch(s, config)
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)[1]
        scaled = scaler.scale(loss) * (2.0 ** 24 if s == overflow_at else 1.0)
        scaled.backward()
        to_fp16_grads(model.parameters())
        scales.append(float(scaler.get_scale()))
        before = [p.detach().clone() for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
        if all(torch.equal(a, p) for a, p in zip(before, model.parameters())):
            skipped.append(s)
        losses.append(loss.item())
    return {"scales": scales, "skipped": skipped, "losses": losses,
            "state_dict": {k: v.detach().clone() for k, v in model.state_dict().items()}}


@one_thread
def scaler_vs_torch(steps: int = 8, overflow_at: int = 3, growth_interval: int = 2,
                    init_scale: float = 2.0 ** 10, scaler_cls=DynamicLossScaler) -> dict:
    """Ours (``scaler_cls``) and ``torch.amp.GradScaler("cpu")`` on the same training:
    {"ours", "torch"} runs and "param_diff", the largest |difference| of the final weights."""
    kw = dict(init_scale=init_scale, growth_interval=growth_interval)
    ours = _scaled_training(scaler_cls(**kw), steps, overflow_at)
    ref = _scaled_training(torch.amp.GradScaler("cpu", **kw), steps, overflow_at)
    diff = max((ours["state_dict"][k] - v).abs().max().item() for k, v in ref["state_dict"].items())
    return {"ours": ours, "torch": ref, "param_diff": diff}


@one_thread
def fp16_scaling_runs(steps: int = 20, static: float = 2.0 ** 10) -> dict:
    """Loss and this step's underflow (share of nonzero gradient elements flushed to 0 in
    fp16) with no scaling, a static scale and dynamic scaling."""
    out = {}
    for label, scaler in (("none", None), ("static", static), ("dynamic", "dynamic")):
        model = GPT(SMALL)
        opt = reference_optimizer(model.parameters(), 1e-3)
        dyn = DynamicLossScaler(init_scale=2.0 ** 16, growth_interval=5) if scaler == "dynamic" else None
        losses, zero, scales = [], [], []
        for s in range(steps):
            x, y = _batch(s)
            opt.zero_grad(set_to_none=True)
            loss = model(x, y)[1]
            scale = dyn.get_scale() if dyn else (scaler or 1.0)
            (loss * scale).backward()
            flat = torch.cat([p.grad.flatten() for p in model.parameters()])
            zero.append(underflow(flat, torch.float16)["zero"])
            to_fp16_grads(model.parameters())
            scales.append(scale)
            if dyn:
                dyn.step(opt)
                dyn.update()
            else:
                for p in model.parameters():
                    p.grad.div_(scale)
                opt.step()
            losses.append(loss.item())
        out[label] = {"losses": losses, "zero": zero, "scales": scales}
    return out


# --- 4. autocast ------------------------------------------------------------------------------

class OpDtypes(TorchDispatchMode):
    """Records, for every aten op that runs, the dtypes of its floating-point outputs."""

    def __init__(self):
        super().__init__()
        self.seen: dict = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                self.seen.setdefault(name, set()).add(str(t.dtype).replace("torch.", ""))
        return out


@one_thread
def op_dtypes(dtype=torch.bfloat16, config: GPTConfig = SMALL) -> dict:
    """{aten op: its output dtypes} of one forward + loss of the fp32 GPT under CPU
    autocast to ``dtype`` (None: no autocast)."""
    model = GPT(config)
    x, y = _batch(0, config)
    ctx = torch.autocast("cpu", dtype=dtype) if dtype is not None else contextlib.nullcontext()
    mode = OpDtypes()
    with ctx, mode:
        model(x, y)
    return {k: sorted(v) for k, v in mode.seen.items()}


@one_thread
def autocast_runs(steps: int = 20, dtypes=(None, torch.bfloat16, torch.float16)) -> dict:
    """{"fp32" | "bf16" | "fp16": losses} training with fp32 weights under CPU autocast
    (fp16: with torch's GradScaler, as autocast's recipe says)."""
    out = {}
    for dt in dtypes:
        model = GPT(SMALL)
        opt = reference_optimizer(model.parameters(), 1e-3)
        scaler = torch.amp.GradScaler("cpu", enabled=dt is torch.float16)
        losses = []
        for s in range(steps):
            x, y = _batch(s)
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=dt or torch.float32, enabled=dt is not None):
                loss = model(x, y)[1]
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
        out[{None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[dt]] = losses
    return out


# --- 5. precision of communication -------------------------------------------------------

def reduction_errors(world_sizes=(2, 4), numel: int = 4096, seed: int = 0) -> dict:
    """{world size: rank 0's errors of every way of summing} on real ranks (``communication``)."""
    return {n: launch(cm.reduce_worker, n, numel, seed, timeout=120)[0] for n in world_sizes}


@one_thread
def replayed_errors(world_sizes=(2, 4, 8, 16, 64, 256, 1024), numel: int = 2048,
                    seed: int = 0) -> list[dict]:
    """The ring's bf16 sum replayed in one process (``ring_order_sum``) for large worlds,
    and fp32 accumulation rounded once, against ``cost.summation_error_bound``."""
    rows = []
    for n in world_sizes:
        xs = [cm.rank_gradients(i, numel, seed) for i in range(n)]
        bf = cm.errors(cm.ring_order_sum(xs), xs)
        up = cm.errors(cm.ring_order_sum(xs, torch.float32).to(torch.bfloat16), xs)
        rows.append({"world_size": n, "bf16 max": bf["max"], "bf16 mean": bf["mean"],
                     "fp32-accumulated max": up["max"],
                     "bound": cost.summation_error_bound(n, "bf16")})
    return rows


def fsdp_worker(compute_dtype, steps: int = 1) -> dict:
    """One training step of the GPT under ``FullyShard(compute_dtype=...)``: the bytes its
    gradient reduce-scatters moved (traced), the dtype they ran in, the gradients."""
    from parlab import trace
    from parlab.zero import FullyShard
    model = GPT(SMALL)
    fsdp = FullyShard(model, compute_dtype=compute_dtype)
    n_rs, rs_bytes, dtypes = 0, 0, set()
    trace.start()
    for s in range(steps):
        x, y = _batch(s)
        fsdp(x, y)[1].float().backward()  # reduce-scattered by its end
    for e in trace.stop():
        if e["meta"].get("op") == "reduce_scatter":
            n_rs, rs_bytes = n_rs + 1, rs_bytes + e["bytes_sent"]
            dtypes.add(e["meta"]["dtype"])
    return {"reduce_scatters": n_rs, "bytes_sent": rs_bytes, "reduce_dtype": sorted(dtypes),
            "grads": fsdp.full_grads()}


def fsdp_reduce_dtype(world_size: int = 2) -> dict:
    """FullyShard in fp32 and with compute_dtype=bf16: {"fp32", "bf16"} worker results on
    rank 0 plus each run's largest gradient difference from one fp32 device."""
    ref = gradients(SMALL, 0)
    ref = {k: v for k, v in ref.items()}
    out = {}
    for label, dt in (("fp32", None), ("bf16", torch.bfloat16)):
        r = launch(fsdp_worker, world_size, dt, timeout=120)[0]
        r["grad_error"] = max(((r["grads"][k] - g).abs().max() / g.abs().max()).item()
                              for k, g in ref.items())
        out[label] = r
    return out


# §6-7 live in experiments_fp8 (this file's length); imported here so the notebook reads one module
from .experiments_fp8 import (bytes_per_param, fp8_gemm, fp8_runs, outlier_errors,
                              quantization_errors)
