"""Worker functions for the launcher tests (ranks import them by name)."""
import os
import time

import torch
import torch.distributed as dist

from parlab import trace


def rank_and_size():
    return dist.get_rank(), dist.get_world_size(), os.getpid()


def all_reduce_sum(value=1.0):
    t = torch.tensor([float(value) * (dist.get_rank() + 1)])
    dist.all_reduce(t)
    return t.item()


def raise_on(bad_rank, message="boom"):
    if dist.get_rank() == bad_rank:
        raise RuntimeError(message)
    t = torch.ones(1)
    dist.all_reduce(t)  # the healthy ranks block here, waiting for the dead one
    return t.item()


def hang_in_traced_all_reduce(skip_rank=0):
    t = torch.ones(1)
    if dist.get_rank() != skip_rank:
        with trace.span("my_all_reduce", kind="comm"):
            dist.all_reduce(t)
    else:
        time.sleep(3600)
    return t.item()


def sleep(seconds):
    time.sleep(seconds)
    return dist.get_rank()


def print_lines(n=2):
    for i in range(n):
        print(f"line {i} from {dist.get_rank()}")
    return None


def exit_hard(bad_rank):
    if dist.get_rank() == bad_rank:
        os._exit(3)
    time.sleep(3600)


def not_picklable_result():
    return lambda: 0


def echo(*args, **kwargs):
    return args, kwargs


# --- hand-written collectives vs torch ----------------------------------------------

def _data(numel, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(1000 * seed + dist.get_rank())
    if dtype.is_floating_point:
        return torch.randn(numel, generator=g).to(dtype)
    return torch.randint(-50, 50, (numel,), generator=g, dtype=dtype)


def compare_ring_with_torch(sizes, ops=("sum", "max", "min"), dtype=torch.float32, subgroup=None):
    """For each size and op: our ring / naive result vs torch's all_reduce, on this rank."""
    from parlab import comm
    group = dist.new_group(subgroup) if subgroup is not None else None
    if subgroup is not None and dist.get_rank() not in subgroup:
        return None
    torch_op = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
                "prod": dist.ReduceOp.PRODUCT}
    out = []
    for numel in sizes:
        for op in ops:
            x = _data(numel, numel, dtype)
            expected = x.clone()
            dist.all_reduce(expected, op=torch_op[op], group=group)
            ring = comm.ring_all_reduce(x.clone(), group=group, op=op)
            naive = comm.naive_all_reduce(x.clone(), group=group, op=op)
            n = dist.get_world_size(group)
            r = dist.get_rank(group)
            a, b = comm.chunk_bounds(numel, n)[r]
            rs = comm.ring_reduce_scatter(x, group=group, op=op)
            sizes_ = [e - s for s, e in comm.chunk_bounds(numel, n)]
            ag = comm.ring_all_gather(expected[a:b].clone(), group=group, sizes=sizes_)
            out.append((numel, op, expected, ring, naive, rs, expected[a:b], ag))
    return out


def ring_2d_noncontiguous():
    from parlab import comm
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).t() * (dist.get_rank() + 1)
    assert not x.is_contiguous()
    expected = x.clone()
    dist.all_reduce(expected)
    comm.ring_all_reduce(x)
    return x, expected


def ring_avg(numel):
    from parlab import comm
    x = _data(numel, 7)
    expected = x.clone()
    dist.all_reduce(expected)
    return comm.ring_all_reduce(x, op="avg"), expected / dist.get_world_size()


def traced_bytes(numel, algorithm, dtype=torch.float32):
    """Bytes this rank sent/received in one all-reduce, summed from the trace."""
    from parlab import comm
    x = torch.ones(numel, dtype=dtype)
    trace.start()
    (comm.ring_all_reduce if algorithm == "ring" else comm.naive_all_reduce)(x)
    events = trace.stop()
    comm_events = [e for e in events if e["kind"] == "comm"]
    return (sum(e["bytes_sent"] for e in comm_events), sum(e["bytes_recv"] for e in comm_events),
            len(comm_events), all(not e["bytes_modelled"] for e in comm_events))


def traced_torch_all_reduce(numel):
    from parlab import comm
    x = torch.ones(numel)
    trace.start()
    comm.all_reduce(x)
    return trace.stop()


def make_subgroup_and_destroy():
    sub = dist.new_group([0, 1])
    t = torch.ones(1)
    if dist.get_rank() in (0, 1):
        dist.all_reduce(t, group=sub)  # unused afterwards: the launcher cleans it up
    t = torch.ones(1)
    dist.all_reduce(t)
    dist.destroy_process_group()
    return t.item()


def sync_clock_offset():
    return trace.sync_clocks(rounds=5)


def exchange_empty():
    from parlab import comm
    r = dist.get_rank()
    other = 1 - r
    trace.start()
    comm.exchange(torch.empty(0), other, torch.empty(0), other)
    comm.exchange(torch.full((3,), float(r)), other, buf := torch.zeros(3), other)
    return buf.tolist(), trace.stop()


def torch_wrappers():
    """Each traced torch collective: result, and the event it recorded."""
    from parlab import comm
    r, n = dist.get_rank(), dist.get_world_size()
    trace.start()
    ar = comm.all_reduce(torch.full((4,), r + 1.0))
    ag = comm.all_gather(torch.empty(2 * n), torch.full((2,), float(r)))
    rs = comm.reduce_scatter(torch.empty(2), torch.arange(2.0 * n))
    a2a = comm.all_to_all(torch.empty(n), torch.full((n,), float(r)))
    bc = comm.broadcast(torch.full((3,), float(r)), src=n - 1)
    comm.all_reduce(torch.ones(2), label="labelled")
    comm.barrier()
    return [ar.tolist(), ag.tolist(), rs.tolist(), a2a.tolist(), bc.tolist()], trace.stop()


def forget_collective_on_rank0():
    t = torch.ones(1)
    if dist.get_rank() != 0:
        dist.all_reduce(t)  # rank 0 returns at once; the others wait for it in vain
    return t.item()


def getenv(name):
    return os.environ.get(name)


def interleaved_order():
    order = []

    def step(label):
        def run(k):
            order.append(label)
            with trace.span(f"{label}{k}"):
                pass
        return run

    out = trace.interleaved({"a": step("a"), "b": step("b")}, rounds=2, warmup=1, record=True)
    return order, out["times"], out["events"]


# --- launcher hardening ----------------------------------------------------------

def deaf_sleep(seconds):
    """Sleep with SIGUSR1 ignored: the launcher's stack-dump request gets no answer."""
    import signal
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    time.sleep(seconds)


def sleep_on(sleepy_rank, seconds):
    """One rank sleeps (outside any collective); the others return at once."""
    if dist.get_rank() == sleepy_rank:
        time.sleep(seconds)
    return dist.get_rank()
