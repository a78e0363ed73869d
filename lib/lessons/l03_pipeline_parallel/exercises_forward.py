"""Notebook 03's forward pass sent between stages, on real ranks.

``my_pipeline_forward(micro_batches, stage, n_stages, layer)`` is GPipe's forward as
each rank runs it, with ``dist.send`` / ``dist.recv`` between neighbouring stages;
``check_pipeline_forward`` runs it on P ranks and names the micro-batch, stage and
element that differ from one device (a hang names each rank's line; a message to or
from any rank but a neighbour is named before it is made, ``watch.DistWatch``).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from lessons.common.checkers import core
from lessons.common.i18n import t
from .exercises_schedules import check_pm
from .text import TEXT
from lessons.common.checkers.watch import Diagnosis, DistWatch
from lessons.common import record


def solution_pipeline_forward(micro_batches, stage, n_stages, layer):
    """Each micro-batch: receive from the previous stage (stage 0: take it), apply this
    stage's layer, send to the next stage (the last one keeps the output)."""
    outputs = []
    for x in micro_batches:
        if stage > 0:
            x = torch.empty_like(x)  # every micro-batch has the same shape
            dist.recv(x, stage - 1)
        y = layer(x)
        if stage < n_stages - 1:
            dist.send(y, stage + 1)
        else:
            outputs.append(y)
    return outputs


# ----------------------------------------------------------------------------- forward, sent

def _layer(stage: int):
    """Stage ``stage``'s toy layer: y = (stage + 2) x + stage (each stage different, so a
    skipped or repeated stage shows in the numbers)."""
    return lambda x: x * (stage + 2) + stage


def _micro_batches(m: int, width: int = 4) -> list:
    return [torch.arange(width, dtype=torch.float32) + 10 * i for i in range(m)]


def _forward_harness(source, name, p, m):
    """On each rank: the learner's forward with this stage's layer. Stage 0 gets the
    micro-batches; the others get zeros of the same shape (the values must come by recv).
    A verdict said here speaks the notebook's language (``core.run_learner`` sets it)."""
    fn = core.load_learner(source, name)
    stage = dist.get_rank()
    mbs = _micro_batches(m) if stage == 0 else [torch.zeros(4) for _ in range(m)]
    # every send/recv's peer checked before it is made (watch.py): a message to or from
    # the wrong rank would hang, or crash the job when the other ranks leave
    with DistWatch(on_message=lambda kind, peer, _: _check_peer(kind, peer, stage, p)):
        out = fn(mbs, stage, p, _layer(stage))
    return [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in (out or [])]


def _check_peer(kind: str, peer, stage: int, p: int, lang: str | None = None) -> None:
    """Raise ``Diagnosis`` when stage ``stage`` sends to (``kind`` "send") or receives
    from ("recv") any rank but its neighbour: stage s receives from s - 1 and sends to
    s + 1 (stage s is rank s here). ``peer`` None (receive from anyone) is let through.
    ``lang``: the verdict's language (None: this process's)."""
    if peer is None:
        return
    want = stage - 1 if kind == "recv" else stage + 1
    if want < 0:
        raise Diagnosis(t(TEXT, "fwd.first_recv", lang, peer=peer))
    if want >= p:
        raise Diagnosis(t(TEXT, "fwd.last_send", lang, stage=stage, peer=peer))
    if peer != want:
        raise Diagnosis(t(TEXT, f"fwd.peer_{kind}", lang, stage=stage, peer=peer, want=want,
                          last=p - 1))


def check_pipeline_forward(fn, p: int = 4, m: int = 3, timeout: float = 30.0) -> dict:
    """Run ``fn`` on ``p`` ranks; the last stage's outputs must be every micro-batch
    through all p layers, in order."""
    p, m = check_pm(p, m)
    core.check_timeout(timeout)
    ranks, bad = core.run_learner(_forward_harness, fn, p, p, m, timeout=timeout)
    if bad:
        return bad
    got = ranks[p - 1]
    if not isinstance(got, list) or len(got) != m:
        return core.verdict(False, t(TEXT, "fwd.count", last=p - 1, m=m,
                                     got=len(got) if isinstance(got, list) else repr(got)))
    for i, x in enumerate(_micro_batches(m)):
        want = x
        for s in range(p):
            want = _layer(s)(want)
        msg = core.compare_tensors(got[i], want, where=t(TEXT, "fwd.where", i=i, last=p - 1))
        if msg:
            return core.verdict(False, t(TEXT, "fwd.wrong", msg=msg))
    return core.verdict(True, t(TEXT, "fwd.ok", m=m, p=p))


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record
