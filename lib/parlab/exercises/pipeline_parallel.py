"""Exercises of notebook 03 (pipeline parallelism): checkers and reference solutions.

Coding, on real ranks:
  my_1f1b(stage, n_stages, n_micro) -> list of ("F", mb) / ("B", mb)
      1F1B written as data. ``check_1f1b`` validates the list (every micro-batch
      forward then backward once per stage), replays it in the simulator (no
      deadlock), compares its peak activations with 1F1B's min(P - stage, M) and its
      bubble with (P - 1)/(M + P - 1), then RUNS it on P ranks with the lab's executor
      and real compute: the loss and every gradient must equal the single device's.
  my_pipeline_forward(micro_batches, stage, n_stages, layer) -> outputs (last stage)
      GPipe's forward with dist.send / dist.recv between neighbouring stages;
      ``check_pipeline_forward`` runs it on P ranks and names the micro-batch, stage and
      element that differ from one device (a hang names each rank's line).
Coding, pure (run in a child process, ``core.call_learner``, like the plan of my_1f1b):
  my_partition(n_layers, n_stages) -> list of layer counts per stage, balanced.
Numeric (answer_box): ``check_bubble``, ``check_interleaved``, ``check_min_m``,
``check_peak`` -- computed from ``parlab.cost``.

Checkers never raise on a wrong or missing answer; they return a verdict.
"""

from __future__ import annotations


import torch
import torch.distributed as dist

from .. import cost
from ..pipeline_parallel.schedules import Action, bubble, peak_in_flight, replay
from ..validate import check_int
from . import core
from .watch import Diagnosis, DistWatch

# the notebook's sizes for the numeric questions
P, M, V, TARGET, PEAK_STAGE = 8, 24, 3, 0.10, 2
GPIPE_EXAMPLE = "[('F', i) for i in range(n_micro)] + [('B', i) for i in range(n_micro)]"


# ----------------------------------------------------------------------------- references

def solution_1f1b(stage, n_stages, n_micro):
    """1F1B (PipeDream-Flush): warm-up forwards, then one forward / one backward, then
    the remaining backwards."""
    warmup = min(n_stages - stage - 1, n_micro)
    actions = [("F", i) for i in range(warmup)]
    for i in range(n_micro - warmup):          # steady state: 1F, 1B
        actions += [("F", warmup + i), ("B", i)]
    actions += [("B", i) for i in range(n_micro - warmup, n_micro)]  # cool-down
    return actions


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


def solution_partition(n_layers, n_stages):
    """Sizes differ by at most one; the larger stages first."""
    base, extra = divmod(n_layers, n_stages)
    return [base + (s < extra) for s in range(n_stages)]


SOLUTIONS = {"my_1f1b": solution_1f1b, "my_pipeline_forward": solution_pipeline_forward,
              "my_partition": solution_partition}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution of a coding exercise, each behind a click
    ("my_1f1b", "my_pipeline_forward", "my_partition")."""
    return core.hints(SOLUTIONS, name)


def show_solution(name: str) -> None:
    """Print the reference solution of exercise ``name`` (a key of SOLUTIONS)."""
    core.show_solution(SOLUTIONS, name)


# ----------------------------------------------------------------------------- 1F1B as data

def _as_actions(raw, stage: int) -> tuple[list[Action] | None, str | None]:
    """The learner's list as Actions, or (None, what is wrong)."""
    if not isinstance(raw, (list, tuple)):
        return None, f"stage {stage}: returned a {type(raw).__name__}, expected a list"
    out = []
    for k, a in enumerate(raw):
        if isinstance(a, str) and len(a) > 1 and a[0] in "FB" and a[1:].isdigit():
            a = (a[0], int(a[1:]))
        if not isinstance(a, (tuple, list)) or len(a) < 2 or a[0] not in ("F", "B") \
                or not isinstance(a[1], int):
            return None, (f"stage {stage}: item {k} is {a!r}; each action must be a tuple "
                          f"('F', mb) or ('B', mb)")
        out.append(Action(a[0], int(a[1]), 0))
    return out, None


def _structure(actions: list[Action], stage: int, m: int) -> str | None:
    """Every micro-batch: one F, then one B, on this stage."""
    seen = {}
    for a in actions:
        if not 0 <= a.mb < m:
            return f"stage {stage}: {a.op}({a.mb}) names a micro-batch outside 0..{m - 1}"
        if (a.op, a.mb) in seen:
            return f"stage {stage}: {a.op}({a.mb}) appears twice"
        if a.op == "B" and ("F", a.mb) not in seen:
            return f"stage {stage}: B({a.mb}) comes before F({a.mb})"
        seen[a.op, a.mb] = True
    for mb in range(m):
        for op in "FB":
            if (op, mb) not in seen:
                return f"stage {stage}: {op}({mb}) is missing"
    return None


