"""Exercises of notebook 00 (collectives): checkers and reference solutions.

Coding exercises run the learner's function on real ranks (``core.run_learner``):

* ``my_reduce_scatter(x, rank, world_size)``: from point-to-point messages, return
  the sum over ranks of chunk ``rank`` of everyone's ``x``;
* ``my_ring_all_reduce(x, rank, world_size)``: the ring all-reduce (reduce-scatter
  then all-gather, 2(W-1) steps, always sending to ``(rank + 1) % W``).

Each rank's result is compared with the sum computed from every rank's input, and
the bytes each rank sent are counted (``watch.DistWatch``: the functions of
``torch.distributed`` itself are watched during the call, so ``import torch.distributed
as dist`` inside the function, ``from torch.distributed import isend`` and
``P2POp`` + ``batch_isend_irecv`` are all counted) and compared with
``cost.collective_bytes``.

Numeric exercises are pure functions of the typed answer, with the wanted value
computed by ``parlab.cost``; ``QUESTIONS`` holds their text (numbers stated once).
Every message and question is in ``text.TEXT``, rendered in the session's language.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from parlab import cost
from parlab.hardware_presets import LINK_PRESETS
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.i18n import Questions, t
from .hints import HINTS
from .text import TEXT
from lessons.common.checkers.watch import COLLECTIVES, DistWatch

__all__ = ["check_reduce_scatter", "check_ring_all_reduce", "check_ring_bytes",
           "check_allreduce_time", "check_all_gather_bytes", "show_solution", "hints", "QUESTIONS",
           "solution_reduce_scatter", "solution_ring_all_reduce", "check_two_level_all_reduce"]

PER_CHUNK = 3  # elements per chunk of the test vectors


# --- reference solutions, solution_* (self-contained: they run through run_learner like yours) ----

def solution_reduce_scatter(x, rank, world_size):
    """Every rank sends each peer the chunk that peer owns, and adds up what it gets."""
    chunks = x.chunk(world_size)
    out = chunks[rank].clone()  # my own contribution to my chunk
    # post every send first (isend does not wait), then receive: no rank waits for a
    # peer that is itself waiting
    sends = [dist.isend(chunks[peer].contiguous(), peer)
             for peer in range(world_size) if peer != rank]
    incoming = torch.empty_like(out)
    for peer in range(world_size):
        if peer != rank:
            dist.recv(incoming, peer)
            out += incoming
    for req in sends:
        req.wait()
    return out


def solution_ring_all_reduce(x, rank, world_size):
    """Ring all-reduce in place: W-1 reduce-scatter steps, then W-1 all-gather steps,
    each sending one chunk to the right neighbour and receiving one from the left."""
    chunks = x.chunk(world_size)  # views: writing into them writes into x
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    incoming = torch.empty_like(chunks[0])
    # reduce-scatter: at step s send chunk (rank - s - 1), add the received (rank - s - 2);
    # chunk c starts at rank c + 1, gains one contribution per hop and ends complete at rank c
    for s in range(world_size - 1):
        send_c, recv_c = (rank - s - 1) % world_size, (rank - s - 2) % world_size
        req = dist.isend(chunks[send_c].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[recv_c].add_(incoming)
    # all-gather: the complete chunks travel once more round the ring, overwriting
    for s in range(world_size - 1):
        send_c, recv_c = (rank - s) % world_size, (rank - s - 1) % world_size
        req = dist.isend(chunks[send_c].contiguous(), right)
        dist.recv(incoming, left)
        req.wait()
        chunks[recv_c].copy_(incoming)
    return x


from .exercises_hierarchical import check_two_level_all_reduce, solution_two_level_all_reduce  # noqa: E402
from lessons.common import record

SOLUTIONS = {"my_reduce_scatter": solution_reduce_scatter, "my_ring_all_reduce": solution_ring_all_reduce,
             "my_two_level_all_reduce": solution_two_level_all_reduce}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution of a coding exercise, each behind a click
    ("my_reduce_scatter", "my_ring_all_reduce")."""
    return core.hints(SOLUTIONS, HINTS, name)


