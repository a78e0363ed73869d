"""Notebook 05 (context parallelism), "Your turn": checkers and reference solutions.

Two coding exercises run the learner's function on real ranks (``core.run_learner``):

* ``my_zigzag_shard(x, rank, world_size)``: rank ``rank``'s zig-zag shard of a sequence;
  checked on every rank against ``layout.shard_sequence``, then the causal work each rank
  would do with it is counted (the balance the layout is for).
* ``my_ring_attention(q, k, v, rank, world_size)``: ring attention, non-causal. Each rank
  holds one contiguous block of queries, keys and values, ``(heads, s/cp, head_dim)``;
  the K/V blocks go round the ring (send to rank + 1, receive from rank - 1) and the
  partial results merge with a running max and sum (the online softmax). Checked per
  rank against full softmax attention over the whole sequence, naming the rank, head,
  global position and channel, and by how much.

Numeric ones (``check_*``) compare with ``parlab.cost`` and ``shard_positions``.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import torch
import torch.distributed as dist

from parlab import cost
from parlab.context_parallel.layout import shard_positions, shard_sequence
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.i18n import t
from .hints import HINTS
from .text import TEXT
from lessons.common import record

__all__ = ["check_zigzag_positions", "check_ring_bytes", "check_imbalance", "check_ulysses_cap",
           "WHY_CAP", "check_zigzag_shard", "check_ring_attention", "show_solution", "hints",
           "solution_zigzag_shard", "solution_ring_attention", "solution_html"]


# --- numeric answers ----------------------------------------------------------------------

# the choices of "why cp <= heads" (in English; the checker answers in the session's language)
WHY_CAP = {k: TEXT[f"cap_{k}"]["en"] for k in "ABC"}


def check_zigzag_positions(answer, seq_len: int = 16, cp: int = 4, rank: int = 1) -> dict:
    """The global positions rank ``rank`` holds under zig-zag, in its order."""
    want = shard_positions(seq_len, cp, rank, "zigzag").tolist()
    got, bad = core.read_numbers(answer, "positions", whole=True,
                                 ask=t(TEXT, "positions_ask"))
    if bad:
        return bad
    if got == want:
        return core.verdict(True, t(TEXT, "positions_ok", rank=rank, want=want, other=2 * cp - 1 - rank))
    return core.verdict(False, t(TEXT, "positions_no", got=got, chunks=2 * cp, size=seq_len // (2 * cp)))


def check_ring_bytes(answer, micro_batch: int = 1, seq_len: int = 131072, d_model: int = 4096,
                     cp: int = 8, bytes_per_value: float = 2) -> dict:
    """Bytes one rank sends for one layer per training step with ring attention."""
    want = cost.cp_comm_per_layer(micro_batch, seq_len, d_model, cp, "ring", bytes_per_value)["bytes"]
    return core.check_number(answer, want, unit="bytes", hint=t(TEXT, "ring_bytes_hint"),
                             explanation=t(TEXT, "ring_bytes_why", gb=want / 1e9))


def check_imbalance(answer, cp: int = 4) -> dict:
    """max/mean causal work per rank with contiguous shards."""
    want = cost.causal_work_per_rank(cp, "contiguous")["imbalance"]
    return core.check_number(answer, want, rel_tol=0.005, name="max / mean",
                             hint=t(TEXT, "imbalance_hint"),
                             explanation=t(TEXT, "imbalance_why", want=want))


def check_ulysses_cap(answer) -> dict:
    """Why must cp divide (so be at most) the number of heads for Ulysses?"""
    if core.blank(answer):
        return core.missing(t(TEXT, "cap_missing"))
    key = core.as_letter(answer)
    if key not in WHY_CAP:
        return core.verdict(False, t(TEXT, "cap_letter", letters=sorted(WHY_CAP), answer=core.shown(answer)))
    if key == "A":
        return core.verdict(True, t(TEXT, "cap_ok", why=t(TEXT, "cap_A")))
    return core.verdict(False, t(TEXT, "cap_no"))


# --- coding exercise 1: the zig-zag shard, on real ranks -------------------------------------

def solution_zigzag_shard(x, rank, world_size):
    """Rank ``rank``'s zig-zag shard of the sequence ``x`` (positions along dim 0)."""
    chunks = x.chunk(2 * world_size)
    return torch.cat([chunks[rank], chunks[2 * world_size - 1 - rank]])


