"""Vendor *peak* figures for common GPUs and links, and the nodes they are built into
(decimal units: 1 TFLOP/s = 1e12 FLOP/s, 1 GB/s = 1e9 B/s). Pure data, no torch:
``parlab.hardware`` re-exports all of it beside what it detects on this machine.

Tensor-core peaks are DENSE: where a datasheet quotes "with sparsity" (2:4 structured
sparsity, 2x) we store half. "fp64" is the FP64 tensor-core peak where the chip has one;
"fp32" is plain FP32. Preset memory is the marketed "GB". A link's ``achieved`` is the
share of its per-direction bandwidth that NCCL's large collectives were measured to reach
(its source says where); a node says how many GPUs share one NVLink fabric and how many
network cards (NICs, one "rail" each) it has."""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LinkSpec:
    name: str
    gb_per_s_per_direction: float  # GB/s one way per GPU/port: what a ring all-reduce can use
    gb_per_s_total: float  # as marketed: both directions added together
    latency_us: float  # OUR rough typical order of magnitude for a small message: not from source
    source: str
    achieved: float = 0.78  # share of gb_per_s_per_direction NCCL reaches on large messages
    achieved_source: str = ""


@dataclass(frozen=True)
class GPUSpec:
    name: str
    memory_gb: float
    hbm_gb_per_s: float  # memory bandwidth (HBM or GDDR), GB/s
    peak_tflops: dict  # dtype ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4") -> dense TFLOP/s
    link: str  # key of LINK_PRESETS: the GPU-to-GPU link inside one node
    source: str
    sms: int = 108  # streaming multiprocessors: how many GEMM tiles run at once (one wave)
    # key of LINK_PRESETS: the link to the host's memory (activation offloading moves over it)
    host_link: str = "PCIe4-x16"
    # 16-bit matmul FLOPs its tensor cores run in the time its special-function units run one
    # exponential (MUFU.EX2, softmax's), a clock per SM: the balance a fused attention kernel
    # meets; None where no source gives it (EXP_SOURCES)
    flops_per_exp: float | None = None
    # dtypes the chip runs whose training peak its sources do not give: dtype -> why (so a
    # plan in that dtype is refused with the reason, not "no tensor cores")
    unknown_peaks: dict = field(default_factory=dict)


@dataclass(frozen=True)
class NodeSpec:
    """How GPUs are put together: ``gpus_per_node`` GPUs share ``nics_per_node`` network
    cards (``inter_link`` each; NCCL runs one ring per card, "rail"), and ``nvlink_domain``
    GPUs reach each other over the GPU's own link (a DGX's 8; 72 in a GB200 NVL72 rack)."""
    name: str
    gpus_per_node: int
    nics_per_node: int
    inter_link: str  # key of LINK_PRESETS: one NIC
    nvlink_domain: int
    source: str


_H800 = ("NVIDIA H800 Tensor Core GPU datasheet (an H100 SXM5 with NVLink cut to 400 GB/s and "
         "FP64 to 1 TFLOP/s; every other figure the H100's), https://www.nvidia.cn/data-center/h800/; "
         "its clusters: DeepSeek-AI, 'DeepSeek-V3 Technical Report', arXiv 2412.19437, §3.1 "
         "(8 H800 per node on NVLink/NVSwitch, InfiniBand across nodes)")
