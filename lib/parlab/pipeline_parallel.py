"""Pipeline parallelism: the model cut into stages, and one executor for any schedule.

The reference GPT (``parlab.model``) is cut by layers into ``p`` stages, one per
rank (``v`` chunks per rank for interleaved schedules); the first stage also holds
the embeddings, the last the final LayerNorm, ``lm_head`` and the loss. Micro-batch
activations go forward and their gradients backward with point-to-point messages
(Huang et al. 2019, "GPipe", §2.2).

Schedules are data (``parlab.pipeline_schedules``: GPipe, 1F1B, interleaved 1F1B,
ZB-H1, and ``simulate``, re-exported here). ``run`` executes any of them on real
ranks (``parlab.launch``), with the real model or with emulated compute (each op
sleeps a fixed time, real messages still flow), and traces every op: its timeline
has the same form as the simulator's.

Every message is implied by the actions: F receives its input from the previous
virtual stage and sends its output on; B receives the output gradient and sends
the input gradient back. Sends never block and every message has its own tag, so
a rank only ever waits for data it really needs: any schedule whose order respects
the data dependencies runs without deadlock -- exactly what the simulator checks.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.checkpoint import checkpoint as _checkpoint

from . import trace
from .cost import check_int
from .model import GPT, Block, GPTConfig, init_module_, loss_fn
from .pipeline_schedules import (SCHEDULES, Action, Timeline, bubble, dependency,  # noqa: F401
                                 make_schedule, op_durations, peak_in_flight, replay,
                                 simulate, validate)


# ----------------------------------------------------------------------------- stages

def split_layers(n_layers: int, n_stages: int) -> list[range]:
    """Blocks of each virtual stage, balanced: sizes differ by at most one, the
    larger stages first (the last stage also carries the head and the loss)."""
    base, extra = divmod(n_layers, n_stages)
    bounds = [0]
    for s in range(n_stages):
        bounds.append(bounds[-1] + base + (s < extra))
    return [range(a, b) for a, b in zip(bounds, bounds[1:])]


class Stage(nn.Module):
    """Blocks ``layers`` of the reference GPT; with the embeddings if ``first``, with
    ln_f + lm_head if ``last``. Parameter names are the reference's (``blocks.2.ln1.
    weight``...), so ``init_module_`` gives the reference's initial values and the
    stages' state_dicts merge into the reference's."""

    def __init__(self, config: GPTConfig, layers: range, first: bool, last: bool,
                 seed: int = 0, checkpoint: bool = False):
        super().__init__()
        self.config, self.first, self.last, self.checkpoint = config, first, last, checkpoint
        c = config
        with torch.device("meta"):
            if first:
                self.wte = nn.Embedding(c.vocab_size, c.d_model)
                self.wpe = nn.Embedding(c.seq_len, c.d_model)
            self.blocks = nn.ModuleDict({str(i): Block(c) for i in layers})
            if last:
                self.ln_f = nn.LayerNorm(c.d_model, bias=c.bias)
                self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.to_empty(device="cpu")
        init_module_(self, "", seed, c.n_layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.first:
            x = GPT.embed(self, x)  # the reference's own code: token ids -> residual stream
        for block in self.blocks.values():
            # Activation checkpointing keeps only each block's input and recomputes
            # the block during backward (Chen et al. 2016, "Training deep nets with
            # sublinear memory cost").
            x = _checkpoint(block, x, use_reentrant=False) if self.checkpoint else block(x)
        return GPT.head(self, x) if self.last else x


def build_stages(config: GPTConfig, p: int, rank: int, v: int = 1, seed: int = 0,
                 checkpoint: bool = False) -> list[Stage]:
    """The v model chunks of ``rank``: chunk c is virtual stage c * p + rank."""
    layers = split_layers(config.n_layers, p * v)
    return [Stage(config, layers[c * p + rank], c * p + rank == 0, c * p + rank == p * v - 1,
                  seed, checkpoint) for c in range(v)]


# ----------------------------------------------------------------------------- executor

class _Rank:
    """One rank executing its action list, step after step."""

    def __init__(self, schedule, p, m, v, config, batch_size, compute, durations, seed,
                 checkpoint):
        self.rank, self.p, self.m, self.n_stages = dist.get_rank(), p, m, p * v
        self.actions = make_schedule(schedule, p, m, v)[self.rank]
        self.zero_bubble = any(a.op == "W" for a in self.actions)
        self.shape = (batch_size // m, config.seq_len, config.d_model)  # one activation
        self.real, self.durations = compute == "real", durations
        self.stages = build_stages(config, p, self.rank, v, seed, checkpoint) if self.real else []
        self.params = [q for st in self.stages for q in st.parameters()]
        self._param_storage = {q.untyped_storage().data_ptr() for q in self.params}
        self._counting = None  # storage -> bytes kept for backward by the running forward
        self.nbytes = {}  # (micro-batch, chunk) -> bytes its forward keeps for backward
        for st in self.stages:  # a checkpointed block keeps its input: count it too
            for block in st.blocks.values():
                block.register_forward_pre_hook(lambda mod, args: self._keep(args[0]))
        self.stash, self.local, self.pending = {}, {}, []
        self.peak = self.peak_bytes = 0

    def step(self, step, x, y):
        self.x, self.y, self.loss, self.step_no = x, y, 0.0, step
        for a in self.actions:
            {"F": self.forward, "B": self.backward, "W": self.weight}[a.op](a, step)
        for work, _ in self.pending:  # each tensor stays alive until its send is done
            work.wait()
        self.pending.clear()
        assert not self.stash and not self.local, "activations left over after the step"

    # --- messages between virtual stages: non-blocking sends, one tag per message
    def _tag(self, src, dst, mb):
        # activation src -> src+1 and gradient src+1 -> src share their boundary
        return 2 * (mb * self.n_stages + min(src, dst)) + int(dst < src)

    def send(self, t, src, dst, mb):
        peer, tag, t = dst % self.p, self._tag(src, dst, mb), t.detach().contiguous()
        if peer == self.rank:  # the next chunk is on this rank (p = 1)
            self.local[tag] = t
            return
        with trace.span("send grad" if dst < src else "send act", kind="comm", mb=mb,
                        peer=peer, step=self.step_no, bytes_sent=t.numel() * t.element_size()):
            self.pending.append((dist.isend(t, peer, tag=tag), t))

    def recv(self, src, dst, mb):
        peer, tag = src % self.p, self._tag(src, dst, mb)
        if peer == self.rank:
            return self.local.pop(tag)
        buf = torch.empty(self.shape)
        with trace.span("recv grad" if dst < src else "recv act", kind="wait", mb=mb,
                        peer=peer, step=self.step_no, bytes_recv=buf.numel() * buf.element_size()):
            dist.irecv(buf, peer, tag=tag).wait()
        return buf

    # --- the three ops: receive what the op needs, compute (traced), send what it makes
    def forward(self, a, step):
        s = a.chunk * self.p + self.rank
        inp = self.x[a.mb] if s == 0 else self.recv(s - 1, s, a.mb)
        with trace.span("F", mb=a.mb, chunk=a.chunk, stage=s, step=step):
            out, nbytes = (self._forward(a, s, inp) if self.real else
                           (self._emulate("F", a.mb, s, inp if s > 0 else None), 0))
        self.stash[a.mb, a.chunk] = [inp, out, None, nbytes]
        self.peak = max(self.peak, len(self.stash))
        self.peak_bytes = max(self.peak_bytes, sum(e[3] for e in self.stash.values()))
        if s < self.n_stages - 1:
            self.send(out, s, s + 1, a.mb)
        elif self.real:
            self.loss += out.item()

    def backward(self, a, step):
        s = a.chunk * self.p + self.rank
        grad = None if s == self.n_stages - 1 else self.recv(s + 1, s, a.mb)
        held = self.stash[a.mb, a.chunk]
        inp, out = held[:2]
        with trace.span("B", mb=a.mb, chunk=a.chunk, stage=s, step=step):
            if not self.real:
                g = self._emulate("B", a.mb, s, grad)
            elif self.zero_bubble:  # the input gradient only, keeping the graph for W
                g = torch.autograd.grad(out, inp, grad, retain_graph=True)[0] if s > 0 else None
            else:
                torch.autograd.backward(out, grad)
                g = inp.grad
        if self.zero_bubble:
            held[2] = grad
        else:
            del self.stash[a.mb, a.chunk]
        if s > 0:
            self.send(g, s, s - 1, a.mb)

    def weight(self, a, step):
        s = a.chunk * self.p + self.rank
        _, out, grad, _ = self.stash.pop((a.mb, a.chunk))
        with trace.span("W", mb=a.mb, chunk=a.chunk, stage=s, step=step):
            if not self.real:
                self._emulate("W", a.mb, s, None)
            else:  # weight gradients, through the graph that B kept
                torch.autograd.backward(out, grad, inputs=list(self.stages[a.chunk].parameters()))

    def _forward(self, a, s, inp):
        """The stage's forward (+ the loss, scaled by 1/m, on the last stage), and the
        bytes of the distinct storages it keeps for backward: counted in the first
        step (hooks cost time), the same in every later one."""
        if s > 0:
            inp.requires_grad_()
        count = (a.mb, a.chunk) not in self.nbytes
        self._counting = {} if count else None
        with (torch.autograd.graph.saved_tensors_hooks(self._keep, lambda t: t) if count
              else contextlib.nullcontext()):
            out = self.stages[a.chunk](inp)
            if s == self.n_stages - 1:
                out = loss_fn(out, self.y[a.mb]) / self.m  # mean over the global batch
        if count:
            for t in (inp, out):
                self._keep(t)
            self.nbytes[a.mb, a.chunk], self._counting = sum(self._counting.values()), None
        return out, self.nbytes[a.mb, a.chunk]

    def _keep(self, t):
        if self._counting is not None and isinstance(t, torch.Tensor):
            ptr = t.untyped_storage().data_ptr()
            if ptr not in self._param_storage:  # weights are not activations
                self._counting[ptr] = t.untyped_storage().nbytes()
        return t

    def _emulate(self, op, mb, s, received):
        """Stand-in for a real op that lasts exactly durations[op]: check that the
        message came from the right op, and make the one this op sends on."""
        deadline = time.perf_counter() + self.durations[op]
        if received is not None:
            src = s - 1 if op == "F" else s + 1
            assert received[0, 0, :2].tolist() == [mb, src], f"{op}{mb}: wrong message"
        out = torch.zeros(self.shape)
        out[0, 0, :2] = torch.tensor([mb, s])
        time.sleep(max(0.0, deadline - time.perf_counter()))
        return out


def pipeline_worker(schedule, p, m, v, config, steps, batch_size, lr, seed, data_seed,
                    compute, t_fwd, t_bwd, checkpoint) -> dict:
    """One rank of ``run``: execute this rank's action list for ``steps`` steps."""
    from .data import get_batch

    torch.set_num_threads(1)
    me = _Rank(schedule, p, m, v, config, batch_size, compute,
               op_durations(schedule, v, t_fwd, t_bwd), seed, checkpoint)
    opt = (torch.optim.AdamW(me.params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
           if me.real else None)
    losses, times, grads = [], [], {}
    trace.start()
    for step in range(steps):
        x, y = get_batch(step, batch_size, config.seq_len, config.vocab_size, seed=data_seed)
        # micro-batch i = rows [i B/m, (i+1) B/m), copied so it owns its memory
        x, y = [t.clone() for t in x.chunk(m)], [t.clone() for t in y.chunk(m)]
        dist.barrier()  # every rank starts the step together, as in the simulator
        t0 = trace.now()
        me.step(step, x, y)
        if me.real:
            if step == steps - 1:
                grads = {n: q.grad.clone() for st in me.stages for n, q in st.named_parameters()}
            with trace.span("AdamW", step=step):
                opt.step()
                opt.zero_grad(set_to_none=True)
        times.append((t0, trace.now()))
        losses.append(me.loss)
    owns_loss = me.real and (p * v - 1) % p == dist.get_rank()
    return dict(losses=losses if owns_loss else None, events=trace.stop(), times=times,
                state_dict={n: t.detach().clone() for st in me.stages
                            for n, t in st.state_dict().items()},
                grads=grads, stash_peak=me.peak, stash_peak_bytes=me.peak_bytes)


@dataclass
class RunResult:
    """What ``run`` measured; ``timeline(step)`` gives one step's ops and bubble."""
    schedule: str
    p: int
    m: int
    v: int
    losses: list[float]          # per step: mean loss over the global batch (real compute)
    state_dict: dict             # final parameters, all stages merged (real compute)
    grads: dict                  # gradients of the last step, all stages merged
    events: list[dict]           # every traced event of every rank (F/B/W, sends, waits)
    step_times: list[float]      # per step: first rank's start to last rank's end (s)
    stash_peak: list[int]        # per rank: most (micro-batch, chunk) activations held
    stash_peak_bytes: list[int]  # per rank: most bytes of them held at once (real compute)

    def timeline(self, step: int = -1) -> Timeline:
        """The F/B/W ops of one step (default: the last) and its measured bubble."""
        step = step % len(self.step_times)
        ops = [e for e in self.events if e["name"] in ("F", "B", "W")
               and e["meta"].get("step") == step]
        fraction, ratio, makespan = bubble(ops, self.p)
        return Timeline(ops, self.p, fraction, ratio, makespan, list(self.stash_peak))

    @property
    def bubble_fraction(self) -> float:
        return self.timeline().bubble_fraction


def run(schedule: str, p: int, m: int, v: int = 1, *, config: GPTConfig | None = None,
        steps: int = 1, batch_size: int | None = None, lr: float = 1e-3, seed: int = 0,
        data_seed: int = 0, compute: str = "real", t_fwd: float = 0.02, t_bwd: float = 0.04,
        checkpoint: bool = False, timeout: float = 120.0) -> RunResult:
    """Train ``steps`` steps of the reference GPT on ``p`` CPU ranks with ``schedule``.

    ``compute="real"`` runs the model (AdamW(lr, betas=(0.9, 0.95)), as
    ``model.reference_train``); ``"emulated"`` replaces each F / B / W by a sleep of
    its ``op_durations`` (t_fwd, t_bwd: one micro-batch through all of a rank's
    layers) but still sends activation-sized messages, so the dependencies are real
    and the timeline shows the schedule's shape even with more ranks than cores.
    ``batch_size`` defaults to m (one sequence per micro-batch)."""
    config = config or GPTConfig()
    batch_size = m if batch_size is None else batch_size
    if compute not in ("real", "emulated"):
        raise ValueError(f"compute={compute!r} must be 'real' or 'emulated'")
    # emulated ops have no layers, so only real compute needs p * v <= n_layers
    validate(schedule, p, m, v, config.n_layers if compute == "real" else None, batch_size)
    check_int("steps", steps)
    if checkpoint and compute != "real":
        raise ValueError("checkpoint=True needs compute='real' (emulated ops keep nothing)")
    if not (t_fwd > 0 and t_bwd > 0):
        raise ValueError(f"t_fwd={t_fwd} and t_bwd={t_bwd} must be > 0 seconds")
    from .launch import launch
    out = launch(pipeline_worker, p, schedule, p, m, v, config, steps, batch_size, lr, seed,
                 data_seed, compute, t_fwd, t_bwd, checkpoint, timeout=timeout, backend="gloo")
    merged = lambda key: {k: t for r in out for k, t in r[key].items()}  # noqa: E731
    return RunResult(
        schedule, p, m, v, losses=next((r["losses"] for r in out if r["losses"]), []),
        state_dict=merged("state_dict"), grads=merged("grads"),
        events=[e for r in out for e in r["events"]],
        step_times=[max(r["times"][s][1] for r in out) - min(r["times"][s][0] for r in out)
                    for s in range(steps)],
        stash_peak=[r["stash_peak"] for r in out],
        stash_peak_bytes=[r["stash_peak_bytes"] for r in out])
