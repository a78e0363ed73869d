"""Everything the lab can check on one GPU, in one unattended call of at most ~9 minutes:

    OUT=/some/dir python tools/gpu_all.py [--budget-s 530] [--out DIR]

1. the collectives gloo runs with CUDA tensors (several ranks on one GPU), each checked
   against its expected result, staged and unstaged (launch/devices.py's table);
2. every strategy (parlab.launch.cases, the full list) with CUDA tensors, several ranks
   sharing the GPU(s), against the single-device reference on the same GPU (fp32; the
   strategies' own tolerances) and, for information, against the CPU reference;
3. the notebooks' GPU cells that need no Jupyter (called directly; those needing more
   GPUs than there are say so);
4. ``tools/gpu_mfu_sweep.py`` (compiled, the ~1B GPT; target >= 60% MFU), then
   ``python -m parlab gpu-report --quick``, with whatever time is left.

Output is printed as it comes (flushed), and $OUT/gpu_all.json (default ./gpu_all_out)
is rewritten after every item, so a run cut short keeps what it measured; the two
subprocesses also write their own JSON and text there. Needs torch >= 2.4 (tested
against 2.13 on the CPU); no Jupyter, plotly or ipywidgets.

Exit status: 0 when everything that ran passed, 1 when a check failed or errored.
Without a CUDA GPU it says so and exits 0 at once ("gpu": false in the JSON): there is
nothing it can check (CI's stand-in is tests/parlab/launch/test_dry_run.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

STAGED = ("all_gather_into_tensor", "reduce_scatter_tensor", "send_recv")
NATIVE = ("all_reduce", "broadcast", "all_to_all_single", "all_gather")


def say(*parts) -> None:
    print(*parts, flush=True)


# --- rank workers (the ranks import this file as __mp_main__: no work at module level) ---

def collective_worker(ops, staged=True) -> dict:
    """Each of ``ops`` on CUDA tensors of this rank's device, checked against what it must
    give; ``staged=False`` takes the staging off first (gloo's own CUDA support)."""
    import torch
    import torch.distributed as dist

    from parlab import comm
    from parlab.launch import devices
    if not staged:
        devices.remove_staging()
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    r, n, dev = dist.get_rank(), dist.get_world_size(), comm.device()
    out = {}
    for op in ops:
        try:
            x = torch.arange(4 * n, dtype=torch.float32, device=dev) + 100 * r
            if op == "all_reduce":
                dist.all_reduce(x)
                want = sum(torch.arange(4 * n, dtype=torch.float32) + 100 * k for k in range(n))
            elif op == "broadcast":
                dist.broadcast(x, src=0)
                want = torch.arange(4 * n, dtype=torch.float32)
            elif op == "all_to_all_single":
                y = torch.empty_like(x)
                dist.all_to_all_single(y, x)
                x = y
                want = torch.cat([torch.arange(4 * r, 4 * r + 4, dtype=torch.float32) + 100 * k
                                  for k in range(n)])
            elif op == "all_gather":
                parts = [torch.empty(4, device=dev) for _ in range(n)]
                dist.all_gather(parts, x[:4].contiguous())
                x = torch.cat(parts)
                want = torch.cat([torch.arange(4, dtype=torch.float32) + 100 * k for k in range(n)])
            elif op == "all_gather_into_tensor":
                y = torch.empty(4 * n, device=dev)
                gather(y, x[:4].contiguous())
                x = y
                want = torch.cat([torch.arange(4, dtype=torch.float32) + 100 * k for k in range(n)])
            elif op == "reduce_scatter_tensor":
                y = torch.empty(4, device=dev)
                scatter(y, x)
                x = y
                want = sum(torch.arange(4 * r, 4 * r + 4, dtype=torch.float32) + 100 * k
                           for k in range(n))
            else:  # send_recv: a ring by comm.exchange, then batch_isend_irecv
                y = torch.empty_like(x)
                comm.exchange(x, (r + 1) % n, y, (r - 1) % n)
                z = torch.empty_like(x)
                for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, x, (r + 1) % n),
                                                 dist.P2POp(dist.irecv, z, (r - 1) % n)]):
                    w.wait()
                assert torch.equal(y, z), "batch_isend_irecv differs from isend/irecv"
                x = y
                want = torch.arange(4 * n, dtype=torch.float32) + 100 * ((r - 1) % n)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            ok = x.device.type == dev.type and torch.equal(x.cpu(), want)
            out[op] = "ok" if ok else f"wrong result on {x.device}"
        except Exception as e:  # noqa: BLE001 - an operation that fails is a finding
            out[op] = f"failed: {type(e).__name__}: {str(e)[:200]}"
    return out


# --- the caller -------------------------------------------------------------------------

