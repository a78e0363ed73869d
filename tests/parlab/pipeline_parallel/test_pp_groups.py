"""Pipelines on sub-groups: the executor takes its process group and never assumes the
world or the global rank. A 4-rank launch is cut by ``mesh.split(2)`` into ranks {0, 1}
and {2, 3}; each pair runs its own 2-stage pipeline at the same time, and each must
equal ``reference_train`` at the single-pipeline tolerance (test_pipeline_parallel.py)."""

import pytest
import workers_pp

from parlab import launch
from parlab import pipeline_parallel as pp
from parlab.model import GPTConfig, max_differences, reference_train
from parlab.pipeline_parallel import PPRun
from parlab.runs import RunResult

CFG = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16)
STEPS, BATCH, LR = 3, 8, 1e-3


@pytest.fixture(scope="module")
def ref():
    return reference_train(CFG, STEPS, BATCH, LR)


def two_pipelines(runs, peer=False):
    out = launch(workers_pp.pipelines_on_subgroups, 4, runs, peer=peer, timeout=90)
    assert [(r["world_rank"], r["group"]) for r in out] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    return [out[:2], out[2:]]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("schedules", [
    (("1f1b", 4, 1), ("gpipe", 4, 1)),
    (("interleaved", 2, 2), ("zb-h1", 4, 1)),
])
def test_two_pipelines_in_one_launch_each_match_the_reference(ref, schedules):
    runs = [PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, schedule=s, p=2, micro_batches=m, v=v)
            for s, m, v in schedules]
    for run, ranks in zip(runs, two_pipelines(runs)):
        result = pp.collect(run, ranks)
        d = max_differences(result, ref)
        assert max(d.values()) < 2e-6, (run.schedule, d)
        # the stages are the group's ranks 0 and 1 (not world ranks 2 and 3) ...
        assert {e["rank"] for e in result.events} == {0, 1}
        # ... and every op ran in the schedule's order on its stage
        for rank, actions in enumerate(pp.make_schedule(run.schedule, 2, run.micro_batches, run.v)):
            ops = sorted((e for e in result.events if e["rank"] == rank and e["name"] in "FBW"
                          and e["meta"]["step"] == 0), key=lambda e: e["start"])
            assert [(e["name"], e["meta"]["mb"], e["meta"]["chunk"]) for e in ops] == \
                [tuple(a) for a in actions]
        sends = [e for e in result.events if e["name"].startswith("send")]
        assert sends and {e["meta"]["peer"] for e in sends} == {0, 1}


@pytest.mark.timeout(180)
def test_a_pipeline_that_trains_on_other_data_differs(ref):
    # planted bug: the second group's data seed differs -- the check must see it
    runs = [PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, schedule="1f1b", p=2, micro_batches=4),
            PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, schedule="1f1b", p=2, micro_batches=4,
                  data_seed=1)]
    same, other = (max_differences(pp.collect(r, ranks), ref)
                   for r, ranks in zip(runs, two_pipelines(runs)))
    assert max(same.values()) < 2e-6 and min(other.values()) > 1e-4, (same, other)


@pytest.mark.timeout(180)
def test_torch_pipelining_on_subgroups_too(ref):
    runs = [PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, schedule=s, p=2, micro_batches=4)
            for s in ("1f1b", "gpipe")]
    for run, ranks in zip(runs, two_pipelines(runs, peer=True)):
        d = max_differences(RunResult.gather(run, ranks), ref)
        assert max(d.values()) < 2e-6, d
