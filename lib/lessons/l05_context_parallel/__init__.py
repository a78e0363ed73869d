"""Notebook 05 · Context parallelism (parlab.context_parallel).

  experiments.py          who computes what, bytes per rank, ring hiding, live runs
  figures.py, widgets.py  what the notebook shows
  exercises.py, hints.py  "Your turn"
  drills.py               interview drills on ring attention and Ulysses
"""
