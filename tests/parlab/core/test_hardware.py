import math
import os
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist

from parlab import hardware as hw
from parlab.hardware import (GPU_PRESETS, LINK_PRESETS, Hardware, default_backend, describe,
                             detect, match_gpu, measure_matmul_flops, peak_flops)


@pytest.fixture(autouse=True)
def fresh_detect():
    detect.cache_clear()
    yield
    detect.cache_clear()


def fake_cuda(monkeypatch, n_gpus, nccl=True, name="NVIDIA H100 80GB HBM3"):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: n_gpus)
    props = SimpleNamespace(name=name, total_memory=80 * 2**30, major=9, minor=0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_nccl_available", lambda: nccl)


# ---- detection -------------------------------------------------------------------------------

def test_detect_here_is_sane():
    h = detect()
    assert h.logical_cpus == os.cpu_count()
    assert 1 <= h.usable_cpus <= h.logical_cpus
    assert h.memory_gb is not None and 0.1 < h.memory_gb < 1e5
    assert h.torch_version == torch.__version__
    assert h.cuda_available == torch.cuda.is_available()
    assert len(h.gpus) == (torch.cuda.device_count() if h.cuda_available else 0)
    assert h.gloo_available == (dist.is_available() and dist.is_gloo_available())
    if not h.cuda_available:
        assert h.nccl_available is False


def test_detect_is_cached_and_clearable():
    first = detect()
    assert detect() is first
    detect.cache_clear()
    assert detect() is not first


@pytest.mark.parametrize("text, cpus", [("max 100000\n", None), ("200000 100000\n", 2),
                                        ("150000 100000", 2), ("50000 100000", 1), ("garbage", None)])
def test_cgroup_cpu_quota_parsing(tmp_path, text, cpus):
    f = tmp_path / "cpu.max"
    f.write_text(text)
    assert hw._cgroup_cpu_limit(str(f)) == cpus


def test_cgroup_cpu_quota_missing_file(tmp_path):
    assert hw._cgroup_cpu_limit(str(tmp_path / "absent")) is None


def test_usable_cpus_honours_smaller_cgroup_quota(monkeypatch):
    monkeypatch.setattr(hw, "_cgroup_cpu_limit", lambda: 1)
    assert detect().usable_cpus == 1
    detect.cache_clear()
    monkeypatch.setattr(hw, "_cgroup_cpu_limit", lambda: 10_000)  # a bigger quota changes nothing
    assert detect().usable_cpus == len(os.sched_getaffinity(0))


def test_detect_survives_an_odd_machine(monkeypatch):
    def broken_driver():
        raise RuntimeError("CUDA driver exploded")

    monkeypatch.setattr(hw, "_proc_field", lambda path, key: None)
    monkeypatch.setattr(hw.platform, "processor", lambda: "")
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", broken_driver)
    h = detect()
    assert h.cpu_model is None
    assert h.usable_cpus == min(os.cpu_count(), hw._cgroup_cpu_limit() or os.cpu_count())
    assert h.gpus == [] and h.nccl_available is False


def test_detect_records_gpus_with_their_preset(monkeypatch):
    fake_cuda(monkeypatch, 2)
    h = detect()
    assert [g["index"] for g in h.gpus] == [0, 1]
    assert h.gpus[0]["preset"] == "H100-SXM5-80GB"
    assert h.gpus[0]["capability"] == "9.0" and h.gpus[0]["memory_gb"] == 80
    assert h.nccl_available is True


def test_nccl_available_needs_gpus(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_nccl_available", lambda: True)  # a CUDA build on a box without GPUs
    assert detect().nccl_available is False


# ---- backend choice --------------------------------------------------------------------------

def test_default_backend_is_gloo_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    monkeypatch.setattr(dist, "is_nccl_available", lambda: True)
    assert default_backend(1) == "gloo"
    assert default_backend(2) == "gloo"


def test_default_backend_nccl_needs_one_gpu_per_rank(monkeypatch):
    fake_cuda(monkeypatch, 2)
    assert default_backend(1) == "nccl"
    assert default_backend(2) == "nccl"
    assert default_backend(4) == "gloo"


def test_default_backend_nccl_needs_nccl(monkeypatch):
    fake_cuda(monkeypatch, 2, nccl=False)
    assert default_backend(2) == "gloo"


# ---- presets ---------------------------------------------------------------------------------

@pytest.mark.parametrize("device_name, preset", [
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"), ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"),
    ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"), ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"),
    ("NVIDIA H100 PCIe", "H100-PCIe-80GB"), ("NVIDIA H200", "H200-SXM-141GB"),
    ("Tesla V100-SXM2-32GB", "V100-SXM2-32GB"), ("NVIDIA L4", "L4"), ("Tesla T4", "T4"),
    ("NVIDIA A10", "A10"),
])
def test_match_gpu_device_names(device_name, preset):
    assert match_gpu(device_name) is GPU_PRESETS[preset]


