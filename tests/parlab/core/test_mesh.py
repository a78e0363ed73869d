"""parlab.mesh.Mesh: named axes (dp, pp, cp, tp; TP innermost), rank <-> coordinates,
one group per axis equal to torch's init_device_mesh for the same shape, a layout
picture; bad input refused."""

import itertools

import pytest
import workers_nd

from parlab import launch
from parlab.mesh import AXES, Mesh


@pytest.mark.parametrize("shape", [dict(dp=2, pp=2, tp=2), dict(dp=1, pp=4, tp=1),
                                   dict(dp=3, pp=1, tp=2), dict(dp=2, pp=1, cp=2, tp=2)])
def test_rank_and_coords_are_inverse_and_tp_is_innermost(shape):
    m = Mesh(**shape)
    d, p, c, t = (m.shape[a] for a in AXES)
    for r in range(m.size):
        x = m.coords(r)
        assert m.rank(**x) == r
        assert r == ((x["dp"] * p + x["pp"]) * c + x["cp"]) * t + x["tp"]
    # each axis's groups partition the world, each group as long as its axis
    for axis in AXES:
        groups = m.groups(axis)
        assert sorted(itertools.chain(*groups)) == list(range(m.size))
        assert all(len(g) == m.shape[axis] for g in groups)


def test_the_picture_of_2x2x2():
    m = Mesh(dp=2, pp=2, tp=2)
    assert m.groups("tp") == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert m.groups("pp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert m.groups("dp") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    row = m.layout()[5]
    assert row == {"rank": 5, "dp": 1, "pp": 0, "cp": 0, "tp": 1, "dp_group": [1, 5],
                   "pp_group": [5, 7], "cp_group": [5], "tp_group": [4, 5]}
    text = m.describe()
    assert "stage 1:   6   7" in text and "[0, 4]" in text


@pytest.mark.parametrize("kwargs, field", [(dict(dp=0), "dp"), (dict(pp=1.0), "pp"),
                                           (dict(tp="2"), "tp"), (dict(cp=-1), "cp"),
                                           (dict(dp=2, ep=3), "ep=3 must divide dp\\*cp")])
def test_bad_input_is_refused(kwargs, field):
    with pytest.raises(ValueError, match=field):
        Mesh(**kwargs)


def test_coordinates_out_of_range_are_refused():
    m = Mesh(dp=2, tp=2)
    with pytest.raises(ValueError, match="tp=2"):
        m.rank(tp=2)
    with pytest.raises(ValueError, match="rank=4"):
        m.coords(4)
    with pytest.raises(ValueError, match="axis"):
        m.groups("xp")
    with pytest.raises(ValueError, match="rank=1.5"):
        m.coords(1.5)
    with pytest.raises(ValueError, match="rank=True"):
        m.coords(True)
    for kw, field in ((dict(dp=1.0), "dp=1.0"), (dict(tp=True), "tp=True"),
                      (dict(pp=0.5), "pp=0.5"), (dict(cp="0"), "cp='0'")):
        with pytest.raises(ValueError, match=field):
            m.rank(**kw)
    for bad in (2.0, None, "1"):
        with pytest.raises(ValueError, match=f"rank={bad!r}"):
            m.folded(bad)
    with pytest.raises(ValueError, match="dp=True"):
        Mesh(dp=True)
    with pytest.raises(ValueError, match="limit=1"):
        m.describe(limit=1)


@pytest.mark.timeout(60)
def test_a_16384_rank_layout_is_fast_and_its_picture_summarised():
    # the layout used to search every group for every rank (ranks squared: 27 s at 2,048,
    # half an hour at 16,384); each group is built once now, and describe() summarises
    import time
    for shape in (dict(dp=16, pp=16, cp=8, tp=8), dict(dp=2048, pp=8), dict(dp=16384)):
        m = Mesh(**shape)
        t0 = time.perf_counter()
        rows = m.layout()
        text = m.describe()
        assert time.perf_counter() - t0 < 5
        assert len(rows) == m.size == 16384
        last = rows[-1]
        assert last["rank"] == 16383 and all(last[a] == m.shape[a] - 1 for a in AXES)
        assert all(16383 in last[f"{a}_group"] for a in AXES)
        assert len(text) < 40_000 and "left out" in text and "16383" in text
    # the groups are the same arithmetic as rank(): spot-check the big mesh
    m = Mesh(dp=16, pp=16, cp=8, tp=8)
    for axis in AXES:
        g = m.groups(axis)[777 % len(m.groups(axis))]
        c = m.coords(g[0])
        assert g == [m.rank(**{**c, axis: i}) for i in range(m.shape[axis])]


def test_a_small_picture_is_not_summarised():
    text = Mesh(dp=4, pp=4, tp=4).describe()
    assert "left out" not in text and "more" not in text and "DP replica 3:" in text
    text = Mesh(dp=4, pp=4, tp=4).describe(limit=2)
    assert "... 2 DP replicas left out ..." in text and "... 2 stages left out ..." in text


@pytest.mark.timeout(180)
@pytest.mark.parametrize("shape, world", [(dict(dp=2, pp=2, tp=2), 8),
                                          (dict(dp=1, pp=2, tp=2), 4),
                                          (dict(dp=2, pp=1, cp=2, tp=1), 4)])
def test_groups_equal_torch_device_mesh(shape, world):
    out = launch(workers_nd.mesh_groups, world, shape, timeout=120)
    m = Mesh(**shape)
    for r in out:
        assert r["ours"] == r["theirs"], r
        assert r["coords"] == r["torch_coords"] == m.coords(r["rank"])
        for axis in AXES:
            assert r["ours"][axis] in m.groups(axis)
