"""The numbers the mock interview quotes, each from the function that the notebook which
measures it uses (``cost``, ``planner`` and the notebooks' own ``interview`` helpers).
Nothing here runs ranks: the measurements stay in their notebooks, linked by section."""

from __future__ import annotations

from functools import lru_cache

from parlab import cost, planner
from parlab.hardware_presets import GPU_PRESETS
from parlab.hardware_presets import LINK_PRESETS

GB = 1e9
A100_GB = GPU_PRESETS["A100-SXM4-80GB"].memory_gb  # the follow-up's "4 A100s (80 GB)"


@lru_cache(maxsize=1)
def facts() -> dict:
    """Every figure of the 30-second and 3-minute answers, the follow-ups and the claims
    table, keyed by topic. Cached: about a second the first time (the 3D planner checks)."""
    from lessons.l06_3d_parallel.experiments import interview as threed
    from lessons.l03_pipeline_parallel.experiments import interview as pipeline
    from lessons.l08_checkpoints_and_failures.experiments import goodput_at_scale, llama3_check

    f: dict = {}
    S = 2 * cost.MODEL_PRESETS["7B"].n_params  # 7B's fp16 gradients, the all-reduce 00 and 01 count
    f["ring"] = {n: cost.collective_bytes("all_reduce", S, n) / S for n in (2, 8, 1024)}
    f["ring_steps"] = {n: cost.collective_steps("all_reduce", n) for n in (8, 1024)}
    # what NVIDIA's weak-scaling tables measured (notebook 06 §4): the batch per GPU fixed,
    # the GPUs doubling -- how much longer the largest scale's step is, at most
    from parlab.planner import published_dgxc
    sweeps = [t["rows"] for t in published_dgxc.weak_sweeps()]
    f["weak"] = {"sweeps": len(sweeps), "gpus": max(r[-1]["n_gpus"] for r in sweeps),
                 "max": max(published_dgxc.published_growth(r)[1] for r in sweeps)}

    f["bytes_per_param"] = cost.zero_memory(1, 1, 0)["total"]
    seven = cost.MODEL_PRESETS["7B"]
    f["7b_params"] = seven.n_params
    f["7b_fp16_gb"] = 2 * seven.n_params / GB
    # the memory calculator (notebook 01 §6): materialized attention, the s x s scores kept
    # (Korthikanti et al.'s count); each plan says its recomputation
    f["7b_ddp"] = cost.memory_plan("7B", 4, A100_GB, stage=0, recompute="full")
    f["7b_ddp_none"] = cost.memory_plan("7B", 4, A100_GB, stage=0, recompute="none")
    f["7b_zero1"] = cost.memory_plan("7B", 4, A100_GB, stage=1)
    f["7b_zero1_full"] = cost.memory_plan("7B", 4, A100_GB, stage=1, recompute="full")
    f["7b_zero3_full"] = cost.memory_plan("7B", 4, A100_GB, stage=3, recompute="full")
    # the planner's best layout assumes a fused attention kernel (FlashAttention: no scores
    # kept), the calculator a materialized one: the same layout under both counts
    best = planner.plan("7B", 4, "A100-80GB").best
    f["7b_best"] = best.label
    one = dict(seq_len=seven.seq_len, micro_batch=1, d_model=seven.d_model,
               n_heads=seven.n_heads, n_layers=seven.n_layers, layer=seven.layer)
    f["7b_best_layout"] = dict(
        micro_batch=best.micro_batch, stage=best.zero_stage, recompute=best.recompute,
        attention=best.estimate.layout.attention, total=best.estimate.memory_per_gpu.total,
        act_fused=cost.activation_memory(**one, attention="fused"),
        act_materialized=cost.activation_memory(**one, attention="materialized"),
        materialized=cost.memory_plan("7B", 4, A100_GB, stage=best.zero_stage,
                                      recompute=best.recompute,
                                      micro_batch=best.micro_batch)["total"],
        max_b_materialized=cost.max_micro_batch("7B", 4, A100_GB, stage=best.zero_stage,
                                                recompute=best.recompute))
    f["7b_zero_stage_that_fits"] = next(
        s for s in range(4) if cost.memory_plan("7B", 4, A100_GB, stage=s, recompute="full")["fits"])

    tp = cost.tp_comm_per_layer(1, 2048, 12288, 8)  # GPT-3 175B's layer, t = 8
    MiB = 2 ** 20  # the seed's "48 MB" and "96 MB" are MiB: b·s·h·2 = 48 MiB exactly
    f["tp"] = dict(collectives=tp["collectives"], forward=tp["forward"]["all_reduce"],
                   message_mib=tp["message_bytes"] / MiB, step_mib=tp["bytes"] / MiB,
                   seed_mib=2 * tp["message_bytes"] / MiB,
                   sp_step_mib=cost.tp_comm_per_layer(1, 2048, 12288, 8,
                                                      sequence_parallel=True)["bytes"] / MiB)

    p = pipeline()
    f["bubble"] = dict(p=p["b"]["p"], m=p["b"]["m"], fraction=p["b"]["fraction"],
                       ratio=p["b"]["ratio"], m20=p["a"]["m20"],
                       at_4p={q: share for q, share, _ in p["c"]["rows"]},
                       peak={m: held for m, held in p["d"].items()},
                       interleaved_v2=cost.bubble_fraction(4, 8, 2))

    # Mixtral 8x7B routes each token to 2 of its 8 experts (Jiang et al. 2024, arXiv
    # 2401.04088: "a router network selects two experts", K = 2): capacity = k * T * cf / E
    f["capacity"] = dict(tokens=4096, experts=8, cf=1.25, top_k=2,
                         slots=cost.expert_capacity(4096, 8, 1.25, top_k=2),
                         slots_top1=cost.expert_capacity(4096, 8, 1.25))

    # GPT-3 175B's layer (h = 12288, 96 heads), as 02 §11 (b) counts it: 12 h^2 weights
    h3 = 12288
    f["gpt3_layer"] = dict(params=cost.transformer_params(1, h3),
                           param_gb=2 * cost.transformer_params(1, h3) / GB,
                           act_gb=cost.activation_memory(2048, 1, h3, 96) / GB)
    nv = LINK_PRESETS["NVLink3"]
    f["nvlink3"] = dict(per_direction=nv.gb_per_s_per_direction, total=nv.gb_per_s_total)
    f["ib_hdr"] = LINK_PRESETS["IB-HDR"].gb_per_s_per_direction

    t = threed()
    seed = t["a"]["seed"]
    f["gpt3_seed"] = dict(product=seed["product"], layers_per_stage=seed["layers_per_stage"],
                          at_52=seed["claimed_tflops_at_52pct"],
                          table2={n: r["paper"] for n, r in t["a"]["table2"].items()})
    f["order"] = t["c"]["order"]
    f["thirteen"] = t["c"]["thirteen"]  # "13B: TP = 4 + PP = 2" on one 8-GPU A100 node
    # Table 1's 1T row: 128 layers, h 25600, 160 heads, s 2048, V 51200
    one_t = dict(model=cost.LayerShape(25600, 160), n_layers=128, seq_len=2048,
                 vocab_size=51200, count="megatron")
    f["mfu_1t"] = cost.mfu_from_hfu(0.52, cost.flops_per_token(**one_t, recompute="none"),
                                    cost.flops_per_token(**one_t, recompute="full"))
    f["gpt3_mfu"] = 0.213  # PaLM (Chowdhery et al. 2022), Table 3: GPT-3's own training run

    f["bf16_ulp"] = cost.ulp(1.0, "bf16")
    f["llama3"] = llama3_check()
    # the same job with Llama 3's own storage (§3.3.1: 2 TB/s), as notebook 08 §4 checks it
    f["llama3_fast"] = {k: v for k, v in goodput_at_scale(bandwidth=2e12).items() if k != "curve"}
    return f
