"""Activation offloading (Layout.offload_layers): the first k layers' saved activations in
host memory between their forward and backward, as Megatron-Core's cpu_offloading runs it."""

from dataclasses import replace

import pytest

from parlab import cost, planner
from parlab.hardware import GPU_PRESETS, LINK_PRESETS
from parlab.planner import Layout, LayoutError
from parlab.planner.estimate import layer_activations

M70 = planner.MODELS["llama3-70B"]
# NVIDIA's GB200 recipe for Llama 3 70B in FP8 (Megatron-Bridge perf_recipes/llama/gb200/llama3.py
# at 067f987df): FSDP over 64, micro-batch 2, no recomputation, 40 layers offloaded
RECIPE = Layout(zero_stage=3, micro_batch=2, dtype="fp8", offload_layers=40)


def step(layout, gpu="GB200", n=64, batch=256):
    return planner.predict(M70, planner.cluster_for(gpu), layout, n, batch)


def test_the_recipe_fits_only_with_its_offload():
    without, with_ = step(replace(RECIPE, offload_layers=0)), step(RECIPE)
    assert not without.fits and with_.fits  # as the recipe needed it
    one = layer_activations(M70, with_.cluster, with_.layout)
    # the 40 layers leave but the one being copied: 39 layers' activations fewer
    assert without.memory_per_gpu.activations - with_.memory_per_gpu.activations == \
        pytest.approx(39 * one)
    assert with_.memory_per_gpu.params == without.memory_per_gpu.params


def test_the_copies_hide_behind_compute_on_nvlink_c2c_not_on_pcie():
    gb = step(RECIPE)
    assert gb.cluster.gpu.host_link == "NVLink-C2C"
    assert gb.step_time.total == pytest.approx(step(replace(RECIPE, offload_layers=0)).step_time.total)
    # the same layout on a B200 (PCIe 5 to its host, 1/7 of C2C's bandwidth) waits for them
    b = step(RECIPE, "B200")
    b0 = step(replace(RECIPE, offload_layers=0), "B200")
    link = LINK_PRESETS["PCIe5-x16"]
    one_way = 40 * layer_activations(M70, b.cluster, b.layout) / (
        link.gb_per_s_per_direction * 1e9 * link.achieved)
    assert b.step_time.total > b0.step_time.total
    assert b.step_time.total - b0.step_time.total <= b.n_micro_batches * 2 * one_way
    # planted: a host link as fast as the GB200's would hide them again
    fast = replace(GPU_PRESETS["B200"], host_link="NVLink-C2C")
    c = planner.Cluster(fast, b.cluster.intra_link, b.cluster.inter_link, 8, 8, 8)
    assert planner.predict(M70, c, RECIPE, 64, 256).step_time.total == pytest.approx(
        b0.step_time.total)


@pytest.mark.parametrize("bad, field", [(dict(pp=2), "pp=1"), (dict(recompute="full"), "recompute"),
                                        (dict(offload_layers=80), "n_layers")])
def test_offloading_where_megatron_core_refuses_is_a_layout_error(bad, field):
    with pytest.raises(LayoutError, match=field) as err:
        step(replace(RECIPE, **bad))
    # it names what is wrong, not the conditions the layout meets
    others = {"pp=1", "recompute", "n_layers"} - {field}
    assert not [o for o in others if o in str(err.value)], str(err.value)


def test_a_negative_count_is_a_value_error():
    with pytest.raises(ValueError, match="offload_layers"):
        Layout(offload_layers=-1)


def test_the_published_rows_run_as_their_recipes():
    # the GB200 rows whose table layout cannot hold its activations: offloaded, not recomputed
    rows = {r["name"]: r for r in planner.validate()}
    for name in ("Megatron-Bridge 26.04.01 70B 64 GB200 FP8", "Megatron-Bridge 25.09 70B 64 GB200 FP8",
                 "Megatron-Bridge 25.09 405B 128 GB200 FP8"):
        e = rows[name]["estimate"]
        assert e.fits and e.layout.offload_layers > 0 and e.layout.recompute == "none", name
        assert "offloaded" in rows[name]["note"]


def test_plan_offloads_over_nvlink_c2c_only():
    # on GB200s the search keeps every layer's activations and offloads the fewest layers that
    # make the layout fit, as NVIDIA's recipe does; on PCIe hosts it does not offer offloading
    gb = planner.plan("llama3-70B", 64, "GB200", 256, dtype="fp8", tps=(1,), pps=(1,), cps=(1,))
    best = gb.best.estimate
    assert best.layout.offload_layers > 0 and best.layout.recompute == "none" and best.fits
    assert f"offload={best.layout.offload_layers}" in gb.best.label
    assert any("host memory (over NVLink-C2C)" in r for r in gb.best.reasons)
    # the fewest: one layer fewer does not fit
    fewer = replace(best.layout, offload_layers=best.layout.offload_layers - 1)
    assert not planner.predict(M70, best.cluster, fewer, 64, 256).fits
    h = planner.plan("llama3-70B", 64, "H100", 256, dtype="fp8", tps=(1, 2), pps=(1,), cps=(1,))
    assert h.ranked and not any(c.estimate.layout.offload_layers for c in h.ranked)
    # planted: a GB200 whose host link were PCIe would get no offloading either
    from parlab.planner import search
    assert "PCIe5-x16" not in search.OFFLOAD_LINKS


def test_mfu_is_against_the_datasheet_peak_whatever_the_clocks_sustain():
    e = step(RECIPE)
    assert e.peak_tflops == GPU_PRESETS["GB200"].peak_tflops["bf16"]
    bare = planner.predict(M70, e.cluster, RECIPE, 64, 256,
                           replace(planner.CONSTANTS, clock_shares=()))
    assert bare.peak_tflops == e.peak_tflops
    assert e.mfu < bare.mfu  # the same FLOPs, more slowly
