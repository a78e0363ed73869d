"""Expert parallelism for Mixture-of-Experts layers (GShard, Lepikhin et al. 2020;
Switch Transformers, Fedus et al. 2021), composed with data parallelism. Read in this
order (the single-device MoE layer itself is ``parlab.moe``):

  router.py    the global counts every rank needs for capacity and the aux loss
  dispatch.py  the counts exchange, dispatch and combine all-to-alls (autograd)
  layers.py    EPMoE.from_moe: any MoE layer with this rank's experts only (from_block:
               another library's MoE block, described); apply_expert_parallel(model,
               group, ep_group) swaps every MoE layer and returns their names
  groups.py    the EP and expert-data-parallel groups, gradient averaging
  runner.py    EPRun and run(): the lab's run convention
  variants.py  DeepSeekMoE's shared + fine-grained experts, expert choice, dropless
  peers.py     a dense baseline (every rank every expert) and PyTorch's autograd
               all-to-all, on the same model (EPRun(peer=...))
"""

from . import dispatch, variants  # modules: dispatch.dispatch / combine; variants.deepseek_moe
from .layers import EPMoE, apply_expert_parallel, expert_parameters, set_counts_group
from .groups import make_groups, sync_grads
from .router import global_counts_hook
from .runner import EPRecipe, EPRun, collect, run, train_worker

__all__ = ["dispatch", "variants", "global_counts_hook", "EPMoE", "apply_expert_parallel",
           "expert_parameters",
           "set_counts_group", "make_groups", "sync_grads", "EPRecipe", "EPRun", "run",
           "train_worker", "collect"]
