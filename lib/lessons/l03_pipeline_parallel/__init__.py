"""Notebook 03 · Pipeline parallelism (parlab.pipeline_parallel).

  experiments.py     schedules simulated and run, the bubble against the formula, the peer
  experiments_zb.py  past ZB-H1: ZB-H2, ZB-V, DualPipe and interleaving's memory
  torch_orders.py    the orders torch plays for the V schedules, read off and replayed
  figures.py, figures_zb.py, widgets.py  what the notebook shows
  exercises.py (+ exercises_schedules.py, exercises_zero_bubble.py, exercises_forward.py),
  hints.py           "Your turn"
  drills.py          interview drills on pipelines
"""
