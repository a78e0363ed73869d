"""What hardware is here (CPU, memory limit, GPUs, backends) and the load under a timing; the
vendor *peak* figures for common GPUs and links and the nodes they come in live in
``hardware_presets`` (pure data) and are re-exported here. Measured speeds are below those
peaks (see measure_matmul_flops)."""
from __future__ import annotations

import functools
import math
import os
import platform
import statistics
import textwrap
import time
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from .hardware_presets import (DEFAULT_NODE, GPU_PRESETS, LINK_PRESETS, NODE_PRESETS,  # noqa: F401
                               GPUSpec, LinkSpec, NodeSpec, default_dtype, match_gpu, node_for,
                               peak_flops)


@dataclass
class Hardware:
    cpu_model: str | None = None
    logical_cpus: int | None = None
    usable_cpus: int | None = None
    memory_gb: float | None = None  # GiB of physical RAM
    memory_limit_gb: float | None = None  # GiB this session may use: the cgroup limit, else RAM
    memory_limit_source: str | None = None  # where memory_limit_gb comes from
    torch_version: str | None = None
    cuda_available: bool = False
    gpus: list = field(default_factory=list)  # dicts: index, name, memory_gb, capability, preset
    nccl_available: bool = False
    gloo_available: bool = False


def _proc_field(path: str, key: str) -> str | None:
    """Value after ':' on the first line of a /proc file that starts with key."""
    try:
        with open(path) as f:
            return next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith(key)), None)
    except OSError:
        return None


def _cgroup_cpu_limit(path: str = "/sys/fs/cgroup/cpu.max") -> int | None:
    """CPUs allowed by a cgroup v2 quota ("200000 100000" -> 2), or None when unlimited/absent."""
    try:
        with open(path) as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        return None


def _memory_gb() -> float | None:
    try:
        return int(_proc_field("/proc/meminfo", "MemTotal").split()[0]) / 2**20  # kB -> GiB
    except (AttributeError, ValueError, IndexError):  # not Linux: ask sysconf
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        except (OSError, ValueError, AttributeError):
            return None


_UNLIMITED = 2 ** 60  # cgroup v1 writes "no limit" as a huge number (2^63 rounded to pages)


def _cgroup_dirs(controller: str, cgroup_file: str, mount: str) -> list[str]:
    """This process's cgroup directories for ``controller`` ("" = the v2 unified tree),
    innermost first and up to the mount's root: a limit may sit on any ancestor."""
    root = mount + (f"/{controller}" if controller else "")
    path = "/"
    try:
        with open(cgroup_file) as f:
            for line in f:  # "0::/user.slice/..." (v2) or "4:memory:/docker/..." (v1)
                _, names, p = line.rstrip("\n").split(":", 2)
                if (names == "" if not controller else controller in names.split(",")):
                    path = p
    except (OSError, ValueError):
        pass
    parts = [x for x in path.split("/") if x]
    dirs = [os.path.join(root, *parts[:i]) for i in range(len(parts), 0, -1)]
    return [d for d in dirs if os.path.isdir(d)] + [root]  # inside a container: root is ours


def _read_limit(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
        value = None if text == "max" else int(text)
    except (OSError, ValueError):
        return None
    return value if value and value < _UNLIMITED else None


def cgroup_memory_limit(cgroup_file: str = "/proc/self/cgroup",
                        mount: str = "/sys/fs/cgroup") -> tuple[int, str] | None:
    """(bytes, source) of the tightest cgroup memory limit on this process, or None.

    cgroup v2 (Binder, recent Docker): ``memory.max``; v1: ``memory.limit_in_bytes``."""
    found = [(v, f"cgroup v2 {d}/memory.max") for d in _cgroup_dirs("", cgroup_file, mount)
             if (v := _read_limit(os.path.join(d, "memory.max")))]
    found += [(v, f"cgroup v1 {d}/memory.limit_in_bytes")
              for d in _cgroup_dirs("memory", cgroup_file, mount)
              if (v := _read_limit(os.path.join(d, "memory.limit_in_bytes")))]
    return min(found) if found else None


def memory_limit() -> tuple[int | None, str]:
    """(bytes, source): the memory this session really has. The cgroup limit when one is
    set below the RAM (Binder, Docker, Kubernetes: exceeding it gets the kernel killed),
    otherwise the physical RAM; (None, "unknown") when neither can be read."""
    ram = _memory_gb()
    ram = int(ram * 2**30) if ram else None
    limit = cgroup_memory_limit()
    if limit and (ram is None or limit[0] < ram):
        return limit
    return (ram, "physical RAM") if ram else (None, "unknown")


BUDGET_FRACTION = 0.85  # the rest: the Jupyter server, and a job's peak above its estimate
_UNITS = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}


