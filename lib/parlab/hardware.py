"""What hardware is here, and vendor *peak* figures for common hardware (decimal units: 1 TFLOP/s =
1e12 FLOP/s, 1 GB/s = 1e9 B/s). Tensor-core peaks are DENSE: where a datasheet quotes "with sparsity"
(2:4 structured sparsity, 2x) we store half. "fp64" is the FP64 tensor-core peak where the chip has one
(A100/H100/H200: what a double matmul uses); "fp32" is plain FP32. Preset memory is the marketed "GB";
detected memory is GiB. Measured speeds are below these peaks (see measure_matmul_flops)."""
from __future__ import annotations

import functools
import math
import os
import platform
import re
import statistics
import time
from dataclasses import dataclass, field

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class LinkSpec:
    name: str
    gb_per_s_per_direction: float  # GB/s one way per GPU/port: what a ring all-reduce can use
    gb_per_s_total: float  # as marketed: both directions added together
    latency_us: float  # OUR rough typical order of magnitude for a small message: not from source
    source: str


@dataclass(frozen=True)
class GPUSpec:
    name: str
    memory_gb: float
    hbm_gb_per_s: float  # memory bandwidth (HBM or GDDR), GB/s
    peak_tflops: dict  # dtype ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8") -> dense TFLOP/s
    link: str  # key of LINK_PRESETS: the GPU-to-GPU link inside one node
    source: str


_NVLINK = "NVIDIA NVLink & NVSwitch page, https://www.nvidia.com/en-us/data-center/nvlink/"
_PCIE = "PCI-SIG specifications (GT/s per lane, 128b/130b encoding), https://pcisig.com/specifications"
_IB = "InfiniBand Trade Association roadmap, https://www.infinibandta.org/infiniband-roadmap/"
_ETH = "IEEE 802.3 Ethernet standards (802.3ae 10G, 802.3by 25G, 802.3ba 100G), https://www.ieee802.org/3/"
LINK_PRESETS = {l.name: l for l in [
    LinkSpec("NVLink2", 150.0, 300.0, 1.0, _NVLINK),  # V100: 6 links x 25 GB/s per direction
    LinkSpec("NVLink3", 300.0, 600.0, 1.0, _NVLINK),  # A100: 12 links x 25 GB/s per direction
    LinkSpec("NVLink4", 450.0, 900.0, 1.0, _NVLINK),  # H100/H200: 18 links x 25 GB/s per direction
    # PCIe x16: 8/16/32 GT/s x 16 lanes x 128/130 / 8 bits; "total" is NVIDIA's rounded 32/64/128 GB/s
    LinkSpec("PCIe3-x16", 15.75, 32.0, 2.0, _PCIE),
    LinkSpec("PCIe4-x16", 31.5, 64.0, 2.0, _PCIE),
    LinkSpec("PCIe5-x16", 63.0, 128.0, 2.0, _PCIE),
    # Networks are quoted in Gb/s (bits): 100 Gb/s = 12.5 GB/s (bytes) per direction.
    LinkSpec("IB-EDR", 12.5, 25.0, 1.0, _IB),  # 100 Gb/s 4x port, RDMA
    LinkSpec("IB-HDR", 25.0, 50.0, 1.0, _IB),  # 200 Gb/s
    LinkSpec("IB-NDR", 50.0, 100.0, 1.0, _IB),  # 400 Gb/s
    LinkSpec("10GbE", 1.25, 2.5, 20.0, _ETH),  # 10 Gb/s; latency: kernel TCP stack dominates
    LinkSpec("25GbE", 3.125, 6.25, 20.0, _ETH),  # 25 Gb/s
    LinkSpec("100GbE", 12.5, 25.0, 20.0, _ETH),  # 100 Gb/s
]}

_V100 = "NVIDIA V100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/v100/"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/a100/"
_A100WP = ("NVIDIA A100 Tensor Core GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/"
           "en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf")
_H100 = "NVIDIA H100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h100/"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h200/"
_L4 = "NVIDIA L4 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/l4/"
_T4 = "NVIDIA T4 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/tesla-t4/"
_A10 = "NVIDIA A10 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/products/a10-gpu/"

# A100 (all variants, same peaks): fp64 TC 19.5, fp32 19.5, tf32 156 (312 sparse), bf16/fp16 312 (624 sparse)
_A100_PEAK = {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0}
# H100 SXM = H200: fp64 TC 67, fp32 67; tf32 989, bf16/fp16 1979, fp8 3958 are *sparse*: halved here
_H100_SXM_PEAK = {"fp64": 67.0, "fp32": 67.0, "tf32": 494.5, "fp16": 989.5, "bf16": 989.5, "fp8": 1979.0}

