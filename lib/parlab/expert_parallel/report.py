"""What ``python -m parlab ep`` prints: an expert-parallel run beside the single device
(losses), where the tokens went (per expert, dropped), and one layer's all-to-all bytes
beside ``cost.moe_all_to_all_bytes``."""

from __future__ import annotations

from .. import cost
from ..model import GPTConfig, reference_train
from .runner import EPRun, run


def _kib(n: float) -> str:
    return f"{n / 1024:.1f} KiB"


def ep_report(world: int, experts: int, top_k: int, capacity_factor, ep=None, steps: int = 3,
              batch_size: int = 8, lr: float = 3e-3, out=print) -> dict:
    """Run EPRun on ``world`` ranks and print the comparison; returns the RunResult."""
    cfg = GPTConfig(n_experts=experts, top_k=top_k, capacity_factor=capacity_factor)
    spec = EPRun(config=cfg, steps=steps, batch_size=batch_size, lr=lr, ep=ep)
    res = run(spec, world)
    ref = reference_train(cfg, steps, batch_size, lr=lr)
    ep_ = ep or world
    out(f"expert parallelism: {experts} experts top-{top_k}, capacity factor "
        f"{capacity_factor}, ep={ep_} x dp={world // ep_} on {world} ranks, "
        f"{cfg.n_layers} MoE layers")
    for i, (a, b) in enumerate(zip(res.losses, ref["losses"])):
        out(f"step {i:>3}  loss {a:.6f}  single device {b:.6f}  |diff| {abs(a - b):.1e}")
    layer = "blocks.0.moe"
    n_tokens = batch_size * cfg.seq_len
    for s in range(steps):
        stats = ref["moe"][s][layer]
        measured = sorted(t for r in res.ranks for t in r["dropped"][s][layer])
        same = "same as" if measured == sorted(stats["dropped"]) else "DIFFERENT from"
        out(f"step {s:>3}  {layer}: tokens per expert {stats['routed']}, capacity "
            f"{stats['capacity']}, dropped {len(measured)} of {n_tokens * top_k} assignments "
            f"({len(measured) / (n_tokens * top_k):.1%}), {same} the single device")
    tokens = n_tokens // world
    out(f"{layer}, step 0, payload all-to-all bytes sent per rank | cost.moe_all_to_all_bytes "
        f"(balanced routing, nothing dropped):")
    want = cost.moe_all_to_all_bytes(tokens, cfg.d_model, top_k, ep_, bytes_per_value=4)
    for r in res.ranks:
        per = r["a2a_bytes"][0][layer]
        out(f"  rank {r['rank']}: forward {_kib(per['forward'])}, backward "
            f"{_kib(per['backward'])} | {_kib(want['forward'])}, {_kib(want['backward'])}")
    return res
