"""``%%ranks``: type torch.distributed calls into a cell and run them on every rank.

    %load_ext parlab.interactive

    %%ranks 4
    x = torch.tensor([rank + 1.0])
    dist.all_reduce(x)
    x

Each rank runs the cell in its own namespace, which lives on between cells (so
tensors and groups made in one cell are there in the next). ``torch``, ``dist``,
``rank`` and ``world_size`` are predefined. What each rank printed, and the value
of the cell's last expression, are shown rank by rank. A cell that hangs (say, a
collective only some ranks call) is stopped after ``--timeout`` seconds and tells
you where each rank was blocked; the ranks then start afresh.

Options: ``%%ranks N [--timeout SECONDS]``. The magic is a thin shell over
``parlab.run_on_ranks``, which tests (and scripts) call directly.
"""

from __future__ import annotations

import shlex

from .launch import run_on_ranks


def parse_args(line: str) -> tuple[int, float]:
    """``"4 --timeout 10"`` -> (4, 10.0); a clear ValueError otherwise."""
    words = shlex.split(line)
    world_size, timeout = None, 30.0
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("--timeout", "-t") and i + 1 < len(words):
            timeout = float(words[i + 1])
            i += 2
            continue
        if w in ("-n", "--ranks") and i + 1 < len(words):
            w = words[i + 1]
            i += 1
        if not w.isdigit() or world_size is not None:
            raise ValueError(f"usage: %%ranks N [--timeout SECONDS]; got {line!r}")
        world_size = int(w)
        i += 1
    if world_size is None:
        raise ValueError("usage: %%ranks N [--timeout SECONDS]: say how many ranks, e.g. %%ranks 4")
    return world_size, timeout


def format_results(results: list[dict]) -> str:
    """Rank by rank: printed output, then the value (or the error)."""
    blocks = []
    for rank, res in enumerate(results):
        lines = [f"── rank {rank} " + "─" * 30]
        if res["output"]:
            lines.append(res["output"].rstrip("\n"))
        if res["error"]:
            lines.append(res["error"].rstrip("\n"))
        elif res["value"] is not None:
            lines.append(f"→ {res['value']}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def ranks(line: str, cell: str) -> None:
    world_size, timeout = parse_args(line)
    print(format_results(run_on_ranks(cell, world_size, timeout=timeout)))


def load_ipython_extension(ipython) -> None:
    ipython.register_magic_function(ranks, magic_kind="cell", magic_name="ranks")
