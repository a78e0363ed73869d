"""``python -m parlab gpu-report``: the lab's formulas checked against a real GPU.
Read in this order:

  common.py       a section's record (ok / skipped / error + reason), skip reasons, timing
  attention.py    SDPA and checkpointed attention swapped into the reference GPT
  matmul.py       bf16 / fp8 GEMM TFLOP/s vs the preset's peak
  attention_dropout.py  fused attention (SDPA) with dropout 0.1 against none: its cost
  training.py     our GPT at ~1B parameters: tokens/s, MFU (cost.mfu), peak memory vs
                  cost.memory_plan
  activations.py  one layer's activation bytes: CUDA allocator vs cost.activation_memory
  multi_gpu.py    (>= 2 GPUs) NCCL bus bandwidth; each strategy on NCCL vs PyTorch's peer
  report.py       the sections in order, text and JSON, the command's arguments

Imports only torch, the standard library and parlab's core: it runs on a bare GPU box.

    report = parlab.gpu_report.build(quick=True)      # dict: the JSON's content
"""

from .common import cuda_reason, nccl_reason
from .report import GPU_SECTIONS, SECTIONS, add_arguments, build, headline, main, run_cli

__all__ = ["SECTIONS", "GPU_SECTIONS", "build", "headline", "main", "run_cli", "add_arguments",
           "cuda_reason", "nccl_reason"]