def show_solution(name: str) -> None:
    """Print the reference solution of a coding exercise ("my_reduce_scatter" or "my_ring_all_reduce")."""
    core.show_solution(SOLUTIONS, name)


# --- the harness: runs on every rank --------------------------------------------------

def inputs(rank: int, world_size: int, per_chunk: int = PER_CHUNK) -> torch.Tensor:
    """Rank r's vector: element i is 100 (r + 1) + i, so a wrong sum says whose part is off."""
    return torch.arange(world_size * per_chunk, dtype=torch.float32) + 100.0 * (rank + 1)


def harness(source: str, name: str, per_chunk: int = PER_CHUNK) -> dict:
    """On a rank: call the learner's ``fn(x, rank, world_size)`` on this rank's input;
    return what it gave back and the bytes it sent."""
    fn = core.load_learner(source, name)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    # watched on the torch.distributed module itself: counted whatever name the
    # learner's code imports it by (watch.py)
    with DistWatch() as watch:
        out = fn(inputs(rank, world_size, per_chunk), rank, world_size)
    if isinstance(out, torch.Tensor):
        out = out.detach().clone()
    return {"out": out, "sent": watch.sent, "received": watch.received,
            "messages": len(watch.messages),
            "used": sorted({c for c in watch.calls if c in COLLECTIVES})}


# --- checking ---------------------------------------------------------------------------

def _whose(diff: torch.Tensor, world_size: int, chunk: int | None, per_chunk: int) -> str:
    """A guess at the mistake when ``want - got`` is exactly one rank's part."""
    for p in range(world_size):
        part = inputs(p, world_size, per_chunk)
        if chunk is not None:
            part = part.chunk(world_size)[chunk]
        if torch.equal(diff, part):
            return t(TEXT, "whose_missing", p=p)
        if torch.equal(-diff, part):
            return t(TEXT, "whose_twice", p=p)
    return ""


def _holds(got: torch.Tensor, parts: torch.Tensor) -> list[int] | None:
    """The ranks whose contributions ``got`` (one chunk) is the sum of, if it is the sum
    of some set of them (``parts``: each rank's chunk, (W, per_chunk)); None if not."""
    w = parts.shape[0]
    if w > 12:  # 2^W subsets: past that, no guess
        return None
    subsets = torch.tensor([[(k >> p) & 1 for p in range(w)] for k in range(1 << w)],
                           dtype=parts.dtype)
    hit = torch.isclose(subsets @ parts, got.to(parts.dtype)).all(1).nonzero()
    if not len(hit):
        return None
    k = int(hit[0])
    return [p for p in range(w) if (k >> p) & 1]


def _ring_diagnosis(results, world_size: int, per_chunk: int) -> str:
    """What a wrong ring holds, in the ring's terms: which chunk on which rank is a
    partial sum (and of whose parts), and, when every rank holds the same number of
    complete chunks, how many all-gather steps ran of the W-1 needed. '' when the
    outputs are not sums of the ranks' chunks at all."""
    everyone = torch.stack([inputs(r, world_size, per_chunk) for r in range(world_size)])
    chunks = [everyone[:, c * per_chunk:(c + 1) * per_chunk] for c in range(world_size)]
    complete, first = [], None
    for rank, res in enumerate(results):
        out = res["out"]
        if not isinstance(out, torch.Tensor) or out.numel() != world_size * per_chunk:
            return ""
        out = out.detach().reshape(-1).double()
        n = 0
        for c in range(world_size):
            got = out[c * per_chunk:(c + 1) * per_chunk]
            held = _holds(got, chunks[c].double())
            if held is not None and len(held) == world_size:
                n += 1
            elif first is None:
                first = (c, rank, held)
        complete.append(n)
    if first is None:
        return ""
    c, rank, held = first
    if held is None:
        what = t(TEXT, "not_a_sum")
    elif len(held) == 1:
        what = t(TEXT, "own_part", p=held[0])
    else:
        missing = [p for p in range(world_size) if p not in held]
        what = t(TEXT, "partial_many" if len(missing) > 1 else "partial_one", k=len(held),
                 w=world_size, missing=", ".join(map(str, missing)))
    text = t(TEXT, "chunk_on_rank", c=c, rank=rank, what=what)
    steps = world_size - 1
    if len(set(complete)) == 1 and 1 <= complete[0] < world_size:
        ran = complete[0] - 1  # after the reduce-scatter a rank holds one complete chunk
        short = steps - ran
        text += t(TEXT, "stopped_one" if short == 1 else "stopped_many", short=short,
                  steps=steps, ran=ran)
    return t(TEXT, "sentence", text=text)