def zigzag_harness(source: str, name: str, seq_len: int):
    """On each rank: the learner's shard of the positions 0..seq_len-1."""
    fn = core.load_learner(source, name)
    rank, world = dist.get_rank(), dist.get_world_size()
    return fn(torch.arange(seq_len), rank, world)


def _causal_work(positions) -> int:
    """Scores a rank computes under a causal mask: query i needs keys 0..i."""
    return int(sum(int(p) + 1 for p in positions))


def _unwritten(fn) -> bool:
    """True when ``fn`` is still the notebook's placeholder (its body only raises
    NotImplementedError): answered at once, without starting ranks."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = [n for n in tree.body[0].body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Raise)
            and "NotImplementedError" in ast.unparse(body[0]))


def _check_sizes(cp, seq_len, chunks: int, timeout) -> None:
    """The checker's settings, before any rank starts: ``chunks`` must divide seq_len."""
    core.check_ranks("cp", cp, 2)
    check_int("seq_len", seq_len)
    if seq_len % chunks:
        raise ValueError(f"seq_len={seq_len} must be a multiple of {chunks} (cp={cp})")
    core.check_timeout(timeout)


def check_zigzag_shard(fn, cp: int = 4, seq_len: int = 16, timeout: float = 20.0) -> dict:
    """Run ``fn(x, rank, world_size)`` on ``cp`` ranks; every rank's shard must equal
    ``shard_sequence(x, 0, cp, rank, "zigzag")``."""
    _check_sizes(cp, seq_len, 2 * cp, timeout)
    if _unwritten(fn):
        return core.missing(t(TEXT, "write_it", name=fn.__name__))
    got, bad = core.run_learner(zigzag_harness, fn, cp, seq_len, timeout=timeout)
    if bad:
        return bad
    x = torch.arange(seq_len)
    for rank, g in enumerate(got):
        want = shard_sequence(x, 0, cp, rank, "zigzag")
        if not isinstance(g, torch.Tensor):
            return core.verdict(False, t(TEXT, "shard_type", rank=rank, type=type(g).__name__))
        if g.shape != want.shape:
            return core.verdict(False, t(TEXT, "shard_size", rank=rank, got=g.numel(),
                                         want=want.numel(), s=seq_len, cp=cp))
        wrong = (g != want).nonzero()
        if len(wrong):
            i = int(wrong[0])
            return core.verdict(False, t(TEXT, "shard_slot", rank=rank, i=i, got=int(g[i]),
                                         want=int(want[i]), positions=want.tolist(),
                                         other=2 * cp - 1 - rank, chunks=2 * cp))
    work = [_causal_work(g) for g in got]
    mean = sum(work) / len(work)
    contiguous = [_causal_work(shard_positions(seq_len, cp, r)) for r in range(cp)]
    return core.verdict(True, t(TEXT, "shard_ok", work=work, imb=max(work) / mean,
                                contiguous=contiguous), work=work)


# --- coding exercise 2: ring attention, on real ranks --------------------------------------

def solution_ring_attention(q, k, v, rank, world_size):
    """Non-causal ring attention on one rank: q, k, v are this rank's (heads, s/cp, d)."""
    scale = q.shape[-1] ** -0.5
    m = torch.full(q.shape[:-1] + (1,), float("-inf"))  # running max of the scores, per query
    l = torch.zeros(q.shape[:-1] + (1,))                 # running sum of exp(score - m)
    acc = torch.zeros_like(q)                            # running sum of exp(score - m) * v
    kv = torch.stack([k, v]).contiguous()                # the block that travels
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    for step in range(world_size):
        if step < world_size - 1:  # post the next hop before computing on this block
            incoming = torch.empty_like(kv)
            reqs = [dist.isend(kv, right), dist.irecv(incoming, left)]
        s = q @ kv[0].transpose(-1, -2) * scale
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        alpha = torch.exp(m - m_new)  # rescale what was summed under the old max
        l = l * alpha + p.sum(-1, keepdim=True)
        acc = acc * alpha + p @ kv[1]
        m = m_new
        if step < world_size - 1:
            for r in reqs:
                r.wait()
            kv = incoming
    return acc / l