GPU_PRESETS = {g.name: g for g in [
    # V100: 32 GB HBM2 900 GB/s; fp64 7.8, fp32 15.7, tensor fp16 125 (Volta has no sparsity, no bf16/tf32)
    GPUSpec("V100-SXM2-32GB", 32, 900, {"fp64": 7.8, "fp32": 15.7, "fp16": 125.0}, "NVLink2", _V100),
    GPUSpec("A100-SXM4-40GB", 40, 1555, dict(_A100_PEAK), "NVLink3", _A100WP),  # HBM2 1555 GB/s (whitepaper)
    GPUSpec("A100-SXM4-80GB", 80, 2039, dict(_A100_PEAK), "NVLink3", _A100),  # HBM2e 2039 GB/s
    GPUSpec("A100-PCIe-80GB", 80, 1935, dict(_A100_PEAK), "PCIe4-x16", _A100),  # HBM2e 1935 GB/s
    GPUSpec("H100-SXM5-80GB", 80, 3350, dict(_H100_SXM_PEAK), "NVLink4", _H100),  # HBM3 3.35 TB/s
    # H100 PCIe: 2 TB/s; fp64 TC 51, fp32 51; tf32 756, bf16/fp16 1513, fp8 3026 sparse -> halved
    GPUSpec("H100-PCIe-80GB", 80, 2000, {"fp64": 51.0, "fp32": 51.0, "tf32": 378.0, "fp16": 756.5,
                                         "bf16": 756.5, "fp8": 1513.0}, "PCIe5-x16", _H100),
    GPUSpec("H200-SXM-141GB", 141, 4800, dict(_H100_SXM_PEAK), "NVLink4", _H200),  # HBM3e 4.8 TB/s
    # L4: 24 GB GDDR6 300 GB/s; fp32 30.3; tf32 120, bf16/fp16 242, fp8 485 sparse -> halved
    GPUSpec("L4", 24, 300, {"fp32": 30.3, "tf32": 60.0, "fp16": 121.0, "bf16": 121.0, "fp8": 242.5},
            "PCIe4-x16", _L4),
    # T4: 16 GB GDDR6 320 GB/s; fp32 8.1, fp16 tensor 65 (Turing: no sparsity, no bf16/tf32)
    GPUSpec("T4", 16, 320, {"fp32": 8.1, "fp16": 65.0}, "PCIe3-x16", _T4),
    # A10: 24 GB GDDR6 600 GB/s; fp32 31.2; tf32 62.5 (125 sparse), bf16/fp16 125 (250 sparse)
    GPUSpec("A10", 24, 600, {"fp32": 31.2, "tf32": 62.5, "fp16": 125.0, "bf16": 125.0}, "PCIe4-x16", _A10),
]}


def match_gpu(name: str) -> GPUSpec | None:
    """Map a torch.cuda.get_device_name() string (or a preset key) to a preset; None if unknown."""
    t = set(re.split(r"[\s\-_/]+", str(name).upper()))  # whole tokens: "A100" never matches "A10"
    mem = "80GB" if "80GB" in t else "40GB" if "40GB" in t else None
    if "H200" in t:
        key = None if "NVL" in t else "H200-SXM-141GB"  # H200 NVL is a different (PCIe) card
    elif "H100" in t:  # the SXM part reports itself as "NVIDIA H100 80GB HBM3"
        key = "H100-PCIe-80GB" if "PCIE" in t else "H100-SXM5-80GB" if t & {"SXM", "SXM5", "HBM3"} else None
    elif "A100" in t and "PCIE" in t:
        key = "A100-PCIe-80GB" if mem == "80GB" else None  # no preset for the 40GB PCIe card
    elif "A100" in t and mem:
        key = f"A100-SXM4-{mem}"
    elif {"V100", "SXM2", "32GB"} <= t:
        key = "V100-SXM2-32GB"
    else:
        key = next((k for k in ("L4", "T4", "A10") if k in t), None)
    return GPU_PRESETS.get(key)


def peak_flops(spec_or_name, dtype: str = "bf16") -> float:
    """Vendor peak (dense) in FLOP/s -- not TFLOP/s -- for a GPUSpec, preset key or device name."""
    spec = spec_or_name if isinstance(spec_or_name, GPUSpec) else match_gpu(spec_or_name)
    if spec is None:
        raise ValueError(f"unknown GPU {spec_or_name!r}; known: {sorted(GPU_PRESETS)}")
    if dtype not in spec.peak_tflops:
        raise ValueError(f"{spec.name} has no {dtype!r} peak; it has {sorted(spec.peak_tflops)}")
    return spec.peak_tflops[dtype] * 1e12


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


def describe(world_size: int | None = None) -> str:
    """A short multi-line summary of this machine for a notebook."""
    hw, yn = detect(), (lambda b: "yes" if b else "no")
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
        lines.append(f"{world_size} ranks -> backend {default_backend(world_size)}")
        if hw.usable_cpus and world_size > hw.usable_cpus:
            lines.append(f"{world_size} ranks will share {hw.usable_cpus} cores (oversubscribed "
                         f"x{world_size / hw.usable_cpus:.3g}): timings show scheduling as much as communication")
    return "\n".join(lines)


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
    avg, cores = _load_average(), detect().usable_cpus or 1
    if avg != avg:  # NaN: no load average on this platform
        return True, "load average unknown on this platform"
    if avg <= cores:
        return True, f"{load()}: quiet enough to time"
    return False, (f"{load()}: other programs are using the CPUs, so these timings are noisy; "
                   "rerun when the machine is quiet before drawing a conclusion from a "
                   "difference under ~2x")
