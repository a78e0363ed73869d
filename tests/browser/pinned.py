"""The pinned outputs, checked on the notebook the browser test ran and saved, so that each
notebook is executed once in CI: nbval's own comparison, applied to JupyterLab's outputs
instead of a second run of the notebook under nbval.

Everything that decides the verdict is nbval's: which cells are compared (its tags and
comment markers, ``nbval-check-output`` here, under ``--nbval-lax``), the outputs merged per
stream with ``\\r`` and ``\\b`` applied (``coalesce_streams``), the keys left out (metadata,
execution counts, widget model ids, images), the ``--nbval-sanitize-with`` patterns when
given, and the message naming what differs. Only the execution is the browser's."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
from nbval.plugin import IPyNbCell, IPyNbFile, coalesce_streams, nocolors


def nbval_cells(session, pinned: Path) -> list[IPyNbCell]:
    """nbval's items for ``pinned`` (one per code cell, its options parsed by nbval), made
    as nbval's collector makes them but not run: they only compare."""
    collector = IPyNbFile.from_parent(session, path=Path(pinned))
    collector.setup_sanitize_files()
    return list(collector.collect())


def compare_pinned(session, saved: Path, pinned: Path,
                   label: str | None = None) -> tuple[int, list[str]]:
    """``(checked, failures)``: how many cells nbval compares, and one entry per code cell whose outputs in ``saved`` (the notebook as executed and saved)
    nbval would fail against ``pinned`` (the committed notebook), named as nbval names it
    (``notebooks/07_mixed_precision.ipynb::Cell 4``), with the notebook's own cell index
    (the browser test's numbering), its first line and nbval's account of the difference.
    Checked cells that did not run (Run All stopped at an error before them) are named in
    one entry of their own."""
    label = label or Path(pinned).name
    ran = nbformat.read(str(saved), as_version=4).cells
    ran_code = [(i, c) for i, c in enumerate(ran) if c.cell_type == "code"]
    items = nbval_cells(session, pinned)
    if len(items) != len(ran_code):
        return 0, [f"{label}: the saved notebook has {len(ran_code)} code cells, the pinned one "
                   f"{len(items)}: its outputs cannot be matched to the pins"]
    checked, failures, not_run = 0, [], []
    for item, (index, cell) in zip(items, ran_code):
        name = f"{label}::Cell {item.cell_num} (cell {index} of the notebook, " \
               f"{(item.cell.source.strip().splitlines() or [''])[0][:60]!r})"
        if cell.source != item.cell.source:
            failures.append(f"{name}: its source differs from the pinned notebook's")
            continue
        if item.options["skip"]:
            continue
        unrun = item.cell.execution_count is None
        if unrun and item.cell.outputs:  # nbval: 'Unrun reference cell has outputs'
            failures.append(f"{name}: the pinned cell has outputs but no execution count")
            continue
        if not item.options["check"] or unrun:
            continue
        checked += 1
        if cell.execution_count is None:  # Run All stopped before it (an error says where)
            not_run.append(f"Cell {item.cell_num}")
            continue
        item.colors = nocolors  # plain text in the failure message
        test = coalesce_streams(copy.deepcopy(cell.outputs))
        ref = coalesce_streams(copy.deepcopy(item.cell.outputs))
        if not item.compare_outputs(test, ref):
            failures.append(f"{name}: outputs differ from the pinned ones\n"
                            + "\n".join(str(t) for t in item.comparison_traceback))
    if not_run:
        failures.append(f"{label}: {len(not_run)} pinned cells did not run, so their outputs "
                        f"were not compared: {', '.join(not_run)}")
    return checked, failures