def test_match_gpu_traps():
    assert match_gpu("NVIDIA A10").name == "A10"  # not an A100
    assert match_gpu("NVIDIA A100-SXM4-80GB").name == "A100-SXM4-80GB"  # not an A10
    assert match_gpu("NVIDIA H100 PCIe").name != match_gpu("NVIDIA H100 80GB HBM3").name
    assert match_gpu("NVIDIA H100 PCIe").link.startswith("PCIe")
    assert match_gpu("NVIDIA H100 80GB HBM3").link == "NVLink4"


@pytest.mark.parametrize("device_name", ["NVIDIA GeForce RTX 4090", "AMD Instinct MI300X", "", "NVIDIA A10G",
                                         "NVIDIA L40S", "NVIDIA H100 NVL", "Tesla V100-SXM2-16GB",
                                         "NVIDIA A100-PCIE-40GB"])
def test_match_gpu_unknown_is_none(device_name):
    assert match_gpu(device_name) is None


def test_every_preset_key_matches_itself():
    for key, spec in GPU_PRESETS.items():
        assert spec.name == key
        assert match_gpu(key) is spec


def test_peak_flops_units_and_errors():
    assert peak_flops("A100-SXM4-80GB", "bf16") == 312e12
    assert peak_flops(GPU_PRESETS["A100-SXM4-40GB"]) == 312e12  # default dtype is bf16
    assert peak_flops("NVIDIA H100 80GB HBM3", "fp8") == 1979e12  # device names work too
    with pytest.raises(ValueError):
        peak_flops("A100-SXM4-80GB", "int7")
    with pytest.raises(ValueError):
        peak_flops("T4", "bf16")  # Turing has no bf16 tensor cores
    with pytest.raises(ValueError):
        peak_flops("Not A GPU 9000")


def test_presets_are_complete_and_sourced():
    allowed = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4"}
    for spec in GPU_PRESETS.values():
        assert spec.source.strip() and "http" in spec.source
        assert spec.link in LINK_PRESETS
        assert spec.peak_tflops and set(spec.peak_tflops) <= allowed
        assert spec.memory_gb > 0 and spec.hbm_gb_per_s > 0
    for link in LINK_PRESETS.values():
        assert link.source.strip() and "http" in link.source
        assert link.latency_us > 0
        assert link.gb_per_s_total == pytest.approx(2 * link.gb_per_s_per_direction, rel=0.05)


def test_preset_figures_are_dense_and_in_bytes():
    h100, h200 = GPU_PRESETS["H100-SXM5-80GB"], GPU_PRESETS["H200-SXM-141GB"]
    assert h100.peak_tflops["bf16"] < 1000  # 1979 is the with-sparsity figure
    assert h200.peak_tflops == h100.peak_tflops and h200.memory_gb == 141
    assert LINK_PRESETS["IB-HDR"].gb_per_s_per_direction == 25.0  # 200 Gb/s = 25 GB/s
    assert LINK_PRESETS["NVLink4"].gb_per_s_total == 900.0


# ---- describe and measurement ----------------------------------------------------------------

def test_describe_mentions_oversubscription_only_when_oversubscribed():
    cores = detect().usable_cpus
    over = describe(cores + 1)
    assert f"{cores + 1} ranks will share {cores} cores (oversubscribed" in over
    assert "scheduling as much as communication" in over
    for ws in (None, 1, cores):
        assert "oversubscribed" not in describe(ws)
    assert torch.__version__ in describe()
    # the launcher's own choice and line: the CPU here, gloo with CUDA tensors on one GPU
    from parlab.launch import devices
    line = devices.describe(devices.choose(1, None, None), 1)
    assert "launch: " in describe(1) and line.split(":")[0] in describe(1).replace("\n", " ")


