"""Notebook 01 · Data parallelism and ZeRO (parlab.data_parallel, parlab.zero).

  experiments.py       DP: exchanges, bucketing, overlap, compression (and bench/data_parallel.py)
  experiments_zero.py  ZeRO and FSDP: ours beside torch's, interleaved in the same processes
                       (and bench/zero.py); FSDP's modes and HSDP's traffic
  figures.py, widgets.py, widgets_zero.py  what the notebook shows (the memory calculator)
  exercises.py (+ exercises_dp_exchange.py, exercises_hsdp.py), hints.py  "Your turn"
  drills.py, drills_memory.py  interview drills: DP and ZeRO; memory and FLOPs
"""
