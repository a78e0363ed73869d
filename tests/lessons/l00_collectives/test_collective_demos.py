"""Notebook 00's experiments, run small."""

import pytest

from lessons.l00_collectives import experiments as demos
from lessons.l00_collectives import explorer
from parlab import cost
from ring_reference import simulate_ring


@pytest.mark.parametrize("n", [2, 3, 4])
def test_recorded_ring_follows_the_textbook_schedule(n):
    # the frames come from a real run (bitmask values + traced exchanges)
    assert demos.ring_frames(n) == simulate_ring(n)


def test_collectives_table_reads_like_the_pictures():
    rows = {(r["op"], r["rank"]): r for r in demos.collectives_table(3)}
    assert rows[("all_reduce", 2)]["after"] == [30.0, 33.0, 36.0]  # 0+10+20, 1+11+21, ...
    assert rows[("all_gather", 1)]["after"] == [0.0, 11.0, 22.0]  # rank r gave element r
    assert rows[("reduce_scatter", 1)]["after"] == [33.0]  # sum of element 1
    assert rows[("all_to_all", 1)]["after"] == [1.0, 11.0, 21.0]  # element 1 of each rank
    assert rows[("broadcast", 2)]["after"] == [0.0, 1.0, 2.0]
    assert rows[("send_recv", 1)]["after"] == [0.0, 1.0, 2.0]
    assert rows[("send_recv", 2)]["after"] == [20.0, 21.0, 22.0]


def test_bytes_table_measured_equals_formula():
    rows = demos.bytes_table((2, 4), numel=1024)
    assert len(rows) == 2 * (2 + 4)
    for row in rows:
        assert row["measured"] == row["received"] == row["formula"], row


def test_alpha_beta_and_model_comparison_run():
    # Best of 8, and a 4 MiB message whose transfer dominates: with 3 repeats up to 1 MiB,
    # a descheduled small message on one busy core could outlast the big one, and there
    # would be no bandwidth to fit.
    sizes = [4, 4096, 4 << 20]
    oneway = demos.measure_alpha_beta(sizes=sizes, repeats=8)
    duplex = demos.measure_alpha_beta(sizes=sizes, repeats=8, duplex=True)
    for ab in (oneway, duplex):
        assert ab["alpha"] > 0 and ab["bandwidth"] > 0 and len(ab["times"]) == 3
    gamma = demos.measure_gamma()
    assert 0 < gamma < 1e-6  # more than 1 MB/s of additions
    rows = demos.all_reduce_vs_model(2, duplex, oneway, gamma, sizes=[4, 4096], repeats=2)
    assert {r["algorithm"] for r in rows} == {"ring (ours)", "naive (ours)", "torch"}
    assert all(r["measured"] > 0 and r["predicted"] > 0 for r in rows)


def test_predicted_curves():
    out = explorer.predicted_curves(8, 1e-5, 1e10, sizes=[1e3, 1e6, 1e9])
    assert set(out["curves"]) == {"ring", "tree", "naive"}
    assert out["crossover"] == cost.ring_tree_crossover(8, 1e-5, 1e10)
    ring, tree = out["curves"]["ring"][1], out["curves"]["tree"][1]
    assert tree[0] < ring[0] and ring[-1] < tree[-1]


def test_model_agreement():
    rows = [{"algorithm": a, "bytes": b, "measured": m, "best": 1.0, "predicted": p}
            for a, b, m, p in [("ring (ours)", 4, 3.0, 0.5), ("ring (ours)", 64, 1.0, 1.0),
                               ("naive (ours)", 4, 2.0, 0.25), ("torch", 4, 99.0, 0.01)]]
    agree = demos.model_agreement(rows)
    assert agree["best_over_predicted"] == (1.0, 2.0, 4.0)  # torch's row is left out
    assert agree["median_over_best_max"] == 3.0


