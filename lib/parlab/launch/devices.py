"""Where a launch's ranks keep their tensors, and how they talk when GPUs are fewer than ranks.

    parlab.launch(fn, 4, device="auto")   # the default; "cpu", "cuda" or "dry-run" to choose

"auto" picks, for ``world_size`` ranks on this machine:

  one GPU per rank        NCCL, rank r on GPU r (the way real jobs run);
  fewer GPUs than ranks   gloo, rank r's tensors on GPU r % n_gpus: several ranks share
                          a GPU (a learner's one GPU runs every strategy at 4 ranks);
  no GPU                  gloo on the CPU, as the lab runs on a laptop or Binder.

``device="cuda"`` asks for the GPU(s) and fails (ValueError) where there is none;
``"cpu"`` keeps every tensor on the CPU even on a GPU machine. ``PARLAB_DEVICE`` in the
environment sets the default for every launch (``on_device`` sets it for a block).

Why not NCCL for two ranks on one GPU. NCCL refuses it (each rank of a communicator
must own its device: "Duplicate GPU detected"). gloo takes CUDA tensors for some of
its collectives -- it copies them through pinned host memory itself -- and not for
others. Per operation, on gloo with CUDA tensors:

  all_reduce, broadcast, all_to_all_single, all_gather (list form)
        gloo's own CUDA path (ProcessGroupGloo's *CUDAWork classes);
  send, recv, isend, irecv, batch_isend_irecv, all_gather_single /
  all_gather_into_tensor, reduce_scatter_single / reduce_scatter_tensor
        staged here: copied to the CPU, gloo's CPU collective, copied back.
        gloo's send/recv hand the tensor's raw pointer to a socket, which must be host
        memory, and its flat all-gather/reduce-scatter have no CUDA path in every torch
        release the lab supports.

The staging wraps those methods of ``torch.distributed.ProcessGroup`` in the rank
(``install_staging``), so that parlab.comm, the strategies' own ``dist.isend`` and
torch's FSDP2 all get it. Collectives torch calls from C++ (functional collectives
under DTensor) do not pass through Python: on gloo they take gloo's own path.

"dry-run" is the CPU stand-in that CI runs (placement.py): the tensors stay on the CPU
but the compute device is called ``cpu:0``, every staged operation is staged, and a
check raises when a tensor the code left on the CPU meets one on the compute device,
as CUDA would.
"""

from __future__ import annotations

import contextlib
import os

DEVICES = ("auto", "cpu", "cuda", "dry-run")
_default: list[str] = []  # on_device's stack; empty: PARLAB_DEVICE, else "auto"


def default_device() -> str:
    """The device a launch uses when it names none: ``on_device``'s, PARLAB_DEVICE, "auto"."""
    if _default:
        return _default[-1]
    value = os.environ.get("PARLAB_DEVICE", "auto") or "auto"
    if value not in DEVICES:
        raise ValueError(f"PARLAB_DEVICE={value!r} must be one of {DEVICES}")
    return value


@contextlib.contextmanager
def on_device(device: str):
    """Every launch inside the block (a strategy's ``run`` among them) uses ``device``."""
    check_device(device)
    _default.append(device)
    try:
        yield
    finally:
        _default.pop()


def check_device(device) -> None:
    if device not in DEVICES:
        raise ValueError(f"device={device!r} must be one of {DEVICES}")


def gpu_count() -> int:
    import torch
    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # a broken driver counts as no GPU
        return 0


def choose(world_size: int, backend: str | None, device: str | None) -> str:
    """The pool's backend string for ``world_size`` ranks: "nccl", "gloo" (CPU tensors),
    "gloo+cuda" (several ranks per GPU) or "gloo+dry-run". ValueError, naming the
    argument, for a combination this machine cannot run."""
    device = default_device() if device is None else device
    check_device(device)
    if device == "dry-run":
        if backend == "nccl":
            raise ValueError("device='dry-run' runs on gloo: backend='nccl' cannot go with it")
        return "gloo+dry-run"
    if device == "cpu":
        if backend == "nccl":
            raise ValueError("backend='nccl' needs CUDA tensors: device='cpu' cannot go with it")
        return "gloo"
    n = gpu_count()
    if device == "cuda" and n == 0:
        raise ValueError("device='cuda' but torch sees no CUDA GPU here (torch.cuda.is_available() "
                         "is False): use device='auto' or 'cpu'")
    if backend == "nccl":
        if n < world_size:
            raise ValueError(f"backend='nccl' needs one GPU per rank: world_size={world_size} "
                             f"but {n} GPU(s) here")
        return "nccl"
    if n == 0:
        return "gloo"
    if backend is None and n >= world_size and _has_nccl():
        return "nccl"
    return "gloo+cuda"


def _has_nccl() -> bool:
    import torch.distributed as dist
    try:
        return dist.is_nccl_available()
    except Exception:
        return False


def split(pool_backend: str) -> tuple[str, str]:
    """("gloo", "cuda") from "gloo+cuda"; a bare backend keeps its tensors where it
    always did: NCCL on the GPU, gloo on the CPU."""
    backend, _, device = pool_backend.partition("+")
    return backend, device or ("cuda" if backend == "nccl" else "cpu")


def setup_rank(pool_backend: str, local_rank: int) -> None:
    """In a rank, before its process group starts: its GPU, parlab.comm's device, and
    the staging of the operations gloo cannot do on CUDA tensors."""
    import torch

    from .. import comm
    backend, device = split(pool_backend)
    if device == "cuda":
        index = local_rank % max(gpu_count(), 1)  # several ranks per GPU when they outnumber them
        torch.cuda.set_device(index)
        comm.use_device(torch.device("cuda", index))
    elif device == "dry-run":
        comm.use_device(torch.device("cpu", 0))  # the stand-in: distinct from plain "cpu"
    else:
        comm.use_device(None)
    if backend == "gloo" and device != "cpu":
        install_staging(stage_all=device == "dry-run")