def test_describe_shows_gpu_preset(monkeypatch):
    gpu = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_gb": 79.1, "capability": "9.0",
           "preset": "H100-SXM5-80GB"}
    fake = Hardware(cpu_model="Fake CPU", logical_cpus=64, usable_cpus=64, memory_gb=512.0, torch_version="x",
                    cuda_available=True, gpus=[gpu], nccl_available=True, gloo_available=True)
    monkeypatch.setattr(hw, "detect", lambda: fake)
    text = describe(8)
    assert "NVIDIA H100 80GB HBM3" in text and "989.5 TFLOP/s bf16" in text and "NVLink4" in text
    assert "oversubscribed" not in text
    assert max(map(len, text.splitlines())) <= hw.WIDTH  # the preset's long line is broken at " | "


def test_printed_notes_fit_a_notebook_line(capsys, monkeypatch):
    assert max(map(len, describe(64).splitlines())) <= hw.WIDTH
    monkeypatch.setattr(hw, "_load_average", lambda: 99.0)  # busy: the longest note
    hw.load_note()
    out = capsys.readouterr().out
    assert "noisy" in out and max(map(len, out.splitlines())) <= hw.WIDTH


def test_measure_matmul_flops_is_positive_and_finite():
    flops = measure_matmul_flops(n=32, repeats=3)
    assert isinstance(flops, float) and math.isfinite(flops) and 0 < flops < 1e15
    assert measure_matmul_flops(n=16, repeats=2, dtype=torch.float64) > 0


def test_load_line_names_the_load_and_the_cores():
    line = hw.load()
    assert line.startswith("load average ") and line.endswith(f"on {hw.detect().usable_cpus} usable cores")


def test_timing_note_says_quiet_or_busy(monkeypatch):
    cores = hw.detect().usable_cpus or 1
    monkeypatch.setattr(hw.os, "getloadavg", lambda: (cores * 0.5, 0.0, 0.0))
    quiet, line = hw.timing_note()
    assert quiet and line.startswith(hw.load()) and "quiet enough" in line
    monkeypatch.setattr(hw.os, "getloadavg", lambda: (cores * 3.0, 0.0, 0.0))
    quiet, line = hw.timing_note()
    assert not quiet and "noisy" in line and f"load average {cores * 3.0:.1f}" in line


# ---- nodes, the 16-bit type, what NCCL achieves ------------------------------------------

def test_every_preset_trains_in_a_type_it_has():
    for spec in GPU_PRESETS.values():
        assert hw.default_dtype(spec) in spec.peak_tflops
    assert hw.default_dtype(GPU_PRESETS["V100-SXM2-32GB"]) == "fp16"  # Volta: no bf16
    assert hw.default_dtype(GPU_PRESETS["T4"]) == "fp16"  # Turing: no bf16
    assert hw.default_dtype(GPU_PRESETS["H100-SXM5-80GB"]) == "bf16"


def test_nodes_per_generation():
    a100, h100 = hw.node_for(GPU_PRESETS["A100-SXM4-80GB"]), hw.node_for(GPU_PRESETS["H100-SXM5-80GB"])
    assert (a100.gpus_per_node, a100.nics_per_node, a100.inter_link) == (8, 8, "IB-HDR")
    assert (h100.gpus_per_node, h100.nics_per_node, h100.inter_link) == (8, 8, "IB-NDR")
    assert hw.node_for(GPU_PRESETS["H200-SXM-141GB"]) is h100
    rack = hw.node_for(GPU_PRESETS["GB200"])
    assert rack.nvlink_domain == 72 and rack.gpus_per_node == 4  # an NVL72 rack of 4-GPU trays
    assert hw.node_for(GPU_PRESETS["T4"]).name == "PCIe-server"
    for node in hw.NODE_PRESETS.values():
        assert node.inter_link in LINK_PRESETS and node.source.strip()
        assert node.nvlink_domain % node.gpus_per_node == 0 and node.nics_per_node >= 1


def test_links_say_what_nccl_achieves_and_where_that_was_measured():
    for link in LINK_PRESETS.values():
        assert 0 < link.achieved <= 1 and link.achieved_source
    assert LINK_PRESETS["IB-HDR"].achieved * 8 * 25 == pytest.approx(192)  # nccl#812
    assert "nccl" in LINK_PRESETS["NVLink3"].achieved_source
    assert LINK_PRESETS["NVLink5"].gb_per_s_per_direction == 2 * LINK_PRESETS["NVLink4"].gb_per_s_per_direction


@pytest.mark.parametrize("device_name, preset", [("NVIDIA B200", "B200"), ("NVIDIA GB200", "GB200"),
                                                 ("NVIDIA B300 SXM6 AC", "B300"),
                                                 ("NVIDIA GB300", "GB300")])
