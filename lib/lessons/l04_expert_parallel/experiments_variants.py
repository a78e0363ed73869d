"""Notebook 04 §8's experiments: the MoE variants (``variants``) trained on real ranks,
each beside the single-device reference and ``parlab.cost``; plain rows for
``figures.variant_table``."""

from __future__ import annotations

from parlab.cost import expert_parallel as cost
from parlab.model import max_differences, reference_train
from parlab.expert_parallel import variants
from parlab.expert_parallel.runner import EPRun, run

SHAPE = dict(vocab_size=64, seq_len=32, d_model=64, n_heads=4, n_layers=2, d_ff=128,
             aux_loss_coef=0.0, z_loss_coef=0.0)
BATCH, FP32, LAYER = 8, 4, "blocks.0.moe"


def _run(cfg, world=2, steps=2):
    result = run(EPRun(cfg, steps=steps, batch_size=BATCH), world)
    diff = max_differences(result, reference_train(cfg, steps, BATCH))
    return result, max(diff.values())


def deepseek_rows(world: int = 2, capacity_factor: float = 1.25) -> list[dict]:
    """Top-2 of 4, its fine-grained cut (top-4 of 8, half width) and DeepSeekMoE's (top-3 of
    8 + 1 shared): all-to-all bytes sent (traced, all ranks, one layer, step 0) vs the
    balanced formula, drops measured vs ``cost.grouped_gemm_rows`` on the counts."""
    from parlab import model
    base = model.GPTConfig(**SHAPE, n_experts=4, top_k=2, capacity_factor=capacity_factor)
    cases = {"top-2 of 4": base,
             "fine-grained: top-4 of 8": variants.deepseek_moe(base, 2, 0),
             "+ shared: top-3 of 8 + 1": variants.deepseek_moe(base, 2, 1)}
    rows, tokens = [], BATCH * SHAPE["seq_len"] // world
    for name, cfg in cases.items():
        result, diff = _run(cfg, world)
        stats = result.ranks[0]["moe_stats"][0][LAYER]
        sent = sum(sum(r["a2a_bytes"][0][LAYER].values()) for r in result.ranks)
        rows.append(dict(case=name, rows_per_token=cfg.top_k, sent_kib=sent / 1024,
                         formula_kib=world * cost.moe_all_to_all_bytes(
                             tokens, cfg.d_model, cfg.top_k, world, FP32)["total"] / 1024,
                         dropped=len(stats["dropped"]) + sum(
                             len(r["moe_stats"][0][LAYER]["dropped"]) for r in result.ranks[1:]),
                         dropped_formula=cost.grouped_gemm_rows(stats["routed"],
                                                                stats["capacity"])["dropped"],
                         max_diff=diff))
    return rows


def expert_choice_rows(world: int = 2, factors=(1.0, 2.0), n_experts: int = 4) -> list[dict]:
    """Expert choice at each c: shares of tokens with 0 / 1 / 2+ experts (measured, block 0,
    step 0) beside ``cost.expert_choice_coverage`` (experts choosing at random)."""
    from parlab import model
    rows = []
    for c in factors:
        cfg = variants.expert_choice(model.GPTConfig(**SHAPE, n_experts=n_experts), c)
        result, diff = _run(cfg, world)
        got = variants.experts_per_token(result.ranks[0]["moe_stats"][0][LAYER])
        p = cost.expert_choice_coverage(n_experts, c)
        rows.append(dict(c=c, none=got[0], one=got[1], more=got["2+"], none_random=p[0],
                         one_random=p[1], more_random=p[2], max_diff=diff))
    return rows


def dropless_rows(world: int = 2, capacity_factor: float = 1.25, block: int = 16) -> list[dict]:
    """One dropless run (padded GEMM): per rank, rows its experts computed (counted by the
    layer) vs ``cost.grouped_gemm_rows`` on the rows it received: loop, padded, blocks
    of ``block`` rows, and capacity buffers (with what they would drop)."""
    from parlab import model
    cfg = variants.dropless(model.GPTConfig(**SHAPE, n_experts=4, top_k=2))
    result, diff = _run(cfg, world)
    rows = []
    for r in result.ranks:
        local = list(r["tokens_per_expert"][0][LAYER].values())
        cap = cost.expert_capacity(BATCH * SHAPE["seq_len"], 4, capacity_factor, 2)
        g = cost.grouped_gemm_rows(local, cap, block)
        rows.append(dict(rank=r["rank"], received=local,
                         computed=r["moe_stats"][0][LAYER]["rows_computed"], loop=g["loop"],
                         padded=g["padded"], block=g["block"], capacity=g["capacity"],
                         capacity_drops=g["dropped"], max_diff=diff))
    return rows