_NVLINK = "NVIDIA NVLink & NVSwitch page, https://www.nvidia.com/en-us/data-center/nvlink/"
_PCIE = "PCI-SIG specifications (GT/s per lane, 128b/130b encoding), https://pcisig.com/specifications"
_IB = "InfiniBand Trade Association roadmap, https://www.infinibandta.org/infiniband-roadmap/"
_CX8 = "the DGX B300 and GB300 NVL72 pages (a ConnectX-8 card of 800 Gb/s per GPU)"
_ETH = "IEEE 802.3 Ethernet standards (802.3ae 10G, 802.3by 25G, 802.3ba 100G, 802.3bs 400G), https://www.ieee802.org/3/"
_OPA = "Intel Omni-Path Architecture 100 Series (100 Gb/s per port), https://www.intel.com/content/www/us/en/high-performance-computing-fabrics/omni-path-driving-exascale-computing.html"
# measured: one A100 node's all-reduce bus bandwidth 232.5 GB/s of NVLink3's 300 (nccl-tests#175);
# 8 HDR cards of a DGX A100 192 GB/s of 200 (nccl#812, maintainer); an NDR card 48-49 of 50 (nccl-tests#267)
_NV_ACH = "https://github.com/NVIDIA/nccl-tests/issues/175 (232.5 of 300 GB/s, one DGX A100)"
_NET_ACH = "https://github.com/NVIDIA/nccl/issues/812 (192 of 200 GB/s, 8 HDR cards of a DGX A100)"
_ASSUMED = "not measured here: taken as NVLink's"
_C2C = "NVIDIA GB200 NVL72 page (NVLink-C2C, 900 GB/s), https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
LINK_PRESETS = {l.name: l for l in [
    LinkSpec("NVLink2", 150.0, 300.0, 1.0, _NVLINK, 0.78, _NV_ACH),  # V100: 6 links x 25 GB/s
    LinkSpec("NVLink3", 300.0, 600.0, 1.0, _NVLINK, 0.78, _NV_ACH),  # A100: 12 links x 25 GB/s
    LinkSpec("NVLink4", 450.0, 900.0, 1.0, _NVLINK, 0.78, _NV_ACH),  # H100/H200: 18 x 25 GB/s
    LinkSpec("NVLink4-H800", 200.0, 400.0, 1.0, _H800, 0.78, _NV_ACH),  # H800: 8 x 25 GB/s
    LinkSpec("NVLink5", 900.0, 1800.0, 1.0, _NVLINK, 0.78, _NV_ACH),  # B200/GB200: 18 x 50 GB/s
    # PCIe x16: 8/16/32 GT/s x 16 lanes x 128/130 / 8 bits; "total" is NVIDIA's rounded 32/64/128 GB/s
    LinkSpec("PCIe3-x16", 15.75, 32.0, 2.0, _PCIE, 0.78, _ASSUMED),
    LinkSpec("PCIe4-x16", 31.5, 64.0, 2.0, _PCIE, 0.78, _ASSUMED),
    LinkSpec("PCIe5-x16", 63.0, 128.0, 2.0, _PCIE, 0.78, _ASSUMED),
    # Grace to Blackwell (GB200) and to Hopper (GH200): 900 GB/s, both directions added
    LinkSpec("NVLink-C2C", 450.0, 900.0, 1.0, _C2C, 0.78, _ASSUMED),
    # Networks are quoted in Gb/s (bits): 100 Gb/s = 12.5 GB/s (bytes) per direction.
    LinkSpec("IB-EDR", 12.5, 25.0, 1.0, _IB, 0.96, _NET_ACH),  # 100 Gb/s 4x port, RDMA
    LinkSpec("IB-HDR", 25.0, 50.0, 1.0, _IB, 0.96, _NET_ACH),  # 200 Gb/s
    LinkSpec("IB-NDR", 50.0, 100.0, 1.0, _IB, 0.96, _NET_ACH),  # 400 Gb/s
    LinkSpec("IB-XDR", 100.0, 200.0, 1.0, _IB + "; " + _CX8, 0.96, _NET_ACH),  # 800 Gb/s
    LinkSpec("RoCE-400", 50.0, 100.0, 1.0, _ETH, 0.96, _NET_ACH),  # 400 GbE with RDMA
    LinkSpec("OPA-100", 12.5, 25.0, 1.0, _OPA, 0.96, _NET_ACH),  # Omni-Path 100 Gb/s, RDMA
    LinkSpec("10GbE", 1.25, 2.5, 20.0, _ETH, 0.78, _ASSUMED),  # latency: kernel TCP stack
    LinkSpec("25GbE", 3.125, 6.25, 20.0, _ETH, 0.78, _ASSUMED),
    LinkSpec("100GbE", 12.5, 25.0, 20.0, _ETH, 0.78, _ASSUMED),
]}

