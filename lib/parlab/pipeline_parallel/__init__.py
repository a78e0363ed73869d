"""Pipeline parallelism (notebook 03). Read in this order:

  schedules.py    schedules as data (GPipe, 1F1B, interleaved 1F1B, ZB-H1) and a simulator
  stages.py       the reference GPT cut into stages
  executor.py     one executor that runs any schedule's action list on a process group
  compute.py      what an op computes: real stages or emulated (sleeps); activation bytes
  runner.py       PPRun (checked before any process starts), run(), PipelineResult
  peers.py        torch.distributed.pipelining on the same stages
  experiments.py  the notebook's experiments; figures.py, widgets.py draw them

    result = run(PPRun(config=GPTConfig(...), steps=3, batch_size=8, schedule="1f1b",
                       p=2, m=4), world_size=2)
"""

from .compute import ActivationProbe, EmulatedCompute, RealCompute, Stash  # noqa: F401
from .executor import PipelineExecutor  # noqa: F401
from .runner import PipelineResult, PPRun, collect, pipeline_worker, run  # noqa: F401
from .schedules import (SCHEDULES, Action, Timeline, bubble, dependency,  # noqa: F401
                        make_schedule, op_durations, peak_in_flight, replay, simulate, validate)
from .stages import Stage, build_stages, split_layers  # noqa: F401
