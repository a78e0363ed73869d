"""Notebook 00's timing claims, beside two busy-looping processes (``cpu_hogs``): each
claim's direction must hold on a machine another job is using.

Claims (notebook 00): warm re-runs are much cheaper than a cold launch (section 1);
a message costs a latency floor plus size/bandwidth, so a 4 MiB message takes far
longer than a 4 KiB one and the fit gives a loopback bandwidth of GB/s, not MB/s or
TB/s (section 5); an all-reduce of 4 MiB takes longer than one of 4 KiB, for our ring
and for torch's (section 5's measured-vs-model table)."""

from lessons.l00_collectives import experiments as demos

KiB, MiB = 1 << 10, 1 << 20


def test_warm_rerun_is_much_cheaper_than_a_cold_launch(cpu_hogs):
    t = demos.time_launches(world_size=4, repeats=3, pause=0.05)
    print(f"cold {t['cold']:.2f} s, warm median {t['warm_median'] * 1e3:.1f} ms")
    assert t["warm_median"] < t["cold"] / 3


def test_alpha_beta_fit_under_load(cpu_hogs):
    ab = demos.measure_alpha_beta(sizes=[4, 256, 4 * KiB, 64 * KiB, 1 * MiB, 4 * MiB], repeats=12)
    by_size = dict(zip(ab["sizes"], ab["times"]))
    print(demos.fit_verdict(ab, quiet=False), {s: f"{t * 1e6:.0f} us" for s, t in by_size.items()})
    assert by_size[4 * MiB] > 3 * by_size[4 * KiB]  # size costs time: the bandwidth term
    assert 0.05e9 < ab["bandwidth"] < 200e9  # a memory copy through the kernel: GB/s
    assert 0 <= ab["alpha"] < 5e-3  # a latency floor of microseconds, not a time slice


def test_all_reduce_grows_with_size_under_load(cpu_hogs):
    fit = {"alpha": 1e-4, "bandwidth": 1e9}  # the prediction is not under test here
    rows = demos.all_reduce_vs_model(2, fit, fit, sizes=[4 * KiB, 4 * MiB], repeats=6)
    best = {(r["algorithm"], r["bytes"]): r["best"] for r in rows}
    print({k: f"{v * 1e6:.0f} us" for k, v in best.items()})
    for algo in ("ring (ours)", "torch"):
        assert best[(algo, 4 * MiB)] > 2 * best[(algo, 4 * KiB)], algo
