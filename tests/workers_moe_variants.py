"""Rank-side workers for tests/parlab/expert_parallel/test_moe_variants.py (ranks import them by name)."""
from parlab import moe
from parlab.expert_parallel import layers, train_worker


def _misaligned(experts, xs):
    """padded_mlp that cuts each group's rows from the wrong end of its padding."""
    m = max(x.size(0) for x in xs)
    ys = _SAVED["padded_mlp"](experts, [moe.F.pad(x, (0, 0, 0, m - x.size(0))) for x in xs])
    return [y[m - x.size(0):] for y, x in zip(ys, xs)]


def _local_choice(self, probs, logits):
    """expert choice over this rank's tokens only: capacity n_local c / E per rank."""
    hook, self.counts_hook = self.counts_hook, None
    try:
        return _SAVED["plan_expert_choice"](self, probs, logits)
    finally:
        self.counts_hook = hook


_SAVED = {"padded_mlp": moe.padded_mlp, "plan_expert_choice": moe.MoE.plan_expert_choice,
          "shared_output": moe.MoE.shared_output, "expert_parameters": layers.expert_parameters}
BUGS = {
    # the EP layer forgets the shared experts (only the routed output comes back)
    "shared_dropped": ("shared_output", layers.EPMoE, lambda self, x2: 0),
    # the shared output added again on the expert side: counted twice
    "shared_twice": ("shared_output", layers.EPMoE,
                     lambda self, x2: 2 * _SAVED["shared_output"](self, x2)),
    # the shared experts' gradients synced as a routed expert's (sum over replicas / W)
    "shared_as_expert": ("expert_parameters", layers,
                         lambda model: _SAVED["expert_parameters"](model) + [
                             p for m in model.modules() if isinstance(m, layers.EPMoE)
                             for p in m.shared.parameters()]),
    # each rank's experts choose among its own tokens, not the global batch's
    "local_choice": ("plan_expert_choice", layers.EPMoE, _local_choice),
    # the padded GEMM's outputs taken from the wrong rows of each group
    "padded_misaligned": ("padded_mlp", moe, _misaligned),
}


def buggy_runs(run, bugs):
    """``train_worker(run)`` once per planted bug (each restored after), in one launch."""
    out = []
    for bug in bugs:
        name, owner, fn = BUGS[bug]
        setattr(owner, name, fn)
        try:
            out.append(train_worker(run))
        finally:
            if owner is layers.EPMoE:
                delattr(owner, name)
            else:
                setattr(owner, name, _SAVED[name])
    return out
