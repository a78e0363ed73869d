"""Forward and backward prefetching for ``FullyShard(..., prefetch=True)``.

Zhao et al., "PyTorch FSDP", VLDB 2023, §3.3.2 (backward prefetching) and §3.3.3
(forward prefetching): without it a unit's all-gather starts only when the unit is
about to run, so compute waits for every gather. With it, when unit i's parameters
arrive, unit i+1's all-gather is *issued* (asynchronously) before unit i computes; by
the time unit i+1 runs its weights are there or on their way -- the gather hides behind
unit i's compute. The price: two units' full parameters live at once
(``cost.fsdp_gathered_peak(..., prefetch=True)``). FSDP2 exposes the same thing
explicitly (``set_modules_to_forward_prefetch`` / ``set_modules_to_backward_prefetch``).

The order is static, as FSDP1's is after the first iteration: forward runs the root (it
owns the embeddings) and then the blocks in order; backward starts with the root (the
head's weights) and runs the blocks in reverse. A gather is keyed by (unit, pass) and
waited on before its buffer is read; one issued for a unit that never asked for it is
waited on and dropped when the round of gradients finishes (after that the shards change).
"""

from __future__ import annotations


class Prefetcher:
    """The next unit's all-gather, issued early. ``fsdp``: the FullyShard it serves
    (its ``units``, blocks first and the root last, and its ``_all_gather``)."""

    def __init__(self, fsdp):
        self.fsdp = fsdp
        root = [u for u in fsdp.units if u.module is fsdp.module]
        blocks = [u for u in fsdp.units if u.module is not fsdp.module]
        forward = root + blocks
        backward = root + blocks[::-1]
        self.next = {"forward": dict(zip(forward, forward[1:])),
                     "backward": dict(zip(backward, backward[1:]))}
        self.pending: dict = {}  # (unit, pass) -> (flat buffer, wait)

    def take(self, unit, why: str):
        """The unit's gathered flat buffer if a prefetch for it is in flight (waited
        on: complete), else None (the caller gathers it now)."""
        got = self.pending.pop((unit, why), None)
        if got is None:
            return None
        full, wait = got
        wait()  # never read a buffer before its collective is done
        self._freed(full)
        return full

    def issue_after(self, unit, why: str) -> None:
        """Start the all-gather of the unit that runs after ``unit`` in pass ``why``."""
        nxt = self.next[why].get(unit)
        if nxt is None or (nxt, why) in self.pending:
            return
        if why == "backward" and not self.fsdp.reshard:
            return  # nothing is gathered again in backward
        full, wait = self.fsdp._all_gather(nxt, why, async_op=True)
        if self.fsdp.probe is not None:
            self.fsdp.probe.allocated("gathered", full)
        self.pending[(nxt, why)] = (full, wait)

    def drain(self) -> None:
        """Wait for and drop every prefetch no unit took."""
        for full, wait in self.pending.values():
            wait()
            self._freed(full)
        self.pending.clear()

    def _freed(self, full) -> None:
        if self.fsdp.probe is not None:
            self.fsdp.probe.freed("gathered", full.nbytes)
