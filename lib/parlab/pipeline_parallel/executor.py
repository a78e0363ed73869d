"""One executor for any pipeline schedule (Huang et al. 2019, "GPipe", §2.2).

The executor takes a schedule as data: every rank's ordered list of actions and the
placement of the stages (``placement.py``: round-robin, ZB-V's V, DualPipe's two
directions). A named schedule is only a function that returns such lists
(``schedules.make_schedule``); a learner's own lists run the same way. The executor
walks this rank's list, and every message is implied by the actions: F receives its
input from the previous stage and sends its output on; B receives the output gradient
and sends the input gradient back; W (zero-bubble schedules) needs no message.

Sends never block and every message has its own tag, so a rank only ever waits for
data it really needs: any schedule whose order respects the data dependencies runs
without deadlock -- exactly what the simulator checks. On gloo, receives are
posted a few actions ahead (``LOOKAHEAD``), as torch's pipelining posts each one when its
sender's op is scheduled: a message then travels while this rank still computes, instead
of starting its trip only when the op that needs it asks (gloo moves a message once its
receive is posted). On NCCL each receive is posted when its op begins (see LOOKAHEAD).

What an op computes is not decided here: the runner passes a compute object
(``compute.RealCompute`` or ``compute.EmulatedCompute``). Ranks are the pipeline
group's own (0 .. p-1); the world's ranks appear only where torch asks for a peer.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm, mesh, trace
from .compute import Stash
from .placement import Action, Placement, check_actions


# Actions ahead whose messages are received in advance (one buffer each), on gloo only:
# gloo matches a message to its receive by tag, so a receive posted early waits beside the
# rank's sends. NCCL runs a pair's sends and receives in the order they were posted, on one
# stream, so an early receive would hold back this rank's send behind it -- a deadlock when
# the peer needs that send before it can produce what we wait for.
LOOKAHEAD = 4


class PipelineExecutor:
    """This rank's part of a pipeline over ``group`` (default: the world), step after
    step. ``actions``: every rank's ordered list of ``Action``s, ``placement``: where the
    stages live (both checked together by ``placement.check_actions``: each op once, in
    an order that cannot deadlock); ``compute``: what an op computes; ``shape``: one
    micro-batch's activation, (B/m, T, d_model)."""

    def __init__(self, actions: list[list[Action]], placement: Placement, compute, shape,
                 group=None):
        self.group = group  # the stage, not the world rank
        self.rank = dist.get_rank(group)
        if dist.get_world_size(group) != placement.p:
            raise ValueError(f"a placement over p={placement.p} ranks needs a group of "
                             f"{placement.p}, got {dist.get_world_size(group)}")
        check_actions(actions, placement)
        self.where = placement
        self.p = placement.p
        self.n_stages = placement.n_stages
        self.compute = compute
        self.shape = shape
        self.actions = list(actions[self.rank])
        self.split_backward = any(a.op == "W" for acts in actions for a in acts)
        # A W right after its own B moves nothing: run the two as one backward where the
        # compute can (``RealCompute.joins_b_w``) -- splitting them would only cost more
        self.join = getattr(compute, "joins_b_w", False)
        self.stash: dict[tuple, Stash] = {}   # (micro-batch, chunk) -> what F kept
        self.local: dict[int, torch.Tensor] = {}  # messages to a chunk on this rank (p = 1)
        self.pending: list = []               # (send request, its tensor)
        self.posted: dict = {}                # tag -> (receive request, its buffer)
        self.lookahead = LOOKAHEAD if dist.get_backend(group) == "gloo" else 0
        # the message each of this rank's actions waits for: (src, dst, mb), or None
        self.needs = [self._message_for(a) for a in self.actions]
        self.peak = 0       # most stashes held at once, and their bytes
        self.peak_bytes = 0
        self.device = comm.device(group)      # where received messages land

    def step(self, inputs: list, targets: list) -> float:
        """Run this rank's actions once over the micro-batches ``inputs`` / ``targets``;
        returns the summed loss of the micro-batches this rank ends (0 elsewhere). The
        caller's trace tags (the step) mark every event."""
        self.inputs = inputs
        self.targets = targets
        self.loss = 0.0
        acts = self.actions
        for i, a in enumerate(acts):
            self.post_receives(i)
            if a.op == "W" and i and self.join and acts[i - 1] == Action("B", a.mb, a.chunk):
                continue  # already done with its B
            if a.op == "B" and self.join and acts[i + 1:i + 2] == [Action("W", a.mb, a.chunk)]:
                self.backward(a, whole=True)
                continue
            {"F": self.forward, "B": self.backward, "W": self.weight}[a.op](a)
        for work, _ in self.pending:  # each tensor stays alive until its send is done
            work.wait()
        self.pending.clear()
        if self.stash or self.local or self.posted:
            raise RuntimeError(f"rank {self.rank}: activations left over after the step")
        return self.loss

    # --- the three ops: receive what the op needs, compute, send what it makes ----------
    def forward(self, a):
        s = self.stage(a)
        inp = self.inputs[a.mb] if s == 0 else self.recv(s - 1, s, a.mb)
        with trace.span("F", mb=a.mb, chunk=a.chunk, stage=s):
            out = self.compute.forward(a, s, inp, self.targets[a.mb])
        self.keep(a, Stash(inp, out, nbytes=self.compute.kept_bytes(a)))
        if s < self.n_stages - 1:
            self.send(out, s, s + 1, a.mb)
        else:
            self.loss += out.item()

    def backward(self, a, whole: bool = False):
        """B; ``whole``: B and its W at once (one backward, traced as B)."""
        s = self.stage(a)
        grad = None if s == self.n_stages - 1 else self.recv(s + 1, s, a.mb)
        stash = self.stash[a.mb, a.chunk]
        with trace.span("B", mb=a.mb, chunk=a.chunk, stage=s):
            input_grad = self.compute.backward(a, s, stash, grad, whole)
        if self.split_backward and not whole:  # W still needs the graph and the output gradient
            stash.output_grad = grad
        else:
            del self.stash[a.mb, a.chunk]
        if whole:  # the W is in the B's span; its own, empty, keeps the list's order in the trace
            with trace.span("W", mb=a.mb, chunk=a.chunk, stage=s, joined=True):
                pass
        if s > 0:
            self.send(input_grad, s, s - 1, a.mb)

    def weight(self, a):
        s = self.stage(a)
        stash = self.stash.pop((a.mb, a.chunk))
        with trace.span("W", mb=a.mb, chunk=a.chunk, stage=s):
            self.compute.weight(a, s, stash)

    def stage(self, a) -> int:
        return self.where.stage(self.rank, a.chunk, a.mb)

    def keep(self, a, stash: Stash) -> None:
        self.stash[a.mb, a.chunk] = stash
        self.peak = max(self.peak, len(self.stash))
        self.peak_bytes = max(self.peak_bytes, sum(h.nbytes for h in self.stash.values()))

    # --- messages between virtual stages: non-blocking sends, one tag per message -------
    def tag(self, src: int, dst: int, mb: int) -> int:
        # activation src -> src+1 and gradient src+1 -> src share their boundary
        return 2 * (mb * self.n_stages + min(src, dst)) + int(dst < src)

    def send(self, t, src: int, dst: int, mb: int) -> None:
        peer = self.where.holder(dst, mb)[0]
        tag = self.tag(src, dst, mb)
        t = t.detach().contiguous()
        if peer == self.rank:  # the next chunk is on this rank (p = 1, or the V's turn)
            self.local[tag] = t
            return
        with trace.span("send grad" if dst < src else "send act", kind="comm", mb=mb,
                        peer=peer, bytes_sent=t.numel() * t.element_size()):
            work = dist.isend(t, mesh.global_rank(self.group, peer), group=self.group, tag=tag)
            self.pending.append((work, t))

    def recv(self, src: int, dst: int, mb: int) -> torch.Tensor:
        peer = self.where.holder(src, mb)[0]
        tag = self.tag(src, dst, mb)
        if peer == self.rank:
            return self.local.pop(tag)
        if tag not in self.posted:  # (every message an action needs was posted ahead)
            self._post(src, dst, mb)
        work, buf = self.posted.pop(tag)
        with trace.span("recv grad" if dst < src else "recv act", kind="wait", mb=mb, peer=peer,
                        bytes_recv=buf.numel() * buf.element_size()):
            work.wait()
        return buf

    def post_receives(self, i: int) -> None:
        """Post the receives of actions i .. i + lookahead - 1 not posted yet."""
        for need in self.needs[i:i + self.lookahead]:
            if need is not None and self.tag(*need) not in self.posted:
                self._post(*need)

    def _post(self, src: int, dst: int, mb: int) -> None:
        peer = self.where.holder(src, mb)[0]
        tag = self.tag(src, dst, mb)
        buf = torch.empty(self.shape, device=self.device)
        work = dist.irecv(buf, mesh.global_rank(self.group, peer), group=self.group, tag=tag)
        self.posted[tag] = (work, buf)

    def _message_for(self, a) -> tuple | None:
        """(src, dst, mb) of the message ``a`` waits for from another rank, or None: an F
        gets its input from the stage before, a B its output gradient from the stage after."""
        s = self.stage(a)
        if a.op == "F" and s > 0:
            src = s - 1
        elif a.op == "B" and s < self.n_stages - 1:
            src = s + 1
        else:
            return None
        return None if self.where.holder(src, a.mb)[0] == self.rank else (src, s, a.mb)
