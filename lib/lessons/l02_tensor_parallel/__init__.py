"""Notebook 02 · Tensor and sequence parallelism (parlab.tensor_parallel).

  experiments.py          collectives counted per layer, memory, live runs, the GPU-scale model
  experiments_overlap.py  forward overlap by chunking, measured
  figures.py, widgets.py  what the notebook shows
  exercises.py (+ exercises_overlap.py), hints.py  "Your turn"
  drills.py               interview drills on TP and SP
  interview.py, text.py   §11's answers; answers, checker messages, explorer labels in English and 中文
"""
