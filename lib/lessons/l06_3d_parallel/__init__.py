"""Notebook 06 · 3D (N-D) parallelism (parlab.parallel_nd, parlab.planner).

  experiments.py       layouts on real ranks, emulated sweeps, the planner against papers
  experiments_clip.py  global-norm clipping on a split model, measured
  figures.py, widgets.py  what the notebook shows (the planner explorer)
  exercises.py (+ exercises_clip.py), hints.py  "Your turn"
  drills.py            interview drills on composed layouts
"""
