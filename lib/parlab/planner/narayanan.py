"""Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC 2021): Table 1 -- achieved teraFLOP/s per A100 for GPTs from 1.7B to
1T parameters, the planner's in-sample rows (``published``) -- predicted with the one set
of constants; and the seed's GPT-3 3D configuration, checked.

How FLOPs are counted: ``predicted_tflops`` is the paper's accounting, 96 B s l h^2 (1 +
s/(6h) + V/(16 l h)) per iteration (§5.1, Appendix: recomputation included), divided by the
predicted step time and the GPUs; ``predicted_mfu`` is PaLM's (no recomputation).
"""

from __future__ import annotations

from .. import cost
from .constants import CONSTANTS_NOTE
from .estimate import estimate
from .published import IN_SAMPLE
from .validate import validate


def narayanan_table1() -> list[dict]:
    """One dict per Table 1 row, in the paper's order: "model", "heads", "hidden",
    "layers", "tp", "pp", "dp", "gpus", "batch", "micro_batch", "v", the paper's
    "paper_tflops" and "paper_pct_peak", our "predicted_tflops" (paper's accounting),
    "predicted_mfu" (PaLM's), "error" (predicted / paper - 1), "bubble", "exposed_comm"
    (shares of the step), "memory_gb", "fits", and "constants" (the one set used)."""
    rows = []
    for r in validate(tuple(x for x in IN_SAMPLE if x.group == "Narayanan 2021 Table 1")):
        e = r["estimate"]
        t = r["estimate"].step_time
        rows.append({"model": r["name"].split()[-1], "heads": e.model.n_heads,
                     "hidden": e.model.d_model, "layers": e.model.n_layers, "tp": e.tp,
                     "pp": e.pp, "dp": e.dp, "gpus": e.n_gpus, "batch": e.global_batch,
                     "micro_batch": e.micro_batch, "v": e.v, "paper_tflops": r["published"],
                     "paper_pct_peak": round(100 * r["published"] / e.peak_tflops),
                     "predicted_tflops": e.tflops_per_gpu, "predicted_mfu": e.mfu,
                     "error": r["error"], "bubble": t.bubble / t.total,
                     "exposed_comm": t.communication / t.total,
                     "memory_gb": e.memory_per_gpu.total / 1e9, "fits": e.fits,
                     "constants": CONSTANTS_NOTE})
    return rows


# The seed's claim: GPT-3 175B on 8-way TP x 64-way PP x 64-way DP = 32768 A100s,
# "312 TFLOPS/GPU, 52% utilisation".
SEED_GPT3 = {"tp": 8, "pp": 64, "dp": 64, "gpus": 32768, "tflops": 312, "utilisation": 0.52}
# GPT-3 175B as Megatron ran it in 2021 (Table 2's PTD-P rows): fp16, materialized attention
_MEGATRON_2021 = dict(attention="materialized", dtype="fp16", recompute="full")


def gpt3_seed_check(global_batch: int = 1536) -> dict:
    """The seed's GPT-3 3D configuration, checked arithmetically and by ``estimate``.

    8 x 64 x 64 = 32768 is right, but GPT-3 has 96 layers: PP=64 gives 1.5 layers per
    stage, so stages are uneven (32 with 2 layers, 32 with 1) and the 2-layer stages set
    the pace: at best 96 / (64 x 2) = 75% of a balanced pipeline. And 312 TFLOP/s is the
    A100's dense bf16 *peak*: "312 TFLOP/s at 52%" contradicts itself (52% of 312 is 162,
    Narayanan et al.'s own 1T / 530B figure). With dp = 64, each pipeline gets
    global_batch / 64 sequences: GPT-3's 3.2M-token batch (1536 x 2048, Brown et al.
    Table 2.1) leaves m = 24 micro-batches of one sequence for 64 stages -- a bubble of
    63/(24+63) = 72%. Returns the arithmetic, the estimate at ``global_batch`` (uneven
    stages allowed), the global batch needed for a 10% bubble fraction at PP=64, and a
    layout that divides the layers (PP=16 or 32) for comparison."""
    L = 96
    args = (L, 12288, 96, 2048, 50257)
    seed = estimate(*args, SEED_GPT3["gpus"], 8, 64, global_batch, 1, "A100-SXM4-80GB",
                    uneven_stages=True, **_MEGATRON_2021)
    m_needed = cost.min_micro_batches(64, 0.10)
    batch_needed = m_needed * SEED_GPT3["dp"]
    at_needed = estimate(*args, SEED_GPT3["gpus"], 8, 64, batch_needed, 1, "A100-SXM4-80GB",
                         uneven_stages=True, **_MEGATRON_2021)
    alternatives = {pp: estimate(*args, 8 * pp * 64, 8, pp, global_batch, 1, "A100-SXM4-80GB",
                                 **_MEGATRON_2021) for pp in (16, 32)}
    return {
        "product": SEED_GPT3["tp"] * SEED_GPT3["pp"] * SEED_GPT3["dp"],
        "product_ok": SEED_GPT3["tp"] * SEED_GPT3["pp"] * SEED_GPT3["dp"] == SEED_GPT3["gpus"],
        "layers_per_stage": L / SEED_GPT3["pp"],
        "balanced_ceiling": L / (SEED_GPT3["pp"] * -(-L // SEED_GPT3["pp"])),
        "claimed_tflops_is_peak": SEED_GPT3["tflops"] == 312,
        "claimed_tflops_at_52pct": 0.52 * 312,
        "estimate": seed,
        "micro_batches_for_10pct_bubble": m_needed,
        "global_batch_for_10pct_bubble": batch_needed,
        "estimate_at_that_batch": at_needed,
        "alternatives": alternatives,
    }
