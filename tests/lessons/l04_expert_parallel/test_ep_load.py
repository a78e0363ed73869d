"""Notebook 04's lesson drawn from a timing, checked beside two CPU hogs (``cpu_hogs``).

§5 "the busiest rank sets the layer's time": the rows each rank's experts computed in a
real skewed EP run, replayed with emulated expert work (a sleep per row, which other
programs cannot slow down) and the combine all-to-all. Every rank leaves the layer when
the busiest one has finished, so every rank's layer time is at least the busiest rank's
compute, and well above the balanced time. §5's step time against the EP degree is shown
as overheads on shared cores, with no direction claimed.
"""

from lessons.l04_expert_parallel import experiments as ex


def test_busiest_rank_sets_the_layer_under_load(cpu_hogs):
    rows = ex.rows_per_rank(ex.ep_run(4, ex.SEEDS["skewed"], 1))
    assert max(rows) > 1.3 * sum(rows) / len(rows), rows      # the run is skewed
    bus = ex.busiest(rows, row_s=2e-4, repeats=5)
    predicted, balanced = bus[0]["predicted_s"], bus[0]["balanced_s"]
    for b in bus:
        assert b["layer_s"] >= 0.95 * predicted, bus         # nobody leaves before the busiest
    light = min(bus, key=lambda b: b["rows"])
    assert light["layer_s"] > 1.5 * light["compute_s"], bus   # the light rank waits
    assert min(b["layer_s"] for b in bus) > balanced, bus
