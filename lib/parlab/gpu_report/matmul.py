"""Section "matmul": TFLOP/s of large square GEMMs in bf16 (and fp8 where the GPU and
torch have it) against the vendor's dense peak from ``hardware.GPU_PRESETS``.

An n x n x n GEMM does 2 n^3 FLOPs (one multiply and one add per term). Big squares
are the best case a GPU has: what a model reaches (see the "model" section) is a
fraction of this, and this is a fraction of the datasheet."""

from __future__ import annotations

import torch

from .. import hardware
from .common import empty_cache, gpu_name, ratio, short, tflops, time_op

QUICK_SIZES = (4096, 8192)
FULL_SIZES = (4096, 8192, 16384)


def gemm_flops(m: int, n: int, k: int) -> int:
    """FLOPs of an (m x k) @ (k x n) matmul: 2 m n k."""
    return 2 * m * n * k


def fp8_reason(capability, has_scaled_mm: bool | None = None) -> str | None:
    """Why an fp8 GEMM cannot run here, or None. fp8 tensor cores arrived with compute
    capability 8.9 (Ada) and 9.0 (Hopper); torch exposes them as ``torch._scaled_mm``
    (a private API whose signature has changed between releases)."""
    if has_scaled_mm is None:
        has_scaled_mm = hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn")
    if not has_scaled_mm:
        return f"torch {torch.__version__} has no torch._scaled_mm / float8_e4m3fn"
    if capability is None:
        return "no CUDA GPU"
    major, minor = capability
    if (major, minor) < (8, 9):
        return (f"fp8 tensor cores need compute capability >= 8.9 (Ada, Hopper); "
                f"this GPU is {major}.{minor}")
    return None


def _bf16(n: int, device):
    a, b = (torch.randn(n, n, device=device, dtype=torch.bfloat16) for _ in range(2))
    c = torch.empty(n, n, device=device, dtype=torch.bfloat16)
    return lambda: torch.mm(a, b, out=c)


def _fp8(n: int, device):
    # e4m3 operands, one scale per tensor; cuBLASLt wants the second operand column-major
    a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=device, dtype=torch.float32)
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                    use_fast_accum=True)


KERNELS = {"bf16": _bf16, "fp8": _fp8}


def measure_gemm(n: int, dtype: str = "bf16", device="cuda", iters: int = 10) -> dict:
    """One n x n x n GEMM in ``dtype`` ("bf16" or "fp8"): seconds and TFLOP/s."""
    fn = KERNELS[dtype](n, device)
    seconds = time_op(fn, device, warmup=3, iters=iters, rounds=3)
    return {"dtype": dtype, "n": n, "seconds": seconds, "tflops": tflops(gemm_flops(n, n, n), seconds)}


def section(quick: bool, device="cuda") -> dict:
    """bf16 at every size, then fp8 (or the reason it was skipped); each row beside the
    preset's dense peak for its dtype (None when this GPU has no preset)."""
    name = gpu_name(device)
    spec = hardware.match_gpu(name)
    rows = []
    skipped_dtypes = {}
    cuda = torch.device(device).type == "cuda"
    fp8 = fp8_reason(torch.cuda.get_device_capability(device) if cuda else None)
    dtypes = ["bf16"] + (["fp8"] if fp8 is None else [])
    if fp8 is not None:
        skipped_dtypes["fp8"] = fp8
    for dtype in dtypes:
        for n in QUICK_SIZES if quick else FULL_SIZES:
            try:
                row = measure_gemm(n, dtype, device)
            except Exception as e:  # noqa: BLE001  (fp8 on an old torch, out of memory...)
                skipped_dtypes[dtype] = short(e)
                break
            peak = spec.peak_tflops.get(dtype) if spec else None
            rows.append({**row, "peak_tflops": peak, "fraction_of_peak": ratio(row["tflops"], peak)})
            empty_cache(device)
    best = {}
    for r in rows:
        best[r["dtype"]] = max(best.get(r["dtype"], 0.0), r["tflops"])
    return {"gpu": name, "preset": spec.name if spec else None,
            "source": spec.source if spec else None,
            "note": None if spec else f"no preset matches {name!r}: no peak to compare with",
            "rows": rows, "best_tflops": best, "skipped_dtypes": skipped_dtypes}


def lines(rec: dict) -> list[str]:
    out = [f"  {rec['gpu']} (preset {rec['preset'] or 'none'})"]
    for r in rec["rows"]:
        peak = (f" of {r['peak_tflops']:g} peak = {r['fraction_of_peak']:.0%}"
                if r["peak_tflops"] else "")
        out.append(f"  {r['dtype']:<5} n={r['n']:<6} {r['tflops']:8.1f} TFLOP/s{peak}")
    out += [f"  {d}: skipped: {why}" for d, why in rec["skipped_dtypes"].items()]
    return out
