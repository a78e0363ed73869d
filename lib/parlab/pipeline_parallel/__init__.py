"""Pipeline parallelism (notebook 03). Read in this order:

  schedules.py    schedules as data (GPipe, 1F1B, interleaved 1F1B, ZB-H1) and a simulator
  stages.py       the reference GPT cut into stages
  executor.py     one executor that runs any schedule's action list on real ranks
  runner.py       run(): check, launch, gather (RunResult)
  peers.py        torch.distributed.pipelining on the same stages
  experiments.py  the notebook's experiments; figures.py, widgets.py draw them
"""

from .runner import RunResult, pipeline_worker, run  # noqa: F401
from .schedules import (SCHEDULES, Action, Timeline, bubble, dependency,  # noqa: F401
                        make_schedule, op_durations, peak_in_flight, replay, simulate, validate)
from .stages import Stage, build_stages, split_layers  # noqa: F401
