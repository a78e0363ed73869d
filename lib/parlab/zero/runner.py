"""One ZeRO training run: check the arguments, run on ranks, gather the result."""

from __future__ import annotations

import torch.distributed as dist

from .. import trace
from ..data import local_batch
from ..model import GPTConfig
from ..validate import check_int
from .peers import PEERS, TorchPeer
from .stages import STAGES, ZeroDP


def _check(stage, world_size, batch_size, steps, config):
    if isinstance(stage, bool) or stage not in STAGES + PEERS:
        raise ValueError(f"stage={stage!r} must be one of {STAGES} (0 = plain DP) "
                         f"or a peer {PEERS}")
    check_int("world_size", world_size)
    check_int("batch_size", batch_size)
    if batch_size % world_size:
        raise ValueError(f"dp=world_size={world_size} must divide batch_size={batch_size} "
                         "(each rank trains on an equal slice of the global batch)")
    check_int("steps", steps)
    if not isinstance(config, GPTConfig):
        raise ValueError(f"config must be a GPTConfig, got {type(config).__name__}")


def make(stage, config: GPTConfig, lr=1e-3, seed=0, weight_decay=0.0):
    """This rank's trainer: ZeroDP for a stage 0-3, a torch peer for 'ddp' / 'fsdp2'."""
    if stage in PEERS:
        return TorchPeer(stage, config, lr, seed, weight_decay)
    return ZeroDP(config, stage, lr, seed, weight_decay)


def train_worker(stage, config, steps, batch_size, lr, seed, data_seed, weight_decay):
    """Rank side of :func:`run`."""
    trainer = make(stage, config, lr, seed, weight_decay)
    losses, comm_bytes, events = [], [], []
    for step in range(steps):
        x, y = local_batch(step, batch_size, config.seq_len, config.vocab_size,
                           dist.get_rank(), dist.get_world_size(), data_seed)
        trace.start()
        losses.append(trainer.train_step(x, y))
        events = trace.stop()
        comm_bytes.append(sum(e["bytes_sent"] for e in events if e["kind"] == "comm"))
    params, grads = trainer.full_state()
    out = {"losses": losses, "comm_bytes": comm_bytes, "events": events,
           "memory": getattr(trainer, "memory", {})}
    if dist.get_rank() == 0:
        out.update(params=params, grads=grads)
    return out


def run(stage, world_size: int, config: GPTConfig | None = None, steps: int = 3,
        batch_size: int = 8, lr: float = 1e-3, seed: int = 0, data_seed: int = 0,
        weight_decay: float = 0.0, timeout: float = 120.0) -> dict:
    """Train with ZeRO ``stage`` (0-3, or a peer 'ddp' / 'fsdp2') on ``world_size``
    ranks, exactly as ``model.reference_train`` does on one device.

    Returns {"losses": global mean loss per step, "state_dict" (parameters), "grads":
    full tensors after the last step -- reference_train's keys -- "memory": per-rank bytes held, "comm_bytes": per rank, per
    step, traced, "events": per rank, the last step's trace events}."""
    from ..launch import launch
    config = GPTConfig() if config is None else config
    _check(stage, world_size, batch_size, steps, config)
    res = launch(train_worker, world_size, stage, config, steps, batch_size, lr, seed,
                 data_seed, weight_decay, timeout=timeout)
    return {"losses": [sum(r["losses"][s] for r in res) / world_size for s in range(steps)],
            "state_dict": res[0]["params"], "grads": res[0]["grads"],
            "memory": [r["memory"] for r in res], "comm_bytes": [r["comm_bytes"] for r in res],
            "events": [r["events"] for r in res]}