def _check_pm(p, m) -> tuple[int, int]:
    return core.check_ranks("p", p, 2), check_int("m", m, 1, 10_000)


def plan_1f1b(fn, p: int = 4, m: int = 8, timeout: float = 10.0) -> dict:
    """Everything about ``fn`` that needs no ranks: the per-stage Actions and a verdict
    (ok=False names the stage and the action), with the simulated bubble and peaks.
    ``fn`` runs in a child process (``core.call_learner``), never here."""
    p, m = _check_pm(p, m)
    core.check_timeout(timeout)
    raws, failed = core.call_learner(fn, [(stage, p, m) for stage in range(p)],
                                     label="my_1f1b", timeout=timeout)
    schedule = []
    for stage, raw in enumerate(raws):
        acts, problem = _as_actions(raw, stage)
        problem = problem or _structure(acts, stage, m)
        if problem:
            return core.verdict(False, problem)
        schedule.append(acts)
    if failed:
        return failed
    try:
        events = replay(schedule, p, 1, {"F": 1.0, "B": 2.0})
    except RuntimeError as e:
        stuck = str(e).split("at ", 1)[-1]
        return core.verdict(False, f"P={p}, M={m} deadlocks: every stage waits for another "
                            f"(stage: next action) {stuck}. F(mb) on stage s needs F(mb) on "
                            f"s-1; B(mb) needs B(mb) on s+1")
    peaks = [peak_in_flight(a) for a in schedule]
    for stage, peak in enumerate(peaks):
        want = cost.pipeline_peak_activations("1f1b", p, m, stage)
        if peak > want:
            return core.verdict(False, f"stage {stage} holds {peak} activations at peak, 1F1B "
                                f"holds {want}: start backwards earlier (after P - stage "
                                f"forwards)", peaks=peaks)
    fraction = bubble(events, p)[0]
    want = cost.bubble_fraction(p, m)
    if fraction > want + 1e-9:
        return core.verdict(False, f"A valid schedule, but its bubble is {fraction:.1%} of the "
                            f"step (F = 1, B = 2 time units), 1F1B's is (P-1)/(M+P-1) = "
                            f"{want:.1%}: a stage waits where it could work", peaks=peaks)
    return dict(ok=True, schedule=schedule, peaks=peaks, bubble=fraction)


