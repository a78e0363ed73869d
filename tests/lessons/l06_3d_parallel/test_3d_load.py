"""Notebook 06's lessons drawn from timings hold on a busy machine (two CPU hogs beside the
ranks): §3's emulated sweep, on four layouts whose predicted step times differ by 2x or more
from one to the next, ranks them as the formula does; TP is the expensive axis; the bubble
of p = 8 at m = 4 multiplies the ideal step."""

from lessons.l06_3d_parallel import experiments as ex

LAYOUTS = ((8, 1, 1), (1, 8, 1), (1, 2, 4), (1, 1, 8))  # predicted ~0.1, 0.23, 0.43, 1.4 s here


def test_sweep_order_under_load(cpu_hogs):
    probe = ex.comm_probe(repeats=3)
    sweep = ex.emulated_sweep(LAYOUTS, probe=probe, steps=2)  # a warm-up step, then one timed
    m = {(r["dp"], r["pp"], r["tp"]): r["measured"] for r in sweep["rows"]}
    p = {(r["dp"], r["pp"], r["tp"]): r["predicted"] for r in sweep["rows"]}
    print({k: (round(m[k] * 1e3), round(p[k] * 1e3)) for k in LAYOUTS}, f"rho {sweep['spearman']:.2f}")
    # The subset is chosen for its order. Measured, it holds with room to spare; predicted, its
    # ends hold, but beside two hogs the probe's best-of all-reduce times put TP = 4's predicted
    # step anywhere from 0.21 to 0.45 s, next to PP = 8's 0.22 s (measured 0.76-0.94 s against
    # 0.23 s, 2026-12-05), so the middle pair of the prediction is not pinned.
    assert sorted(m, key=m.get) == list(LAYOUTS)
    assert min(p, key=p.get) == (8, 1, 1) and max(p, key=p.get) == (1, 1, 8)
    assert sweep["spearman"] >= 0.8  # at most one neighbouring pair swapped
    assert max(m, key=m.get) == (1, 1, 8)  # TP over 8 ranks: the slowest by far
    assert m[1, 1, 8] > 4 * m[8, 1, 1]
    assert m[1, 8, 1] > 1.8 * sweep["ideal"] and m[1, 8, 1] > 1.3 * m[8, 1, 1]  # the bubble
