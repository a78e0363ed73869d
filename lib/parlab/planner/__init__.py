"""The planner: a configuration's predicted step (``estimate``, ``predict``), configurations
ranked by predicted time with their reasons (``plan``), its three constants and
``calibrate`` (from a gpu-report), one profile per software stack (``STACKS``), and its
check against published runs it was not fitted to (``published``, ``validate``) and how far
those runs' sources agree with themselves (``release_spread``). Built
only on ``parlab.cost`` and ``parlab.hardware``.
"""

from .calibrate import calibrate
from .conventions import FLOP_CONVENTION, flops_as
from .constants import CONSTANTS, CONSTANTS_NOTE, H200_REPORT, Constants
from .estimate import Estimate, MemoryPerGPU, StepTime, best_micro_batch, estimate, predict
from .narayanan import SEED_GPT3, gpt3_seed_check, narayanan_table1
from .presets import GPU_ALIASES, MODELS, cluster_for, resolve_gpu, resolve_model
from .published import IN_SAMPLE, OUT_OF_SAMPLE, RUNS, PublishedRun
from .published_dgxc import release_spread
from .search import Candidate, Infeasible, Plan, plan, reasons
from .spec import CP_KINDS, DTYPES, EP_DISPATCH, Cluster, Layout, LayoutError, ModelSpec
from .stacks import DEFAULT_STACK, STACKS, Stack, stack_constants
from .validate import (TOLERANCE, error_band, headline, metric_of, predict_run, summary,
                       validated_scale, validate, weak_scaling)

__all__ = ["estimate", "predict", "best_micro_batch", "Estimate", "StepTime", "MemoryPerGPU",
           "CONSTANTS", "CONSTANTS_NOTE", "H200_REPORT", "Constants", "calibrate",
           "GPU_ALIASES", "MODELS", "cluster_for", "resolve_gpu", "resolve_model",
           "CP_KINDS", "DTYPES", "EP_DISPATCH", "Cluster", "Layout", "LayoutError", "ModelSpec",
           "RUNS", "IN_SAMPLE", "OUT_OF_SAMPLE", "PublishedRun", "plan", "Plan", "Candidate",
           "Infeasible", "reasons", "validate", "summary", "predict_run", "error_band", "metric_of",
           "TOLERANCE", "headline", "flops_as", "FLOP_CONVENTION", "narayanan_table1", "gpt3_seed_check",
           "SEED_GPT3", "STACKS", "Stack", "DEFAULT_STACK", "stack_constants", "validated_scale",
           "weak_scaling", "release_spread"]
