"""Data parallelism on sub-groups: every rank-side piece (the train worker, NaiveDP,
BucketedDP, CompressedDP, TorchDDP, the batch slicing) takes its process group and
never assumes the world or the global rank. A 4-rank launch is cut by ``mesh.split(2)``
into ranks {0, 1} and {2, 3}; each pair trains its own run at the same time, on its own
data (group i: ``data_seed=i``), and each must equal ``reference_train`` on that data at
the tolerances of test_data_parallel.py."""

import pytest
import workers_dp
from test_data_parallel import CFG, STEPS, TOL, assert_matches

from parlab import data_parallel as dp
from parlab import launch
from parlab.data_parallel import DPRun
from parlab.model import max_differences, reference_train

BATCH = 8


@pytest.fixture(scope="module")
def refs():
    return {seed: reference_train(CFG, STEPS, BATCH, data_seed=seed) for seed in (0, 1)}


def two_groups(runs):
    out = launch(workers_dp.dp_on_subgroups, 4, runs, timeout=90)
    assert [(r["world_rank"], r["group"]) for r in out] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    return [dp.collect(run, out[2 * i:2 * i + 2]) for i, run in enumerate(runs)]


PAIRS = [  # (group 0's DPRun fields, group 1's)
    ({"variant": "naive"}, {"variant": "bucketed", "bucket_bytes": 4096}),
    ({"variant": "ddp", "bucket_bytes": 4096}, {"variant": "bucketed", "micro_batches": 2}),
    ({"variant": "naive", "compression": "topk", "topk_ratio": 1.0}, {"variant": "ddp"}),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fields", PAIRS, ids=["naive+bucketed", "ddp+accumulation", "topk+ddp"])
def test_two_groups_in_one_launch_each_match_the_reference(refs, fields):
    runs = [DPRun(CFG, steps=STEPS, batch_size=BATCH, data_seed=i, trace=True, **f)
            for i, f in enumerate(fields)]
    for run, result in zip(runs, two_groups(runs)):
        assert_matches(result, refs[run.data_seed])  # also: the two replicas are equal
        # the ranks are the group's 0 and 1 (not world ranks 2 and 3), and both sent the
        # same traced bytes (torch's DDP is not traced)
        assert [r["rank"] for r in result.ranks] == [0, 1]
        assert {e["rank"] for e in result.events} == {0, 1}
        sent = [r["bytes_sent"] for r in result.ranks]
        assert sent[0] == sent[1] and (sent[0] > 0) == (run.variant != "ddp")


@pytest.mark.timeout(180)
def test_a_group_that_trains_on_other_data_differs(refs):
    # the check can fail: group 1's run is compared with the reference of the other data
    runs = [DPRun(CFG, steps=STEPS, batch_size=BATCH, variant="bucketed", bucket_bytes=4096,
                  data_seed=i) for i in (0, 1)]
    same, other = (max_differences(r, refs[0]) for r in two_groups(runs))
    assert all(same[k] <= TOL[k] for k in TOL), same
    assert other["loss"] > 100 * TOL["loss"] and other["grad"] > 100 * TOL["grad"], other
