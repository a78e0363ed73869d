"""Collectives (notebook 00). The hand-written ring collectives themselves are in the
core, ``parlab.comm``, because every strategy uses them; this package holds the
notebook's companions:

  experiments.py  rank workers and the pure functions that turn their results into data
  explorer.py     the cost explorer's pure parts: which links reach how many ranks, its curves
  cells.py        what the pictures hold, as plain data
  figures.py      each collective before/after, the ring step by step, bytes, alpha-beta, tables
  widgets.py      thin ipywidgets shells over the two
"""
