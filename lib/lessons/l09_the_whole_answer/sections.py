"""Where each claim of the whole answer is measured: notebook sections by key. Every
sentence of the mock interview links to one of these; a test reads the notebooks and
checks that each heading is still there, so a renamed section breaks the test, not a link.

Where a link goes (``href``), so that it lands on the section and starts no kernel:

- in JupyterLab started by ``run.py lab``: the section's read-only copy, ``read/<key>.html``
  beside the learner's notebooks (``lessons.common.readcopy`` writes them at start);
- in ``run.py html``'s pages (``PARLAB_LINKS=pages``): the section in its notebook's page;
- elsewhere (no copies written): the notebook itself at the heading's anchor.
"""

from __future__ import annotations

import os
from pathlib import Path

# key: (notebook file, heading text as written after the '#'s[, the section it sits in when
# the heading is a sub-heading without a number of its own])
SECTIONS = {
    "ring": ("00_collectives.ipynb", "4 · Bytes per rank: naive vs ring"),
    "hierarchical": ("00_collectives.ipynb", "Two levels: nodes and the network", "4"),
    "collectives_interview": ("00_collectives.ipynb", "7 · Interview corner"),
    "dp_exact": ("01_data_parallel.ipynb", "1 · The idea, and why it is exact"),
    "dp_buckets": ("01_data_parallel.ipynb", "2 · Overlapping communication with backward: buckets"),
    "grad_accum": ("01_data_parallel.ipynb", "3 · Gradient accumulation"),
    "compression": ("01_data_parallel.ipynb", "5 · Gradient compression"),
    "zero": ("01_data_parallel.ipynb", "6 · ZeRO: stop replicating the model states"),
    "fits": ("01_data_parallel.ipynb", "Does it fit? The memory calculator", "6"),
    "seven_b": ("01_data_parallel.ipynb", "A 7B model on 4 × A100-80GB", "7"),
    "async": ("01_data_parallel.ipynb", '"Synchronous vs asynchronous gradient synchronisation"', "7"),
    "speedup": ("01_data_parallel.ipynb", '"4 cards give ~3.5× speedup because of communication"', "7"),
    "tp_split": ("02_tensor_parallel.ipynb", "1 · Column, then row: one sum per sub-block"),
    "tp_count": ("02_tensor_parallel.ipynb", "4 · Counting: trace vs formula"),
    "sp": ("02_tensor_parallel.ipynb", "5 · Sequence parallelism: what it changes, what it does not"),
    "tp_overlap": ("02_tensor_parallel.ipynb", "8 · Overlap: what can hide behind what"),
    "tp_interview": ("02_tensor_parallel.ipynb", "11 · Interview corner"),
    "stages": ("03_pipeline_parallel.ipynb", "1 · Cutting the model into stages"),
    "schedules": ("03_pipeline_parallel.ipynb", "2 · Schedules are data"),
    "bubble": ("03_pipeline_parallel.ipynb", "4 · The bubble, predicted and measured"),
    "pp_memory": ("03_pipeline_parallel.ipynb", "5 · What 1F1B really changes: memory"),
    "interleave": ("03_pipeline_parallel.ipynb", "6 · Interleaving: a smaller ideal bubble, paid in messages"),
    "zero_bubble": ("03_pipeline_parallel.ipynb", "7 · Zero bubble: split the backward"),
    "recompute": ("03_pipeline_parallel.ipynb", "8 · Activation checkpointing: memory for compute"),
    "routing": ("04_expert_parallel.ipynb", "1 · Routing a batch: top-k, capacity, drops"),
    "capacity": ("04_expert_parallel.ipynb",
                 "3 · Drop rate vs capacity factor, balanced and skewed, with and without balancing"),
    "busiest": ("04_expert_parallel.ipynb", "5 · The busiest rank sets the step"),
    "ep_vs_tp": ("04_expert_parallel.ipynb", "7 · EP vs TP: what each sends per layer"),
    "cp_why": ("05_context_parallel.ipynb", "1 · Why split the sequence"),
    "cp_bytes": ("05_context_parallel.ipynb", "6 · Bytes per rank per layer: ring, Ulysses, Megatron SP"),
    "cp_when": ("05_context_parallel.ipynb", "8 · When each wins"),
    "mesh": ("06_3d_parallel.ipynb", "1 · The mesh"),
    "3d_exact": ("06_3d_parallel.ipynb", "2 · Correct first: a 3D run equals one device"),
    "planner": ("06_3d_parallel.ipynb", "4 · At GPU scale: the planner against published runs"),
    "3d_interview": ("06_3d_parallel.ipynb", "6 · Interview corner"),
    "formats": ("07_mixed_precision.ipynb", "1 · The formats"),
    "master": ("07_mixed_precision.ipynb", "2 · Why fp32 master weights"),
    "bytes16": ("07_mixed_precision.ipynb", "7 · 16 bytes per parameter, byte by byte"),
    "dcp": ("08_checkpoints_and_failures.ipynb", "1 · Sharded checkpoints with DCP"),
    "goodput": ("08_checkpoints_and_failures.ipynb", "4 · Goodput at scale"),
    "stragglers": ("08_checkpoints_and_failures.ipynb", "5 · Stragglers"),
}


def anchor(heading: str) -> str:
    """JupyterLab's id for a markdown heading: its text with spaces as '-'."""
    return heading.strip().replace(" ", "-")


READ = "read"  # the folder of read-only copies, beside the notebooks (run.py lab writes it)


def href(key: str, here: str | None = None) -> str:
    """A relative link from notebook 09 (in folder ``here``, default the kernel's working
    folder: the notebook's) to the section ``key``, as the module docstring says."""
    if key not in SECTIONS:
        raise ValueError(f"section={key!r} is not one of {', '.join(SECTIONS)}")
    nb, heading = SECTIONS[key][:2]
    if os.environ.get("PARLAB_LINKS") == "pages":
        return f"{nb[:-len('.ipynb')]}.html#{anchor(heading)}"
    if (Path(here or os.getcwd()) / READ / f"{key}.html").exists():
        return f"{READ}/{key}.html"
    return f"{nb}#{anchor(heading)}"


def title(key: str) -> str:
    """'Notebook 03 §4 · The bubble, predicted and measured': a read-only copy's heading."""
    return f"Notebook {label(key).replace(' §', ' §', 1)} · {SECTIONS[key][1].split(' · ')[-1]}"


def label(key: str) -> str:
    """'03 §4': the notebook and the section the heading is (or sits in)."""
    nb, heading, *within = SECTIONS[key]
    number = within[0] if within else heading.split(" · ")[0]
    return f"{nb[:2]} §{number}"
