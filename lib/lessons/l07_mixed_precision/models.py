"""What notebook 07's experiments share: the lab's small GPT, a wider one whose Linears
fit 128-wide fp8 tiles, the batch, and one intra-op thread while they run."""

from __future__ import annotations

import functools

import torch

from parlab.data import get_batch
from parlab.model import GPTConfig

SMALL = GPTConfig(vocab_size=64, seq_len=32, d_model=64, n_heads=4, n_layers=2)
MID = GPTConfig(vocab_size=256, seq_len=64, d_model=256, n_heads=4, n_layers=2)  # 128-wide tiles fit
BATCH = 8


def one_thread(fn):
    """Run ``fn`` with one intra-op thread (restored after): these models are tiny, and two
    threads on a busy 2-core machine were 30x slower than one here."""
    @functools.wraps(fn)
    def wrapped(*a, **kw):
        n = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn(*a, **kw)
        finally:
            torch.set_num_threads(n)
    return wrapped


def _batch(step, config=SMALL, batch_size=BATCH):
    return get_batch(step, batch_size, config.seq_len, config.vocab_size)


