"""Interview drills: randomised questions whose answers are computed by ``parlab.cost``.

(Work in progress: the question bank is being filled in.)
"""

TOPICS = ("collectives", "dp_zero", "tp_sp", "pp", "moe_ep", "memory_flops", "cp", "3d")

__all__ = ["TOPICS"]
