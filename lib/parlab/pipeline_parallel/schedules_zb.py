"""Schedules past ZB-H1: ZB-H2, ZB-V and DualPipe, as data (lists of ``Action`` per rank).

All three split the backward into B (the input gradient, which the previous stage
waits for) and W (the weight gradients, which nobody waits for: Qi et al., "Zero
Bubble Pipeline Parallelism", ICLR 2024, §2). Each one's order is what its rule gives
when the pipeline is *played* at T_F = T_B = T_W (the setting the paper draws its
schedules in, §2): at every tick a free rank runs the first op that is ready, B before
F before W, and starts a new F only while it holds fewer than ``cap`` activations
(``play``). Played once at unit times, the order is then fixed data: the simulator
replays it with any op times, the executor runs it on real ranks.

  zb-h2     Qi et al. §2.2: more forwards in the warm-up, up to 2p - 1 micro-batches
            in flight (the paper's peak, (2p - 1) M_B, §2.3 Table 2), and W passes
            pushed to the tail: the trapezoid of ZB-H1 becomes a parallelogram, every
            rank busy from its first op to its last when m >= 2p - 1 -- zero bubble
            per rank, the paper's (p - 1)(T_F + T_B - 2 T_W) at equal times.
  zb-v      Qi et al. (arXiv v2) §6: two chunks per rank placed in a V
            (``placement.Placement("v")``), 2p chunk activations at most (each half a
            rank's layers: 1F1B's p micro-batches). Handcrafted by phases (``zb_v``), as
            in the paper's figure and torch's ``ScheduleZBVZeroBubble``: ``play`` does
            not find it (its best V at 2p keeps ~(p - 1)/2 T_F idle on rank 0).
  dualpipe  DeepSeek-V3 technical report §3.2.1: micro-batches fed from both ends,
            rank r holding stages r and p - 1 - r, one per direction
            (``Placement("dual")``; the runner sums the two copies' gradients over the
            pair r, p - 1 - r); its Table 2 gives the bubble (p/2 - 1)(F&B + B - 3W),
            2x the weights and p + 1 activations. Played here, not DeepSeek's
            hand-made order, and nothing overlaps one direction's F with the other's B
            (F&B = F + B): at equal times it idles less than the formula prices
            DeepSeek's paired order (0 and 2 slots at p = 4 and 8 against 2 and 6), but
            with W shorter than B and many micro-batches it idles more.

Pure Python.
"""

from __future__ import annotations

from .placement import Action, Placement

def play(p: int, m: int, placement: Placement, cap: int, prefer: str = "BFW",
         deeper_first: bool = False) -> list[list[Action]]:
    """Every rank's order, from running the pipeline at unit op times: at each tick a
    rank runs the ready op that comes first by (its op's place in ``prefer``,
    micro-batch, later stage first) -- or, ``deeper_first``, the later stage before the
    micro-batch; an F only while the rank holds fewer than ``cap`` (micro-batch, chunk)
    activations (from an F to its W). ``prefer="BFW"``: a ready B first, as the previous
    stage waits for it, W last, as nobody does."""
    todo = [{Action(op, mb, c) for mb in range(m) for c in placement.chunks(r, mb)
             for op in "FBW"} for r in range(p)]
    done = {}
    held = [0] * p
    out = [[] for _ in range(p)]
    tick = 0
    while any(todo):
        new = []
        for r in range(p):
            ready = [a for a in todo[r] if (a.op != "F" or held[r] < cap) and (
                (dep := placement.dependency(a, r)) is None or done.get(dep, tick + 1) <= tick)]
            if not ready:
                continue
            a = min(ready, key=lambda a: (prefer.index(a.op), *(
                (-placement.stage(r, a.chunk, a.mb), a.mb) if deeper_first
                else (a.mb, -placement.stage(r, a.chunk, a.mb)))))
            todo[r].remove(a)
            held[r] += (a.op == "F") - (a.op == "W")
            out[r].append(a)
            new.append(((a.op, a.mb, placement.stage(r, a.chunk, a.mb)), tick + 1))
        if not new:  # unit times: nothing runs now, so nothing ever will
            raise RuntimeError(f"cap={cap} leaves no op to run at tick {tick}")
        done.update(new)
        tick += 1
    return out


def zb_h2(p: int, m: int) -> list[list[Action]]:
    """ZB-H2 (Qi et al. 2024, §2.2; peak in §2.3, Table 2): up to 2p - 1 micro-batches
    in flight on every rank."""
    return play(p, m, Placement("round-robin", p, 1, m), 2 * p - 1)


