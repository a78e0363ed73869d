"""What the pictures of notebook 00 hold, as plain data (no plotly): the cells of each
collective's before/after, and for the ring animation a cell's text, the check of the
recorded frames and a step's title. ``figures`` draws them."""

from __future__ import annotations

from lessons.common.i18n import t

from .text import TEXT

SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")  # as viz.style's, which imports plotly


def collective_cells(op: str, n: int):
    """(before, after): [rank][cell] -> (text, colour key) with key a rank,
    'mix' (several ranks' data combined) or None (nothing there)."""
    letter = "abcdefgh"

    def own(r, c):  # element c of rank r's original buffer
        return (f"{letter[c]}{str(r).translate(SUBSCRIPTS)}", r)

    empty = ("", None)
    rng = range(n)
    if op == "all_reduce":
        before = [[own(r, c) for c in rng] for r in rng]
        after = [[(f"Σ{letter[c]}", "mix") for c in rng] for r in rng]
    elif op == "all_gather":
        before = [[own(r, c) if c == r else empty for c in rng] for r in rng]
        after = [[own(c, c) for c in rng] for r in rng]
    elif op == "reduce_scatter":
        before = [[own(r, c) for c in rng] for r in rng]
        after = [[(f"Σ{letter[c]}", "mix") if c == r else empty for c in rng] for r in rng]
    elif op == "all_to_all":
        before = [[(f"{r}→{c}", r) for c in rng] for r in rng]
        after = [[(f"{c}→{r}", c) for c in rng] for r in rng]
    elif op == "broadcast":
        before = [[own(0, c) if r == 0 else empty for c in rng] for r in rng]
        after = [[own(0, c) for c in rng] for r in rng]
    else:  # send_recv
        before = [[own(0, c) if r == 0 else empty for c in rng] for r in rng]
        after = [[own(0, c) if r in (0, 1) else empty for c in rng] for r in rng]
    return before, after


def contributors(mask: int, n: int) -> str:
    """Cell text: 'all' (in the session's language), '0+1+3', or with runs folded for long
    lists ('0–4+6')."""
    if mask == (1 << n) - 1:
        return t(TEXT, "f_all")
    ranks = [k for k in range(n) if mask >> k & 1]
    if len(ranks) <= 4:
        return "+".join(map(str, ranks))
    runs, start = [], ranks[0]
    for a, b in zip(ranks, ranks[1:] + [None]):
        if b != a + 1:
            runs.append(str(start) if start == a else f"{start}–{a}" if a - start > 1
                        else f"{start}+{a}")
            start = b
    return "+".join(runs)


def check_ring_frames(frames) -> tuple[int, int]:
    if not frames:
        raise ValueError("frames is empty")
    n = len(frames[0]["state"])
    chunks = len(frames[0]["state"][0]) if n else 0
    if n < 2 or chunks < 1:
        raise ValueError("state must have at least 2 ranks and 1 chunk")
    for i, f in enumerate(frames):
        if f["phase"] not in ("start", "reduce_scatter", "all_gather"):
            raise ValueError(f"frame {i}: phase={f['phase']!r} must be 'start', "
                             "'reduce_scatter' or 'all_gather'")
        st = f["state"]
        if len(st) != n or any(len(row) != chunks for row in st):
            raise ValueError(f"frame {i}: state must be {n} ranks x {chunks} chunks")
        if any(not 0 <= m < 1 << n for row in st for m in row):
            raise ValueError(f"frame {i}: bitmasks must be in [0, 2**{n})")
        for src, dst, c in f.get("sends", ()):
            if not (0 <= src < n and 0 <= dst < n and 0 <= c < chunks):
                raise ValueError(f"frame {i}: send {(src, dst, c)} out of range")
    return n, chunks


def ring_step_title(f: dict, n: int) -> str:
    if f["phase"] == "start":
        return t(TEXT, "f_start")
    name = "reduce-scatter" if f["phase"] == "reduce_scatter" else "all-gather"
    return t(TEXT, "f_step", name=name, k=f.get("step", 0) + 1, n=n - 1)
