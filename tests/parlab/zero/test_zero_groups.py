"""ZeRO on sub-groups: every stage (and torch's DDP and FSDP2, the latter on a
DeviceMesh made from the group) takes its process group and never assumes the world or
the global rank. A 4-rank launch is cut by ``mesh.split(2)`` into ranks {0, 1} and
{2, 3}; each pair trains its own stage at the same time, on its own data (group i:
``data_seed=i``), and each must equal ``reference_train`` on that data at the
tolerances of test_zero.py."""

import pytest
import workers_dp
from test_zero import CFG, LR, STEPS, WD, assert_matches

from parlab import cost, launch, zero
from parlab.model import GPT
from parlab.zero import ZeroRun

BATCH = 8


@pytest.fixture(scope="module")
def refs():
    from parlab.model import reference_train
    return {seed: reference_train(CFG, STEPS, BATCH, lr=LR, weight_decay=WD, data_seed=seed)
            for seed in (0, 1)}


def two_groups(runs):
    out = launch(workers_dp.zero_on_subgroups, 4, runs, timeout=90)
    assert [(r["world_rank"], r["group"]) for r in out] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    return [zero.collect(run, out[2 * i:2 * i + 2]) for i, run in enumerate(runs)]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("stages", [(0, 1), (2, 3), ("fsdp2", "ddp")],
                         ids=["stage0+stage1", "stage2+stage3", "fsdp2+ddp"])
def test_two_groups_in_one_launch_each_match_the_reference(refs, stages):
    runs = [ZeroRun(CFG, steps=STEPS, batch_size=BATCH, lr=LR, weight_decay=WD, zero_stage=s,
                    data_seed=i, bucket_bytes=4096 if i else 25 << 20)
            for i, s in enumerate(stages)]
    n_params = GPT(CFG).num_params()
    for run, result in zip(runs, two_groups(runs)):
        assert_matches(result, refs[run.data_seed])
        if run.zero_stage in cost.ZERO_STAGES:
            # sharded over the group's 2 ranks, not the world's 4 (stage 1 also holds its
            # own shard's averaged gradient)
            want = cost.zero_memory(n_params, 2, run.zero_stage, 4, 4, 8)
            own = n_params * 4 // 2 if run.zero_stage == 1 else 0
            assert all(m["params"] == want["params"] and m["grads"] == want["grads"] + own
                       for m in result.memory), (run.zero_stage, result.memory)
            assert {e["rank"] for e in result.events} == {0, 1}
