"""parlab.planner's inputs (issue 25, item 4): every argument of estimate, predict, plan,
best_micro_batch and the ModelSpec / Layout / Cluster constructors refused with a
ValueError naming it; the divisibility the model assumes (and the uneven stages it
allows); no loop as long as the batch; plan raising its own bad arguments and filing
only the layouts the model cannot run (LayoutError) or fit as infeasible."""

import time

import pytest

from parlab import cost, planner
from parlab.planner import (Cluster, Layout, LayoutError, ModelSpec, best_micro_batch,
                            cluster_for, estimate, plan, predict, resolve_model)
from parlab.planner.estimate import divisors

SMALL = dict(n_layers=4, d_model=256, n_heads=8, seq_len=128, vocab_size=1000)
BASE = dict(**SMALL, n_gpus=8, tp=2, pp=1, global_batch=16)
TINY = {"n_layers": 4, "d_model": 256, "n_heads": 8, "seq_len": 128, "vocab_size": 1000}


def _objects():
    model = resolve_model(TINY)
    return model, cluster_for("A100"), Layout(tp=2)


# --- divisors: from the prime factors, trial division to sqrt(n) at most -----------------

def test_divisors_are_every_divisor_smallest_first():
    for n in range(1, 400):
        assert divisors(n) == tuple(d for d in range(1, n + 1) if n % d == 0), n
    assert divisors(10**12)[:4] == (1, 2, 4, 5) and len(divisors(10**12)) == 169
    assert divisors(8 * 999_999_999_989) == (1, 2, 4, 8, 999_999_999_989, 2 * 999_999_999_989,
                                             4 * 999_999_999_989, 8 * 999_999_999_989)
    for bad in (0, True, 6.0):
        with pytest.raises(ValueError, match=f"n={bad!r}"):
            divisors(bad)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("global_batch", [10**12, 64 * 10**9, 8 * 999_999_999_989])
def test_a_huge_batch_answers_in_bounded_time(global_batch):
    # 8 x a prime near 10**12: the worst case of the trial division (sqrt(n) / 2 steps);
    # the search stops at the first micro-batch that no longer fits instead of walking
    # every divisor up to the batch
    t0 = time.perf_counter()
    e = estimate(**{**BASE, "global_batch": global_batch})
    assert e.fits and e.global_batch == global_batch and global_batch % (e.dp * e.micro_batch) == 0
    p = plan(TINY, 8, "A100", global_batch=global_batch, tps=(1, 2), pps=(1, 2))
    assert p.ranked and p.global_batch == global_batch
    assert time.perf_counter() - t0 < 20


def test_global_batch_must_be_an_integer():
    with pytest.raises(ValueError, match="global_batch=64000000000.0"):
        estimate(**{**BASE, "global_batch": 64e9})
    with pytest.raises(ValueError, match="global_batch=True"):
        plan("7B", 8, global_batch=True)