_V100 = "NVIDIA V100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/v100/"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/a100/"
_A100WP = ("NVIDIA A100 Tensor Core GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/"
           "en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf")
_H100 = "NVIDIA H100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h100/"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h200/"
_B200 = "NVIDIA DGX B200 datasheet (per GPU: 1/8 of the system), https://www.nvidia.com/en-us/data-center/dgx-b200/"
_GB200 = "NVIDIA GB200 NVL72 page (per GPU: 1/72 of the rack), https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
_B300 = ("NVIDIA DGX B300 page (per GPU: 1/8 of the system: 72 PFLOPS FP8 training, 2.3 TB of "
         "HBM3e), https://www.nvidia.com/en-us/data-center/dgx-b300/")
_GB300 = ("NVIDIA GB300 NVL72 page (per GPU: 1/72 of the rack), "
          "https://www.nvidia.com/en-us/data-center/gb300-nvl72/; 160 SMs and 8 TB/s from NVIDIA's "
          "technical blog 'Inside NVIDIA Blackwell Ultra' (2025-08), https://developer.nvidia.com/"
          "blog/inside-nvidia-blackwell-ultra-the-chip-powering-the-ai-factory-era/")
# A clock per SM, 16 exponentials (the CUDA programming guide, as FA3 counts them: Shah et
# al. 2024, 'FlashAttention-3', §3.1 'Pingpong scheduling' and its footnote 5) against 2,048
# 16-bit matmul FLOPs on Ampere (312 TFLOP/s = 108 SMs x 1,410 MHz x 2,048) and 4,096 on Hopper
# (989 = 132 x 1,830 x 4,096: FA3's "256x lower throughput", 3.9 T exponentials/s). Blackwell
# doubled the tensor cores a clock per SM and kept the 16 (FlashAttention-4's authors: from H100
# to B200 the bf16 tensor rate goes from 1 to 2.25 PFLOP/s, the SFU count unchanged), and
# Blackwell Ultra doubled the exponentials ('Making Softmax More Efficient with NVIDIA
# Blackwell Ultra', NVIDIA technical blog 2026-02: exp2 at 4,943 G/s on a GB200, 10,024 on a
# GB300, whose 16-bit peaks are the same 2,500 TFLOP/s)
_FA3_EXP = ("Shah et al. 2024, FlashAttention-3, §3.1 'Pingpong scheduling', footnote 5: 16 "
            "exponentials a clock per SM")
_FA4_EXP = ("Zadouri, Hoehnerbach, Shah, Liu, Thakkar and Dao, 'FlashAttention-4' (Together AI "
            "blog, https://www.together.ai/blog/flashattention-4): H100 to B200, bf16 tensor "
            "throughput 1 to 2.25 PFLOP/s with the SFU count unchanged")
_BWU_EXP = ("NVIDIA technical blog 'Making Softmax More Efficient with NVIDIA Blackwell Ultra' "
            "(2026-02): the SFU's exponentials doubled, exp2 measured at 4,943 G/s on a GB200 "
            "and 10,024 on a GB300")
EXP_SOURCES = {"A100-SXM4-40GB": _FA3_EXP, "A100-SXM4-80GB": _FA3_EXP, "A100-PCIe-80GB": _FA3_EXP,
               "H100-SXM5-80GB": _FA3_EXP, "H800-SXM5-80GB": _FA3_EXP, "H200-SXM-141GB": _FA3_EXP,
               "B200": _FA4_EXP, "GB200": _FA4_EXP, "B300": _BWU_EXP, "GB300": _BWU_EXP}
_L4 = "NVIDIA L4 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/l4/"
_T4 = "NVIDIA T4 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/tesla-t4/"
_A10 = "NVIDIA A10 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/products/a10-gpu/"

