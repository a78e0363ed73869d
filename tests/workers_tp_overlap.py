"""Rank-side workers for tests/parlab/tensor_parallel/test_tp_overlap.py (ranks import them by name)."""
from parlab.tensor_parallel import collective_matmul, train_worker

_RIGHT = collective_matmul.positions


def _chunk_order(rank, k, n, shard):          # chunks placed in reverse order
    return _RIGHT(rank, shard // n - 1 - k, n, shard)


def _rank_offset(rank, k, n, shard):          # rank r's chunk at r*n, not r*T/t + k*n
    # the gathered buffer read chunk-major: offset (k*t + r)*n
    return slice(k * n * _world() + rank * n, k * n * _world() + (rank + 1) * n)


def _world():
    import torch.distributed as dist
    return dist.get_world_size()


BUGS = {"chunk_order": _chunk_order, "rank_offset": _rank_offset}


def buggy_worker(run, bug):
    """train_worker with a planted chunking bug in ``collective_matmul.positions``
    (restored after: the ranks are reused by later tests)."""
    collective_matmul.positions = BUGS[bug]
    try:
        return train_worker(run)
    finally:
        collective_matmul.positions = _RIGHT
