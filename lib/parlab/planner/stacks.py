"""Software stacks: the same GPU sustains a different share of its peak under Megatron-LM with
Transformer Engine, plain PyTorch, ``torch.compile`` or a float8 recipe. A ``Stack`` is one
such profile: its three (or four) ``Constants``, where they come from, and the published
rows they were fitted on -- every other row is out of sample for it (``published``'s rows
say which profile they use in ``layout["stack"]``).

    megatron-te          the default: the planner's constants (``CONSTANTS_NOTE``), GEMMs
                         and memory-bound kernels chosen on Narayanan et al. 2021 Table 1
    torch-compile        the same numbers: the fused-attention share (0.32) was measured on
                         the lab's own compiled run (H200, ~1B GPT, docs/measurements.md);
                         Inductor fuses the elementwise chains as Megatron's kernels do
    pytorch-eager        one kernel per elementwise op: memory-bound kernels at 0.39 of the
                         HBM bandwidth instead of 0.60 -- the share that makes the lab's
                         eager run (same GPU, model and batch; 81,283 tokens/s against the
                         compiled 88,487) take its measured time, GEMMs and attention as
                         compiled (cuBLAS and the attention kernel are the same calls)
    pytorch-eager-2023   PyTorch 2.1 eager with CUDA 12.1 (MosaicML's llm-foundry benchmarks of
                         2023-24): the eager profile, and on Hopper GPUs its GEMMs at 0.53 of
                         the dense peak, fitted on one row (MPT-7b on 8 H100s)
    torchao-float8       torch.compile with torchao's float8 (tensorwise) linears: fp8 GEMMs
                         at 0.62 of the fp8 peak, fitted on one row, torchtitan 2024-12
                         Table 1's 8-GPU Float8 run (with its checkpointing, recompute "op")

The float8 share is fitted on a published run because no kernel benchmark of that version
is at hand; the lab's own fp8 GEMM (``torch._scaled_mm`` on the H200, 2026: 0.68 of the fp8
peak after quantization, ``calibrate``) is the kernel's ceiling. The run is on torchtitan's
500 W H100s, whose peak the source does not know; their sustained rate is fitted first, on a
bf16 row of the same table (``published_more.SUSTAINED_500W``: 0.79 of the midpoint of the
SXM's and NVL's peaks), so the share is the recipe's, not the machine's. On those H100s the
one 2024 share predicts the 2025-06 float8 rows within -12.2..+11.2% (70B with full
checkpointing pessimistic, 8B with "op" optimistic). On Trainy's 700 W H200s (another torch and
torchao) it is 16-18% optimistic; a share fitted there would be 0.47: the sources do not
separate the recipe's version from the machine, so one float8 profile, not one per year.
(Until 2026-12-05 the share took in the machine's loss as well: 0.42.)

The 2023 eager stack is its own profile because the same code says so: llm-foundry's MPT
runs on A100 are within -10..+7% at the eager profile's shares, and its H100 runs 11-43%
slower than those shares predict, at every width and scale (8 to 512 GPUs). What the fitted
Hopper share stands for is everything that stack lost on Hopper (cuBLAS 12.1, the Triton
flash-attention kernel of 2022 written for A100), not the GEMMs alone: the lab's H200 with
torch 2.11 runs square bf16 GEMMs at 0.70-0.79 of the peak. It is fitted on MPT-7b on 8
H100s; the seven other H100 rows (1b to 70b, 8 to 512 GPUs) are out of sample for it.

The default stack in fp8 (Transformer Engine, the same 0.70 share at the fp8 peak) is checked
on NVIDIA's Megatron-Bridge H100 tables of releases 25.11 and 26.04.01 (published_nvidia):
-1.5..-10.1%; at a fixed layout the releases differ by under 3%, so no profile per release.
Its B200 and GB200 tables (17 rows) were checked blind, nothing fitted on them: FP8 within
-8.6..+12.1%; MXFP8 and NVFP4 5 of 10 within 15%, all optimistic (+0.4..+39.9%) -- at one
layout MXFP8 ran 4-6% slower than FP8. MXFP8's GEMMs now run at 0.90 of FP8's
(``constants.MXFP8_SHARE``, fitted on NeMo 25.07's Llama 3 8B pair on GB200s, outside the
scored rows): the archive's three pairs at one layout come out within 2 points, and MXFP8 /
NVFP4 7 of 10 within 15%. NeMo 24.07's H100 FP8 table (12 rows, GPT-3, Llama 2/3 and
Nemotron, 5B to 340B), also blind: 9 within 15%; the three misses are GPT-3 5B and 20B and
Nemotron-3 8B (+17.0%, +17.0%, +21.5%), small GPT-style layers on H100 as Megatron-LM's 1.7B
and 7.1B. NeMo's 25.02 B200 and 25.04/25.07 GB200
tables (10 rows: GPT-3 175B, Llama 3, Nemotron-4), blind: 2 of 10 within 15%, every GB200 row
optimistic. At one layout on one node the archive's GB200 runs at the B200's speed, not at its
datasheet's 1/0.9 of it; with the GB200's compute at ``constants.GB200_CLOCK_SHARE`` of its
peaks (fitted on pairs of models no scored row comes from) those rows are 6 of 10.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .constants import CONSTANTS, Constants

DEFAULT_STACK = "megatron-te"


@dataclass(frozen=True)
class Stack:
    name: str
    constants: Constants
    source: str
    fitted_on: tuple = ()  # names of published rows (``published.RUNS``) the profile was fitted on
    note: str = ""


_LAB = ("the lab's GPU report on one H200 (docs/measurements.md, 2026-11-30: ~1B GPT, "
        "batch 8 x 2048, eager 81,283 tokens/s = 51.4% MFU, compiled 88,487 = 56.0%)")
_TITAN_2412 = "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 1"
_FOUNDRY = ("mosaicml/llm-foundry scripts/train/benchmarking/README.md at 495218376, table "
            "'H100 80GB BF16'")
# the MXFP8 share is Transformer Engine's recipe (constants.MXFP8_PAIR): not the other stacks'
_EAGER = replace(CONSTANTS, memory_efficiency=0.39, stack="pytorch-eager", mxfp8_share=None,
                 source=f"PyTorch eager: {_LAB}, eager run")
_T1_NAMES = tuple(f"Table 1 {n}" for n in ("1.7B", "3.6B", "7.5B", "18B", "39B", "76B", "145B",
                                          "310B", "530B", "1T"))
_COMPILE = replace(CONSTANTS, stack="torch-compile", mxfp8_share=None,
                   source=f"torch.compile: {_LAB}, compiled run")

STACKS = {s.name: s for s in (
    Stack("megatron-te", CONSTANTS,
          "Megatron-LM + Transformer Engine: GEMM and memory shares chosen on Narayanan et al. "
          "2021 Table 1 (a grid in steps of 0.05), fused attention from " + _LAB,
          _T1_NAMES),
    Stack("torch-compile", _COMPILE,
          "torch.compile (Inductor): " + _LAB + "; the compiled run gives the attention share "
          "0.32 with GEMMs at 0.70 (the H200's 16384^3 GEMM) and memory-bound kernels at 0.60",
          (), "fitted on no published row: the lab's own run is the source"),
    Stack("pytorch-eager", _EAGER,
          "PyTorch eager: memory_efficiency 0.39 makes the planner's one-GPU estimate of the "
          "lab's eager run take its measured 201.6 ms (compiled: 185.2 ms at 0.60); " + _LAB,
          (), "fitted on no published row: the lab's own run is the source"),
    Stack("pytorch-eager-2023",
          replace(_EAGER, hopper_gemm_efficiency=0.53, stack="pytorch-eager-2023",
                  source="PyTorch 2.1 eager: the eager profile; on Hopper, " + _FOUNDRY),
          "PyTorch 2.1 eager, CUDA 12.1 (image mosaicml/pytorch:2.1.0_cu121, Composer's FSDP, "
          "llm-foundry's Triton attention): the eager profile's shares (its A100 rows are "
          "within -10..+7% at them); hopper_gemm_efficiency fitted on " + _FOUNDRY + " (MPT-7b, "
          "8 GPUs, 10,643 tokens/s/GPU)",
          ("llm-foundry MPT-7b 8 H100",)),
    Stack("torchao-float8",
          replace(_COMPILE, fp8_gemm_efficiency=0.62, stack="torchao-float8",
                  source="torchao float8 (tensorwise): " + _TITAN_2412),
          "torch.compile + torchao float8 tensorwise (torch 1963fc8, torchao eab345c, "
          "2024-12-23): fp8_gemm_efficiency fitted on " + _TITAN_2412 + " ('FSDP + "
          "torch.compile + Float8', 8 GPUs, 8,532 tokens/s/GPU)",
          ("torchtitan 8B 8 H100 FSDP + compile + Float8",)),
)}
STACK_NAMES = tuple(STACKS)


def stack_constants(stack: str, constants: Constants = CONSTANTS) -> Constants:
    """The constants a layout on ``stack`` is estimated with: ``constants`` themselves when
    they describe that stack (the defaults, or what ``calibrate`` measured), otherwise the
    stack's profile. An unknown name is a ValueError naming the field."""
    if stack not in STACKS:
        raise ValueError(f"stack={stack!r} must be one of {list(STACKS)}")
    return constants if constants.stack == stack else STACKS[stack].constants