def _check(fn, world_size: int, per_chunk: int, timeout: float, *, reduce_scatter: bool):
    # the checker's own settings, refused before any rank starts: per_chunk=0 would
    # "pass" a function that sends nothing, and a negative one would fail on the ranks
    # as if the learner's code were wrong
    core.check_ranks("world_size", world_size, 2)
    check_int("per_chunk", per_chunk, 1, 1 << 20)
    core.check_timeout(timeout)
    results, bad = core.run_learner(harness, fn, world_size, per_chunk, timeout=timeout)
    if bad is not None:
        return bad
    everyone = [inputs(r, world_size, per_chunk) for r in range(world_size)]
    total = torch.stack(everyone).sum(0)
    wrong = []
    for rank, res in enumerate(results):
        want = total.chunk(world_size)[rank] if reduce_scatter else total
        where = f"rank {rank} (its chunk {rank})" if reduce_scatter else f"rank {rank}"
        msg = core.compare_tensors(res["out"], want, where=where)
        if msg is not None:
            if isinstance(res["out"], torch.Tensor) and res["out"].shape == want.shape:
                msg += _whose(want - res["out"], world_size, rank if reduce_scatter else None,
                              per_chunk)
            wrong.append((rank, msg))
    inputs_note = t(TEXT, "inputs_note", last=world_size * per_chunk - 1, w=world_size,
                    per_chunk=per_chunk)
    if wrong:
        others = ", ".join(str(r) for r, _ in wrong[1:])
        more = t(TEXT, "wrong_too", others=others) if others else ""
        what = t(TEXT, "want_reduce_scatter" if reduce_scatter else "want_all_reduce")
        why = "" if reduce_scatter else _ring_diagnosis(results, world_size, per_chunk)
        return core.verdict(False, t(TEXT, "wrong", first=wrong[0][1], more=more, why=why,
                                     what=what, inputs=inputs_note))
    used = sorted({u for res in results for u in res["used"]})
    if used:
        return core.verdict(False, t(TEXT, "used_collective", op=used[0]))
    sent, received = sum(r["sent"] for r in results), sum(r["received"] for r in results)
    if sent != received or not any(r["messages"] for r in results):
        # the values came from other ranks, so messages went by a way the watch cannot
        # see: say so rather than tell the learner it sent nothing
        return core.verdict(False, t(TEXT, "uncounted", sent=sent, received=received))
    S = world_size * per_chunk * 4
    op = "reduce_scatter" if reduce_scatter else "all_reduce"
    want_bytes = cost.collective_bytes(op, S, world_size)
    for rank, res in enumerate(results):
        if res["sent"] != want_bytes:
            how = t(TEXT, "how_reduce_scatter" if reduce_scatter else "how_all_reduce")
            return core.verdict(False, t(TEXT, "too_many_bytes", rank=rank, sent=res["sent"],
                                         want=want_bytes, S=S, w=world_size, how=how))
    formula = "(W-1)/W·S" if reduce_scatter else "2(W-1)/W·S"
    return core.verdict(True, t(TEXT, "right", w=world_size, want=want_bytes, formula=formula,
                                S=S))


