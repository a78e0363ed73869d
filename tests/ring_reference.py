"""The ring all-reduce schedule simulated by hand, independent of parlab.comm."""


def simulate_ring(n):
    """The ring all-reduce by hand: bitmask of contributions per (rank, chunk)."""
    state = [[1 << r] * n for r in range(n)]
    frames = [{"phase": "start", "step": 0, "state": [row[:] for row in state], "sends": []}]
    for s in range(n - 1):  # reduce-scatter: send chunk r-s-1, receiver ORs it in
        sends = [(r, (r + 1) % n, (r - s - 1) % n) for r in range(n)]
        old = [row[:] for row in state]
        for src, dst, c in sends:
            state[dst][c] |= old[src][c]
        frames.append({"phase": "reduce_scatter", "step": s,
                       "state": [row[:] for row in state], "sends": sends})
    for s in range(n - 1):  # all-gather: send chunk r-s, receiver overwrites
        sends = [(r, (r + 1) % n, (r - s) % n) for r in range(n)]
        old = [row[:] for row in state]
        for src, dst, c in sends:
            state[dst][c] = old[src][c]
        frames.append({"phase": "all_gather", "step": s,
                       "state": [row[:] for row in state], "sends": sends})
    return frames