def _run_harness(source, name, run, p, m):
    """On each rank: the learner's actions for this stage, run by the lab's executor
    with real compute for one step; returns the loss and this stage's gradients."""
    import torch
    import torch.distributed as dist

    from .. import trace
    from ..data import get_batch
    from ..model import GPT
    from ..pipeline_parallel.compute import RealCompute
    from ..pipeline_parallel.executor import PipelineExecutor
    from ..pipeline_parallel.stages import gpt_stages

    fn = core.load_learner(source, name)
    torch.set_num_threads(1)
    rank, c = dist.get_rank(), run.config
    acts, problem = _as_actions(fn(rank, p, m), rank)
    if problem:
        raise ValueError(problem)
    gpt = GPT(c, run.seed)
    names = {id(q): n for n, q in gpt.named_parameters()}
    stages = gpt_stages(gpt, p, rank)
    compute = RealCompute(stages, m, False)
    me = PipelineExecutor("1f1b", p, m, 1, compute, (run.batch_size // m, c.seq_len, c.d_model))
    me.actions = acts  # the learner's schedule instead of ours
    x, y = get_batch(0, run.batch_size, c.seq_len, c.vocab_size, seed=run.data_seed)
    with trace.tagged(step=0):
        loss = me.step([t.clone() for t in x.chunk(m)], [t.clone() for t in y.chunk(m)])
    grads = {names[id(q)]: q.grad.clone() for st in stages for q in st.parameters()}
    return dict(loss=loss if stages[-1].last else None, grads=grads, peak=me.peak)


def check_1f1b(fn, p: int = 4, m: int = 8, timeout: float = 60.0) -> dict:
    """The verdict on the learner's ``my_1f1b``: structure, deadlock, peak, bubble
    (``plan_1f1b``), then one training step on ``p`` real ranks compared with the
    single device: the loss and every parameter's gradient."""
    p, m = _check_pm(p, m)
    core.check_timeout(timeout)
    plan = plan_1f1b(fn, p, m, timeout=timeout)
    if not plan["ok"]:
        return plan
    from ..model import GPTConfig, reference_train
    from ..pipeline_parallel.runner import PPRun

    run = PPRun(config=GPTConfig(n_layers=p, d_model=32, n_heads=4, seq_len=16), steps=1,
                batch_size=m, schedule="1f1b", p=p, micro_batches=m)
    ranks, bad = core.run_learner(_run_harness, fn, p, run, p, m, timeout=timeout)
    if bad:
        return bad
    ref = reference_train(run.config, 1, run.batch_size, run.lr)
    loss = next(r["loss"] for r in ranks if r["loss"] is not None)
    if abs(loss - ref["losses"][0]) > 1e-5:
        return core.verdict(False, f"stage {p - 1}: loss {loss:.6g}, the single device's "
                            f"{ref['losses'][0]:.6g}")
    for stage, r in enumerate(ranks):
        for name, g in r["grads"].items():
            msg = core.compare_tensors(g, ref["grads"][name], where=f"stage {stage}, {name}",
                                       atol=1e-6, rtol=1e-4)
            if msg:
                return core.verdict(False, msg)
    return core.verdict(True, f"Your schedule ran on {p} ranks; loss and gradients equal "
                        f"the single device's; peak activations per stage {plan['peaks']} "
                        f"(1F1B's min(P - stage, M)); bubble {plan['bubble']:.1%} = "
                        f"(P-1)/(M+P-1)", peaks=plan["peaks"])


# ----------------------------------------------------------------------------- forward, sent

def _layer(stage: int):
    """Stage ``stage``'s toy layer: y = (stage + 2) x + stage (each stage different, so a
    skipped or repeated stage shows in the numbers)."""
    return lambda x: x * (stage + 2) + stage


def _micro_batches(m: int, width: int = 4) -> list:
    return [torch.arange(width, dtype=torch.float32) + 10 * i for i in range(m)]


def _forward_harness(source, name, p, m):
    """On each rank: the learner's forward with this stage's layer. Stage 0 gets the
    micro-batches; the others get zeros of the same shape (the values must come by recv)."""
    fn = core.load_learner(source, name)
    stage = dist.get_rank()
    mbs = _micro_batches(m) if stage == 0 else [torch.zeros(4) for _ in range(m)]
    # every send/recv's peer checked before it is made (watch.py): a message to or from
    # the wrong rank would hang, or crash the job when the other ranks leave
    with DistWatch(on_message=lambda kind, peer, _: _check_peer(kind, peer, stage, p)):
        out = fn(mbs, stage, p, _layer(stage))
    return [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in (out or [])]


def _check_peer(kind: str, peer, stage: int, p: int) -> None:
    """Raise ``Diagnosis`` when stage ``stage`` sends to (``kind`` "send") or receives
    from ("recv") any rank but its neighbour: stage s receives from s - 1 and sends to
    s + 1 (stage s is rank s here). ``peer`` None (receive from anyone) is let through."""
    if peer is None:
        return
    if kind == "recv":
        want, verb, prep = stage - 1, "receives", "from"
        if want < 0:
            raise Diagnosis(f"stage 0 receives from rank {peer}; the first stage takes the "
                            f"micro-batches it is given and receives nothing")
    else:
        want, verb, prep = stage + 1, "sends", "to"
        if want >= p:
            raise Diagnosis(f"stage {stage} sends to rank {peer}; the last stage keeps its "
                            f"outputs (returns them) and sends nothing")
    if peer != want:
        raise Diagnosis(f"stage {stage} {verb} {prep} rank {peer}; it must {verb[:-1]} {prep} "
                        f"stage {want} (rank {want}): the micro-batches go stage 0 -> 1 -> ... "
                        f"-> {p - 1}, one neighbour at a time")


def check_pipeline_forward(fn, p: int = 4, m: int = 3, timeout: float = 30.0) -> dict:
    """Run ``fn`` on ``p`` ranks; the last stage's outputs must be every micro-batch
    through all p layers, in order."""
    p, m = _check_pm(p, m)
    core.check_timeout(timeout)
    ranks, bad = core.run_learner(_forward_harness, fn, p, p, m, timeout=timeout)
    if bad:
        return bad
    got = ranks[p - 1]
    if not isinstance(got, list) or len(got) != m:
        return core.verdict(False, f"The last stage ({p - 1}) returned {len(got) if isinstance(got, list) else got!r} "
                            f"outputs, expected a list of {m} (one per micro-batch)")
    for i, x in enumerate(_micro_batches(m)):
        want = x
        for s in range(p):
            want = _layer(s)(want)
        msg = core.compare_tensors(got[i], want, where=f"micro-batch {i} leaving the last stage ({p - 1})")
        if msg:
            return core.verdict(False, msg + ". Each stage applies its layer once, to what it "
                                "received from the stage before")
    return core.verdict(True, f"{m} micro-batches went through {p} stages on {p} ranks, each "
                        f"output equal to one device's.")


# ----------------------------------------------------------------------------- partition

def _check_cases(cases) -> list[tuple[int, int]]:
    """``cases``: (n_layers, n_stages) pairs, at least one layer per stage."""
    try:
        cases = [tuple(c) for c in cases]
    except TypeError:
        raise ValueError(f"cases={cases!r} must be a list of (n_layers, n_stages) pairs") from None
    if not cases or any(len(c) != 2 for c in cases):
        raise ValueError(f"cases={cases!r} must be a non-empty list of (n_layers, n_stages) pairs")
    for n_layers, n_stages in cases:
        check_int("n_stages", n_stages, 1)
        check_int("n_layers", n_layers, n_stages)  # no stage may be empty
    return cases


def check_partition(fn, cases=((8, 4), (10, 4), (7, 3), (3, 3), (12, 5)),
                    timeout: float = 10.0) -> dict:
    """``fn(n_layers, n_stages)`` -> layer counts per stage: all layers, none empty,
    sizes differing by at most one, the larger stages first (the last one carries the
    head and the loss, so it should not also get an extra block). ``fn`` runs in a
    child process (``core.call_learner``), never here."""
    cases = _check_cases(cases)
    core.check_timeout(timeout)
    results, failed = core.call_learner(fn, cases, label="my_partition", timeout=timeout)
    for (n_layers, n_stages), got in zip(cases, results):
        want = solution_partition(n_layers, n_stages)
        where = f"my_partition({n_layers}, {n_stages}) = {got!r}"
        if not isinstance(got, (list, tuple)) or len(got) != n_stages:
            return core.verdict(False, f"{where}: expected a list of {n_stages} layer counts")
        counts, why = core.as_numbers(got, whole=True)
        if why:
            return core.verdict(False, f"{where}: the layer counts {why}")
        if sum(counts) != n_layers:
            return core.verdict(False, f"{where}: covers {sum(counts)} layers, not {n_layers}")
        for s, (g, w) in enumerate(zip(counts, want)):
            if g != w:
                return core.verdict(False, f"{where}: stage {s} gets {g} layers, expected {w} "
                                    f"(sizes differ by at most one, larger stages first)")
    if failed:
        return failed
    return core.verdict(True, "Balanced, larger stages first, as pp.split_layers cuts them.")


# ----------------------------------------------------------------------------- numeric

def check_bubble(answer) -> dict:
    """Idle share of the step, 1F1B, P = 8, M = 24 (a fraction, e.g. 0.25)."""
    return core.check_number(answer, cost.bubble_fraction(P, M), rel_tol=0.01, share=True,
                             hint="(P - 1) / (M + P - 1), as a fraction of the whole step.",
                             explanation="7 idle slots out of 31 per rank.", name="bubble")


def check_interleaved(answer) -> dict:
    """The same with v = 3 chunks per rank (interleaved 1F1B)."""
    return core.check_number(answer, cost.bubble_fraction(P, M, V), rel_tol=0.01, share=True,
                             hint="each chunk's op is v times shorter: (P - 1) / (vM + P - 1).",
                             explanation="v divides the ideal bubble; messages grow by "
                                         "(vP - 1)/(P - 1).", name="bubble")


def check_min_m(answer) -> dict:
    """Fewest micro-batches for an idle share <= 10% at P = 8 (1F1B)."""
    want = cost.min_micro_batches(P, TARGET)
    got, bad = core.read_number(answer, "M", whole=True)
    if bad:
        return bad
    if got == want:
        return core.verdict(True, f"M = {want}: (P-1)/(M+P-1) = {cost.bubble_fraction(P, want):.2%}; "
                            f"M = {want - 1} gives {cost.bubble_fraction(P, want - 1):.2%}.")
    if got < want:
        return core.verdict(False, f"At M = {got:g} the bubble is still "
                            f"{cost.bubble_fraction(P, got) if got >= 1 else 1:.2%}")
    return core.verdict(False, f"M = {got:g} works but is not the fewest: try smaller")


def check_peak(answer) -> dict:
    """Micro-batches whose activations stage 2 holds at its peak, 1F1B, P = 8, M = 24."""
    return core.check_number(answer, cost.pipeline_peak_activations("1f1b", P, M, PEAK_STAGE),
                             rel_tol=0, hint="1F1B runs P - stage forwards before its first "
                             "backward, then frees one per new one.", name="peak")


def check_zb_h2_peak(answer) -> dict:
    """Micro-batches whose activations rank 0 holds at its peak under ZB-H2, P = 8, M = 24."""
    want, one = (cost.pipeline_peak_activations(s, P, M, 0) for s in ("zb-h2", "1f1b"))
    return core.check_number(answer, want, rel_tol=0, name="peak",
                             hint="the table of §7 gives ZB-H2's peak at P = 4 against 1F1B's; "
                             "the rule behind it is in Qi et al. §2.2.",
                             explanation=f"min(M, 2P - 1) = {want}, against 1F1B's {one} on rank 0.")
