"""Parallelism Lab's library: distributed-training strategies, each a set of parts that
wrap any model and a process group, run on whatever hardware is here.

It needs only torch and the standard library, and never imports the lessons (the
notebooks' experiments, figures, widgets and exercises live in the ``lessons`` package
beside it).
"""

from .launch import LaunchError, LaunchTimeout, launch, pool_info, run_on_ranks, shutdown

__all__ = ["launch", "run_on_ranks", "shutdown", "pool_info", "LaunchError", "LaunchTimeout"]
__version__ = "0.1.0"