# A100 (all variants, same peaks): fp64 TC 19.5, fp32 19.5, tf32 156 (312 sparse), bf16/fp16 312 (624 sparse)
_A100_PEAK = {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0}
# H100 SXM = H200: fp64 TC 67, fp32 67; tf32 989, bf16/fp16 1979, fp8 3958 are *sparse*: halved here
_H100_SXM_PEAK = {"fp64": 67.0, "fp32": 67.0, "tf32": 494.5, "fp16": 989.5, "bf16": 989.5, "fp8": 1979.0}
# H800 SXM: the H100 SXM's tensor peaks; FP64 and FP64 tensor core 1 TFLOP/s
_H800_PEAK = {**_H100_SXM_PEAK, "fp64": 1.0}
# DGX B200: 72 PFLOPS fp8 training and 144 PFLOPS fp4 inference for 8 GPUs (sparse) -> 4.5
# dense fp8, 9 dense fp4, 2.25 bf16 per GPU. Blackwell's tensor cores apply MX block scales
# (MXFP8) and NVFP4's at the same rates as plain fp8 and fp4 (Blackwell architecture
# technical brief); Hopper and Ada have no block-scaled MMA, so no mxfp8 / nvfp4 there.
_B200_PEAK = {"fp64": 40.0, "tf32": 1125.0, "fp16": 2250.0, "bf16": 2250.0, "fp8": 4500.0,
              "mxfp8": 4500.0, "nvfp4": 9000.0}
# GB200 NVL72: 360 PFLOPS bf16, 720 fp8/fp6, 1440 fp4, 180 tf32 (sparse), 3240 TFLOPS fp64
# for 72 GPUs
_GB200_PEAK = {"fp64": 45.0, "tf32": 1250.0, "fp16": 2500.0, "bf16": 2500.0, "fp8": 5000.0,
               "mxfp8": 5000.0, "nvfp4": 10000.0}
# Blackwell Ultra. GB300 NVL72: 1,080 PFLOPS dense fp4 (1,440 sparse), 720 fp8/fp6, 360 bf16,
# 180 tf32 (sparse) for 72 GPUs: the GB200's 16- and 8-bit rates, fp4 1.5x (FP64, cut on
# Blackwell Ultra, is left out). DGX B300: 72 PFLOPS fp8 training for 8 GPUs (sparse, as
# DGX B200's) -> 4.5 dense fp8 and 2.25 bf16 per GPU; no nvfp4 (its ``unknown_peaks`` says
# why; the GB300's 15 is its own, at 1.4 kW)
_B300_PEAK = {"tf32": 1125.0, "fp16": 2250.0, "bf16": 2250.0, "fp8": 4500.0, "mxfp8": 4500.0}
_GB300_PEAK = {"tf32": 1250.0, "fp16": 2500.0, "bf16": 2500.0, "fp8": 5000.0,
               "mxfp8": 5000.0, "nvfp4": 15000.0}

