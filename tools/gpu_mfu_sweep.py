"""The GPU report's ~1B GPT at a few batch sizes and compile modes, to find the setting the
report should use (issue: >= 60% MFU compiled on one H200). One process, one GPU:

    python tools/gpu_mfu_sweep.py [--json PATH] [--budget-s 420]

Each variant is the report's own measurement (``parlab.gpu_report.training.train_speed``:
fp32 weights, fused AdamW, bf16 autocast, SDPA), MFU by ``cost.mfu`` against the preset's
dense bf16 peak. Variants run in order until the time budget is spent; what was not run
is said. Needs only torch >= 2.4 and a CUDA GPU.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

import torch  # noqa: E402

from parlab import cost, hardware  # noqa: E402
from parlab.gpu_report import training  # noqa: E402
from parlab.gpu_report.common import gpu_name  # noqa: E402

# (label, batch size, torch.compile mode or None for eager)
VARIANTS = [("compiled b8 (the report's setting)", 8, "default"),
            ("compiled b16", 16, "default"),
            ("compiled b24", 24, "default"),
            ("compiled b16, max-autotune-no-cudagraphs", 16, "max-autotune-no-cudagraphs")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--budget-s", type=float, default=420.0)
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to measure")
        return 0
    t_start = time.perf_counter()
    spec = hardware.match_gpu(gpu_name("cuda"))
    peak = hardware.peak_flops(spec, "bf16")
    setup = training.FULL
    print("building the model", flush=True)
    model = training.build(setup["config"], "cuda")
    fpt = training.flops_per_token(model)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; GPT {model.num_params() / 1e9:.2f}B, "
          f"{fpt / 1e9:.2f} GFLOP/token, bf16 peak {peak / 1e12:.1f} TFLOP/s", flush=True)
    rows = []
    for label, batch, mode in VARIANTS:
        if time.perf_counter() - t_start > a.budget_s:
            rows.append({"variant": label, "status": "not run: time budget spent"})
            print(f"{label}: not run (budget)", flush=True)
            continue
        torch._dynamo.reset()
        try:
            fwd = torch.compile(model, mode=mode) if mode else None
            r = training.train_speed(model, batch, setup["steps"], setup["warmup"], "cuda", fwd)
            r["mfu"] = cost.mfu(r["tokens_per_s"], fpt, peak)
            rows.append({"variant": label, "status": "ok", **r})
            print(f"{label}: {r['tokens_per_s']:,.0f} tokens/s, {r['step_seconds'] * 1e3:.0f} ms/step, "
                  f"MFU {r['mfu']:.1%}, peak {r['peak_memory_bytes'] / 1e9:.1f} GB, first steps "
                  f"{r['warmup_seconds']:.0f} s", flush=True)
        except Exception as e:  # noqa: BLE001 - a variant that fails is a finding
            rows.append({"variant": label, "status": f"failed: {type(e).__name__}: {str(e)[:300]}"})
            print(f"{label}: failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
        gc.collect()
        torch.cuda.empty_cache()
        if a.json:  # after every variant: a run cut short keeps what it measured
            Path(a.json).write_text(json.dumps({"device": torch.cuda.get_device_name(),
                                                "torch": torch.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