def test_fit_verdict_says_when_not_to_trust_the_fit():
    sizes = [4, 4096, 1 << 20]
    good = {"sizes": sizes, "times": [1e-4 + s / 2e9 for s in sizes], "alpha": 1e-4,
            "bandwidth": 2e9, "r2": 0.99}
    assert "read latency and bandwidth off this fit" in demos.fit_verdict(good)
    assert "machine was busy" in demos.fit_verdict(good, quiet=False)
    bad = dict(good, times=[3e-4, 1e-4, 6e-4], r2=0.4)
    line = demos.fit_verdict(bad)
    assert "do NOT read exact numbers" in line and "r2 = 0.40" in line and "3.0x off" in line


def test_time_axes_read_in_plain_units():
    from lessons.l00_collectives.figures import alpha_beta_figure, seconds_ticks
    wide = seconds_ticks(1.6e-3, 900)  # the cost explorer's naive all-reduce on 1024 ranks
    assert wide["ticktext"][0] == "1 ms" and wide["ticktext"][-1] == "1,000 s"
    assert not any("ks" in t for t in wide["ticktext"])
    narrow = seconds_ticks(7e-5, 5e-3)  # two decades: 1-2-5 ticks, never a single one
    assert narrow["ticktext"] == ["50 µs", "100 µs", "200 µs", "500 µs", "1 ms", "2 ms", "5 ms"]
    assert len(seconds_ticks(1.0, 1.0)["tickvals"]) >= 2
    sizes = [4, 4096, 1 << 20]
    fig = alpha_beta_figure(sizes, [1e-4 + s / 2e9 for s in sizes], 1e-4, 1 / 2e9)
    assert fig.layout.legend.x > 1  # outside the plot, not over the largest messages
    assert len(fig.layout.yaxis.tickvals) >= 3


def test_readable_time_axis_on_a_shared_chart():
    from lessons.common import viz
    from lessons.l00_collectives.figures import readable_time_axis
    pred = explorer.predicted_curves(1024, 8e-5, 2.6e9)  # naive reaches ~800 s
    fig = readable_time_axis(viz.cost_curves(pred["curves"], "all-reduce on 1024 ranks"))
    assert "1,000 s" in fig.layout.yaxis.ticktext and not any("ks" in t for t in fig.layout.yaxis.ticktext)


def test_slower_than_larger_finds_sizes_that_never_had_a_quiet_moment():
    best = {4: 90e-6, 1024: 1.4e-3, 4096: 160e-6, 1 << 20: 1.1e-3, 4 << 20: 1.6e-3}
    assert demos.slower_than_larger(best) == [1024]
    assert demos.slower_than_larger({4: 1e-4, 64: 1.2e-4, 4096: 1.1e-4}) == []  # within 1.5x


@pytest.mark.usefixtures("english")
def test_cost_explorer_offers_only_links_that_reach_that_many_ranks():
    assert explorer.link_reach("NVLink2") == 8 and explorer.link_reach("NVLink5") == 72
    assert explorer.link_reach("PCIe4-x16") == 8 and explorer.link_reach("IB-HDR") is None
    assert explorer.link_reach("NVLink-C2C") == 1  # GB200 to its Grace host, not to a GPU
    at_8, at_256 = explorer.link_choices(8, (1e-5, 1e9)), explorer.link_choices(256)
    assert any(k.startswith("NVLink2") for k in at_8["links"]) and at_8["note"] == ""
    assert "this machine, measured" in at_8["links"]
    assert not any("C2C" in k for k in (*at_8["links"], *at_256["links"])) and "C2C" not in \
        at_256["note"]
    assert not any(k.startswith(("NVLink", "PCIe")) for k in at_256["links"])
    assert any(k.startswith("IB-HDR") for k in at_256["links"])
    assert "NVLink2/3/4" in at_256["note"] and "at most 72 GPUs" in at_256["note"]
    assert any(k.startswith("NVLink5") for k in explorer.link_choices(64)["links"])
    with pytest.raises(ValueError, match="n=1"):
        explorer.link_choices(1)