GPU_PRESETS = {g.name: g for g in [
    # V100: 32 GB HBM2 900 GB/s; fp64 7.8, fp32 15.7, tensor fp16 125 (Volta has no sparsity, no bf16/tf32)
    GPUSpec("V100-SXM2-32GB", 32, 900, {"fp64": 7.8, "fp32": 15.7, "fp16": 125.0}, "NVLink2", _V100, 80,
            "PCIe3-x16"),
    GPUSpec("A100-SXM4-40GB", 40, 1555, dict(_A100_PEAK), "NVLink3", _A100WP, 108,  # HBM2 1555 GB/s
            flops_per_exp=128),
    GPUSpec("A100-SXM4-80GB", 80, 2039, dict(_A100_PEAK), "NVLink3", _A100, 108,  # HBM2e 2039 GB/s
            flops_per_exp=128),
    GPUSpec("A100-PCIe-80GB", 80, 1935, dict(_A100_PEAK), "PCIe4-x16", _A100, 108,  # HBM2e 1935 GB/s
            flops_per_exp=128),
    GPUSpec("H100-SXM5-80GB", 80, 3350, dict(_H100_SXM_PEAK), "NVLink4", _H100, 132, "PCIe5-x16",
            flops_per_exp=256),  # HBM3 3.35 TB/s
    # H100 PCIe: 2 TB/s; fp64 TC 51, fp32 51; tf32 756, bf16/fp16 1513, fp8 3026 sparse -> halved
    GPUSpec("H100-PCIe-80GB", 80, 2000, {"fp64": 51.0, "fp32": 51.0, "tf32": 378.0, "fp16": 756.5,
                                         "bf16": 756.5, "fp8": 1513.0}, "PCIe5-x16", _H100, 114, "PCIe5-x16"),
    GPUSpec("H800-SXM5-80GB", 80, 3350, dict(_H800_PEAK), "NVLink4-H800", _H800, 132, "PCIe5-x16",
            flops_per_exp=256),
    GPUSpec("H200-SXM-141GB", 141, 4800, dict(_H100_SXM_PEAK), "NVLink4", _H200, 132, "PCIe5-x16",
            flops_per_exp=256),  # HBM3e 4.8 TB/s
    GPUSpec("B200", 180, 8000, dict(_B200_PEAK), "NVLink5", _B200, 148, "PCIe5-x16",
            flops_per_exp=512),  # HBM3e 64 TB/s / 8
    GPUSpec("GB200", 186, 8000, dict(_GB200_PEAK), "NVLink5", _GB200, 148, "NVLink-C2C",
            flops_per_exp=512),  # 13.5 TB, 576 TB/s / 72
    # B300: 2.3 TB / 8 = 288 GB; the host's Xeon 6 runs PCIe 5.0. GB300: 20 TB, 576 TB/s / 72
    GPUSpec("B300", 288, 8000, dict(_B300_PEAK), "NVLink5", _B300, 160, "PCIe5-x16",
            flops_per_exp=256,
            unknown_peaks={"nvfp4": "the DGX B300 page gives FP4 for inference, sparse, not the "
                                    "dense rate a B300 trains at"}),
    GPUSpec("GB300", 278, 8000, dict(_GB300_PEAK), "NVLink5", _GB300, 160, "NVLink-C2C",
            flops_per_exp=256),
    # L4: 24 GB GDDR6 300 GB/s; fp32 30.3; tf32 120, bf16/fp16 242, fp8 485 sparse -> halved
    GPUSpec("L4", 24, 300, {"fp32": 30.3, "tf32": 60.0, "fp16": 121.0, "bf16": 121.0, "fp8": 242.5},
            "PCIe4-x16", _L4, 58),
    # T4: 16 GB GDDR6 320 GB/s; fp32 8.1, fp16 tensor 65 (Turing: no sparsity, no bf16/tf32)
    GPUSpec("T4", 16, 320, {"fp32": 8.1, "fp16": 65.0}, "PCIe3-x16", _T4, 40, "PCIe3-x16"),
    # A10: 24 GB GDDR6 600 GB/s; fp32 31.2; tf32 62.5 (125 sparse), bf16/fp16 125 (250 sparse)
    GPUSpec("A10", 24, 600, {"fp32": 31.2, "tf32": 62.5, "fp16": 125.0, "bf16": 125.0}, "PCIe4-x16",
            _A10, 72),
]}

