"""One worker of ``failover`` under torchrun (``python -m lessons.l08_checkpoints_and_failures.elastic_worker``).

torchrun (torch.distributed.run, "torchrun (Elastic Launch)" in PyTorch's documentation)
sets RANK, WORLD_SIZE, MASTER_ADDR/PORT and TORCHELASTIC_RESTART_COUNT; when a worker
dies it stops the others and, with ``--max-restarts 1``, starts the whole group again
with RESTART_COUNT = 1. So the worker's first act is to look for the newest complete
checkpoint and resume from it. On the first attempt only, the last rank SIGKILLs itself
before step ``--kill-at``: a crash with no chance to clean up, as a GPU falling off the
bus is.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

from parlab.checkpoint import dcp as checkpoint
from . import lifeline
from .training import Layout, Spec, train_rank

TINY = dict(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)


def spec_for(directory: str, world: int, steps: int, kill_at: int, every: int,
             attempt: int, batch_size: int = 8) -> Spec:
    """The worker's Spec: save every ``every`` steps, resume from the newest checkpoint."""
    from parlab.model import GPTConfig
    found = checkpoint.latest(os.path.join(directory, "ckpt"))
    return Spec(GPTConfig(**TINY), Layout("ours", world), steps=steps, batch_size=batch_size,
                directory=os.path.join(directory, "ckpt"),
                save_at=tuple(range(every, steps, every)),
                resume_from=found[1] if found else None,
                kill=(world - 1, kill_at) if attempt == 0 else None,
                log=os.path.join(directory, "log.txt"))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    for flag in ("--steps", "--kill-at", "--every"):
        ap.add_argument(flag, type=int, required=True)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args(argv)
    # torchrun puts each worker in a session of its own, out of reach of a group kill:
    # should torchrun die (killed, or ended by failover's guard), the kernel ends us too
    lifeline.die_with_parent()
    faulthandler.enable()  # a crash in C++ (SIGABRT, SIGSEGV) still prints where Python was
    torch.set_num_threads(1)
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    # The agent's store outlives an attempt, and on torch 2.13 a restarted worker
    # can read the gloo addresses the dead attempt left there ("Connection refused" to
    # an old port, then a connect timeout; seen here about one restart in three). So
    # each attempt rendezvouses under its own prefix of that store.
    timeout = timedelta(seconds=20)
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                          int(os.environ["WORLD_SIZE"]), is_master=False, timeout=timeout)
    dist.init_process_group("gloo", store=dist.PrefixStore(f"parlab/attempt_{attempt}", store),
                            rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]),
                            timeout=timeout)
    try:
        spec = spec_for(args.dir, dist.get_world_size(), args.steps, args.kill_at, args.every,
                        attempt)
        train_rank(spec)
        dist.barrier()  # no rank tears its pairs down while another still reads from them
    finally:
        dist.destroy_process_group()
    # A clean finish leaves by os._exit: in about one restarted attempt in four, the
    # interpreter's own teardown aborted here ("terminate called without an active
    # exception", SIGABRT, no Python frame: gloo's threads still held objects while Python
    # was finalizing), and torchrun counted that finished worker as failed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
