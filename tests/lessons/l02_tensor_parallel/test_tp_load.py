"""Notebook 02's lessons drawn from a timing, checked beside two CPU hogs (``cpu_hogs``).

Claims and how they are tested:
* §7 "tensor parallelism splits the work but does not reduce it": CPU seconds per step,
  summed over the ranks, are larger at t = 4 than at t = 1 (``experiments.cpu_work``;
  CPU time, not wall-clock time, so other programs on the cores cannot reverse it).
* §7's wall-clock tokens/s and §8's overlap gain are shown as noisy, with the machine's
  load, and no direction is claimed from them: under load more ranks win a larger share
  of the cores (the notebook says so), and the overlap gain changes sign.
"""

from lessons.l02_tensor_parallel import experiments as ex


def test_tp_adds_cpu_work_under_load(cpu_hogs):
    rows = ex.cpu_work(ex.MEDIUM, tps=(1, 4), batch_size=8, steps=3, repeats=2)
    one, four = rows
    assert four["cpu_s"] > one["cpu_s"], rows
