"""Notebook 08 · Checkpoints and failures (parlab.checkpoint, parlab.cost.reliability).

  training.py          the training run that saves and resumes at any layout, with the
                       lesson's planted restore mistakes
  stall.py             how long a save stops training: sync against async
  failover.py, elastic_worker.py  a rank killed under torchrun, the group restarted and
                       resumed (python -m lessons failover)
  lifeline.py          what ends failover's processes and files with its caller
  tp_resume.py         DCP with torch's DTensor TP, resharded
  stragglers.py        one slow rank in a synchronous job, emulated
  experiments.py       the notebook's measurements as data
  checks.py            the demos' argument checks and caps (steps, repeats, model size...)
  figures.py, widgets.py  what the notebook shows
  exercises.py, hints.py  "Your turn"
  drills.py            interview drills on reliability
"""
