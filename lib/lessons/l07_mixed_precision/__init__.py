"""Notebook 07 · Mixed precision (parlab.precision).

  models.py            the small models and batch the experiments share
  experiments.py       master weights, loss scaling, autocast, communication precision
  experiments_fp8.py   fp8 quantization and training, bytes per parameter by recipe
  figures.py           what the notebook shows
  exercises.py, hints.py  "Your turn"
  drills.py            interview drills on precision
"""
