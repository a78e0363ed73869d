"""Deterministic synthetic data with a known loss floor.

The token stream is a seeded first-order Markov chain over the vocabulary: each
token has only `branching` possible successors, with random (seeded)
probabilities.  Since the next token depends only on the current one, no model
can do better than the chain's *entropy rate*

    H = - sum_i pi_i sum_j P_ij log P_ij        (nats / token)

where P is the transition matrix and pi its stationary distribution.  Because we
start every sequence from pi, the chain is stationary at every position, so H is
exactly the expected loss of a perfect model -- the floor a training curve
should approach.  A model that has only learned the successor *sets* (but not
their probabilities) sits at about ln(branching); one that knows nothing sits at
ln(vocab_size).

Determinism: the unit of determinism is the *global batch*.  `batch(step, B, T)`
depends only on (seed, step, B, T) -- never on the global RNG, the device or the
number of processes.  Parallel strategies must always build the global batch
and then take their share of it (data parallel: rows x[rank*b:(rank+1)*b]), so
row i of step s is the same token sequence whatever the sharding.
"""

import functools
import math
import zlib

import torch

from .validate import check_int


# Successors per token (the chain's `branching`) in every run's data; a vocabulary must
# hold at least that many tokens, so it is the smallest vocab_size a run can train on.
BRANCHING = 4
MIN_VOCAB = BRANCHING


def check_vocab(vocab_size, name: str = "config.vocab_size") -> int:
    """``vocab_size`` if the runs' synthetic data can be drawn over it, else a ValueError
    naming ``name`` and the minimum (each token needs BRANCHING distinct successors)."""
    check_int(name, vocab_size)
    if vocab_size < MIN_VOCAB:
        raise ValueError(f"{name}={vocab_size} must be >= {MIN_VOCAB}: the synthetic data "
                         f"gives every token branching={BRANCHING} distinct successors")
    return vocab_size


def _stable_seed(*parts) -> int:
    """A seed derived from `parts` that is the same in every process and run
    (Python's hash() of str is salted per process, so we use crc32)."""
    return zlib.crc32("/".join(str(p) for p in parts).encode())


