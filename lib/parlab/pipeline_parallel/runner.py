"""One pipeline-parallel run: check the arguments, run the executor on ranks, gather
the result (``RunResult``, with the measured timeline of any step)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from .. import trace
from ..model import GPTConfig
from ..validate import check_int
from .executor import _Rank
from .schedules import Timeline, bubble, op_durations, validate


def pipeline_worker(schedule, p, m, v, config, steps, batch_size, lr, seed, data_seed,
                    compute, t_fwd, t_bwd, checkpoint) -> dict:
    """One rank of ``run``: execute this rank's action list for ``steps`` steps."""
    from ..data import get_batch

    torch.set_num_threads(1)
    me = _Rank(schedule, p, m, v, config, batch_size, compute,
               op_durations(schedule, v, t_fwd, t_bwd), seed, checkpoint)
    opt = (torch.optim.AdamW(me.params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
           if me.real else None)
    losses, times, grads = [], [], {}
    trace.start()
    for step in range(steps):
        x, y = get_batch(step, batch_size, config.seq_len, config.vocab_size, seed=data_seed)
        # micro-batch i = rows [i B/m, (i+1) B/m), copied so it owns its memory
        x, y = [t.clone() for t in x.chunk(m)], [t.clone() for t in y.chunk(m)]
        dist.barrier()  # every rank starts the step together, as in the simulator
        t0 = trace.now()
        me.step(step, x, y)
        if me.real:
            if step == steps - 1:
                grads = {n: q.grad.clone() for st in me.stages for n, q in st.named_parameters()}
            with trace.span("AdamW", step=step):
                opt.step()
                opt.zero_grad(set_to_none=True)
        times.append((t0, trace.now()))
        losses.append(me.loss)
    owns_loss = me.real and (p * v - 1) % p == dist.get_rank()
    return dict(losses=losses if owns_loss else None, events=trace.stop(), times=times,
                state_dict={n: t.detach().clone() for st in me.stages
                            for n, t in st.state_dict().items()},
                grads=grads, stash_peak=me.peak, stash_peak_bytes=me.peak_bytes)


@dataclass
class RunResult:
    """What ``run`` measured; ``timeline(step)`` gives one step's ops and bubble."""
    schedule: str
    p: int
    m: int
    v: int
    losses: list[float]          # per step: mean loss over the global batch (real compute)
    state_dict: dict             # final parameters, all stages merged (real compute)
    grads: dict                  # gradients of the last step, all stages merged
    events: list[dict]           # every traced event of every rank (F/B/W, sends, waits)
    step_times: list[float]      # per step: first rank's start to last rank's end (s)
    stash_peak: list[int]        # per rank: most (micro-batch, chunk) activations held
    stash_peak_bytes: list[int]  # per rank: most bytes of them held at once (real compute)

    def timeline(self, step: int = -1) -> Timeline:
        """The F/B/W ops of one step (default: the last) and its measured bubble."""
        step = step % len(self.step_times)
        ops = [e for e in self.events if e["name"] in ("F", "B", "W")
               and e["meta"].get("step") == step]
        fraction, ratio, makespan = bubble(ops, self.p)
        return Timeline(ops, self.p, fraction, ratio, makespan, list(self.stash_peak))

    @property
    def bubble_fraction(self) -> float:
        return self.timeline().bubble_fraction


def run(schedule: str, p: int, m: int, v: int = 1, *, config: GPTConfig | None = None,
        steps: int = 1, batch_size: int | None = None, lr: float = 1e-3, seed: int = 0,
        data_seed: int = 0, compute: str = "real", t_fwd: float = 0.02, t_bwd: float = 0.04,
        checkpoint: bool = False, timeout: float = 120.0) -> RunResult:
    """Train ``steps`` steps of the reference GPT on ``p`` CPU ranks with ``schedule``.

    ``compute="real"`` runs the model (AdamW(lr, betas=(0.9, 0.95)), as
    ``model.reference_train``); ``"emulated"`` replaces each F / B / W by a sleep of
    its ``op_durations`` (t_fwd, t_bwd: one micro-batch through all of a rank's
    layers) but still sends activation-sized messages, so the dependencies are real
    and the timeline shows the schedule's shape even with more ranks than cores.
    ``batch_size`` defaults to m (one sequence per micro-batch)."""
    config = config or GPTConfig()
    batch_size = m if batch_size is None else batch_size
    if compute not in ("real", "emulated"):
        raise ValueError(f"compute={compute!r} must be 'real' or 'emulated'")
    # emulated ops have no layers, so only real compute needs p * v <= n_layers
    validate(schedule, p, m, v, config.n_layers if compute == "real" else None, batch_size)
    check_int("steps", steps)
    if checkpoint and compute != "real":
        raise ValueError("checkpoint=True needs compute='real' (emulated ops keep nothing)")
    if not (t_fwd > 0 and t_bwd > 0):
        raise ValueError(f"t_fwd={t_fwd} and t_bwd={t_bwd} must be > 0 seconds")
    from ..launch import launch
    out = launch(pipeline_worker, p, schedule, p, m, v, config, steps, batch_size, lr, seed,
                 data_seed, compute, t_fwd, t_bwd, checkpoint, timeout=timeout, backend="gloo")
    merged = lambda key: {k: t for r in out for k, t in r[key].items()}  # noqa: E731
    return RunResult(
        schedule, p, m, v, losses=next((r["losses"] for r in out if r["losses"]), []),
        state_dict=merged("state_dict"), grads=merged("grads"),
        events=[e for r in out for e in r["events"]],
        step_times=[max(r["times"][s][1] for r in out) - min(r["times"][s][0] for r in out)
                    for s in range(steps)],
        stash_peak=[r["stash_peak"] for r in out],
        stash_peak_bytes=[r["stash_peak_bytes"] for r in out])