def parse_bytes(text: str) -> int | None:
    """"1.5G" / "1500M" / "1500MiB" / "1610612736" -> bytes; "off" / "none" / "0" -> None."""
    t = str(text).strip().upper().removesuffix("B").removesuffix("I")
    if t in ("OFF", "NONE", "0", ""):
        return None
    unit = t[-1] if t[-1] in _UNITS else ""
    try:
        value = float(t[: len(t) - len(unit)]) * _UNITS[unit]
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValueError(f"PARLAB_MEMORY_BUDGET={text!r} must be a positive size such as '1.5G', "
                         "'1500M' or a number of bytes, or 'off'")
    return int(value)


def memory_budget() -> tuple[int | None, str]:
    """(bytes, or None for none; where it comes from): what parlab's launcher lets this
    process and its ranks hold together (parlab.launch closes idle pools to stay within
    it). PARLAB_MEMORY_BUDGET when set, else BUDGET_FRACTION of memory_limit()."""
    env = os.environ.get("PARLAB_MEMORY_BUDGET")
    if env is not None:
        value = parse_bytes(env)
        return value, f"PARLAB_MEMORY_BUDGET={env}" if value else "PARLAB_MEMORY_BUDGET=off"
    limit, source = memory_limit()
    if limit is None:
        return None, "no memory limit could be read"
    return (int(BUDGET_FRACTION * limit),
            f"{BUDGET_FRACTION:.0%} of the {limit / 2**30:.1f} GiB memory limit ({source})")


def _usable_cpus() -> int | None:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    limit = _cgroup_cpu_limit()
    return min(usable, limit) if usable and limit else usable or limit


def _dist_has(what: str) -> bool:
    try:
        return bool(dist.is_available() and getattr(dist, f"is_{what}_available")())
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def detect() -> Hardware:
    """Inspect this machine (cached; detect.cache_clear() to redo). Never raises; unknowns are None."""
    cpu = _proc_field("/proc/cpuinfo", "model name") or platform.processor() or None
    limit, source = memory_limit()
    hw = Hardware(cpu_model=cpu, logical_cpus=os.cpu_count(), usable_cpus=_usable_cpus(),
                  memory_gb=_memory_gb(), torch_version=torch.__version__,
                  memory_limit_gb=limit / 2**30 if limit else None, memory_limit_source=source)
    try:
        hw.cuda_available = torch.cuda.is_available()
        for i in range(torch.cuda.device_count() if hw.cuda_available else 0):
            p = torch.cuda.get_device_properties(i)
            hw.gpus.append({"index": i, "name": p.name, "memory_gb": p.total_memory / 2**30, "capability":
                            f"{p.major}.{p.minor}", "preset": getattr(match_gpu(p.name), "name", None)})
    except Exception:
        pass
    hw.nccl_available = _dist_has("nccl") and bool(hw.gpus)
    hw.gloo_available = _dist_has("gloo")
    return hw


def default_backend(world_size: int) -> str:
    """"nccl" when CUDA and NCCL are available and there is one GPU per rank, else "gloo"."""
    try:
        if torch.cuda.is_available() and _dist_has("nccl") and torch.cuda.device_count() >= world_size:
            return "nccl"
    except Exception:
        pass
    return "gloo"


def _load_average() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def load() -> str:
    """What the machine is doing now, for the line under a timing: "load average 1.2 on
    2 usable cores" (1-minute average; other programs share these cores too).
    ``timing_note`` adds whether the numbers can be trusted."""
    return f"load average {_load_average():.1f} on {detect().usable_cpus} usable cores"


WIDTH = 100  # characters of a printed line in a notebook: longer ones run off the cell's edge


