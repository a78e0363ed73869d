"""The 3D-parallel planner: a configuration's predicted step (``estimate``), configurations
ranked by predicted time with their reasons (``plan``), and the external check against
Narayanan et al. 2021 Table 1 (``narayanan_table1``) and the seed's GPT-3 claim
(``gpt3_seed_check``). Built only on ``parlab.cost`` and ``parlab.hardware``'s presets.
"""

from .estimate import Estimate, MemoryPerGPU, StepTime, estimate
from .narayanan import TABLE1, gpt3_seed_check, narayanan_table1
from .presets import (CONSTANTS, CONSTANTS_NOTE, GPU_ALIASES, MODELS, resolve_gpu,
                      resolve_model)
from .search import Candidate, Infeasible, Plan, plan

__all__ = ["estimate", "Estimate", "StepTime", "MemoryPerGPU", "plan", "Plan", "Candidate",
           "Infeasible", "narayanan_table1", "gpt3_seed_check", "TABLE1", "CONSTANTS",
           "CONSTANTS_NOTE", "GPU_ALIASES", "MODELS", "resolve_gpu", "resolve_model"]