def zb_v(p: int, m: int) -> list[list[Action]]:
    """ZB-V (Qi et al., arXiv v2, §6), handcrafted by phases; chunk 0 of rank r is
    stage r, chunk 1 is stage 2p - 1 - r (``Placement("v")``). Rank r runs

      warm-up    2(p - r) - 1 forwards on chunk 0; r times (F on chunk 1, F on chunk 0);
                 p - r times (F, B, W on chunk 1): the V's turn, where the loss is
      steady     F, B, W on chunk 0, then F, B, W on chunk 1, while forwards remain
      cool-down  r times (B on chunk 0, B on chunk 1); p - r times (B, W on chunk 0);
                 then the W's left, chunk 1's first

    It is laid out for at least 2p - 1 micro-batches; with fewer, the ops of the
    missing ones are left out. At T_F = T_B = T_W every rank is busy from its first op
    to its last, holding at most 2p chunk activations (p micro-batches': 1F1B's)."""
    n = max(m, 2 * p - 1)
    out = []
    for r in range(p):
        acts, nxt = [], {("F", 0): 0, ("F", 1): 0, ("B", 0): 0, ("B", 1): 0, ("W", 0): 0,
                         ("W", 1): 0}

        def run(*ops):
            for op, c in ops:
                acts.append(Action(op, nxt[op, c], c))
                nxt[op, c] += 1

        run(*[("F", 0)] * (2 * (p - r) - 1))
        for _ in range(r):
            run(("F", 1), ("F", 0))
        for _ in range(p - r):
            run(("F", 1), ("B", 1), ("W", 1))
        while nxt["F", 1] < nxt["F", 0] or nxt["F", 0] < n:
            if nxt["F", 0] < n:
                run(("F", 0))
            run(("B", 0), ("W", 0), ("F", 1), ("B", 1), ("W", 1))
        for _ in range(r):
            run(("B", 0), ("B", 1))
        for _ in range(p - r):
            run(("B", 0), ("W", 0))
        run(*[("W", 1)] * (nxt["B", 1] - nxt["W", 1]), *[("W", 0)] * (nxt["B", 0] - nxt["W", 0]))
        out.append([a for a in acts if a.mb < m])
    return out


def dualpipe(p: int, m: int) -> list[list[Action]]:
    """DualPipe's bidirectional order (DeepSeek-V3 report §3.2.1): m/2 micro-batches
    from each end, at most p + 1 stage activations per rank (its Table 2). Played with
    F first and the stage nearest the loss first: a forward of one direction goes
    beside a backward of the other, the pairs DualPipe overlaps."""
    return play(p, m, Placement("dual", p, 2, m), p + 1, prefer="FBW", deeper_first=True)


def dualpipev(p: int, m: int) -> list[list[Action]]:
    """DualPipeV: DeepSeek's DualPipe order (DeepSeek-V3 report §3.2.1) "cut in half" --
    one copy of the model on ZB-V's V (chunk 0 of rank r is stage r, chunk 1 is stage
    2p - 1 - r: ``Placement("v")``), every micro-batch entering at stage 0 -- the order of
    torch's ``ScheduleDualPipeV`` and of the DualPipe repository's ``dualpipev.py``. Rank r runs

      1 warm-up     2(p - r - 1) forwards on chunk 0
      2             r + 1 times (F on chunk 0, F on chunk 1)
      3             p - r - 1 times (B, W, F on chunk 1): the V's turn
      4 steady      m - 2p + r + 1 times (F on chunk 0 beside a whole backward on chunk 1,
                    then F on chunk 1 beside a whole backward on chunk 0)
      5             p - r - 1 times (a whole backward on chunk 1, then F on chunk 1 beside
                    a whole backward on chunk 0): the forwards run out
      6 cool-down   r + 1 times (B on chunk 1, B on chunk 0): the first r + 1 of these
                    backwards whole, the last r + 1 with their W put off
      7             p - r - 1 times (the oldest put-off W, B on chunk 0 with its W put off)
      8             the r + 1 W's still put off, oldest first

    "Whole" is B followed at once by its W (the executor joins the two into one
    backward); "beside" is DualPipe's overlapped pair F&B, here run one after the other
    (F, B, W), as torch's runtime runs it. The steady phase pairs one chunk's forward with
    the other chunk's whole backward, where ZB-V's pairs it with its own chunk's B. Needs
    m >= 2p (``schedules.validate``): phase 4 has at least one pair on every rank."""
    out = []
    for r in range(p):
        acts, nxt, put_off = [], {("F", 0): 0, ("F", 1): 0, ("B", 0): 0, ("B", 1): 0}, []

        def forward(c):
            acts.append(Action("F", nxt["F", c], c))
            nxt["F", c] += 1

        def backward(c, whole=True):
            mb = nxt["B", c]
            nxt["B", c] += 1
            acts.append(Action("B", mb, c))
            if whole:
                acts.append(Action("W", mb, c))
            else:
                put_off.append(Action("W", mb, c))

        for _ in range(2 * (p - r - 1)):                         # 1
            forward(0)
        for _ in range(r + 1):                                   # 2
            forward(0), forward(1)
        for _ in range(p - r - 1):                               # 3
            backward(1), forward(1)
        for _ in range(m - 2 * p + r + 1):                       # 4
            forward(0), backward(1), forward(1), backward(0)
        for _ in range(p - r - 1):                               # 5
            backward(1), forward(1), backward(0)
        for i in range(2 * (r + 1)):                             # 6
            backward(1 - i % 2, whole=i < r + 1)
        for _ in range(p - r - 1):                               # 7
            acts.append(put_off.pop(0))
            backward(0, whole=False)
        acts.extend(put_off)                                     # 8
        out.append(acts)
    return out