class Record:
    """$OUT/gpu_all.json, rewritten after every item."""

    def __init__(self, out: Path):
        self.path = out / "gpu_all.json"
        self.data: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
        self.failed = False

    def put(self, key, value) -> None:
        self.data[key] = value
        self.path.write_text(json.dumps(self.data, indent=1, default=str))

    def add(self, key, row) -> None:
        self.put(key, self.data.get(key, []) + [row])


def environment() -> dict:
    import torch

    from parlab.launch import devices
    env = {"python": sys.version.split()[0], "torch": torch.__version__,
           "cuda": torch.version.cuda, "gpu": torch.cuda.is_available(),
           "load_average": os.getloadavg()[0], "cpus": os.cpu_count()}
    if env["gpu"]:
        env.update(gpus=torch.cuda.device_count(), name=torch.cuda.get_device_name(0),
                   capability=torch.cuda.get_device_capability(0),
                   bf16=torch.cuda.is_bf16_supported(),
                   half_dtype=str(devices.half_dtype("cuda")),
                   tf32_matmul=torch.backends.cuda.matmul.allow_tf32,
                   memory_gb=torch.cuda.get_device_properties(0).total_memory / 1e9)
    return env


def check_collectives(rec: Record, ranks: int, device: str = "cuda") -> None:
    from parlab.launch import launch, on_device, shutdown
    with on_device(device):
        for staged, ops in ((True, NATIVE + STAGED), (False, STAGED[:2])):
            label = "staged" if staged else "gloo's own (staging off)"
            try:
                got = launch(collective_worker, ranks, list(ops), staged, timeout=60)[0]
            except Exception as e:  # noqa: BLE001
                got = {op: f"launch failed: {type(e).__name__}: {str(e)[-300:]}" for op in ops}
            for op, status in got.items():
                say(f"  {op:<24} {label:<26} {status}")
                rec.add("collectives", {"op": op, "staged": staged, "ranks": ranks, "status": status})
                if staged and status != "ok":
                    rec.failed = True
    shutdown()  # the staging-off ranks must not serve the strategies


def check_strategies(rec: Record, deadline: float, device: str = "cuda") -> None:
    import torch

    from parlab.launch import cases, last_placement, on_device, shutdown
    from parlab.model import reference_train
    gpu_refs: dict = {}
    for name, run_fn, run, world_size in cases.cases(full=True):
        if time.time() > deadline:
            rec.add("strategies", {"name": name, "status": "not run: time budget spent"})
            say(f"  {name}: not run (time budget)")
            continue
        t0 = time.time()
        row = {"name": name, "world_size": world_size}
        try:
            key = (repr(run.config), run.steps, run.batch_size)
            if key not in gpu_refs:
                gpu_refs[key] = reference_train(run.config, run.steps, run.batch_size,
                                                device="cuda" if device == "cuda" else "cpu")
            with on_device(device):
                result = run_fn(run, world_size, timeout=120)
            row.update(placement=last_placement(), vs_gpu=cases.compare(result, gpu_refs[key]),
                       vs_cpu=cases.compare(result, cases.reference(run)))
            row["status"] = "ok" if row["vs_gpu"]["ok"] else "differs from one GPU"
        except Exception as e:  # noqa: BLE001
            row["status"] = f"failed: {type(e).__name__}: {str(e)[-600:]}"
        row["seconds"] = round(time.time() - t0, 2)
        rec.failed |= row["status"] != "ok"
        d = row.get("vs_gpu", {})
        say(f"  {name:<24} {world_size} ranks  {row['status'][:300]}"
            + (f"  loss {d['loss']:.1e} grad {d['grad']:.1e} param {d['param']:.1e}" if d else "")
            + f"  ({row['seconds']} s)")
        rec.add("strategies", row)
        if device == "cuda":
            torch.cuda.empty_cache()
    shutdown()


def check_notebook_cells(rec: Record) -> None:
    """The notebooks' cells that use a GPU, called as the cells call them."""
    import torch
    n = torch.cuda.device_count()

    def fp8():  # 07_mixed_precision, "fp8 GEMM" cell
        from lessons.l07_mixed_precision import experiments
        return experiments.fp8_gemm()

    def cp_peer():  # 05_context_parallel, PyTorch's context_parallel against one GPU
        from lessons.l05_context_parallel import experiments
        return experiments.peer_check(seq_len=8192)

    # 00_collectives' GPU report headline is gpu-report --quick's matmul/model/activation
    # sections: section 4 runs them. The others need 2 GPUs or more.
    cells = [("07 fp8_gemm", fp8, 1), ("05 peer_check", cp_peer, 2),
             ("00 NCCL bus bandwidth", None, 2), ("02 live TP on GPUs", None, 2)]
    for label, fn, needs in cells:
        t0 = time.time()
        if n < needs or fn is None:
            row = {"cell": label, "status": f"skipped: needs {needs} GPUs, {n} here"}
        else:
            try:
                row = {"cell": label, "status": "ok", "result": fn()}
            except ImportError as e:  # plotly, ipywidgets or IPython missing
                row = {"cell": label, "status": f"skipped: {e}"}
            except Exception as e:  # noqa: BLE001
                row = {"cell": label, "status": f"failed: {type(e).__name__}: {str(e)[:300]}"}
                rec.failed = True
        row["seconds"] = round(time.time() - t0, 2)
        say(f"  {label:<24} {row['status'][:200]}  ({row['seconds']} s)"
            + (f"\n    {json.dumps(row.get('result'), default=str)[:400]}" if "result" in row else ""))
        rec.add("notebook_cells", row)