_DGX = "NVIDIA DGX {} user guide / datasheet: {} GPUs, {} compute network cards of {}"
NODE_PRESETS = {n.name: n for n in [
    NodeSpec("DGX-1V", 8, 4, "IB-EDR", 8, _DGX.format("-1 (V100)", 8, 4, "100 Gb/s EDR")),
    NodeSpec("DGX-A100", 8, 8, "IB-HDR", 8, _DGX.format("A100", 8, 8, "200 Gb/s HDR")),
    NodeSpec("DGX-H100", 8, 8, "IB-NDR", 8, _DGX.format("H100/H200", 8, 8, "400 Gb/s NDR")),
    NodeSpec("DGX-B200", 8, 8, "IB-NDR", 8, _DGX.format("B200", 8, 8, "400 Gb/s NDR")),
    NodeSpec("GB200-NVL72", 4, 4, "IB-NDR", 72, "NVIDIA GB200 NVL72: 18 trays of 4 GPUs on one "
             "NVLink fabric, a 400 Gb/s card per GPU, https://www.nvidia.com/en-us/data-center/gb200-nvl72/"),
    NodeSpec("DGX-B300", 8, 8, "IB-XDR", 8, _DGX.format("B300", 8, 8, "800 Gb/s ConnectX-8")),
    NodeSpec("GB300-NVL72", 4, 4, "IB-XDR", 72, "NVIDIA GB300 NVL72: 18 trays of 4 GPUs on one "
             "NVLink fabric, an 800 Gb/s ConnectX-8 card per GPU, "
             "https://www.nvidia.com/en-us/data-center/gb300-nvl72/"),
    NodeSpec("PCIe-server", 8, 1, "100GbE", 8, "a typical PCIe server: 8 cards, one 100 GbE "
             "port (no standard layout; set nics_per_node and inter_link for yours)"),
    # the clusters of two published runs (parlab.planner.published)
    NodeSpec("Jean-Zay-A100", 8, 4, "OPA-100", 8, "BLOOM's Jean Zay nodes: 8 A100 80GB, 4 Omni-Path "
             "100 Gb/s links, https://github.com/bigscience-workshop/bigscience/blob/master/train/tr11-176B-ml/README.md"),
    NodeSpec("Grand-Teton-H100", 8, 8, "RoCE-400", 8, "Llama 3's 405B cluster: 8 H100 per server, "
             "400 Gb/s RoCE per GPU (Dubey et al. 2024, §3.3.1), https://arxiv.org/abs/2407.21783"),
]}
# a GPU's default node, per generation: A100 -> HDR, H100/H200 -> NDR (what DGX systems ship with)
DEFAULT_NODE = {"V100-SXM2-32GB": "DGX-1V", "A100-SXM4-40GB": "DGX-A100", "A100-SXM4-80GB": "DGX-A100",
                "H100-SXM5-80GB": "DGX-H100", "H200-SXM-141GB": "DGX-H100",
                "H800-SXM5-80GB": "DGX-H100", "B200": "DGX-B200",
                "GB200": "GB200-NVL72", "B300": "DGX-B300", "GB300": "GB300-NVL72"}


def node_for(spec: GPUSpec) -> NodeSpec:
    """The node a GPU usually comes in (DEFAULT_NODE; PCIe cards: "PCIe-server")."""
    return NODE_PRESETS[DEFAULT_NODE.get(spec.name, "PCIe-server")]


def match_gpu(name: str) -> GPUSpec | None:
    """Map a torch.cuda.get_device_name() string (or a preset key) to a preset; None if unknown."""
    t = set(re.split(r"[\s\-_/]+", str(name).upper()))  # whole tokens: "A100" never matches "A10"
    mem = "80GB" if "80GB" in t else "40GB" if "40GB" in t else None
    if t & {"GB200", "B200", "GB300", "B300"}:
        key = next(k for k in ("GB300", "B300", "GB200", "B200") if k in t)
    elif "H800" in t:  # "NVIDIA H800" (the SXM part; the PCIe H800 has no preset)
        key = None if "PCIE" in t else "H800-SXM5-80GB"
    elif "H200" in t:
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


def default_dtype(spec: GPUSpec) -> str:
    """The 16-bit type a GPU trains in: bf16 where it has bf16 tensor cores, else fp16
    (V100 and T4 have no bf16)."""
    return "bf16" if "bf16" in spec.peak_tflops else "fp16"
