"""Notebook 04 · Mixture of Experts and expert parallelism (parlab.moe,
parlab.expert_parallel).

  experiments.py           routing, capacity and drops, all-to-all bytes, live runs
  experiments_variants.py  DeepSeekMoE, expert choice and dropless, each on real ranks
  figures.py, widgets.py   what the notebook shows
  exercises.py (+ exercises_variants.py), hints.py  "Your turn"
  drills.py                interview drills on MoE and EP
"""
