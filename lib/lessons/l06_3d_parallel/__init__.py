"""Notebook 06 · 3D (N-D) parallelism (parlab.parallel_nd, parlab.planner).

  experiments.py       layouts on real ranks, emulated sweeps, the planner against papers
  experiments_clip.py  global-norm clipping on a split model, measured
  figures.py, widgets.py  what the notebook shows (the planner explorer)
  exercises.py (+ exercises_clip.py), hints.py  "Your turn"
  interview.py         the answers of the interview corner (§6) and of §2's ZeRO-2 question
  text.py              their words, the checkers' messages and the widget's labels, in English
                       and Chinese
  drills.py            interview drills on composed layouts
"""
