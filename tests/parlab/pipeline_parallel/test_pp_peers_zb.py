"""Our ZB-V against torch's own V schedules on the same stages: ``ScheduleZBVZeroBubble``
and ``ScheduleDualPipeV`` (torch's one-copy DualPipe) give the losses, gradients and
parameters of one device and of ours; bad peer choices are refused before any rank starts."""
import dataclasses

import pytest

from parlab.model import GPTConfig, max_differences, reference_train
from parlab.pipeline_parallel import PPRun, run

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=8)  # 2p stages at p=4
STEPS, BATCH, LR = 3, 16, 1e-3
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}


@pytest.fixture(scope="module")
def ref():
    return reference_train(CFG, STEPS, BATCH, LR)


def zbv(p, m):
    return PPRun(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, schedule="zb-v", v=2, p=p,
                 micro_batches=m)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("p, m", [(2, 4), (4, 8)])
def test_torch_v_schedules_equal_ours_and_one_device(ref, p, m):
    ours = run(zbv(p, m), p)
    d = max_differences(ours, ref)
    assert all(d[k] < TOL[k] for k in TOL), d
    for peer in ("pipelining", "dualpipev"):
        theirs = run(dataclasses.replace(zbv(p, m), peer=peer), p, timeout=120)
        for other in (ref, ours):
            d = max_differences(theirs, other)
            assert all(d[k] < TOL[k] for k in TOL), (peer, d)


@pytest.mark.parametrize("make, kw, match", [
    (lambda: zbv(2, 4), dict(peer="dualpipe"), "peer='dualpipe'"),
    (lambda: zbv(2, 2), dict(peer="dualpipev"), "micro_batches >= 2p"),
    (lambda: PPRun(config=CFG, p=2, micro_batches=4), dict(peer="dualpipev"), "schedule='zb-v'"),
])
def test_bad_peer_is_refused(make, kw, match):
    with pytest.raises(ValueError, match=match):
        run(dataclasses.replace(make(), **kw), 2)
