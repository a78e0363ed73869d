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

import torch
import torch.distributed as dist

from .. import trace
from ..model import loss_fn
from .schedules import make_schedule
from .stages import build_stages


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