def test_match_blackwell(device_name, preset):
    assert match_gpu(device_name) is GPU_PRESETS[preset]
    assert GPU_PRESETS[preset].peak_tflops["bf16"] < GPU_PRESETS[preset].peak_tflops["fp8"]


def test_blackwell_ultra():
    b300, gb300, gb200 = (GPU_PRESETS[k] for k in ("B300", "GB300", "GB200"))
    # the GB200's 16- and 8-bit rates, fp4 1.5x (1,080 dense PFLOPS for a rack of 72)
    for dtype in ("bf16", "fp8", "mxfp8"):
        assert gb300.peak_tflops[dtype] == gb200.peak_tflops[dtype]
    assert gb300.peak_tflops["nvfp4"] * 72 == pytest.approx(1080e3)
    # the B300's page gives fp4 for inference, sparse only: no training rate, said by leaving it out
    assert "nvfp4" not in b300.peak_tflops and b300.peak_tflops["fp8"] * 8 * 2 == 72e3
    assert "inference" in b300.unknown_peaks["nvfp4"] and not gb300.unknown_peaks
    from parlab import planner
    with pytest.raises(ValueError, match="dtype='nvfp4': B300 runs nvfp4, but its preset"):
        planner.estimate(4, 256, 8, 128, 1000, 8, 1, 1, 8, gpu="B300", dtype="nvfp4")
    with pytest.raises(ValueError, match="dtype='bf16': V100-SXM2-32GB has no bf16 tensor cores"):
        planner.estimate(4, 256, 8, 128, 1000, 8, 1, 1, 8, gpu="V100", dtype="bf16")
    assert (b300.memory_gb, gb300.memory_gb) == (288, 278)  # 2.3 TB / 8, 20 TB / 72
    for gpu, node in ((b300, "DGX-B300"), (gb300, "GB300-NVL72")):
        n = hw.node_for(gpu)
        assert n.name == node and n.inter_link == "IB-XDR"
    assert LINK_PRESETS["IB-XDR"].gb_per_s_per_direction == 100.0  # 800 Gb/s
    assert hw.node_for(gb300).nvlink_domain == 72


def test_matmul_per_exponential_is_sourced_and_per_architecture():
    # every balance has its source, and every GPU with one is a preset
    from parlab.hardware_presets import EXP_SOURCES
    have = {k for k, g in GPU_PRESETS.items() if g.flops_per_exp is not None}
    assert have == set(EXP_SOURCES)
    # FA3's rule: 16 exponentials a clock per SM; the 16-bit peak over SMs x the peak's clock
    for key, clock, want in (("H100-SXM5-80GB", 1.83e9, 256), ("A100-SXM4-80GB", 1.41e9, 128)):
        g = GPU_PRESETS[key]
        assert g.peak_tflops["bf16"] * 1e12 / (g.sms * clock) / 16 == pytest.approx(want, rel=0.01)
        assert g.flops_per_exp == want
    # Blackwell 512 and Blackwell Ultra 256, against NVIDIA's exp2 measured on a GB200 and a
    # GB300 (4,943 and 10,024 G/s) at their 2,500 TFLOP/s
    assert 2500 / 4.943 == pytest.approx(GPU_PRESETS["GB200"].flops_per_exp, rel=0.02)
    assert 2500 / 10.024 == pytest.approx(GPU_PRESETS["GB300"].flops_per_exp, rel=0.03)
    assert GPU_PRESETS["B200"].flops_per_exp == GPU_PRESETS["GB200"].flops_per_exp == 512
    assert GPU_PRESETS["B300"].flops_per_exp == GPU_PRESETS["H200-SXM-141GB"].flops_per_exp


def test_describe_names_what_launch_picks_for_several_ranks_on_one_gpu(monkeypatch):
    # one GPU, four ranks: the launcher puts them all on it over gloo, not on the CPU
    from parlab.launch import devices
    monkeypatch.setattr(devices, "gpu_count", lambda: 1)
    monkeypatch.setattr(devices, "_has_nccl", lambda: True)
    monkeypatch.delenv("PARLAB_DEVICE", raising=False)
    text = describe(4).replace("\n", " ")
    assert "launch: 4 ranks on 1 GPU(s)" in text and "gloo with CUDA tensors" in text
    monkeypatch.setenv("PARLAB_DEVICE", "cpu")
    assert "launch: 4 ranks on the CPU: gloo" in describe(4)
