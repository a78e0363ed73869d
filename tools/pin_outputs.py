"""Execute notebooks and keep only the outputs nbval should check.

    .venv/bin/python tools/pin_outputs.py notebooks/00_collectives.ipynb [...]

Cells tagged ``nbval-check-output`` (cell metadata, so the learner sees no marker) keep their printed (stdout) output and their value
(nbval compares both on every run); every other output is dropped, so the committed notebooks stay small and
free of machine-specific timings. Run it after editing a notebook's pinned cells.
"""

import sys

import nbformat
from nbclient import NotebookClient

TAG = "nbval-check-output"  # nbval's own tag for "compare this cell's output"


def marked(cell) -> bool:
    return TAG in cell.get("metadata", {}).get("tags", [])


def pin(path: str) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": "notebooks"}}).execute()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        keep = marked(cell)
        # stdout only: stderr carries run-dependent notes (e.g. the launcher restarting
        # its ranks after a code change), which nbval would then demand on every run
        # (a marked cell's displayed value, e.g. an HTML table, is kept too)
        cell.outputs = [o for o in cell.outputs
                        if keep and (o.output_type == "stream" and o.name == "stdout"
                                     or o.output_type == "execute_result")]
        if not keep:  # nbval only compares cells that look run: keep their counts
            cell.execution_count = None
        merged = []  # one stdout block per cell, however many writes made it
        for o in cell.outputs:
            if merged and o.output_type == merged[-1].output_type == "stream":
                merged[-1].text += o.text
            else:
                merged.append(o)
        cell.outputs = merged
        for o in cell.outputs:
            o.pop("execution_count", None)
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)  # widget state saved by the run: large, not wanted
    nbformat.write(nb, path)
    print(f"pinned {sum(marked(c) for c in nb.cells if c.cell_type == 'code')} cells of {path}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        pin(p)
