"""Pipeline parallelism (taught in notebook 03). Read in this order:

  schedules.py    schedules as data (GPipe, 1F1B, interleaved 1F1B, ZB-H1) and a simulator
  schedules_zb.py ZB-H2, ZB-V and DualPipe as data; placement.py: which rank holds each stage
  stages.py       PipelineStage: any ordered list of modules; BlockAdapter: another model's
                  block (masks, rotary tables, tuple outputs) as one; the lab's GPT cut
  executor.py     one executor that runs a schedule given as data (every rank's action
                  list and the placement) on a process group
  compute.py      what an op computes: real stages or emulated (sleeps)
  backward.py     the backward split in two: B (input gradient), then W (weight
                  gradients) from the gradients B kept, without walking B's part again
  runner.py       PPRun (checked before any process starts), run(), PipelineResult;
                  StagesRecipe: what every pipeline rank does (shared with parallel_nd)
  peers.py        torch.distributed.pipelining on the same stages (PPRun(peer=...))

    result = run(PPRun(config=GPTConfig(...), steps=3, batch_size=8, schedule="1f1b",
                       p=2, micro_batches=4), world_size=2)
"""

from .compute import EmulatedCompute, RealCompute, Stash  # noqa: F401
from .executor import PipelineExecutor  # noqa: F401
from .runner import PipelineResult, PPRecipe, PPRun, collect, run, train_worker  # noqa: F401
from .placement import Placement, check_actions  # noqa: F401
from .schedules import (SPLIT_BACKWARD, Action, Timeline, bubble, dependency,  # noqa: F401
                        make_schedule, op_durations, peak_in_flight, placement_of, replay,
                        simulate, validate)
from .stages import BlockAdapter, PipelineStage, gpt_stages, split_layers  # noqa: F401
