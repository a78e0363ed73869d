"""Which rank runs each stage: a schedule's *placement*, kept apart from its order.

A micro-batch goes through the model's stages in order; the placement says, for each
stage, which rank holds it and as which of that rank's local chunks. Everything that
moves a message (the simulator, the executor) asks the placement, so a schedule
whose stages are not dealt round-robin needs no code of its own:

  round-robin  chunk c of rank r is stage c * p + r (Narayanan et al. 2021a, §2.2.2;
               v = 1 is the plain pipeline)
  v            two chunks per rank in a V: chunk 0 of rank r is stage r (going down
               the ranks), chunk 1 is stage 2p - 1 - r (coming back up), so rank 0
               holds the first and the last stage (Qi et al., "Zero Bubble Pipeline
               Parallelism", arXiv v2, §6, ZB-V)
  dual         DualPipe's two directions (DeepSeek-AI, "DeepSeek-V3 Technical
               Report", §3.2.1): the first m/2 micro-batches enter at rank 0 and go
               through stage s on rank s (chunk 0), the others enter at rank p - 1 and
               go through stage s on rank p - 1 - s (chunk 1): every rank holds two
               copies' worth of stages, one per direction

Pure Python.
"""

from __future__ import annotations

from collections import namedtuple

PLACEMENTS = ("round-robin", "v", "dual")


class Action(namedtuple("Action", "op mb chunk")):
    """One compute op of a schedule: op in "F", "B", "W"; micro-batch; local chunk."""

    def __repr__(self):
        return f"{self.op}{self.mb}" + (f".{self.chunk}" if self.chunk else "")


class Placement:
    """Stages of each micro-batch's path and the (rank, chunk) that holds each one."""

    def __init__(self, kind: str, p: int, v: int = 1, m: int = 1):
        if kind not in PLACEMENTS:
            raise ValueError(f"placement={kind!r} must be one of {PLACEMENTS}")
        if kind in ("v", "dual") and v != 2:
            raise ValueError(f"placement {kind!r} has exactly v=2 chunks per rank, got v={v}")
        self.kind = kind
        self.p = p
        self.v = v
        self.m = m
        self.n_stages = p if kind == "dual" else p * v

    def direction(self, mb: int) -> int:
        """DualPipe: 0 for the micro-batches entering at rank 0, 1 for the others."""
        return int(self.kind == "dual" and mb >= self.m // 2)

    def holder(self, stage: int, mb: int = 0) -> tuple[int, int]:
        """(rank, chunk) that runs ``stage`` of micro-batch ``mb``."""
        p = self.p
        if self.kind == "round-robin":
            return stage % p, stage // p
        if self.kind == "v":
            return (stage, 0) if stage < p else (2 * p - 1 - stage, 1)
        return (stage, 0) if self.direction(mb) == 0 else (p - 1 - stage, 1)

    def stage(self, rank: int, chunk: int, mb: int | None = None) -> int:
        """The stage that chunk ``chunk`` of ``rank`` is on ``mb``'s path (None: the stage
        the chunk holds, whichever micro-batches pass it)."""
        p = self.p
        if self.kind == "round-robin":
            return chunk * p + rank
        if self.kind == "v":
            return rank if chunk == 0 else 2 * p - 1 - rank
        if mb is not None and chunk != self.direction(mb):
            raise ValueError(f"micro-batch {mb} goes in direction {self.direction(mb)}, "
                             f"not through chunk {chunk}")
        return rank if chunk == 0 else p - 1 - rank

    def chunks(self, rank: int, mb: int) -> list[int]:
        """The local chunks of ``rank`` that ``mb`` goes through."""
        return [self.direction(mb)] if self.kind == "dual" else list(range(self.v))

    def dependency(self, a, rank: int):
        """(op, micro-batch, stage) whose result ``a`` on ``rank`` waits for, or None.
        F waits for the previous stage's F; B for the next stage's B (the last stage
        for its own F: the loss); W for its own B."""
        s = self.stage(rank, a.chunk, a.mb)
        if a.op == "F":
            return ("F", a.mb, s - 1) if s > 0 else None
        if a.op == "B":
            return ("B", a.mb, s + 1) if s < self.n_stages - 1 else ("F", a.mb, s)
        return ("B", a.mb, s)


def check_actions(actions: list[list[Action]], where: Placement) -> None:
    """Raise ValueError unless ``actions`` is a schedule for ``where``: every rank runs
    each of its (micro-batch, chunk) ops once -- F, B and, if the schedule splits the
    backward anywhere, W -- its own F before B before W, and all ranks together can
    run to the end (no rank waits for an op that waits for it: a deadlock)."""
    p = where.p
    m = where.m
    if len(actions) != p:
        raise ValueError(f"a schedule for p={p} lists {p} ranks, got {len(actions)}")
    ops = "FBW" if any(a.op == "W" for acts in actions for a in acts) else "FB"
    for r, acts in enumerate(actions):
        want = {Action(op, mb, c) for mb in range(m) for c in where.chunks(r, mb) for op in ops}
        seen = set()
        for a in acts:
            if a not in want or a in seen:
                raise ValueError(f"rank {r}: {a!r} " + ("appears twice" if a in seen else
                                 "is not one of this rank's ops"))
            before = ops[ops.index(a.op) - 1] if a.op != "F" else None
            if before and Action(before, a.mb, a.chunk) not in seen:
                raise ValueError(f"rank {r}: {a!r} comes before {Action(before, a.mb, a.chunk)!r}")
            seen.add(a)
        if want - seen:
            raise ValueError(f"rank {r}: {sorted(want - seen)!r} missing")
    done = set()
    pos = [0] * p
    moved = True
    while moved:  # run every rank as far as its inputs allow
        moved = False
        for r in range(p):
            while pos[r] < len(actions[r]):
                a = actions[r][pos[r]]
                dep = where.dependency(a, r)
                if dep is not None and dep not in done:
                    break
                done.add((a.op, a.mb, where.stage(r, a.chunk, a.mb)))
                pos[r], moved = pos[r] + 1, True
    stuck = {r: actions[r][pos[r]] for r in range(p) if pos[r] < len(actions[r])}
    if stuck:
        raise ValueError(f"schedule deadlocks: ranks wait forever at {stuck}")