def test_the_micro_batch_search_equals_trying_every_divisor():
    # stopping at the first micro-batch that does not fit loses nothing: memory only grows
    # with the micro-batch
    model, cluster, _ = _objects()
    for lay, n, B in ((Layout(tp=2), 8, 96), (Layout(tp=1, pp=2, v=2), 8, 64),
                      (Layout(tp=2, zero_stage=3), 8, 1024)):
        got = best_micro_batch(model, cluster, lay, n, B)
        dp = n // (lay.tp * lay.pp * lay.cp)
        every = []
        for b in range(1, B // dp + 1):
            try:
                every.append(predict(model, cluster, Layout(**{**lay.__dict__, "micro_batch": b}),
                                     n, B))
            except LayoutError:
                continue
        fits = [e for e in every if e.fits]
        assert got.fits and got.step_time.total == min(e.step_time.total for e in fits)
        if lay.v > 1:
            assert (B // dp // got.micro_batch) % lay.pp == 0


# --- the model's shape and the divisibility it assumes ---------------------------------------

@pytest.mark.parametrize("kw, field", [
    (dict(d_model=4100, n_heads=32), "n_heads=32 must divide d_model=4100"),
    (dict(n_heads=8, n_kv_heads=3), "n_kv_heads=3 must divide n_heads=8"),
    (dict(tp=3, n_gpus=12), "tp=3 must divide n_heads=8"),
    (dict(n_layers=6, pp=4), "pp=4 must divide n_layers=6"),
    (dict(n_layers=6, pp=2, v=2), r"pp\*v=4 must divide n_layers=6"),
    (dict(n_layers=4, pp=2, v=4, uneven_stages=True, global_batch=32),
     r"pp\*v=8 must be <= n_layers \+ 2 = 6"),
    (dict(cp=3, tp=1, n_gpus=3, global_batch=3), "cp=3"),
    (dict(capacity_factor=1.25), "capacity_factor=1.25: only a mixture-of-experts"),
    (dict(d_model=None), "d_model=None"), (dict(n_heads=2.0), "n_heads=2.0"),
    (dict(seq_len=0), "seq_len=0"), (dict(vocab_size=True), "vocab_size=True"),
    (dict(n_gpus=8.0), "n_gpus=8.0"), (dict(pp=0), "pp=0"), (dict(tp=True), "tp=True"),
    (dict(micro_batch=0), "micro_batch=0"), (dict(micro_batch=2.0), "micro_batch=2.0"),
    (dict(constants=1), "constants=1"), (dict(shape=1), "shape=1"),
    (dict(gpus_per_node=0), "gpus_per_node=0"), (dict(nvlink_domain=3), "nvlink_domain=3"),
    (dict(tied_embeddings=1), "tied_embeddings=1"), (dict(learned_positions="no"),
                                                      "learned_positions="),
    (dict(dp_overlap=0), "dp_overlap=0"), (dict(uneven_stages=None), "uneven_stages=None"),
    (dict(ends_as_layers=1), "ends_as_layers=1"),
    (dict(n_layers=7, tp=1, pp=4, ends_as_layers=True),
     r"pp=4 must divide n_layers \+ 2 = 9 with ends_as_layers=True"),
    (dict(n_layers=8, pp=2, v=2, ends_as_layers=True, global_batch=32),
     r"pp\*v=4 must divide n_layers \+ 2 = 10"),
    (dict(ep_dispatch="fast"), "ep_dispatch="), (dict(zero_stage=True), "zero_stage=True"),
    (dict(n_experts=8, top_k=2, capacity_factor=float("inf")), "capacity_factor=inf"),
])
def test_estimate_names_the_argument(kw, field):
    with pytest.raises(ValueError, match=field):
        estimate(**{**BASE, **kw})


def test_layouts_the_model_cannot_run_are_layout_errors():
    for kw in (dict(tp=3, n_gpus=12), dict(n_layers=6, pp=4), dict(global_batch=6)):
        with pytest.raises(LayoutError):
            estimate(**{**BASE, **kw})
    assert issubclass(LayoutError, ValueError)  # callers catching ValueError still do


def test_uneven_stages_are_allowed_where_the_model_allows_them():
    # 6 layers on 4 stages, and 2 x 4 chunks holding 6 layers + the embedding and the loss
    # (Llama 3 405B's 126 layers on 16 x 8 chunks)
    e = estimate(**{**BASE, "n_layers": 6, "tp": 1, "pp": 4, "n_gpus": 4},
                 uneven_stages=True)
    assert e.pp == 4
    e = estimate(**{**BASE, "n_layers": 6, "pp": 2, "v": 4, "global_batch": 32},
                 uneven_stages=True, micro_batch=1)
    assert e.v == 4


def test_a_shape_and_a_disagreeing_d_model_are_refused():
    shape = cost.LayerShape(512, 8)
    assert estimate(4, None, None, 128, 1000, 8, 2, 1, 16, shape=shape).d_model == 512
    assert estimate(4, 512, 8, 128, 1000, 8, 2, 1, 16, shape=shape).d_model == 512
    with pytest.raises(ValueError, match="d_model=256 disagrees with shape.d_model=512"):
        estimate(**BASE, shape=shape)


# --- the objects: ModelSpec, Cluster, Layout; predict and best_micro_batch -------------------

MODEL_CASES = [(dict(name=1), "name=1"), (dict(n_layers=0), "n_layers=0"),
               (dict(seq_len=1.5), "seq_len=1.5"), (dict(shape=None), "shape=None"),
               (dict(tied_embeddings=0), "tied_embeddings=0"), (dict(source=None), "source=")]
CLUSTER_CASES = [(dict(gpu="A100"), "gpu='A100'"), (dict(inter_link="IB-HDR"), "inter_link="),
                 (dict(intra_link=None), "intra_link=None"),
                 (dict(gpus_per_node=0), "gpus_per_node=0"),
                 (dict(nics_per_node=1.0), "nics_per_node=1.0"),
                 (dict(nvlink_domain=3), "nvlink_domain=3")]
LAYOUT_CASES = [(dict(tp=0), "tp=0"), (dict(v=1.0), "v=1.0"), (dict(ep=True), "ep=True"),
                (dict(micro_batch=-1), "micro_batch=-1"), (dict(recompute=None), "recompute="),
                (dict(dtype="fp32"), "dtype="), (dict(capacity_factor=0), "capacity_factor=0"),
                (dict(sequence_parallel="yes"), "sequence_parallel=")]


def test_the_constructors_name_the_field():
    model, cluster, _ = _objects()
    for kw, field in MODEL_CASES:
        with pytest.raises(ValueError, match=field):
            ModelSpec(**{"name": "m", "n_layers": 4, "seq_len": 128, "vocab_size": 1000,
                         "shape": model.shape, **kw})
    good = dict(gpu=cluster.gpu, intra_link=cluster.intra_link, inter_link=cluster.inter_link,
                gpus_per_node=8, nics_per_node=8, nvlink_domain=8)
    for kw, field in CLUSTER_CASES:
        with pytest.raises(ValueError, match=field):
            Cluster(**{**good, **kw})
    for kw, field in LAYOUT_CASES:
        with pytest.raises(ValueError, match=field):
            Layout(**kw)


def test_predict_and_best_micro_batch_name_their_arguments():
    model, cluster, lay = _objects()
    for f in (predict, best_micro_batch):
        for args, field in (((TINY, cluster, lay, 8, 16), "model="),
                            ((model, "A100", lay, 8, 16), "cluster='A100'"),
                            ((model, cluster, dict(tp=2), 8, 16), "layout="),
                            ((model, cluster, lay, 0, 16), "n_gpus=0"),
                            ((model, cluster, lay, 8, 16.0), "global_batch=16.0"),
                            ((model, cluster, lay, 8, 16, None, "c") if f is best_micro_batch
                             else (model, cluster, lay, 8, 16, "c"), "constants='c'")):
            with pytest.raises(ValueError, match=field):
                f(*args)
    with pytest.raises(ValueError, match="micro_batch=0"):
        best_micro_batch(model, cluster, lay, 8, 16, 0)
    with pytest.raises(LayoutError, match="multiple of pp=2"):  # m = 3 / b never even
        best_micro_batch(model, cluster, Layout(pp=2, v=2), 8, 12)


# --- plan: its own arguments raised up front; only what the model signals is infeasible ------

@pytest.mark.parametrize("kw, field", [
    (dict(dp_overlap=0), "dp_overlap=0"), (dict(tp_comm_overlap=1), "tp_comm_overlap=1"),
    (dict(uneven_stages="no"), "uneven_stages="), (dict(cp_kind="tree"), "cp_kind="),
    (dict(ends_as_layers=0), "ends_as_layers=0"),
    (dict(attention="flash"), "attention="), (dict(dtype="fp32"), "dtype="),
    (dict(loss_kernel="liger"), "loss_kernel="),
    (dict(tps=()), r"tps=\(\) must list at least one"), (dict(pps=[]), r"pps=\[\] must list"),
    (dict(cps=()), r"cps=\(\) must list"), (dict(eps=()), r"eps=\(\) must list"),
    (dict(tps=8), r"tps=8 must be a sequence of integers >= 1, e.g. tps=\(8,\)"),
    (dict(pps=2), "pps=2 must be a sequence"), (dict(cps="2"), "cps='2' must be a sequence"),
    (dict(eps=1.0), "eps=1.0 must be a sequence"),
    (dict(tps=(0,)), r"tps\[0\]=0"), (dict(pps=(1, 1.5)), r"pps\[1\]=1.5"),
    (dict(cps=(True,)), r"cps\[0\]=True"), (dict(tps=(2, 2)), "lists a degree twice"),
    (dict(eps=(2,)), r"eps=\(2,\): expert parallelism needs a mixture-of-experts model"),
    (dict(global_batch=0), "global_batch=0"), (dict(seq_len=1.0), "seq_len=1.0"),
    (dict(gpus_per_node=0), "gpus_per_node=0"), (dict(inter_link="IB"), "inter_link="),
    (dict(constants=None), "constants=None"), (dict(gpu=None), "gpu=None"),
])
def test_plan_raises_its_own_bad_arguments(kw, field):
    with pytest.raises(ValueError, match=field):
        plan("7B", 8, **kw)


def test_a_model_dict_with_keys_it_would_drop_is_refused():
    with pytest.raises(ValueError, match="n_kv_heads"):
        plan({**TINY, "n_kv_heads": 2}, 8)
    with pytest.raises(ValueError, match="n_heads=32 must divide d_model=4100"):
        plan({**TINY, "d_model": 4100, "n_heads": 32}, 8)


def test_plan_files_the_real_reason_a_layout_is_infeasible():
    six_heads = {**TINY, "d_model": 384, "n_heads": 6}
    p = plan(six_heads, 8, "A100", global_batch=16, tps=(1, 2, 3, 4), pps=(1, 3))
    why = {i.label: i.reasons[0] for i in p.infeasible}
    assert why["dp=None tp=3 pp=1"] == "n_gpus=8 is not divisible by tp*cp=3"
    assert why["dp=2 tp=4 pp=1"].startswith("tp=4 must divide n_heads=6")
    assert why["dp=None tp=1 pp=3"].startswith("n_gpus=8 must be divisible by tp*pp*cp = 3")
    assert {(c.tp, c.pp) for c in p.ranked} == {(1, 1), (2, 1)}
    assert all(not r.startswith(("dp_overlap", "tps", "pps")) for r in why.values())


def test_plan_never_swallows_a_value_error_that_is_not_the_layouts(monkeypatch):
    # a ValueError from inside the model that is not a LayoutError is a bug or a bad
    # argument: it must surface, not become "every layout infeasible"
    from parlab.planner import search

    def broken(*a, **k):
        raise ValueError("not a layout's constraint")

    monkeypatch.setattr(search, "predict", broken)
    with pytest.raises(ValueError, match="not a layout's constraint"):
        plan(TINY, 8, "A100", global_batch=16)


def test_plan_with_one_degree_each():
    p = plan("7B", 8, tps=(8,), pps=(1,), cps=(1,))
    assert len(p.ranked) + len(p.infeasible) == 1
