"""Rank-side workers for test_pp_zero_bubble.py's planted bugs (ranks import them by name).
Each plants its bug on this run's own objects, never on a class: the ranks' processes
are reused by later launches."""
from parlab.pipeline_parallel import Action, PPRecipe
from parlab.runs import train


def planted(run, bug: str):
    """``train_worker(run)`` with one bug: "w_skipped" -- micro-batch 0's W on chunk 0
    computes nothing (its weight gradients never arrive); "w_dropped" -- the executor's
    list lacks that W (its activations stay behind); "twins_apart" -- DualPipe's two
    copies of a stage are not summed."""
    recipe = PPRecipe(run)
    ex, lost = recipe.executor, Action("W", 0, 0)
    if bug == "w_skipped":
        ex.join = False  # that W runs on its own, even right after its B
        weight = ex.compute.weight
        ex.compute.weight = lambda a, s, stash: None if a == lost else weight(a, s, stash)
    elif bug == "w_dropped":
        ex.actions = [a for a in ex.actions if a != lost]
    elif bug == "twins_apart":  # DualPipe: each copy of a stage steps on its own direction's
        recipe.twins = None     # gradient only
    else:
        raise ValueError(f"bug={bug!r}")
    return train(recipe)
