"""How long a save stops training: sync ``dcp.save`` against ``dcp.async_save``, one rank's
side (checkpoint.py says what each does). The state is torch's FSDP2 model (DTensors) and
its AdamW after one step (so the moments exist); saves alternate sync / async, the order
flipping each repeat; while an async save writes, the rank trains one step, which is the
point of saving in the background. FSDP2, not our FullyShard: on torch 2.13 the async
stager copies DTensors but fails on a ShardedTensor ("torch function 'data_ptr' ... not
supported for ShardedTensor"), which our adapter (dcp_state.py) builds."""

from __future__ import annotations

import os
import time

import torch.distributed as dist

from parlab.data import local_batch
from parlab.model import GPT, GPTConfig
from parlab.checkpoint import dcp as checkpoint, state as dcp_state


def _step(model, opt, config: GPTConfig, step: int, batch_size: int) -> None:
    rank, dp = dist.get_rank(), dist.get_world_size()
    x, y = local_batch(step, batch_size, config.seq_len, config.vocab_size, rank, dp)
    _, loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def stall_rank(config: GPTConfig, directory: str, repeats: int = 3, batch_size: int = 4) -> dict:
    """{"sync": [blocked s], "async": [blocked s], "async_total": [s until written],
    "step": [s of a training step alone], "files": {mode: {rank: bytes}}, "params": n,
    "writes": {mode: [{"on_training_thread": bool, "before_return": bool}]}} (who_writes:
    which thread wrote this rank's files, and whether they were written when save returned)."""
    from parlab.zero.peers import torch_peer
    gpt = GPT(config, 0)
    n_params = sum(p.numel() for p in gpt.parameters())
    peer = torch_peer("fsdp2", gpt, None, lr=1e-3)
    fs, opt = peer.model, peer.optimizer
    group = checkpoint.ckpt_group()
    _step(fs, opt, config, 0, batch_size)
    out = {"sync": [], "async": [], "async_total": [], "step": [], "files": {},
           "writes": {"sync": [], "async": []}}
    k = 1
    for i in range(repeats):
        for mode in (("sync", "async") if i % 2 == 0 else ("async", "sync")):
            model_sd, optim_sd = dcp_state.torch_state(gpt, opt)
            path = os.path.join(directory, f"{mode}_{i}")
            writer = checkpoint.who_writes(path)
            dist.barrier()
            t0 = time.perf_counter()
            blocked, future = checkpoint.save({"model": model_sd, "optim": optim_sd,
                                               "train": checkpoint.train_state(k)},
                                              path, mode, group, writer)
            returned = time.perf_counter()
            if future is not None:
                _step(fs, opt, config, k, batch_size)  # training goes on meanwhile
                k += 1
                future.result()
                out["async_total"].append(time.perf_counter() - t0)
            out[mode].append(blocked)
            out["writes"][mode] += [{"on_training_thread": mine, "before_return": end <= returned}
                                    for mine, end in writer.writes]
            dist.barrier()
            if dist.get_rank() == 0:
                out["files"][mode] = checkpoint.bytes_per_rank(path)
        dist.barrier()
        t0 = time.perf_counter()
        _step(fs, opt, config, k, batch_size)
        k += 1
        out["step"].append(time.perf_counter() - t0)
    out["params"] = n_params
    return out
