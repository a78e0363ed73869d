"""Notebook 03's experiments past ZB-H1 (§7): ZB-H2, ZB-V, DualPipe and interleaving's
memory, each against its paper's formula; pure functions returning rows that
``figures.schedule_family_table`` / ``figures.interleaved_memory_table`` draw. (On real
ranks against one device: ``experiments.reference_check`` takes these schedules too.)"""

from __future__ import annotations

from parlab import cost
from .experiments import schedule_messages
from parlab.pipeline_parallel.schedules import FIXED_V, simulate

FAMILY = ("1f1b", "zb-h1", "zb-h2", "zb-v", "dualpipe")
EQUAL = {"F": 1.0, "B": 1.0, "W": 1.0}  # the papers' T_F = T_B = T_W, one unit each


def paper_idle(schedule: str, p: int) -> float:
    """Idle time per rank at T_F = T_B = T_W = 1 as each paper gives it: Qi et al. 2024
    §2 (``cost.split_backward_bubble``), their ZB-V claim of zero (arXiv v2 §6), and
    DeepSeek-V3's Table 2 (``cost.dualpipe_bubble``: its B is the full backward, 2 here,
    and with nothing overlapped F&B = F + B = 3)."""
    if schedule == "zb-v":
        return 0.0
    if schedule == "dualpipe":
        return cost.dualpipe_bubble(p, t_fb=3.0, t_b=2.0, t_w=1.0)
    return cost.split_backward_bubble(schedule, p)


def paper_peak(schedule: str, p: int, m: int) -> float:
    """Micro-batches' worth of a rank's activations at its peak, as the papers give it:
    1F1B and ZB-H1 p, ZB-H2 2p - 1, ZB-V p (2p half-size chunks), DualPipe p + 1."""
    if schedule in ("1f1b", "zb-h1", "zb-h2"):
        return cost.pipeline_peak_activations(schedule, p, m, 0)
    return min(m, p) if schedule == "zb-v" else min(m, p + 1)


def schedule_family(p: int = 4, m: int = 8) -> list[dict]:
    """Per schedule, simulated at T_F = T_B = T_W (1F1B's B is B + W): the most idle
    time on a rank (between its own first and last op) beside the paper's, the idle
    share of the whole step (all ranks, first op to last), the peak activations in
    micro-batches' worth beside the paper's, and the messages of one step."""
    rows = []
    for s in FAMILY:
        v = FIXED_V.get(s, 1)
        durations = {"F": 1.0, "B": 2.0} if s == "1f1b" else EQUAL
        t = simulate(s, p, m, v, durations=durations)
        chunk = 2 if s == "zb-v" else 1  # ZB-V's chunks are half a rank's layers
        rows.append(dict(schedule=s, idle=max(t.rank_idle), idle_paper=paper_idle(s, p),
                         step=t.bubble_fraction, peak=max(t.peak_activations) / chunk,
                         peak_paper=paper_peak(s, p, m),
                         messages=schedule_messages(s, p, m, v)))
    return rows


def interleaved_memory(cases=((2, 2), (4, 2), (4, 4), (8, 2)),
                       measured: dict | None = None) -> list[dict]:
    """Per (p, v), m = 2p: rank 0's peak under interleaved 1F1B (simulated schedule), in
    micro-batches' worth (chunks / v), over 1F1B's p, beside
    ``cost.interleaved_memory_factor``. ``measured``: {(p, v): rank 0's stash peak in
    chunks} from real runs (``PipelineResult.stash_peak[0]``), shown beside."""
    rows = []
    for p, v in cases:
        held = simulate("interleaved", p, 2 * p, v).peak_activations[0]
        got = (measured or {}).get((p, v))
        rows.append(dict(p=p, v=v, chunks=held, factor=held / v / p,
                         measured=None if got is None else got / v / p,
                         formula=cost.interleaved_memory_factor(p, v)))
    return rows
