"""Mixed precision (taught in notebook 07), read in this order:

  formats.py         fp32, bf16, fp16, fp8 e4m3 / e5m2 from torch.finfo; ulp; stochastic rounding
  master_weights.py  MixedAdamW: bf16 weights updated in place, fp32 master, Kahan, stochastic
  loss_scaling.py    DynamicLossScaler (Micikevicius et al. 2018, §3.2); fp16 underflow counts
  communication.py   a gradient sum in bf16 across ranks: ring order, error vs Higham's bound
  fp8.py             fake_quantize (per tensor / per block, current / delayed), Fp8Linear
"""

from .communication import ring_order_sum
from .formats import DTYPES, describe, format_table, round_stochastic, ulp
from .fp8 import AmaxHistory, Fp8Linear, apply_fp8, fake_quantize
from .loss_scaling import DynamicLossScaler, to_fp16_grads, underflow
from .master_weights import MODES, MixedAdamW

__all__ = ["DTYPES", "describe", "format_table", "ulp", "round_stochastic", "MixedAdamW", "MODES",
           "DynamicLossScaler", "to_fp16_grads", "underflow", "ring_order_sum", "fake_quantize",
           "AmaxHistory", "Fp8Linear", "apply_fp8"]