def subprocess_step(rec: Record, key: str, cmd: list[str], timeout: float, out: Path) -> None:
    """Run ``cmd``, echoing its lines as they come and into $OUT/<key>.txt; killed after
    ``timeout`` seconds (what it wrote to its JSON stays)."""
    say(f"$ {' '.join(cmd)}   (at most {timeout:.0f} s)")
    if timeout < 30:
        rec.put(key, {"status": "not run: time budget spent"})
        say("  not run: time budget spent")
        return
    t0 = time.time()
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'lib'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    with open(out / f"{key}.txt", "w") as log:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, bufsize=1)
        try:
            for line in p.stdout:
                log.write(line)
                say("  " + line.rstrip())
                if time.time() - t0 > timeout:
                    p.kill()
                    break
            code = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            code = -9
    status = "ok" if code == 0 else f"exit {code}" + (" (time budget)" if code < 0 else "")
    rec.failed |= code > 0
    rec.put(key, {"status": status, "seconds": round(time.time() - t0, 1), "cmd": cmd})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "gpu_all_out"))
    ap.add_argument("--budget-s", type=float, default=530.0, help="total wall-clock budget")
    ap.add_argument("--ranks", type=int, default=4, help="ranks sharing the GPU(s) in the probe")
    ap.add_argument("--stand-in", action="store_true",
                    help="no GPU needed: sections 1-2 on the dry run's stand-in device (this "
                         "script's own test on the CPU)")
    a = ap.parse_args(argv)
    start = time.time()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rec = Record(out)
    env = environment()
    rec.put("env", env)
    say(f"gpu_all: {json.dumps(env, default=str)}")
    if a.stand_in:
        say("\n== 1/2 collectives, stand-in device")
        check_collectives(rec, a.ranks, "dry-run")
        say("\n== 2/2 every strategy, stand-in device")
        check_strategies(rec, start + a.budget_s, "dry-run")
        rec.put("finished", "stand-in")
        return 1 if rec.failed else 0
    if not env["gpu"]:
        say("gpu_all: no CUDA GPU here (torch.cuda.is_available() is False): nothing to check "
            "on a GPU; exit 0. On the CPU, tests/parlab/launch/test_dry_run.py checks the "
            f"same per-rank code paths. Wrote {rec.path}")
        rec.put("finished", "no GPU")
        return 0

    def left() -> float:
        return a.budget_s - (time.time() - start)

    steps = [
        ("1/4 collectives with CUDA tensors, several ranks per GPU",
         lambda: check_collectives(rec, a.ranks)),
        ("2/4 every strategy on the GPU, several ranks per GPU, against one GPU",
         lambda: check_strategies(rec, start + a.budget_s - 360)),  # leave the rest its time
        ("3/4 the notebooks' GPU cells", lambda: check_notebook_cells(rec)),
        ("4/4 the MFU sweep and the GPU report (quick)", None),
    ]
    for title, fn in steps:
        say(f"\n== {title} ({left():.0f} s left)")
        if fn is None:
            break
        try:
            fn()
        except Exception:  # noqa: BLE001 - report, and go on to the next section
            rec.failed = True
            rec.add("errors", {"section": title, "traceback": traceback.format_exc()[-2000:]})
            say(traceback.format_exc())
    py = sys.executable
    # The MFU sweep first (the issue's >= 60% target): it starts no variant after its
    # budget, and one compiled variant takes ~60-100 s; then the quick report, cut at the
    # end of the budget if need be (its JSON is rewritten after every section).
    subprocess_step(rec, "mfu_sweep", [py, str(ROOT / "tools" / "gpu_mfu_sweep.py"), "--json",
                                       str(out / "mfu_sweep.json"), "--budget-s",
                                       f"{max(min(120.0, left() - 260), 0):.0f}"],
                    min(240.0, left() - 150), out)
    subprocess_step(rec, "gpu_report_quick", [py, "-m", "parlab", "gpu-report", "--quick", "--json",
                                              str(out / "gpu_report_quick.json")],
                    left() - 10, out)
    rec.put("finished", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    rec.put("seconds", round(time.time() - start, 1))
    say(f"\ngpu_all: {'FAILED' if rec.failed else 'all passed'} in {time.time() - start:.0f} s; "
        f"{rec.path}")
    return 1 if rec.failed else 0


if __name__ == "__main__":
    sys.exit(main())
