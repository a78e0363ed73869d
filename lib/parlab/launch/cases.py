"""One small run of every strategy, each against the single-device reference: what the
dry-run test (tests/parlab/launch/test_dry_run.py) runs on the CPU and what
tools/gpu_all.py runs with CUDA tensors, several ranks sharing one GPU.

    for name, run_fn, run, world_size in cases():
        result = run_fn(run, world_size)      # inside on_device("dry-run") or ("cuda")
        compare(result, reference(run))       # {"loss", "grad", "param"}, within TOL
"""

from __future__ import annotations

from ..model import GPTConfig

TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}  # fp32, as the strategies' own tests
STEPS, BATCH = 3, 8
CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
DEEP = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4)  # 4 stages
MOE = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2, n_experts=4,
                top_k=2, capacity_factor=1.25)


def cases(full: bool = False) -> list[tuple]:
    """(name, the strategy's ``run``, its run, world size). ``full``: torch's peers and
    more variants too (the GPU script); else one or two per strategy (CI)."""
    from .. import context_parallel as cp
    from .. import data_parallel as dp
    from .. import expert_parallel as ep
    from .. import pipeline_parallel as pp
    from .. import tensor_parallel as tp
    from .. import zero
    common = {"steps": STEPS, "batch_size": BATCH}
    out = [("DP bucketed", dp.run, dp.DPRun(CFG, variant="bucketed", **common), 2),
           ("ZeRO-2", zero.run, zero.ZeroRun(CFG, zero_stage=2, **common), 2),
           ("ZeRO-3", zero.run, zero.ZeroRun(CFG, zero_stage=3, **common), 2),
           ("TP", tp.run, tp.TPRun(CFG, **common), 2),
           ("PP 1F1B", pp.run, pp.PPRun(CFG, schedule="1f1b", p=2, micro_batches=4, **common), 2),
           ("EP", ep.run, ep.EPRun(MOE, **common), 2),
           ("CP ring zigzag", cp.run, cp.CPRun(CFG, attention="ring", **common), 2)]
    if full:
        out += [("DP naive", dp.run, dp.DPRun(CFG, variant="naive", **common), 4),
                ("DP torch DDP", dp.run, dp.DPRun(CFG, variant="ddp", **common), 2),
                ("ZeRO-1", zero.run, zero.ZeroRun(CFG, zero_stage=1, **common), 4),
                ("ZeRO-3 4 ranks", zero.run, zero.ZeroRun(CFG, zero_stage=3, **common), 4),
                ("FSDP2 (torch)", zero.run, zero.ZeroRun(CFG, zero_stage="fsdp2", **common), 2),
                ("TP sequence parallel", tp.run, tp.TPRun(CFG, sequence_parallel=True, **common), 2),
                ("TP DTensor (torch)", tp.run, tp.TPRun(CFG, peer="dtensor", **common), 2),
                ("PP interleaved", pp.run, pp.PPRun(DEEP, schedule="interleaved", p=2, v=2,
                                                    micro_batches=4, **common), 2),
                ("PP torch pipelining", pp.run, pp.PPRun(CFG, peer="pipelining", p=2,
                                                         micro_batches=4, **common), 2),
                ("PP ZB-V", pp.run, pp.PPRun(DEEP, schedule="zb-v", p=2, v=2, micro_batches=4,
                                             **common), 2),
                ("PP DualPipeV", pp.run, pp.PPRun(DEEP, schedule="dualpipev", p=2, v=2,
                                                  micro_batches=4, **common), 2),
                ("EP 4 ranks", ep.run, ep.EPRun(MOE, **common), 4),
                ("CP Ulysses", cp.run, cp.CPRun(CFG, attention="ulysses", **common), 2)]
    return out


_refs: dict = {}


def reference(run) -> dict:
    """``reference_train`` of ``run``'s model and data, on one device (the CPU), kept."""
    from ..model import reference_train
    key = (repr(run.config), run.steps, run.batch_size)
    if key not in _refs:
        _refs[key] = reference_train(run.config, run.steps, run.batch_size)
    return _refs[key]


def compare(result, ref) -> dict:
    """{"loss", "grad", "param"}: the largest differences from ``ref``; "ok": all within TOL."""
    from ..model import max_differences
    diff = max_differences(result, ref)
    return {**diff, "ok": all(diff[k] < TOL[k] for k in TOL)}