def _sample(cdf: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF sampling: the first index whose cumulative probability
    exceeds u, for u in [0, 1).  cdf is (V,) shared by all u, or (B, V) with
    one row per entry of u (B,); its last entry is exactly 1.0."""
    if cdf.dim() == 1:
        return torch.searchsorted(cdf, u, right=True)
    return torch.searchsorted(cdf, u.unsqueeze(-1), right=True).squeeze(-1)


def _cdf(p: torch.Tensor) -> torch.Tensor:
    # Dividing by the last entry makes it exactly 1.0, and entries after the
    # last non-zero probability equal it exactly, so _sample can never return
    # a token of probability zero.
    c = p.cumsum(-1)
    return c / c[..., -1:]


class MarkovData:
    """A seeded first-order Markov chain over `vocab_size` tokens, each token
    having exactly `branching` possible successors.

    Attributes:
        transition: (V, V) float64, row i = distribution of the token after i.
        stationary: (V,) float64, the stationary distribution pi (pi P = pi).
    """

    def __init__(self, vocab_size: int = 64, seed: int = 0, branching: int = BRANCHING):
        if vocab_size < 1:
            raise ValueError(f"vocab_size={vocab_size} must be >= 1")
        if branching < 1:
            raise ValueError(f"branching={branching} must be >= 1")
        if branching > vocab_size:
            raise ValueError(f"branching={branching} must be <= vocab_size={vocab_size}")
        self.vocab_size = vocab_size
        self.seed = seed
        self.branching = branching
        V = vocab_size
        g = torch.Generator().manual_seed(_stable_seed("markov", seed, V, branching))

        # One successor of every token lies on a random cycle through the whole
        # vocabulary, so every token is reachable from every other one (the
        # chain is irreducible and its stationary distribution is unique).
        perm = torch.randperm(V, generator=g)
        on_cycle = torch.empty(V, dtype=torch.long)
        on_cycle[perm] = perm.roll(-1)
        # The other branching-1 successors are picked at random among the rest.
        score = torch.rand(V, V, generator=g, dtype=torch.float64)
        score[torch.arange(V), on_cycle] = 2.0  # always among the top-k
        successors = score.topk(branching, dim=1).indices
        # Random probabilities: normalised exponentials = Dirichlet(1, ..., 1).
        w = -torch.log1p(-torch.rand(V, branching, generator=g, dtype=torch.float64))
        self.transition = torch.zeros(V, V, dtype=torch.float64)
        self.transition.scatter_(1, successors, w / w.sum(1, keepdim=True))

        self.stationary = self._stationary()
        self._cdf_transition = _cdf(self.transition)
        self._cdf_stationary = _cdf(self.stationary)

    def _stationary(self, tol: float = 1e-15, max_iter: int = 100_000) -> torch.Tensor:
        """Power iteration pi <- pi P.  We iterate the 'lazy' chain (I + P)/2,
        which has the same stationary distribution but converges even if the
        chain is periodic (e.g. branching=1, a pure cycle)."""
        V = self.vocab_size
        lazy = 0.5 * (torch.eye(V, dtype=torch.float64) + self.transition)
        pi = torch.full((V,), 1.0 / V, dtype=torch.float64)
        for _ in range(max_iter):
            new = pi @ lazy
            new = new / new.sum()
            if (new - pi).abs().sum().item() < tol:
                return new
            pi = new
        return pi  # converged to within float64 round-off oscillation

    def entropy_rate(self) -> float:
        """The best achievable mean next-token cross-entropy, in nats/token."""
        P = self.transition
        plogp = torch.where(P > 0, P * torch.log(P.clamp_min(1e-300)), torch.zeros_like(P))
        return float(-(self.stationary * plogp.sum(1)).sum()) + 0.0  # + 0.0: no "-0.0"

    def batch(self, step: int, batch_size: int, seq_len: int):
        """Inputs x and next-token targets y, int64 tensors (batch_size, seq_len).

        seq_len + 1 tokens are generated per row and y = x shifted by one:
        y[:, t] == x[:, t + 1].  Deterministic in (seed, step, batch_size,
        seq_len) only; uses its own generator, never the global RNG."""
        if step < 0:
            raise ValueError(f"step={step} must be >= 0")
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} must be >= 1")
        if seq_len < 1:
            raise ValueError(f"seq_len={seq_len} must be >= 1")
        g = torch.Generator().manual_seed(_stable_seed("batch", self.seed, step, batch_size, seq_len))
        u = torch.rand(seq_len + 1, batch_size, generator=g, dtype=torch.float64)
        tokens = torch.empty(seq_len + 1, batch_size, dtype=torch.long)  # time-major
        tokens[0] = _sample(self._cdf_stationary, u[0])
        for t in range(seq_len):  # vectorised over the batch, sequential in time
            tokens[t + 1] = _sample(self._cdf_transition[tokens[t]], u[t + 1])
        tokens = tokens.T
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def __repr__(self):
        return (f"MarkovData(vocab_size={self.vocab_size}, seed={self.seed}, "
                f"branching={self.branching}; floor H={self.entropy_rate():.4f} nats, "
                f"ln(branching)={math.log(self.branching):.4f})")


@functools.lru_cache(maxsize=16)
def _markov(vocab_size: int, seed: int, branching: int) -> MarkovData:
    return MarkovData(vocab_size, seed, branching)


def get_batch(step: int, batch_size: int, seq_len: int, vocab_size: int = 64,
              seed: int = 0, branching: int = BRANCHING):
    """`MarkovData(vocab_size, seed, branching).batch(step, batch_size, seq_len)`,
    reusing the chain between calls.  Returns the *global* batch (see module doc)."""
    return _markov(vocab_size, seed, branching).batch(step, batch_size, seq_len)


def local_batch(step: int, batch_size: int, seq_len: int, vocab_size: int, rank: int,
                world_size: int, seed: int = 0):
    """Rank ``rank``'s contiguous slice of the global batch of ``step``: rows
    [rank B/W, (rank+1) B/W). Data parallelism (and ZeRO) split the batch this way, so
    the mean of the slice losses is the global mean loss."""
    if batch_size % world_size:
        raise ValueError(f"world_size={world_size} must divide batch_size={batch_size}")
    x, y = get_batch(step, batch_size, seq_len, vocab_size, seed=seed)
    b = batch_size // world_size
    return x[rank * b:(rank + 1) * b], y[rank * b:(rank + 1) * b]