def job(pool_backend: str):
    """The context one job runs in: the placement check under "dry-run", else nothing."""
    if split(pool_backend)[1] != "dry-run":
        return contextlib.nullcontext()
    from .placement import PlacementCheck
    return PlacementCheck()


def describe(pool_backend: str, world_size: int) -> str:
    """One line for the run's output: the backend and where the tensors are."""
    backend, device = split(pool_backend)
    if device == "cuda" and backend == "gloo":
        n = max(gpu_count(), 1)
        return (f"{world_size} ranks on {min(n, world_size)} GPU(s), up to "
                f"{-(-world_size // n)} per GPU: gloo with CUDA tensors (point-to-point and "
                "flat all-gather/reduce-scatter staged through the CPU)")
    if device == "cuda":
        return f"{world_size} ranks, one GPU each: NCCL"
    if device == "dry-run":
        return f"{world_size} ranks, dry run: CPU tensors standing in for a GPU's, placement checked"
    return f"{world_size} ranks on the CPU: gloo"


def placement(pool_backend: str, world_size: int) -> dict:
    """What ``launch.last_placement()`` returns: backend, device kind, line."""
    backend, device = split(pool_backend)
    return {"backend": backend, "device": device, "world_size": world_size,
            "gpus": gpu_count() if device == "cuda" else 0,
            "line": describe(pool_backend, world_size)}


def half_dtype(device=None):
    """The 16-bit dtype for autocast on ``device``: bf16 where the GPU has it (Ampere
    on), fp16 on older GPUs (T4, V100), bf16 on the CPU."""
    import torch
    if device is not None and torch.device(device).type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16


# --- staging through the CPU ----------------------------------------------------------

# ProcessGroup method -> (the positions of its tensor arguments, the one that receives
# the result, None for a send). Both names of the flat forms: torch 2.13 renamed them.
_STAGED = {"send": ((0,), None), "recv": ((0,), 0),
           "all_gather_single": ((0, 1), 0), "_allgather_base": ((0, 1), 0),
           "reduce_scatter_single": ((0, 1), 0), "_reduce_scatter_base": ((0, 1), 0)}
_originals: dict = {}  # name -> the class attribute as torch defined it


def install_staging(stage_all: bool = False) -> None:
    """Wrap the ProcessGroup methods of ``_STAGED`` so that their CUDA tensors (every
    tensor when ``stage_all``, the dry run) go through CPU copies. Idempotent."""
    import torch.distributed as dist
    cls = dist.ProcessGroup
    for name, (positions, result) in _STAGED.items():
        if name not in _originals:
            # the attribute itself (pybind's method descriptor), to put back as it was;
            # getattr gives the plain function, which takes self explicitly
            owner = next((k for k in cls.__mro__ if name in vars(k)), None)
            if owner is None:  # a name this torch release does not have
                continue
            _originals[name] = vars(owner)[name]
        plain = _plain(_originals[name], cls, name)
        setattr(cls, name, _staged(plain, positions, result, stage_all))


def remove_staging() -> None:
    """Put torch's own methods back (tools/gpu_all.py probes gloo without the staging)."""
    import torch.distributed as dist
    for name, original in _originals.items():
        setattr(dist.ProcessGroup, name, original)


def _plain(descriptor, cls, name):
    """The function behind ``descriptor`` that takes self explicitly."""
    setattr(cls, name, descriptor)
    return getattr(cls, name)


def _staged(original, positions, result, stage_all):
    import torch

    def method(self, *args, **kwargs):  # c10d passes tensors by position: those are staged
        args = list(args)
        moved = {}  # position -> (the caller's tensor, its host copy)
        for i in positions:
            one = isinstance(args[i], list)  # send/recv take [tensor]
            t = args[i][0] if one else args[i]
            if isinstance(t, torch.Tensor) and (stage_all or t.device.type == "cuda"):
                host = t.detach().to("cpu", copy=True)
                moved[i] = (t, host)
                args[i] = [host] if one else host
        if not moved:
            return original(self, *args, **kwargs)
        # the host copies live in the Work until it is waited on (a send's until done)
        back = [moved[result]] if result in moved else []
        return _copy_back_class()(original(self, *args, **kwargs), back, list(moved.values()))

    method.__name__ = getattr(original, "__name__", "staged")
    method.__doc__ = "Staged through the CPU (parlab.launch.devices). " + (original.__doc__ or "")
    return method


_work_class: list = []


def _copy_back_class():
    """The Work a staged operation returns (made once: it subclasses torch's Work, and
    this module must not import torch before a launch does)."""
    if _work_class:
        return _work_class[0]
    import torch.distributed as dist

    class CopyBack(dist.Work):
        """``wait`` waits for gloo, then copies the host result into the caller's
        tensor (on its GPU)."""

        def __init__(self, work, back, held):
            super().__init__()
            self._work = work
            self._back = back
            self._held = held

        def wait(self, timeout=None):
            done = self._work.wait() if timeout is None else self._work.wait(timeout)
            for target, host in self._back:
                target.detach().copy_(host)  # as gloo would write it: no autograd
            self._back = self._held = []
            return done

        def is_completed(self):
            return self._work.is_completed()

        def is_success(self):
            return self._work.is_success()

        def exception(self):
            return self._work.exception()

        def _source_rank(self):
            return self._work._source_rank()

    _work_class.append(CopyBack)
    return CopyBack
