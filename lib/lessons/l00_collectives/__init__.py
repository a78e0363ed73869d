"""Notebook 00 · Collectives from scratch (parlab.comm, parlab.collectives).

  experiments.py, experiments_hierarchical.py  rank workers and the pure functions that turn
                     their results into data (each collective, the ring step by step, bytes
                     per rank, the alpha-beta fit, two levels)
  explorer.py        the all-reduce cost explorer's pure parts
  cells.py           what the pictures hold, as plain data
  figures.py, widgets.py  what the notebook shows
  exercises.py, exercises_hierarchical.py, hints.py  "Your turn": checkers, reference
                     solutions and their hints
  drills.py          interview drills on collectives
"""
