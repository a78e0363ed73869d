"""A training loop that stops, saves and resumes, on any layout: one rank's side.

``Layout("ours", dp)``: the lab's ``FullyShard`` (ZeRO-3) over dp ranks, its AdamW over the
shards; ``Layout("fsdp2", dp)``: torch's FSDP2 (``zero.peers.torch_peer``); ``Layout("one",
1)``: one device, the reference. Every layout trains the same model on the same global
batches: step s uses ``data.get_batch(s, ...)``, rank r its slice of rows. Dropout
(``GlobalDropout``) draws its mask for the *whole* global batch from torch's global RNG,
seeded alike on every rank, and keeps its rows: so the RNG is one replicated stream whose
state does not depend on the layout, and a run resumed on another layout draws the masks
the uninterrupted one would have -- if the RNG state was restored.

``train_rank(spec)`` runs steps ``start .. spec.steps - 1``: it starts from scratch, or
loads ``spec.resume_from`` (resharding to this layout); after step k-1 it saves when k is
in ``spec.save_at``. ``spec.planted`` restores wrongly on purpose (for the tests and the
notebook): "no_optimizer" (fresh AdamW states), "data_off_by_one" (next step + 1),
"no_rng" (the new process's RNG).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from parlab.data import local_batch
from parlab.model import GPT, GPTConfig, reference_optimizer
from parlab.checkpoint import dcp as checkpoint, state as dcp_state

KINDS = ("one", "ours", "fsdp2")
PLANTED = (None, "no_optimizer", "data_off_by_one", "no_rng")
RNG_SEED = 1234  # the replicated dropout stream's seed, the same on every rank


@dataclass(frozen=True)
class Layout:
    kind: str = "ours"
    dp: int = 1

    @property
    def label(self) -> str:
        return "one device" if self.kind == "one" else f"{self.kind} dp{self.dp}"


@dataclass(frozen=True)
class Spec:
    """One rank's job; see the module doc. ``resume_hook(train_state) -> next step``
    replaces the restore of the data position and RNG (the notebook's exercise)."""
    config: GPTConfig
    layout: Layout = field(default_factory=Layout)
    steps: int = 6
    batch_size: int = 8
    lr: float = 3e-3
    dropout: float = 0.1
    seed: int = 0
    directory: str | None = None
    save_at: tuple = ()
    resume_from: str | None = None
    planted: str | None = None
    kill: tuple | None = None   # (rank, step): that rank SIGKILLs itself before the step
    log: str | None = None      # rank 0 appends "step loss time" lines here (failover)


class GlobalDropout:
    """Dropout on the embeddings' output with a mask drawn for the global batch
    (B, T, d) from the global RNG, this rank keeping rows ``rows`` (see module doc)."""

    def __init__(self, p: float, batch_size: int, rows: slice):
        self.p, self.batch_size, self.rows = p, batch_size, rows

    def __call__(self, module, args, out):
        if self.p == 0 or not module.training:
            return out
        keep = torch.rand(self.batch_size, *out.shape[1:]) >= self.p
        return out * keep[self.rows].to(out.dtype) / (1 - self.p)


def _build(spec: Spec):
    """(model to call, optimizer, state-dict function, full-parameters function)."""
    lay, c = spec.layout, spec.config
    gpt = GPT(c, spec.seed)
    if lay.kind == "one":
        opt = reference_optimizer(gpt.parameters(), spec.lr)

        def states():
            dcp_state.init_adam_state(opt)
            return ({k: v for k, v in gpt.state_dict().items()},
                    {"state": {n: opt.state[p] for n, p in gpt.named_parameters()},
                     "param_groups": dcp_state._groups(opt, {p: n for n, p in gpt.named_parameters()})})
        return gpt, gpt, opt, states, lambda: {n: p.detach().clone() for n, p in gpt.named_parameters()}
    if lay.kind == "ours":
        from parlab.zero.fully_shard import FullyShard
        fs = FullyShard(gpt, None)
        opt = reference_optimizer(fs.parameters(), spec.lr)
        return gpt, fs, opt, lambda: dcp_state.fully_shard_state(fs, opt), \
            lambda: {k: v for k, v in fs.full_state_dict().items() if "." in k}
    from parlab.zero.peers import torch_peer
    peer = torch_peer("fsdp2", gpt, None, lr=spec.lr)
    model, opt = peer.model, peer.optimizer
    return gpt, model, opt, lambda: dcp_state.torch_state(gpt, opt), \
        lambda: {n: p.full_tensor().detach().clone() for n, p in gpt.named_parameters()}


def _restore(spec: Spec, gpt, opt, states, hook) -> int:
    """Load ``spec.resume_from`` into this layout; returns the next step."""
    model_sd, optim_sd = states()
    state = {"model": model_sd, "train": checkpoint.train_state(0)}
    if spec.planted != "no_optimizer":
        state["optim"] = optim_sd
    checkpoint.load(state, spec.resume_from)
    if spec.layout.kind == "fsdp2":
        dcp_state.set_torch_state(gpt, opt, state["model"],
                                  state.get("optim", dcp_state.torch_state(gpt, opt)[1]))
    elif spec.layout.kind == "one":
        gpt.load_state_dict(state["model"])
    if "optim" in state:
        dcp_state.restore_param_groups(opt, state["optim"]["param_groups"])
    if spec.planted == "no_optimizer":  # as if restored without it: a fresh AdamW
        opt.state.clear()
    if hook is not None:
        return int(hook(state["train"]))
    if spec.planted != "no_rng":
        torch.set_rng_state(state["train"]["rng"])
    return int(state["train"]["step"]) + (1 if spec.planted == "data_off_by_one" else 0)


def train_rank(spec: Spec, hook=None) -> dict:
    """One rank of ``spec`` (see the module doc): {"losses": {step: global mean loss},
    "params": full parameters at the end (rank 0), "saved": {step: path},
    "start": first step trained, "step_end": {step: time.time() at its end}}."""
    dp, rank = (dist.get_world_size(), dist.get_rank()) if spec.layout.kind != "one" else (1, 0)
    torch.manual_seed(RNG_SEED + spec.seed)  # the replicated stream, the same everywhere
    gpt, model, opt, states, full = _build(spec)
    b = spec.batch_size // dp
    gpt.wte.register_forward_hook(GlobalDropout(spec.dropout, spec.batch_size,
                                                slice(rank * b, (rank + 1) * b)))
    start = 0
    if spec.resume_from:
        torch.manual_seed(987654)  # a new process: whatever its RNG holds is not the run's
        start = _restore(spec, gpt, opt, states, hook)
    losses, saved, ends = {}, {}, {}
    c = spec.config
    for step in range(start, spec.steps):
        if spec.kill is not None and spec.kill == (rank, step):
            _die(spec)
        x, y = local_batch(step, spec.batch_size, c.seq_len, c.vocab_size, rank, dp)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        if dp > 1:
            dist.all_reduce(mean)
            mean /= dp
        losses[step] = float(mean)
        if step + 1 in spec.save_at:
            path = os.path.join(spec.directory, checkpoint.STEP_DIR.format(step + 1))
            model_sd, optim_sd = states()
            checkpoint.save({"model": model_sd, "optim": optim_sd,
                             "train": checkpoint.train_state(step + 1)}, path)
            saved[step + 1] = path
        ends[step] = time.time()
        if spec.log and rank == 0:
            with open(spec.log, "a") as f:
                f.write(f"{step} {losses[step]!r} {ends[step]!r} {start}\n")
    params = full()
    return {"losses": losses, "params": params if rank == 0 else None, "saved": saved,
            "start": start, "step_end": ends}


def _die(spec: Spec) -> None:
    """A worker's sudden death (a GPU falling off the bus): SIGKILL, no cleanup."""
    import signal
    if spec.log:
        with open(spec.log + ".kill", "w") as f:
            f.write(repr(time.time()))
    os.kill(os.getpid(), signal.SIGKILL)
