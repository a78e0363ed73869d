"""Jobs for tests/parlab/launch/test_rank_isolation.py: learner code that changes torch for the whole
process, a probe of what a later job sees, and a way to plant the bug (no reset)."""

from __future__ import annotations

import os
import signal
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

POISONS = ("float64", "no_grad", "gelu", "tensor_add", "matmul", "linear_forward")
_kept = []  # context managers entered and never left, as a careless cell would


def poison(*names):
    """Change torch process-wide the way learner code might; return the rank's pid."""
    names = names or POISONS
    for name in names:
        if name == "float64":
            torch.set_default_dtype(torch.float64)
        elif name == "no_grad":
            torch.set_grad_enabled(False)
        elif name == "gelu":
            gelu = F.gelu
            F.gelu = lambda x, approximate="none": gelu(x, approximate=approximate) * 1.01
        elif name == "tensor_add":
            torch.Tensor.__add__ = lambda a, b: torch.add(torch.add(a, b), 1e-3)
        elif name == "matmul":  # the function and the operator (attention uses q @ k)
            matmul = torch.matmul
            torch.matmul = lambda a, b, **kw: matmul(a, b, **kw) * 1.01
            torch.Tensor.__matmul__ = lambda a, b: matmul(a, b) * 1.01
        elif name == "linear_forward":
            torch.nn.Linear.forward = lambda self, x: F.linear(x, self.weight * 1.01, self.bias)
        elif name == "settings":  # the rest of what isolation.reset lists
            torch.use_deterministic_algorithms(True, warn_only=True)
            torch.set_anomaly_enabled(True)
            torch.set_autocast_enabled("cpu", True)
            torch.set_float32_matmul_precision("medium")
            torch.set_num_threads(2)
            torch.manual_seed(1234)
            torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: None)
            for cm in (torch.inference_mode(), torch.device("meta")):
                cm.__enter__()
                _kept.append(cm)
        else:
            raise ValueError(f"poison: unknown name {name!r}")
    return os.getpid()


def probe():
    """What a job sees of torch's process state (and the rank's pid)."""
    import torch.nn.modules.module as m
    return {"pid": os.getpid(), "dtype": torch.get_default_dtype(),
            "grad": torch.is_grad_enabled(), "inference": torch.is_inference_mode_enabled(),
            "device": str(torch.empty(0).device),
            "deterministic": torch.are_deterministic_algorithms_enabled(),
            "anomaly": torch.is_anomaly_enabled(), "autocast": torch.is_autocast_enabled("cpu"),
            "matmul_precision": torch.get_float32_matmul_precision(),
            "threads": torch.get_num_threads(), "hooks": len(m._global_forward_hooks),
            "rand": torch.rand(1).item(),
            "gelu": F.gelu(torch.ones(1)).item(), "add": (torch.ones(1) + torch.ones(1)).item(),
            "matmul": torch.matmul(torch.ones(1, 1), torch.ones(1, 1)).item(),
            "linear": torch.nn.Linear(1, 1, bias=False).forward.__func__.__module__}


def record_resets():
    """Wrap the rank's reset so that ``resets()`` can tell what each one restored."""
    from parlab.launch import isolation
    if not hasattr(isolation, "_real_reset"):
        isolation._real_reset, isolation._restored = isolation.reset, []
        isolation.reset = lambda saved: isolation._restored.append(
            isolation._real_reset(saved)) or isolation._restored[-1]


def resets():
    from parlab.launch import isolation
    return list(isolation._restored)


def disable_reset():
    """The planted bug: the rank's reset does nothing (rank.py looks it up per call)."""
    from parlab.launch import isolation
    isolation.reset = lambda saved: []


def parent_pid():
    """The fork server's pid: ranks are forked from it."""
    return os.getppid()


def kill_fork_server_then_wait(seconds):
    """Rank 0 kills the fork server mid-job; every rank then waits (still alive)."""
    dist.barrier()
    if dist.get_rank() == 0:
        os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(seconds)
