"""The planner's three free constants and what each stands for (``calibrate`` replaces them
with what ``python -m parlab gpu-report`` measured on the GPU at hand).

Everything else in an estimate is a datasheet figure (peaks, HBM bandwidth, SM count,
NVLink and network bandwidth: ``hardware``), a measured link efficiency with its source
(``LinkSpec.achieved``: NCCL's bus bandwidth over the link's), or a count (FLOPs, bytes,
collectives, bubbles). The three constants are properties of kernels that no datasheet
gives and that ``cost.step.Device`` carries:

  gemm_efficiency       share of the dense peak a large, well-shaped GEMM sustains during
                        training (tile and wave quantization are counted on top, by shape)
  attention_efficiency  share of the dense peak a fused attention kernel sustains, forward
                        and backward (FlashAttention-2 reports 50-73% on A100, Dao 2023,
                        abstract and §4)
  memory_efficiency     share of the HBM bandwidth memory-bound kernels reach

They are the same for every GPU generation (one stack, PyTorch 2.1 eager, has its own
GEMM share on Hopper GPUs: ``hopper_gemm_efficiency``, ``stacks.py``), except that a fused
attention kernel also waits on the special-function units' exponentials, whose balance
against the tensor cores differs by architecture (``hardware.GPUSpec.flops_per_exp``): the
attention share holds on the GPU it was measured on (``attention_gpu``) and scales by
``cost.softmax_exp_factor`` elsewhere. One GPU does not hold its datasheet's tensor peaks in
training: the GB200, which NVIDIA's own tables run at the B200's speed where nothing else
differs (``GB200_PAIRS``); its compute runs at ``GB200_CLOCK_SHARE`` of its peaks
(``clock_shares``), its HBM as the datasheet says. The GB300, against the GB200 in one rack
(``GB300_PAIRS``), holds its datasheet peaks. One number belongs to a format, not a
kernel class: Transformer Engine's MXFP8 GEMMs run at ``MXFP8_SHARE`` of its FP8 ones (``mxfp8_share``, fitted on one published pair, ``MXFP8_PAIR``); ``CONSTANTS_NOTE``
says how they were chosen and on which rows (``published.IN_SAMPLE``). They describe one
software stack, Megatron-LM with Transformer Engine (fused kernels, fused attention): the
default. Other stacks reach other shares of the same hardware; ``STACKS`` holds one
``Stack`` profile per stack (its constants, its sources, the published rows it was fitted
on), and a layout names its stack (``Layout.stack``, ``estimate(..., stack=...)``); see
``stacks.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import cost
from ..hardware import GPU_PRESETS, GPUSpec
from ..validate import check_float


# the Hopper presets (hardware.GPU_PRESETS) and the torchtitan H100s (published_more)
HOPPER = ("H100", "H200", "H800", "GH200")


@dataclass(frozen=True)
class Constants:
    gemm_efficiency: float = 0.70
    attention_efficiency: float = 0.27
    memory_efficiency: float = 0.65
    fp8_gemm_efficiency: float | None = None  # None: gemm_efficiency (calibrate measures it)
    # a stack whose Hopper runs sustain another GEMM share than its others (HOPPER); None: the same
    hopper_gemm_efficiency: float | None = None
    # MXFP8's GEMMs at this share of the stack's fp8 GEMM rate (the block-scaled recipe's cost,
    # MXFP8_PAIR); None: the same rate
    mxfp8_share: float | None = None
    # (GPU preset name, share): a GPU whose compute sustains that share of its datasheet peaks
    # in training, on top of the shares above (GB200_PAIRS); calibrate drops the GPU it measured
    clock_shares: tuple = ()
    source: str = "default"
    stack: str = "megatron-te"  # the software stack these shares were measured on (STACKS)
    # the GPU preset the attention share was measured on: another GPU's fused attention runs
    # longer or shorter by its balance of matmul and exponentials (cost.softmax_exp_factor)
    attention_gpu: str = "H200-SXM-141GB"
    # fused attention with dropout (GPT-3's 0.1 on the probabilities) takes this many times
    # its time without, as gpu-report's attention_dropout section measures it (calibrate);
    # None: no measurement, dropout priced free in a fused kernel
    attention_dropout_factor: float | None = None

    def __post_init__(self):
        for f in ("gemm_efficiency", "attention_efficiency", "memory_efficiency"):
            check_float(f, getattr(self, f), 0.0, high=1.0)
        for f in ("fp8_gemm_efficiency", "hopper_gemm_efficiency", "mxfp8_share"):
            if getattr(self, f) is not None:
                check_float(f, getattr(self, f), 0.0, high=1.0)
        for pair in self.clock_shares:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                raise ValueError(f"clock_shares={self.clock_shares!r} must hold (GPU name, share) "
                                 "pairs")
            check_float("clock_shares", pair[1], 0.0, high=1.0)
        if self.attention_dropout_factor is not None:
            check_float("attention_dropout_factor", self.attention_dropout_factor, 0.0)
        if not isinstance(self.stack, str):
            raise ValueError(f"stack={self.stack!r} must be a stack's name (a string)")
        if self.attention_gpu not in GPU_PRESETS:
            raise ValueError(f"attention_gpu={self.attention_gpu!r} must be one of "
                             f"{sorted(GPU_PRESETS)}")

    def gemm_share(self, gpu: GPUSpec) -> float:
        """The 16-bit GEMMs' share of ``gpu``'s dense peak: ``hopper_gemm_efficiency`` on a
        Hopper GPU (``HOPPER``) where the stack has one, ``gemm_efficiency`` otherwise."""
        if self.hopper_gemm_efficiency is not None and gpu.name.startswith(HOPPER):
            return self.hopper_gemm_efficiency
        return self.gemm_efficiency

    def clock_share(self, gpu: GPUSpec) -> float:
        """The share of ``gpu``'s datasheet peaks its compute sustains (``clock_shares``; 1
        for a GPU not named there)."""
        return dict(self.clock_shares).get(gpu.name, 1.0)

    def device(self, gpu: GPUSpec, dtype: str) -> cost.Device:
        """A ``cost.Device`` for ``gpu`` computing in ``dtype`` ("bf16", "fp16"; "fp8",
        "mxfp8", "nvfp4": the linear layers at that dtype's peak, the rest 16-bit)."""
        gemm = self.gemm_share(gpu)
        clock = self.clock_share(gpu)
        low = dtype in cost.LOW_PRECISION
        half = "bf16" if low or dtype not in gpu.peak_tflops else dtype
        if half not in gpu.peak_tflops:
            half = "fp16"
        fp8 = gpu.peak_tflops.get(dtype if low else "fp8")
        if fp8 is not None and self.fp8_gemm_efficiency is not None:
            fp8 *= self.fp8_gemm_efficiency / gemm  # its own sustained share
        if fp8 is not None and dtype == "mxfp8" and self.mxfp8_share is not None:
            fp8 *= self.mxfp8_share
        return cost.Device(gpu.peak_tflops[half] * clock * 1e12, gpu.hbm_gb_per_s * 1e9, gpu.sms,
                           gemm, self.attention_efficiency,
                           self.memory_efficiency, None if fp8 is None else fp8 * clock * 1e12,
                           gpu.flops_per_exp, GPU_PRESETS[self.attention_gpu].flops_per_exp,
                           self.attention_dropout_factor or 1.0)


# The one published pair of one layout in FP8 (per-tensor current scaling) and in MXFP8 that
# no scored row comes from: NVIDIA NeMo Framework user guide, "Performance Summary", container
# NeMo 25.07, DGX-GB200, LLAMA3-8B on 8 GPUs (batch 128, micro-batch 2, sequence 8192, DP 8):
# "31737 (30341)" tokens/s/GPU, the figure in parentheses the MXFP8 run (the archive's later
# tables of the same benchmark, Megatron-Bridge 25.09 and 25.11, head that column "FP8-CS
# (FP8-MX)"). MXFP8_SHARE makes the default stack's estimate of the MXFP8 run that much slower
# than of the FP8 one (bisection; tests/parlab/planner/test_stacks.py re-derives it). It stands
# for what TE's MXFP8 recipe costs over FP8's, in its GEMMs or around them: quantizing each
# operand along both axes writes fewer bytes than FP8's amax pass and cast, so not the casts.
MXFP8_PAIR = dict(source="NVIDIA NeMo Framework user guide, 'Performance Summary', NeMo 25.07, "
                         "DGX-GB200, LLAMA3-8B", model="llama3-8B", gpu="GB200", n_gpus=8,
                  global_batch=128, micro_batch=2, tokens_per_s={"fp8": 31737, "mxfp8": 30341})
MXFP8_SHARE = 0.89

# GB200 against B200: every pre-training pair of NVIDIA's Megatron-Bridge archive
# (docs/performance-summary-archive.md at 067f987df) at one layout, one release and one node of 8
# GPUs -- where nothing crosses the rack's NVLink that a DGX's NVLink would not carry -- of a model
# no scored row comes from (release, model, precision, B200 tokens/s/GPU, GB200 tokens/s/GPU).
# The GB200's datasheet peaks are 1/0.9 of the B200's (5,000 against 4,500 dense fp8 TFLOP/s),
# its HBM the same 8 TB/s; at one layout it ran at 0.96-1.00 of the B200's speed. So its compute
# sustains the pairs' mean ratio times the B200's peak: GB200_CLOCK_SHARE of its own. Which part
# holds it back (power and clocks, the Grace host) the tables cannot say. The two Llama 3 8B pairs
# of the same archive (25.11, FP8 1.029 and MXFP8 1.009) are scored rows, so not used here.
GB200_PAIRS = (("26.04.01", "Qwen3_30B_a3B", "MXFP8", 27136, 26112),
               ("26.04", "Qwen3_30B_a3B", "MXFP8", 26859, 26032),
               ("26.02.01", "Qwen3_30B_a3B", "MXFP8", 26695, 26373),
               ("26.04.01", "Nemotron_3_Nano", "MXFP8", 32768, 32768))
GB200_CLOCK_SHARE = 0.88
# GB300 against GB200, the same rule: the archive's pre-training pairs at one layout and one
# release, of a model no scored row comes from, on 64 GPUs, which one NVL72 rack's NVLink joins
# (as the presets place them: no network card in use; the same Grace host, NVLink 5 and 8 TB/s
# of HBM), so the GPU is what differs (release, model, precision, GB200 tokens/s/GPU, GB300
# tokens/s/GPU). Their 16-bit peaks are the same (2,500 TFLOP/s dense), and the GB300 ran
# 1.15-1.23 times as fast: the mean ratio times the GB200's share is 1.06 of the GB300's
# datasheet, beyond it, so the GB300 holds its datasheet peaks (a share is at most 1) and has
# no clock share. Its faster exponentials (cost.softmax_exp_factor) give part of the ratio, the
# GB200's share (1 / 0.88 = 1.14) the rest.
# Not the archive's GB300 / B300 pairs (one node of 8, MoE in MXFP8, 1.03-1.11): they gave 0.95
# only if the B300 held its own datasheet, and at one layout with the same peaks the B300 ran
# 1.04-1.16 times the B200 (GPT-OSS 120B on 64, DeepSeek-V3 on 256 GPUs, both across a network
# twice as fast as the B200's: 800 against 400 Gb/s a card), so no table fixes the B300's share.
GB300_PAIRS = (("26.04.01", "GPT_OSS_120B", "BF16", 16640, 19200),
               ("26.04", "GPT_OSS_120B", "BF16", 15938, 19275),
               ("26.02.01", "GPT_OSS_120B", "BF16", 15754, 19366),
               ("26.02", "GPT_OSS_120B", "BF16", 15784, 19412))
CONSTANTS = Constants(mxfp8_share=MXFP8_SHARE, clock_shares=(("GB200", GB200_CLOCK_SHARE),),
                      source="chosen on Narayanan et al. 2021 Table 1 (see CONSTANTS_NOTE)")
CONSTANTS_NOTE = (
    "One set of three constants for every plan and every run of the default stack: GEMMs sustain "
    f"{CONSTANTS.gemm_efficiency:.2f} of the dense peak (tile and wave quantization counted "
    f"on top), fused attention {CONSTANTS.attention_efficiency:.2f}, memory-bound kernels "
    f"{CONSTANTS.memory_efficiency:.2f} of the HBM bandwidth. Links: the presets' bandwidth "
    "times NCCL's measured share (0.78 NVLink, nccl-tests#175; 0.96 network cards, nccl#812). "
    "gemm and memory efficiency were chosen on the in-sample rows only (Narayanan et al. "
    "2021 Table 1, a grid in steps of 0.05); attention efficiency, which those rows do not "
    "use (their attention is materialized), from the H200 gpu-report's 1B-model run "
    "(calibrate). Each is found with the loss priced as the run computed it (cost.LOSS_KERNELS: "
    "Megatron's unfused fp32 loss in Table 1, one fused kernel in the compiled H200 run). "
    "They describe the default software stack, Megatron-LM with Transformer "
    f"Engine, whose MXFP8 GEMMs run at {MXFP8_SHARE:.2f} of its FP8 ones (fitted on one "
    "published FP8 / MXFP8 pair, NeMo 25.07's Llama 3 8B on GB200s, not a scored row). A "
    f"GB200's compute runs at {GB200_CLOCK_SHARE:.2f} of its datasheet peaks, the B200's "
    "speed (four published GB200 / B200 pairs at one layout on one node, models no scored row "
    "comes from); a GB300's at its datasheet peaks (four GB300 / GB200 pairs inside one rack, "
    "the same rule, put it at 1.06 of them, beyond). Fused attention runs at its share on the "
    "H200 it was measured on, and longer or shorter on a GPU whose tensor cores run more or "
    "fewer matmul FLOPs per exponential (Blackwell twice Hopper's, Blackwell Ultra Hopper's: "
    "cost.softmax_exp_factor). A row from another stack (torch.compile, PyTorch eager of 2023 and of today, "
    "torchao's float8) uses that stack's profile (stacks.STACKS), each with its source and "
    "the rows it was fitted on. Every other published row is out of sample.")


# The first calibration: the H200 figures of docs/measurements.md (2026-11-30, one NVIDIA
# H200, torch 2.11), in gpu-report's JSON layout, transcribed from the table.
H200_REPORT = {
    "device": {"status": "ok", "gpus": [{"name": "NVIDIA H200"}]},
    "matmul": {"status": "ok", "gpu": "NVIDIA H200", "preset": "H200-SXM-141GB", "rows": [
        {"dtype": "bf16", "n": 4096, "tflops": 777.0, "peak_tflops": 989.5},
        {"dtype": "bf16", "n": 8192, "tflops": 782.0, "peak_tflops": 989.5},
        {"dtype": "bf16", "n": 16384, "tflops": 688.0, "peak_tflops": 989.5},
        {"dtype": "fp8", "n": 4096, "tflops": 1211.0, "peak_tflops": 1979.0},
        {"dtype": "fp8", "n": 8192, "tflops": 1449.0, "peak_tflops": 1979.0},
        {"dtype": "fp8", "n": 16384, "tflops": 1328.0, "peak_tflops": 1979.0}]},
    "model": {"status": "ok", "attention": "sdpa", "best": "compiled",
              "config": {"vocab_size": 50304, "seq_len": 2048, "d_model": 2048, "n_heads": 16,
                         "n_layers": 16},
              "runs": {"eager": {"status": "ok", "batch_size": 8, "tokens_per_s": 81283.0},
                       "compiled": {"status": "ok", "batch_size": 8, "tokens_per_s": 88487.0}}},
}
