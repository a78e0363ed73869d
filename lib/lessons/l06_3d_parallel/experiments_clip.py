"""Notebook 06 §2's global-norm clipping, measured: the norm a 3D run computes each step
against one device's, with the rule right and with each of three mistakes planted."""

from __future__ import annotations

from parlab.launch import launch
from parlab.model import GPTConfig, max_differences, reference_train
from parlab.parallel_nd.runner import NDRun, collect

CLIP_CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4)
MISTAKES = {"replicated_t_times": "TP-replicated parameters counted on every TP rank",
            "summed_over_dp": "the partial sums also added over the DP replicas",
            "no_pp_sum": "the stages' partial sums never added",
            "shards_not_summed": "ZeRO: the shards' partial sums never added over DP",
            "dense_on_every_ep_rank": "EP: dense gradients counted on every rank of the EP group"}


def clip_worker(run: NDRun, bug: str | None = None) -> dict:
    """parallel_nd's train_worker with ``max_grad_norm`` set and, if ``bug`` names one of
    ``MISTAKES``, that mistake planted in the norm (restored after: ranks are reused)."""
    from parlab.parallel_nd import clip, runner
    from parlab.runs import train
    if bug is not None and bug not in MISTAKES:
        raise ValueError(f"bug={bug!r} must be None or one of {', '.join(MISTAKES)}")
    recipe = runner.NDRecipe(run)
    saved = clip.local_square_sum, clip.sum_over
    if bug == "replicated_t_times":
        clip.local_square_sum = lambda pieces, tp_rank, ep_rank=0: saved[0](pieces, 0, ep_rank)
    elif bug == "summed_over_dp":
        clip.sum_over = lambda x, groups: saved[1](x, (*groups, recipe.groups["dp_cp"]))
    elif bug == "no_pp_sum":
        clip.sum_over = lambda x, groups: saved[1](x, groups[:1])
    elif bug == "shards_not_summed":  # TP and PP only: each replica's own shards
        clip.sum_over = lambda x, groups: saved[1](x, groups[:2])
    elif bug == "dense_on_every_ep_rank":
        clip.local_square_sum = lambda pieces, tp_rank, ep_rank=0: saved[0](pieces, tp_rank, 0)
    try:
        return train(recipe)
    finally:
        clip.local_square_sum, clip.sum_over = saved


def clipped_run(run: NDRun, bug: str | None = None, timeout: float = 200.0):
    """The RunResult of ``run`` on dp*pp*tp ranks through ``clip_worker``."""
    if bug is not None and bug not in MISTAKES:
        raise ValueError(f"bug={bug!r} must be None or one of {', '.join(MISTAKES)}")
    run.check(run.dp * run.pp * run.cp * run.tp)
    return collect(run, launch(clip_worker, run.dp * run.pp * run.cp * run.tp, run, bug,
                               timeout=timeout))


def clip_rows(max_norm: float = 0.5, steps: int = 2, batch_size: int = 16) -> list[dict]:
    """One row per (layout, rule): the norm of step 0 against one device's, and the
    largest parameter difference after ``steps`` clipped steps."""
    ref = reference_train(CLIP_CFG, steps, batch_size, 1e-3, max_grad_norm=max_norm)
    cases = [((2, 1, 2), None), ((1, 2, 2), None), ((1, 2, 2), "replicated_t_times"),
             ((2, 2, 1), "summed_over_dp"), ((1, 2, 2), "no_pp_sum")]
    rows = []
    for (dp, pp, tp), bug in cases:
        run = NDRun(config=CLIP_CFG, steps=steps, batch_size=batch_size, lr=1e-3,
                    micro_batches=2, dp=dp, pp=pp, tp=tp, max_grad_norm=max_norm)
        r = clipped_run(run, bug)
        norm = r.ranks[0]["grad_norms"][0]
        rows.append(dict(layout=f"dp{dp}·pp{pp}·tp{tp}", rule=MISTAKES.get(bug, "right"),
                         norm=norm, one_device=ref["grad_norms"][0],
                         ratio=norm / ref["grad_norms"][0],
                         param_diff=max_differences(r, ref)["param"]))
    return rows
