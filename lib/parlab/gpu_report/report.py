"""The report: every section in order, printed as it is measured, written as JSON.

    python -m parlab gpu-report [--quick] [--json PATH] [--only SECTION ...] [--no-compile]

Sections (the JSON's top-level keys): device, matmul, attention_dropout, model,
activation_memory (one GPU), nccl, strategies (two or more). Each is {"status": "ok" |
"skipped" | "error", "reason" (unless ok), "seconds", ...figures}. Without a GPU every GPU section is
skipped with its reason and the exit status is 0; it is 1 when a section failed."""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

from .. import hardware
from . import activations, attention_dropout, matmul, multi_gpu, training
from .common import ERROR, OK, SKIPPED, cuda_reason, json_safe, nccl_available, nccl_reason, run_section, skipped

SECTIONS = ("device", "matmul", "attention_dropout", "model", "activation_memory", "nccl",
            "strategies")
GPU_SECTIONS = SECTIONS[1:]


def device_section(quick: bool) -> dict:
    """What ran the report: always measured, GPU or not."""
    hw = hardware.detect()
    spec = hardware.match_gpu(hw.gpus[0]["name"]) if hw.gpus else None
    link = hardware.LINK_PRESETS[spec.link] if spec else None
    return {"status": OK, "quick": quick, "torch": torch.__version__, "cuda": torch.version.cuda,
            "cuda_available": hw.cuda_available, "gpu_count": len(hw.gpus), "gpus": hw.gpus,
            "no_gpu_reason": cuda_reason(), "nccl_available": nccl_available(),
            "preset": None if spec is None else {
                "name": spec.name, "memory_gb": spec.memory_gb, "peak_tflops": spec.peak_tflops,
                "link": spec.link, "link_gb_s_per_direction": link.gb_per_s_per_direction,
                "source": spec.source, "link_source": link.source},
            "cpu": hw.cpu_model, "usable_cpus": hw.usable_cpus, "load": hardware.load()}


def plan(report_device: dict, only=None) -> dict:
    """Section -> None (run it) or the reason it is skipped, from the device section."""
    why_gpu = report_device["no_gpu_reason"]
    why_multi = why_gpu or nccl_reason(report_device["gpu_count"], report_device["nccl_available"])
    out = {}
    for name in GPU_SECTIONS:
        if only and name not in only:
            out[name] = f"not selected (--only {' '.join(only)})"
        else:
            out[name] = why_multi if name in ("nccl", "strategies") else why_gpu
    return out


def _runners(quick: bool, compile_: bool, n_gpus: int) -> dict:
    return {"matmul": lambda: matmul.section(quick),
            "attention_dropout": lambda: attention_dropout.section(quick),
            "model": lambda: training.section(quick, compile_),
            "activation_memory": lambda: activations.section(quick),
            "nccl": lambda: multi_gpu.nccl_section(quick, n_gpus),
            "strategies": lambda: multi_gpu.strategies_section(n_gpus)}


LINES = {"matmul": matmul.lines, "attention_dropout": attention_dropout.lines,
         "model": training.lines, "activation_memory": activations.lines,
         "nccl": multi_gpu.nccl_lines, "strategies": multi_gpu.strategies_lines}


def section_lines(name: str, rec: dict) -> list[str]:
    if name == "device":
        kinds = [f"{g['name']} ({g['memory_gb']:.0f} GiB, sm {g['capability']})" for g in rec["gpus"]]
        gpus = ", ".join(f"{kinds.count(k)} x {k}" for k in dict.fromkeys(kinds))
        preset = f"; preset {rec['preset']['name']}" if rec["preset"] else ""
        return [f"device: torch {rec['torch']} (CUDA {rec['cuda'] or 'none'}); "
                + (f"GPUs: {gpus}{preset}" if rec["gpu_count"] else rec["no_gpu_reason"]),
                f"  CPU: {rec['cpu'] or 'unknown'}; {rec['load']}"]
    if rec["status"] != OK:
        return [f"{name}: {rec['status']}: {rec['reason']}"]
    return [f"{name}: ({rec['seconds']:.0f} s)"] + LINES[name](rec)


