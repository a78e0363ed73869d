"""The all-reduce cost explorer of notebook 00, as pure functions: which links can join
how many ranks, and the predicted curves the widget draws (``widgets.allreduce_cost_explorer``)."""

from __future__ import annotations

import re

from parlab import cost
from parlab.hardware_presets import GPU_PRESETS, LINK_PRESETS, node_for

from lessons.common.i18n import t

from .text import TEXT


def link_reach(name: str) -> int | None:
    """The most GPUs one ``LINK_PRESETS`` link can join, or None for a network (no limit).
    A GPU's own link (NVLink, PCIe) joins only the GPUs of its node or NVLink domain: the
    largest domain among the preset nodes whose GPUs use it (NVLink4: a DGX H100's 8;
    NVLink5: a GB200 NVL72 rack's 72). A link that is only some GPU's way to its host's
    memory (NVLink-C2C, ``GPUSpec.host_link``) joins no two GPUs: 1."""
    if name not in LINK_PRESETS:
        raise ValueError(f"name={name!r} must be one of {', '.join(LINK_PRESETS)}")
    reach = [node_for(g).nvlink_domain for g in GPU_PRESETS.values() if g.link == name]
    if not reach and any(g.host_link == name for g in GPU_PRESETS.values()):
        return 1
    return max(reach) if reach else None


def link_choices(n: int, measured: tuple[float, float] | None = None) -> dict:
    """The links a ring of ``n`` ranks can run over, and one line on those left out.
    ``{"links": {label: (alpha s, bandwidth B/s)}, "note": str}``; ``measured`` (alpha,
    bandwidth) adds this machine's fit, which limits nothing (its ranks are processes).
    The measured link's label and the note are in the session's language."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n={n!r} must be an int >= 2 (ranks of one all-reduce)")
    links = {t(TEXT, "w_measured"): measured} if measured else {}
    left_out: dict[int, list[str]] = {}
    for name, spec in LINK_PRESETS.items():
        reach = link_reach(name)
        if reach == 1:  # a GPU's link to its host: no ring of GPUs runs over it
            continue
        if reach is not None and n > reach:
            left_out.setdefault(reach, []).append(name)
            continue
        label = f"{name} ({spec.gb_per_s_per_direction:g} GB/s, ~{spec.latency_us:g} us)"
        links[label] = (spec.latency_us * 1e-6, spec.gb_per_s_per_direction * 1e9)
    groups = t(TEXT, "w_reach_sep").join(t(TEXT, "w_reach", names=_compact(names), reach=reach)
                                         for reach, names in sorted(left_out.items()))
    note = t(TEXT, "w_not_offered", n=n, groups=groups) if left_out else ""
    return {"links": links, "note": note}


def _compact(names: list[str]) -> str:
    """["NVLink2", "NVLink3", "PCIe4-x16"] -> "NVLink2/3, PCIe4-x16"."""
    families: dict[str, list[str]] = {}
    for name in names:
        family = re.match(r"\D*", name).group()
        families.setdefault(family, []).append(name[len(family):])
    return ", ".join(family + "/".join(tails) for family, tails in families.items())


def predicted_curves(n: int, alpha: float, bandwidth: float, sizes=None) -> dict:
    """Predicted all-reduce time vs size for ring, tree and naive (for viz.cost_curves),
    and the ring/tree crossover size."""
    sizes = sizes or [2 ** k for k in range(2, 31)]
    curves = {algo: (sizes, [cost.collective_time("all_reduce", s, n, alpha, bandwidth, algo)
                             for s in sizes]) for algo in ("ring", "tree", "naive")}
    return {"curves": curves, "crossover": cost.ring_tree_crossover(n, alpha, bandwidth)}
