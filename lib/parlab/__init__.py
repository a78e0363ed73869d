"""Parallelism Lab: run distributed-training strategies on whatever hardware is here.

The core (launch, comm, trace, model, data, cost, hardware and the strategies)
needs only torch and the standard library; figures (``parlab.viz``) and widgets
(``parlab.widgets``) import plotly / ipywidgets when you import them.
"""

from .launch import LaunchError, LaunchTimeout, launch, pool_info, run_on_ranks, shutdown

__all__ = ["launch", "run_on_ranks", "shutdown", "pool_info", "LaunchError", "LaunchTimeout"]
__version__ = "0.1.0"