def headline(report: dict) -> list[str]:
    """The few figures worth a line each (the notebook shows these)."""
    out = []
    dev = report["device"]
    out.append(f"device: {dev['gpus'][0]['name'] if dev['gpus'] else 'no GPU'}, torch {dev['torch']}")
    for name in GPU_SECTIONS:
        rec = report.get(name) or skipped("not run")
        if rec.get("reason", "").startswith("not selected"):
            continue
        if rec["status"] != OK:
            out.append(f"{name}: {rec['status']}: {rec['reason']}")
        elif name == "matmul":
            out.append("matmul: " + ", ".join(
                f"{d} {t:.0f} TFLOP/s" + (f" ({t / p:.0%} of {p:g})" if (p := (dev["preset"] or {})
                                                                       .get("peak_tflops", {}).get(d)) else "")
                for d, t in rec["best_tflops"].items()))
        elif name == "attention_dropout":
            out.append(f"attention_dropout: SDPA with dropout {rec['dropout_p']} takes "
                       f"x{rec['dropout_factor']:.2f} its time without")
        elif name == "model" and rec.get("best"):
            mfu = f", MFU {rec['mfu']:.1%}" if rec.get("mfu") is not None else ""
            out.append(f"model: GPT {rec['n_params'] / 1e9:.2f}B, {rec['best']}: "
                       f"{rec['tokens_per_s']:,.0f} tokens/s{mfu}")
        elif name == "activation_memory":
            by_kind = {}
            for r in rec["rows"]:
                if r.get("allocator_vs_korthikanti") is not None:
                    by_kind.setdefault(r["attention"], []).append(r["allocator_vs_korthikanti"])
            out.append("activation_memory: allocator / Korthikanti " + (", ".join(
                f"{k} x{min(v):.2f}" + (f"-{max(v):.2f}" if max(v) - min(v) >= 0.005 else "")
                for k, v in by_kind.items()) or "not measured (no CUDA allocator)"))
        elif name == "nccl":
            out.append("nccl: best busbw " + ", ".join(f"{op} {bw:.0f} GB/s" for op, bw in rec["best_busbw_gb_s"].items()))
        elif name == "strategies":
            out.append("strategies: " + ", ".join(
                f"{r['strategy']} {'equal' if r.get('equal') else r['status']}" for r in rec["rows"]))
    return out


def build(quick: bool = False, only=None, compile_: bool = True, out=print, json_path=None) -> dict:
    """Run every section (``only``: these GPU sections), printing each as it ends and
    rewriting ``json_path`` after each, so a run cut short still leaves its figures."""
    t0 = time.perf_counter()
    report = {"device": run_section(device_section, quick)}
    for line in section_lines("device", report["device"]):
        out(line)
    reasons = plan(report["device"], only)
    runners = _runners(quick, compile_, report["device"]["gpu_count"])
    for name in GPU_SECTIONS:
        report[name] = skipped(reasons[name]) if reasons[name] else run_section(runners[name])
        for line in section_lines(name, report[name]):
            out(line)
        report["device"]["report_seconds"] = round(time.perf_counter() - t0, 3)
        if json_path:
            write_json(report, json_path)
    return report


def write_json(report: dict, path) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(json_safe(report), f, indent=1, allow_nan=False)
    os.replace(tmp, path)


def check_json_path(path) -> str | None:
    """``path`` if a report can be written there, else ValueError naming the problem."""
    if path is None:
        return None
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"--json {path} is a directory; give a file name")
    if not os.path.isdir(parent):
        raise ValueError(f"--json {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"--json {path}: directory {parent} is not writable")
    return path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="PATH", default=None, help="also write the report as JSON")
    p.add_argument("--quick", action="store_true", help="smaller sizes and model (~2 minutes on an H200)")
    p.add_argument("--only", nargs="+", metavar="SECTION", choices=GPU_SECTIONS, default=None,
                   help=f"run only these sections ({', '.join(GPU_SECTIONS)})")
    p.add_argument("--no-compile", dest="compile", action="store_false",
                   help="measure the model eagerly only (no torch.compile)")


def run_cli(args, out=print) -> int:
    """The command: check ``args``, build the report, write it; the exit status."""
    path = check_json_path(args.json)
    report = build(args.quick, args.only, args.compile, out, path)
    failed = [n for n in GPU_SECTIONS if report[n]["status"] == ERROR]
    n_skipped = sum(report[n]["status"] == SKIPPED for n in GPU_SECTIONS)
    out(f"\n{len(GPU_SECTIONS) - len(failed) - n_skipped} sections measured, {n_skipped} skipped, "
        f"{len(failed)} failed{': ' + ', '.join(failed) if failed else ''}"
        f"{'; JSON in ' + path if path else ''} ({report['device']['report_seconds']:.0f} s)")
    return 1 if failed else 0


def main(argv=None, out=print) -> int:
    """``python -m parlab gpu-report`` without the rest of the CLI (tests, notebooks)."""
    p = argparse.ArgumentParser(prog="python -m parlab gpu-report", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        return run_cli(args, out)
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
