"""External check: Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on
GPU Clusters Using Megatron-LM", SC 2021), Table 1 -- achieved teraFLOP/s per A100 for
GPTs from 1.7B to 1T parameters -- predicted by ``estimate`` with one set of constants;
and the seed's GPT-3 3D configuration, checked.

Rows: attention heads, hidden size, layers, tensor- and pipeline-parallel size, GPUs,
batch size and achieved teraFLOP/s per GPU as printed in Table 1; micro-batch size,
interleaving (layers per virtual stage -> v) and DDP implementation from the paper's own
launch script (Megatron-LM examples/sc21/run_table_1.sh). All rows: sequence 2048,
vocabulary 51,200, full activation recomputation, mixed precision on 80 GB A100s (DGX
A100, 8 per node, NVLink3 inside a node and one 200 Gb/s HDR InfiniBand port per GPU).

How FLOPs are counted: ``tflops_per_gpu`` is the paper's accounting, 96 B s l h^2 (1 +
s/(6h) + V/(16 l h)) per iteration (§5.1, Appendix: recomputation included), divided by
the predicted step time and the GPUs. ``mfu`` is PaLM's (no recomputation, 72 B s l h^2
(1 + s/(6h) + V/(12 l h))), so mfu = 3/4-ish of hfu here.

Assumptions: the stated micro-batch sizes (16/16/16/8/4/2/2/1/1/1); "torch" DDP (rows to
18B) overlaps the gradient all-reduce with the last micro-batch's backward, "local" DDP
(39B up) does not; no sequence parallelism (it came later, Korthikanti et al. 2022); TP
collectives exposed; the scatter/gather p2p optimisation on.
"""

from __future__ import annotations

from .estimate import estimate
from .presets import CONSTANTS_NOTE

# (name, heads, hidden, layers, tp, pp, gpus, batch, paper TFLOP/s per GPU, paper % of
#  peak, micro-batch, v, ddp) -- Table 1, plus run_table_1.sh for the last three
TABLE1 = (
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137, 44, 16, 1, "torch"),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138, 44, 16, 1, "torch"),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142, 46, 16, 1, "torch"),
    ("18B", 48, 6144, 40, 8, 1, 256, 1024, 135, 43, 8, 1, "torch"),
    ("39B", 64, 8192, 48, 8, 2, 512, 1536, 138, 44, 4, 1, "local"),
    ("76B", 80, 10240, 60, 8, 4, 1024, 1792, 140, 45, 2, 3, "local"),
    ("145B", 96, 12288, 80, 8, 8, 1536, 2304, 148, 47, 2, 2, "local"),
    ("310B", 128, 16384, 96, 8, 16, 1920, 2160, 155, 50, 1, 2, "local"),
    ("530B", 128, 20480, 105, 8, 35, 2520, 2520, 163, 52, 1, 3, "local"),
    ("1T", 160, 25600, 128, 8, 64, 3072, 3072, 163, 52, 1, 1, "local"),
)
SEQ_LEN, VOCAB = 2048, 51200


def table1_estimate(row) -> "Estimate":  # noqa: F821
    name, a, h, l, tp, pp, n, B, _, _, b, v, ddp = row
    return estimate(l, h, a, SEQ_LEN, VOCAB, n, tp, pp, B, b, "A100-SXM4-80GB", v=v,
                    recompute="full", dp_overlap=ddp == "torch")


def narayanan_table1() -> list[dict]:
    """One dict per Table 1 row, in the paper's order: "model", "heads", "hidden",
    "layers", "tp", "pp", "dp", "gpus", "batch", "micro_batch", "v", the paper's
    "paper_tflops" and "paper_pct_peak", our "predicted_tflops" (paper's accounting),
    "predicted_mfu" (PaLM's), "error" (predicted / paper - 1), "bubble", "exposed_comm"
    (shares of the step), "memory_gb", "fits", and "constants" (the one set used)."""
    rows = []
    for row in TABLE1:
        e = table1_estimate(row)
        t = e.step_time
        rows.append({"model": row[0], "heads": row[1], "hidden": row[2], "layers": row[3],
                     "tp": row[4], "pp": row[5], "dp": e.dp, "gpus": row[6], "batch": row[7],
                     "micro_batch": row[10], "v": row[11], "paper_tflops": row[8],
                     "paper_pct_peak": row[9], "predicted_tflops": e.tflops_per_gpu,
                     "predicted_mfu": e.mfu, "error": e.tflops_per_gpu / row[8] - 1,
                     "bubble": t.bubble / t.total, "exposed_comm": t.communication / t.total,
                     "memory_gb": e.memory_per_gpu.total / 1e9, "fits": e.fits,
                     "constants": CONSTANTS_NOTE})
    return rows


# The seed's claim: GPT-3 175B on 8-way TP x 64-way PP x 64-way DP = 32768 A100s,
# "312 TFLOPS/GPU, 52% utilisation".
SEED_GPT3 = {"tp": 8, "pp": 64, "dp": 64, "gpus": 32768, "tflops": 312, "utilisation": 0.52}


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
    from .. import cost
    L = 96
    seed = estimate(L, 12288, 96, 2048, 50257, SEED_GPT3["gpus"], 8, 64, global_batch, 1,
                    "A100-SXM4-80GB", recompute="full", uneven_stages=True)
    m_needed = cost.min_micro_batches(64, 0.10)
    batch_needed = m_needed * SEED_GPT3["dp"]
    at_needed = estimate(L, 12288, 96, 2048, 50257, SEED_GPT3["gpus"], 8, 64, batch_needed, 1,
                         "A100-SXM4-80GB", recompute="full", uneven_stages=True)
    alternatives = {pp: estimate(L, 12288, 96, 2048, 50257, 8 * pp * 64, 8, pp, global_batch,
                                 1, "A100-SXM4-80GB", recompute="full")
                    for pp in (16, 32)}
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
