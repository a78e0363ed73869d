"""Clipping by the global gradient norm on a dp x pp x tp mesh (parallel_nd/clip.py):
the norm each step equals one device's (torch.nn.utils.clip_grad_norm_), clipping
changes the run (max_norm below the norm), and losses and parameters after the clipped
steps equal the clipped reference. Planted: TP-replicated parameters counted t times,
the partial sums added over DP too, the stages' sums never added -- each gives another
norm. Under ZeRO 1-3 (each replica holds a shard of every gradient), CP and EP (experts
differ over the EP group) the norm is still one device's; planted there: ZeRO's shards
never summed over DP, the dense gradients counted on every rank of the EP group."""
import pytest
from parlab.model import GPTConfig, max_differences, reference_train
from parlab.parallel_nd import NDRun
from lessons.l06_3d_parallel.experiments_clip import clip_rows, clipped_run

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4)
MOE = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4, n_experts=4,
                top_k=2, aux_loss_coef=0.0)  # no capacity: micro-batches route as one batch
STEPS, BATCH, LR, MAX_NORM = 3, 16, 1e-3, 0.5
TOL = {"loss": 2e-6, "grad": 1e-6, "param": 1e-5}


@pytest.fixture(scope="module")
def ref():
    return reference_train(CFG, STEPS, BATCH, LR, max_grad_norm=MAX_NORM)


@pytest.fixture(scope="module")
def moe_ref():
    return reference_train(MOE, STEPS, BATCH, LR, max_grad_norm=MAX_NORM)


def make(dp, pp, tp, **kw):
    fields = dict(config=CFG, steps=STEPS, batch_size=BATCH, lr=LR, micro_batches=2,
                  max_grad_norm=MAX_NORM)
    return NDRun(**{**fields, **kw}, dp=dp, pp=pp, tp=tp)


def _norm(grads):
    return sum(float(g.pow(2).sum()) for g in grads.values()) ** 0.5


def clipped(run, bug=None):
    return clipped_run(run, bug)


def test_the_reference_clips(ref):
    assert all(n > MAX_NORM for n in ref["grad_norms"])  # so every step was clipped
    assert _norm(ref["grads"]) == pytest.approx(MAX_NORM, rel=1e-4)  # the last step's, clipped
    plain = reference_train(CFG, 1, BATCH, LR)
    assert _norm(plain["grads"]) == pytest.approx(ref["grad_norms"][0], rel=1e-5)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("dp, pp, tp, zero", [(2, 1, 2, 0), (1, 2, 2, 0), (2, 2, 1, 0)])
def test_clipped_3d_run_equals_one_device(ref, dp, pp, tp, zero):
    r = clipped(make(dp, pp, tp, zero_stage=zero))
    d = max_differences(r, ref)
    assert all(d[k] < TOL[k] for k in TOL), d
    for row in r.ranks:  # the same norm on every rank, equal to one device's
        assert row["grad_norms"] == pytest.approx(ref["grad_norms"], rel=1e-5)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("dp, pp, tp, kw", [
    (2, 1, 2, dict(zero_stage=1)),
    (2, 2, 1, dict(zero_stage=2)),
    (2, 1, 2, dict(zero_stage=3)),
    (1, 2, 2, dict(zero_stage=3)),
    (1, 1, 2, dict(cp=2)),
    (1, 1, 2, dict(cp=2, zero_stage=2)),
])
def test_clipped_sharded_runs_equal_one_device(ref, dp, pp, tp, kw):
    r = clipped(make(dp, pp, tp, **kw))
    d = max_differences(r, ref)
    assert all(d[k] < TOL[k] for k in TOL), (kw, d)
    for row in r.ranks:
        assert row["grad_norms"] == pytest.approx(ref["grad_norms"], rel=1e-5), kw


@pytest.mark.timeout(300)
@pytest.mark.parametrize("dp, pp, tp, zero", [(2, 1, 2, 0), (4, 1, 1, 0), (4, 1, 1, 2)])
def test_clipped_expert_parallel_runs_equal_one_device(moe_ref, dp, pp, tp, zero):
    r = clipped(make(dp, pp, tp, config=MOE, ep=2, zero_stage=zero))
    d = max_differences(r, moe_ref)
    assert all(d[k] < 2 * TOL[k] for k in TOL), d  # routing rounds a little more
    for row in r.ranks:
        assert row["grad_norms"] == pytest.approx(moe_ref["grad_norms"], rel=1e-5)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("bug, kw", [("shards_not_summed", dict(zero_stage=1)),
                                     ("shards_not_summed", dict(zero_stage=3)),
                                     ("dense_on_every_ep_rank", dict(config=MOE, ep=2))])
def test_a_wrong_sharded_norm_is_caught(ref, moe_ref, bug, kw):
    r = clipped(make(2, 1, 2, **kw), bug)
    want = (moe_ref if "ep" in kw else ref)["grad_norms"][0]
    assert abs(r.ranks[0]["grad_norms"][0] / want - 1) > 0.01, (bug, kw)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("bug, layout", [("replicated_t_times", (1, 2, 2)),
                                         ("summed_over_dp", (2, 2, 1)),
                                         ("no_pp_sum", (1, 2, 2))])
def test_a_wrong_norm_is_caught(ref, bug, layout):
    r = clipped(make(*layout), bug)
    first = r.ranks[0]["grad_norms"][0]
    assert abs(first / ref["grad_norms"][0] - 1) > 0.01, (bug, first, ref["grad_norms"][0])
    assert max_differences(r, ref)["param"] > TOL["param"]


@pytest.mark.parametrize("kw, field", [(dict(max_grad_norm=0.0), "max_grad_norm"),
                                       (dict(max_grad_norm="1"), "max_grad_norm"),
                                       (dict(compute="emulated"), "compute")])
def test_bad_max_grad_norm_is_refused(kw, field):
    with pytest.raises(ValueError, match=field):
        make(2, 1, 2, **{"max_grad_norm": MAX_NORM, **kw}).check(4)


def test_clip_rows_and_bad_bug():
    rows = clip_rows(steps=1)
    assert [r["rule"] == "right" for r in rows] == [True, True, False, False, False]
    for r in rows:
        assert (abs(r["ratio"] - 1) < 1e-5) == (r["rule"] == "right"), r
    with pytest.raises(ValueError, match="bug='typo'"):
        clipped_run(make(2, 1, 2), "typo")
