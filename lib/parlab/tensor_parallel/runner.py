"""One tensor-parallel training run, in the lab's run convention:

    result = tensor_parallel.run(TPRun(config=GPTConfig(...), steps=3, batch_size=8,
                                       sequence_parallel=True), world_size=4)

Every rank of the group sees the whole global batch (tensor parallelism splits the
model, not the data): the lab's GPT, built whole from the seed, is cut by its plan
(``apply_tensor_parallel`` of ``gpt_plan``) so each rank keeps a 1/t slice of each split
weight; ``collect`` returns the reassembled full parameters and gradients, so
``model.max_differences`` compares the run with ``reference_train`` directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import comm, trace
from ..data import get_batch
from ..memory import ActivationCounter
from ..model import GPT
from ..runs import Recipe, RunResult, TrainRun, make_run, snapshot, train
from ..validate import check_bool, check_choice
from .collective_matmul import check_chunks
from .peers import PEERS, TorchTPRecipe
from .parallelize import (apply_tensor_parallel, check_tp, full_tensors, gpt_plan,
                          recompute_attention, sync_sequence_parallel_grads)

RECOMPUTE = ("none", "selective")
EXTRAS = ("collectives", "activations")


@dataclass(frozen=True)
class TPRun(TrainRun):
    """One tensor-parallel training run over t = world_size ranks. ``sequence_parallel``:
    Korthikanti's sequence parallelism on top; ``overlap``: the input-gradient
    collective runs beside the weight-gradient matmul; ``recompute``: "none" or
    "selective" (the attention core is recomputed in backward); ``overlap_chunks``: with
    sequence parallelism, the forward all-gather -> GEMM and GEMM -> reduce-scatter
    pipelined in that many chunks (``collective_matmul``). Collective counts and bytes
    are always returned. ``peer="dtensor"``: PyTorch's own TP (``parallelize_module``,
    ``peers.py``) on the same model instead of ours (``overlap`` and ``overlap_chunks`` have
    no counterpart there)."""
    sequence_parallel: bool = False
    overlap: bool = False
    recompute: str = "none"
    overlap_chunks: int = 1
    peer: str | None = None  # "dtensor": torch's own TP on the same model (peers.py)

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken field (before any rank starts)."""
        super().check(world_size)
        check_bool("sequence_parallel", self.sequence_parallel)
        check_bool("overlap", self.overlap)
        check_choice("recompute", self.recompute, RECOMPUTE)
        check_tp(self.config, world_size, self.sequence_parallel)
        check_chunks(self.overlap_chunks, self.config.seq_len // world_size,
                     self.sequence_parallel)
        check_choice("peer", self.peer, (None, *PEERS))


def labelled(model) -> None:
    """Tag what each submodule's forward records with its name, and the loss with "loss"."""
    trace.label_modules(model, {m: n for n, m in model.named_modules() if n})
    loss_fn = model.loss_fn

    def loss(logits, targets):
        with trace.tagged(layer="loss"):
            return loss_fn(logits, targets)
    model.loss_fn = loss


class TPRecipe(Recipe):
    """The lab's GPT, tensor-parallel over the group; every rank computes the same loss."""

    def __init__(self, run: TPRun, group=None):
        super().__init__(run, group)
        self.replica = 0 if self.rank == 0 else None  # one loss: every rank has the same
        self.model = GPT(run.config, run.seed).to(comm.device(group))
        apply_tensor_parallel(self.model, gpt_plan(run.config, run.overlap, run.overlap_chunks),
                              group, run.sequence_parallel)
        if run.recompute == "selective":
            recompute_attention(self.model)
        self.optimizer = self.make_optimizer(self.model.parameters())
        self.counter = ActivationCounter(self.model.parameters())
        self.counter.regions({b: f"blocks.{i}" for i, b in enumerate(self.model.blocks)})
        labelled(self.model)

    def batch(self, step: int):
        r = self.run
        c = self.run.config
        x, y = get_batch(step, r.batch_size, c.seq_len, c.vocab_size, seed=r.data_seed)
        return x.to(comm.device(self.group)), y.to(comm.device(self.group))

    def train_step(self, x, y):
        with trace.span("forward"), self.counter.measure("step 0"):  # (counts once)
            _, loss = self.model(x, y)
        with trace.span("backward"):
            loss.backward()
            if self.run.sequence_parallel:
                sync_sequence_parallel_grads(self.model, self.group)
        return loss.item()

    def full_state(self):  # a collective: every rank gathers, rank 0 keeps
        state = full_tensors(self.model, self.group)
        grads = full_tensors(self.model, self.group, grads=True)
        return snapshot(state, grads) if self.rank == 0 else (None, None)

    def report(self, events, windows) -> dict:
        counts = self.counter.bytes.get("step 0", {})
        return {"collectives": trace.comm_rows(events, windows),  # layer, pass, operator
                "activations": {"per_layer": [counts.get(f"blocks.{i}", 0)
                                              for i in range(self.run.config.n_layers)],
                                "other": counts.get("other", 0)}}


def train_worker(run: TPRun, group=None) -> dict:
    """Rank worker: tensor-parallel training over ``group`` (default: the world), ours or
    (``run.peer``) torch's."""
    return train((TorchTPRecipe if run.peer else TPRecipe)(run, group))


def collect(run: TPRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one tensor-parallel group's ``train_worker`` returns (group
    rank order); per rank its collectives and activation bytes."""
    return RunResult.gather(run, ranks, EXTRAS)


run = make_run(TPRun, train_worker, collect)