def _qkv(seq_len: int, n_heads: int, head_dim: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n_heads, seq_len, head_dim, generator=g) * 2 for _ in range(3)]


def full_attention(q, k, v):
    """The reference: softmax attention over the whole sequence on one device."""
    return torch.softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5, dim=-1) @ v


def ring_harness(source: str, name: str, seq_len: int, n_heads: int, head_dim: int, seed: int):
    """On each rank: this rank's contiguous block of q, k, v, then the learner's function."""
    fn = core.load_learner(source, name)
    rank, world = dist.get_rank(), dist.get_world_size()
    q, k, v = (t.chunk(world, dim=1)[rank].contiguous() for t in _qkv(seq_len, n_heads, head_dim, seed))
    return fn(q, k, v, rank, world)


def check_ring_attention(fn, cp: int = 4, seq_len: int = 16, n_heads: int = 2, head_dim: int = 8,
                         seed: int = 0, timeout: float = 20.0) -> dict:
    """Run ``fn(q, k, v, rank, world_size)`` on ``cp`` ranks and compare each rank's output
    with the rows of full attention it owns."""
    _check_sizes(cp, seq_len, cp, timeout)
    check_int("n_heads", n_heads)
    check_int("head_dim", head_dim)
    check_int("seed", seed, 0)
    if _unwritten(fn):
        return core.missing(t(TEXT, "write_it", name=fn.__name__))
    got, bad = core.run_learner(ring_harness, fn, cp, seq_len, n_heads, head_dim, seed,
                                timeout=timeout)
    if bad:
        return bad
    want = full_attention(*_qkv(seq_len, n_heads, head_dim, seed))
    c = seq_len // cp
    for rank, g in enumerate(got):
        w = want[:, rank * c:(rank + 1) * c]
        msg = core.compare_tensors(g, w, where=t(TEXT, "ring_where", rank=rank), atol=1e-5, rtol=1e-4)
        if msg is None:
            continue
        if isinstance(g, torch.Tensor) and g.shape == w.shape:
            bad_el = ~torch.isclose(g.double(), w.double(), atol=1e-5, rtol=1e-4)
            h, i, d = (int(x) for x in bad_el.nonzero()[0])
            diff = abs(float(g[h, i, d]) - float(w[h, i, d]))
            msg = t(TEXT, "ring_value", rank=rank, h=h, pos=rank * c + i, i=i, d=d,
                    got=float(g[h, i, d]), want=float(w[h, i, d]), diff=diff,
                    n=int(bad_el.sum()), total=g.numel())
            if torch.allclose(g, full_attention(*(t[:, rank * c:(rank + 1) * c]
                                                  for t in _qkv(seq_len, n_heads, head_dim, seed))),
                              atol=1e-5):
                msg += t(TEXT, "ring_own_block")
        return core.verdict(False, msg)
    return core.verdict(True, t(TEXT, "ring_ok", cp=cp, s=seq_len, heads=n_heads))


# --- reference solutions on demand ---------------------------------------------------------

SOLUTIONS = {"my_zigzag_shard": solution_zigzag_shard, "my_ring_attention": solution_ring_attention}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution of a coding exercise, each behind a click
    ("my_zigzag_shard", "my_ring_attention")."""
    return core.hints(SOLUTIONS, HINTS, name)





def solution_html(name: str) -> str:
    """The reference solution as an HTML ``<pre>`` block (for ``viz.note``: opens on a click)."""
    return core.solution_html(SOLUTIONS, name)


def show_solution(name: str) -> None:
    """Print the reference solution of a coding exercise (its source)."""
    core.show_solution(SOLUTIONS, name)


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