def check_reduce_scatter(fn, world_size: int = 4, per_chunk: int = PER_CHUNK,
                         timeout: float = 30.0) -> dict:
    """Run ``fn(x, rank, world_size)`` on real ranks: rank r must return the sum over
    ranks of chunk r, having sent (W-1)/W·S bytes."""
    return _check(fn, world_size, per_chunk, timeout, reduce_scatter=True)


def check_ring_all_reduce(fn, world_size: int = 4, per_chunk: int = PER_CHUNK,
                          timeout: float = 30.0) -> dict:
    """Run ``fn(x, rank, world_size)`` on real ranks: every rank must return the sum of
    every rank's x, having sent 2(W-1)/W·S bytes."""
    return _check(fn, world_size, per_chunk, timeout, reduce_scatter=False)


# --- numeric exercises --------------------------------------------------------------------

RING_BYTES = dict(S=400e6, n=8)  # 100 M fp32 gradients, 8 ranks
# one HDR InfiniBand card per GPU, the lab's cluster link (parlab.hardware_presets)
ALLREDUCE_TIME = dict(S=100e6, n=16, alpha=5e-6,
                      bandwidth=LINK_PRESETS["IB-HDR"].gb_per_s_per_direction * 1e9)
ALL_GATHER_BYTES = dict(S=2e9, n=8)  # ZeRO-3 gathers 1 B fp16 parameters

# the numeric exercises' questions, with the numbers their checkers use
QUESTIONS = Questions(TEXT, {
    "ring_bytes": lambda: dict(S_mb=RING_BYTES["S"] / 1e6, n=RING_BYTES["n"]),
    "allreduce_time": lambda: dict(S_mb=ALLREDUCE_TIME["S"] / 1e6, n=ALLREDUCE_TIME["n"],
                                   alpha_us=ALLREDUCE_TIME["alpha"] * 1e6,
                                   gb_s=ALLREDUCE_TIME["bandwidth"] / 1e9),
    "all_gather_bytes": lambda: dict(S_gb=ALL_GATHER_BYTES["S"] / 1e9, n=ALL_GATHER_BYTES["n"]),
})


def check_ring_bytes(mb) -> dict:
    S, n = RING_BYTES["S"], RING_BYTES["n"]
    want = cost.collective_bytes("all_reduce", S, n) / 1e6
    return core.check_number(mb, want, unit="MB", name=t(TEXT, "name_mb_per_rank"),
                             hint=t(TEXT, "hint_ring_bytes"),
                             explanation=t(TEXT, "explain_ring_bytes", n1=n - 1, n=n, S_mb=S / 1e6))


def check_allreduce_time(ms) -> dict:
    p = ALLREDUCE_TIME
    want = cost.collective_time("all_reduce", p["S"], p["n"], p["alpha"], p["bandwidth"]) * 1e3
    steps = cost.collective_steps("all_reduce", p["n"])
    latency_ms = steps * p["alpha"] * 1e3
    return core.check_number(ms, want, unit="ms", name=t(TEXT, "name_time"),
                             hint=t(TEXT, "hint_allreduce_time"),
                             explanation=t(TEXT, "explain_allreduce_time", steps=steps,
                                           latency_ms=latency_ms, bandwidth_ms=want - latency_ms))


def check_all_gather_bytes(gb) -> dict:
    S, n = ALL_GATHER_BYTES["S"], ALL_GATHER_BYTES["n"]
    want = cost.collective_bytes("all_gather", S, n) / 1e9
    return core.check_number(gb, want, unit="GB", name=t(TEXT, "name_gb_per_rank"),
                             hint=t(TEXT, "hint_all_gather_bytes"),
                             explanation=t(TEXT, "explain_all_gather_bytes"))


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
