"""Notebook 03's timing claims hold on a busy machine (two CPU hogs beside the ranks).

The notebook claims, from emulated-compute runs (each op sleeps its time, real messages
flow): at P = 4, M = 8 with ops of T_F = 30 ms, T_B = 60 ms per rank, interleaving with
v = 2 measures a smaller bubble than 1F1B, and ZB-H1 a smaller one still; the
simulator charged the run's own message costs (``simulated_comm``) lands within 10
points of the measured bubble at P = 2, M = 12, v = 3 (the messages-free simulator
says 2.7%); and activation checkpointing makes the backward longer (it recomputes the
forward): backward / forward within one run rises (about 2 -> 3). Op times are long next to a message's cost (~1-10 ms on a busy CPU), which
is why the ordering holds: see the notebook's §6.
"""

from __future__ import annotations

import statistics

from parlab.model import GPTConfig
from parlab.pipeline_parallel import PPRun, run
from lessons.l03_pipeline_parallel import experiments as demos

T_F, T_B = 0.03, 0.06  # notebook 03, §6


def test_interleaved_and_zero_bubble_beat_1f1b_under_load(cpu_hogs):
    got = {(s, v): demos.measured_bubble(s, 4, 8, v, T_F, T_B, repeats=2)
           for s, v in [("1f1b", 1), ("interleaved", 2), ("zb-h1", 1)]}
    one, inter, zb = (got[k]["measured"] for k in [("1f1b", 1), ("interleaved", 2), ("zb-h1", 1)])
    print(f"under load, P=4 M=8: 1F1B {one:.1%}, interleaved v=2 {inter:.1%}, ZB-H1 {zb:.1%}")
    assert inter < one, (inter, one)
    assert zb < one, (zb, one)


def test_simulator_with_message_costs_predicts_the_measured_bubble_under_load(cpu_hogs):
    r = demos.measured_bubble("interleaved", 2, 12, 3, T_F, T_B, repeats=2)
    print(f"under load, P=2 M=12 v=3: measured {r['measured']:.1%}, simulated with costs "
          f"{r['simulated_comm']:.1%} (t_comm {r['t_comm'] * 1e3:.1f} ms, t_gap "
          f"{r['t_gap'] * 1e3:.1f} ms), messages free {r['simulated']:.1%}")
    assert abs(r["simulated_comm"] - r["measured"]) < 0.10
    assert r["simulated"] < r["measured"]  # free messages: the ideal, never reached


def test_checkpointing_makes_the_backward_longer_under_load(cpu_hogs):
    wide = GPTConfig(d_model=256, n_heads=4, n_layers=4, seq_len=64)  # notebook 03, §8
    rises = []
    for _ in range(3):  # plain and checkpointed runs interleaved: a burst of load hits both
        ratio = {}
        for c in (False, True):
            t = demos.op_times(run(PPRun(config=wide, steps=3, batch_size=16, schedule="1f1b",
                                         p=2, micro_batches=4, checkpoint=c), 2))
            ratio[c] = t["B"] / t["F"]  # same run: the load cancels out
        rises.append(ratio[True] - ratio[False])
    print("under load, backward / forward rises by " + ", ".join(f"{r:+.2f}" for r in rises))
    # seen beside two hogs: +0.74 to +0.84 with micro-batches of 4 sequences (of 2: +0.1 to +1.2)
    assert statistics.median(rises) > 0.3, rises
