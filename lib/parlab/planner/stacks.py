"""Software stacks: the same GPU sustains a different share of its peak under Megatron-LM with
Transformer Engine, plain PyTorch, ``torch.compile`` or a float8 recipe. A ``Stack`` is one
such profile: its three (or four) ``Constants``, where they come from, and the published
rows they were fitted on -- every other row is out of sample for it (``published``'s rows
say which profile they use in ``layout["stack"]``). Each profile's ``source`` prints its
numbers; tests/parlab/planner/test_stacks.py re-derives every fitted one.

    megatron-te          the default: the planner's constants (``CONSTANTS_NOTE``), GEMMs
                         and memory-bound kernels chosen on Narayanan et al. 2021 Table 1,
                         fused attention from the lab's own compiled run (H200, ~1B GPT)
    torch-compile        the same numbers: Inductor fuses the elementwise chains as
                         Megatron's kernels do
    pytorch-eager        one kernel per elementwise op: memory-bound kernels at the share that
                         makes the lab's eager run (same GPU, model and batch) take its
                         measured time, GEMMs, attention and the loss as eager PyTorch runs
                         them (cuBLAS and the attention kernel are the same calls)
    pytorch-eager-2023   PyTorch 2.1 eager with CUDA 12.1 (MosaicML's llm-foundry benchmarks of
                         2023-24): the eager profile, and on Hopper GPUs its own GEMM share,
                         fitted on one row (MPT-7b on 8 H100s)
    torchao-float8       torch.compile with torchao's float8 (tensorwise) linears: its fp8
                         GEMM share fitted on one row, torchtitan 2024-12 Table 1's 8-GPU
                         Float8 run (with its checkpointing, recompute "op")

The float8 share is fitted on a published run because no kernel benchmark of that version
is at hand; the lab's own fp8 GEMM (``torch._scaled_mm`` on the H200, ``calibrate``) is the
kernel's ceiling. The run is on torchtitan's 500 W H100s, whose peak the source does not
know; their sustained rate (``published_more.SUSTAINED_500W``) is fitted first, on a bf16 row
of the same table, so the share is the recipe's, not the machine's. On Trainy's 700 W H200s
(another torch and torchao) the same share is optimistic; the sources do not separate the
recipe's version from the machine, so there is one float8 profile, not one per year.

The 2023 eager stack is its own profile because the same code says so: llm-foundry's MPT
runs on A100 are close at the eager profile's shares, and its H100 runs are slower than
those shares predict at every width and scale (8 to 512 GPUs). What the fitted Hopper share
stands for is everything that stack lost on Hopper (cuBLAS 12.1, the Triton flash-attention
kernel of 2022 written for A100), not the GEMMs alone: the lab's H200 with torch 2.11 runs
square bf16 GEMMs at 0.70-0.79 of the peak.

The default stack in fp8 (Transformer Engine, the same GEMM share at the fp8 peak) is checked
out of sample on NVIDIA's tables (``published_nvidia``, ``published_dgxc``): Megatron-Bridge's
H100, B200 and GB200 archive, NeMo's 24.07-25.07 tables and DGX Cloud's H100 and GB200 scaling
tables, most of them checked blind before anything was fitted; MXFP8's cost over FP8
(``constants.MXFP8_SHARE``) and the GB200's clock share (``constants.GB200_CLOCK_SHARE``) are
fitted on published pairs that no scored row comes from, and the same kind of pairs leave the
GB300 at its datasheet peaks (``constants.GB300_PAIRS``).
docs/measurements.md keeps each check's figures with its date.
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
    # the loss a run on this stack computes unless its layout says otherwise (cost.LOSS_KERNELS):
    # one fused kernel, but eager PyTorch's F.cross_entropy on fp32 logits for "pytorch-eager"
    loss_kernel: str = "triton"
    # whether a Llama layer's RMSNorm, RoPE and SwiGLU run an op at a time (eager PyTorch:
    # cost.EAGER_OPS) rather than as fused kernels (Transformer Engine, torch.compile)
    eager_ops: bool = False


_LAB = ("the lab's GPU report on one H200 (docs/measurements.md, 2026-11-30: ~1B GPT, "
        "batch 8 x 2048, eager 81,283 tokens/s = 51.4% MFU, compiled 88,487 = 56.0%)")
_TITAN_2412 = "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 1"
_FOUNDRY = ("mosaicml/llm-foundry scripts/train/benchmarking/README.md at 495218376, table "
            "'H100 80GB BF16'")
# the MXFP8 share is Transformer Engine's recipe (constants.MXFP8_PAIR): not the other stacks'
_EAGER = replace(CONSTANTS, memory_efficiency=0.56, stack="pytorch-eager", mxfp8_share=None,
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
          f"torch.compile (Inductor): {_LAB}; the compiled run gives the attention share "
          f"{CONSTANTS.attention_efficiency:.2f} with GEMMs at {CONSTANTS.gemm_efficiency:.2f} "
          "(the H200's 16384^3 GEMM) and memory-bound kernels at "
          f"{CONSTANTS.memory_efficiency:.2f}",
          (), "fitted on no published row: the lab's own run is the source"),
    Stack("pytorch-eager", _EAGER,
          f"PyTorch eager: memory_efficiency {_EAGER.memory_efficiency:.2f} makes the planner's "
          "one-GPU estimate of the lab's eager run, the loss as eager PyTorch computes it "
          "(cost.LOSS_KERNELS['torch']), take its measured 201.6 ms (compiled: 185.2 ms); "
          + _LAB,
          (), "fitted on no published row: the lab's own run is the source", "torch",
          eager_ops=True),
    Stack("pytorch-eager-2023",
          replace(_EAGER, hopper_gemm_efficiency=0.51, stack="pytorch-eager-2023",
                  source="PyTorch 2.1 eager: the eager profile; on Hopper, " + _FOUNDRY),
          "PyTorch 2.1 eager, CUDA 12.1 (image mosaicml/pytorch:2.1.0_cu121, Composer's FSDP, "
          "llm-foundry's Triton attention): the eager profile's shares (its A100 rows are "
          "within -10..+7% at them); hopper_gemm_efficiency fitted on " + _FOUNDRY + " (MPT-7b, "
          "8 GPUs, 10,643 tokens/s/GPU)",
          ("llm-foundry MPT-7b 8 H100",), eager_ops=True),
    Stack("torchao-float8",
          replace(_COMPILE, fp8_gemm_efficiency=0.64, stack="torchao-float8",
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