def describe(world_size: int | None = None) -> str:
    """A short multi-line summary of this machine for a notebook (lines of at most WIDTH)."""
    hw = detect()
    yn = lambda b: "yes" if b else "no"
    mem = f"{hw.memory_gb:.1f} GiB RAM" if hw.memory_gb else "RAM unknown"
    lines = [f"CPU: {hw.cpu_model or 'unknown'} | {hw.usable_cpus} usable of {hw.logical_cpus} cores | {mem}",
             _memory_line(hw),
             f"torch {hw.torch_version} | CUDA {yn(hw.cuda_available)} | gloo {yn(hw.gloo_available)}, "
             f"nccl {yn(hw.nccl_available)}"]
    for g in hw.gpus:
        lines.append(f"GPU {g['index']}: {g['name']}, {g['memory_gb']:.1f} GiB, compute {g['capability']}")
        if g["preset"]:
            spec = GPU_PRESETS[g["preset"]]
            link = LINK_PRESETS[spec.link]
            lines[-1] += (f" | preset {spec.name}: {spec.peak_tflops.get('bf16', 'no')} TFLOP/s bf16 peak "
                          f"(dense), link {link.name} {link.gb_per_s_per_direction:g} GB/s per direction")
    if not hw.gpus:
        lines.append("GPUs: none (ranks run as CPU processes)")
    if world_size is not None:
        lines.append(f"launch: {_launch_line(world_size)}")
        if hw.usable_cpus and world_size > hw.usable_cpus:
            lines.append(f"{world_size} ranks will share {hw.usable_cpus} cores (oversubscribed "
                         f"x{world_size / hw.usable_cpus:.3g}): timings show scheduling as much as communication")
    return "\n".join(_fit(line) for line in lines)


def _launch_line(world_size: int) -> str:
    """What ``parlab.launch`` would run ``world_size`` ranks on here, in its own words:
    the device it picks (``PARLAB_DEVICE`` or "auto") decides the backend, not the GPU
    count alone -- one GPU and four ranks is gloo with CUDA tensors, not the CPU."""
    from .launch import devices  # (the launcher's choice, made where launch makes it)
    try:
        return devices.describe(devices.choose(world_size, None, None), world_size)
    except ValueError as e:  # e.g. PARLAB_DEVICE=cuda on a machine without a GPU
        return f"cannot run here: {e}"


def _fit(line: str) -> str:
    """A line of at most WIDTH: broken at its " | " separators first, else between words."""
    if len(line) <= WIDTH:
        return line
    if " | " in line:
        return "\n  ".join(line.split(" | "))
    return textwrap.fill(line, WIDTH, subsequent_indent="  ")


def _memory_line(hw: Hardware) -> str:
    """The memory limit found, and the budget parlab's ranks keep to within it."""
    if not hw.memory_limit_gb:
        limit = "memory limit: unknown"
    elif hw.memory_limit_source == "physical RAM":
        limit = f"memory limit: {hw.memory_limit_gb:.1f} GiB (the RAM; no cgroup limit)"
    else:
        limit = f"memory limit: {hw.memory_limit_gb:.1f} GiB ({hw.memory_limit_source})"
    try:
        value, source = memory_budget()
    except ValueError as e:  # a malformed PARLAB_MEMORY_BUDGET: say so, do not fail
        return f"{limit} | {e}"
    if value is None:
        return f"{limit} | parlab's memory budget is off ({source})"
    return f"{limit} | parlab keeps itself and its ranks within {value / 2**30:.1f} GiB ({source.split(' of ')[0]})"


def measure_matmul_flops(n: int = 256, repeats: int = 20, dtype=torch.float32, device="cpu") -> float:
    """Measured FLOP/s of an n x n matmul (2*n**3 FLOPs): the median over `repeats` after a warm-up,
    with torch's current thread count. This is a *measurement* on this machine, at this size and with
    this load -- not a vendor peak, and usually well below it (small n measures overhead)."""
    device = torch.device(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    a, b = (torch.randn(n, n, device=device).to(dtype) for _ in range(2))
    times = []
    with torch.no_grad():
        for _ in range(3 + repeats):  # the first 3 are a warm-up (allocator, kernel choice, caches)
            t0 = time.perf_counter()
            torch.mm(a, b)
            sync()
            times.append(time.perf_counter() - t0)
    return 2 * n**3 / max(statistics.median(times[3:]), 1e-9)


def timing_note() -> tuple[bool, str]:
    """(quiet, line) for the top of a timing's output: the machine's load, and whether
    the numbers below can be trusted. Busy = the 1-minute load average exceeds the
    usable cores: other programs then take turns with the ranks, and a measured
    difference of a few tens of percent can flip."""
    avg = _load_average()
    cores = detect().usable_cpus or 1
    if avg != avg:  # NaN: no load average on this platform
        return True, "load average unknown on this platform"
    if avg <= cores:
        return True, f"{load()}: quiet enough to time"
    return False, (f"{load()}: other programs are using the CPUs, so these timings are noisy; "
                   "rerun when the machine is quiet before drawing a conclusion from a "
                   "difference under ~2x")


def load_note() -> None:
    """Print ``timing_note``'s line, wrapped to WIDTH: the first line of every notebook
    cell that times something, so the reader knows whether to trust the numbers."""
    print(textwrap.fill(timing_note()[1], WIDTH))
