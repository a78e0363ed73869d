"""Every library run starts from the torch its rank started with, whatever ran before.

Ranks are reused across jobs (pool.py), and learner code runs on them too: a
``%%ranks`` cell, or an exercise checker that launches the learner's function. What
such code sets for the whole process used to carry into the next run on the same
ranks and change its numbers without an error: after
``torch.set_default_dtype(torch.float64)`` a tensor-parallel run ended 0.31 away from
the single device, after a patched ``F.gelu`` 2.6e-3 away, and after
``torch.set_grad_enabled(False)`` it failed.

Why reset the state rather than restart the ranks after learner code. The launcher
cannot tell a checker's launch of learner code from a library launch (both are a
``fn`` it imports), so restarting "after learner code" would mean after every launch:
a new pool of 4 ranks takes 0.1-0.3 s (docs/design.md), and each job would import its modules
again, against ~2-8 ms for a warm launch; and a ``%%ranks`` namespace must outlive
its cell. Putting back a list of settings and comparing the namespaces' attributes
with a snapshot costs a rank about 0.7 ms per job (0.08 ms when its caches are warm),
and rank.py does it on "regroup", when every rank has replied, so that it delays no
reply. Measured on 2 shared cores, a trivial 4-rank launch, medians of 8 alternating
rounds (100 back-to-back launches, 50 after a 0.3 s pause): back to back, which
includes the regroup, 60.4 ms against 58.1 ms before; after a pause 8.6 against 7.1 ms,
a paired difference of 0.4 ms, inside the rounds' spread (5-17 ms).

What it cannot undo: state it does not list (a patched function of a module not in
``_namespaces``, such as parlab's own or the learner's; objects the job mutated in
place; C-level state such as ``set_num_interop_threads``, which torch lets a process
set once and which changes no result). ``snapshot``/``reset`` are per process: call
them from the thread that runs the jobs (grad mode and autocast are per thread).
"""

from __future__ import annotations

import inspect
import os
import random
import types

_held_guards: list = []  # see _leave_inference_mode
_TORCH_DIR = None  # torch's package directory, set by snapshot()


def _settings() -> list[tuple]:
    """(get, set) of each per-process torch setting that can change a run's numbers."""
    import torch
    mkldnn = torch.backends.mkldnn
    settings = [
        (torch.get_default_dtype, torch.set_default_dtype),
        (torch.get_default_device, torch.set_default_device),
        (torch.is_grad_enabled, torch.set_grad_enabled),
        (torch._C._is_fwd_grad_enabled, torch._C._set_fwd_grad_enabled),
        (lambda: (torch.are_deterministic_algorithms_enabled(),
                  torch.is_deterministic_algorithms_warn_only_enabled()),
         lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1])),
        (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        (torch.get_num_threads, torch.set_num_threads),
        (lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
         lambda v: torch.set_anomaly_enabled(*v)),
        (lambda: mkldnn.enabled, lambda v: setattr(mkldnn, "enabled", v)),
        (lambda: mkldnn.deterministic, lambda v: setattr(mkldnn, "deterministic", v)),
        (torch._C._len_torch_function_stack, _pop_modes(torch._C._len_torch_function_stack,
                                                        torch._C._pop_torch_function_stack)),
        (torch._C._len_torch_dispatch_stack, _pop_modes(torch._C._len_torch_dispatch_stack,
                                                        torch._C._pop_torch_dispatch_stack)),
    ]
    for device in ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",):
        settings.append((lambda d=device: (torch.is_autocast_enabled(d),
                                           torch.get_autocast_dtype(d)),
                         lambda v, d=device: (torch.set_autocast_enabled(d, v[0]),
                                              torch.set_autocast_dtype(d, v[1]),
                                              torch.clear_autocast_cache())))
    if torch.cuda.is_available():
        cudnn = torch.backends.cudnn
        matmul = torch.backends.cuda.matmul
        for obj, name in ((cudnn, "enabled"), (cudnn, "benchmark"), (cudnn, "deterministic"),
                          (cudnn, "allow_tf32"), (matmul, "allow_tf32")):
            settings.append((lambda o=obj, n=name: getattr(o, n),
                             lambda v, o=obj, n=name: setattr(o, n, v)))
    return settings


def _pop_modes(length, pop):
    """A setter for a mode stack's depth: pop modes a job entered and never left
    (``torch.set_default_device`` is reset first, so its own mode goes the usual way)."""
    def set_depth(depth):
        while length() > depth:
            pop()
    return set_depth


def _namespaces() -> tuple[list, list]:
    """The modules and classes whose functions learner code is likely to patch."""
    import torch
    import torch.distributed
    import torch.distributed.distributed_c10d
    import torch.optim
    modules = [torch, torch.nn.functional, torch.nn.init, torch.linalg, torch.special,
               torch.fft, torch.autograd, torch.distributed,
               torch.distributed.distributed_c10d, torch.optim]
    classes = [torch.Tensor, torch.autograd.Function,
               *(c for m in (torch.nn, torch.optim) for c in vars(m).values()
                 if isinstance(c, type))]  # nn.Module, nn.Linear.forward, ..., Optimizer.step
    return modules, classes


def snapshot() -> dict:
    """What ``reset`` puts back, as it is now (call it once, when the rank starts)."""
    global _TORCH_DIR
    import torch
    import torch.nn.modules.module as module_hooks
    _TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
    modules, classes = _namespaces()
    return {
        "settings": [(get, set_, get()) for get, set_ in _settings()],
        "rng": (torch.get_rng_state(), random.getstate()),
        # modules: their functions and classes are what a patch replaces; their other
        # globals are state that torch itself updates (distributed_c10d's process
        # groups, submodules imported later). The whole dict as last seen clean makes
        # the usual case one comparison in C.
        "modules": [(m, {k: v for k, v in vars(m).items()
                         if callable(v) and not isinstance(v, types.ModuleType)},
                     [dict(vars(m))]) for m in modules],
        # classes: the whole dict, since a new entry (torch.Tensor.__add__) overrides an
        # inherited one
        "classes": [(c, dict(vars(c))) for c in classes],
        "hooks": {k: dict(v) for k, v in vars(module_hooks).items()
                  if k.startswith("_global_") and isinstance(v, dict)},
    }


def reset(saved: dict) -> list[str]:
    """Put back what ``snapshot`` saw; return the names of the attributes restored.

    Reset, each because it changes what a later job computes or whether it runs:
    - the default dtype and device (float64 made every new tensor double);
    - grad mode, inference mode and forward-mode AD (grad off made ``backward`` fail);
    - deterministic algorithms (and warn_only), the float32 matmul precision, the
      number of intra-op threads (the rank's 1: ranks share the cores), oneDNN's
      on/off and deterministic flags, cuDNN's and TF32's when there is a GPU;
    - autocast (on, its dtype, its cache) and the anomaly-detection flags;
    - torch-function and dispatch modes entered and never left;
    - the global RNGs, torch's and ``random``'s: jobs seed their own, but one that
      forgets should still draw the same numbers every time (numpy's is left: parlab
      does not draw from it, and setting it costs 50 us);
    - every function or class of torch, torch.nn.functional, torch.nn.init,
      torch.linalg, torch.special, torch.fft, torch.autograd, torch.distributed and
      torch.optim that a job replaced, and every attribute of torch.Tensor,
      torch.autograd.Function and the classes of torch.nn and torch.optim (their
      ``forward``, ``step``, ``__add__``...) that a job replaced, added or deleted;
    - global module hooks (``register_module_forward_hook`` and the like).
    Each check is a comparison with the snapshot, so a job that changed nothing costs
    only the comparisons: 0.08 ms with warm caches, 0.7 ms in a rank just after a job
    (they touch some 3,500 objects).
    """
    import torch
    import torch.nn.modules.module as module_hooks
    if torch.is_inference_mode_enabled():
        _leave_inference_mode()
    for get, set_, value in saved["settings"]:
        now = get()
        if now is not value and not _same(now, value):
            set_(value)
    restored = []
    torch.set_rng_state(saved["rng"][0])  # cheaper to set than to compare
    random.setstate(saved["rng"][1])
    for m, code, clean in saved["modules"]:
        d = vars(m)
        if not _same(d, clean[0]):
            for k, v in code.items():
                if d.get(k) is not v:
                    restored += _put_back(m, k, v, code, m.__name__)
            clean[0] = dict(d)
    for c, attrs in saved["classes"]:
        d = vars(c)
        if not _same(d, attrs):
            if "__slotnames__" in d:  # copyreg's cache of the class's slots (pickling)
                attrs.setdefault("__slotnames__", d["__slotnames__"])
            for k in [k for k in d if k not in attrs]:
                inherited = next((vars(b)[k] for b in c.__mro__[1:] if k in vars(b)), None)
                if _torch_wrapper_of(d[k], inherited):  # AdamW.step, wrapping Adam's
                    attrs[k] = d[k]
                    continue
                delattr(c, k)
                restored.append(f"{c.__qualname__}.{k}")
            for k, v in attrs.items():
                if d.get(k) is not v:
                    restored += _put_back(c, k, v, attrs, c.__qualname__)
    for k, hooks in saved["hooks"].items():
        live = vars(module_hooks)[k]
        if live != hooks:
            live.clear()
            live.update(hooks)
            restored.append(f"torch.nn.modules.module.{k}")
    return restored


def _put_back(owner, name: str, value, saved: dict, owner_name: str) -> list[str]:
    """Restore ``owner.name`` to ``value``, unless what is there now is torch's own
    wrapper of the same function: torch wraps some lazily (the optimizers' ``step``
    on first use, for the profiler; dynamo's wrapper of ``torch.manual_seed`` when some
    torch modules load). That becomes the saved value instead: undone, torch would just
    wrap it again. A learner's wrapper lives outside torch's files, so it goes."""
    now = vars(owner).get(name)
    if now is not None and _torch_wrapper_of(now, value):
        saved[name] = now
        return []
    setattr(owner, name, value)
    return [f"{owner_name}.{name}"]


def _torch_wrapper_of(new, old) -> bool:
    """Whether ``new`` is a wrapper, written in torch's files, of the function ``old`` is
    (or wraps)."""
    code = getattr(new, "__code__", None)
    if code is None or not code.co_filename.startswith(_TORCH_DIR):
        return False
    try:
        return inspect.unwrap(new) is inspect.unwrap(old) and new is not inspect.unwrap(new)
    except ValueError:  # a __wrapped__ cycle
        return False


def _same(a, b) -> bool:
    """``a == b``, or False when comparing raises. (Two namespaces' dicts compare in C,
    identical values without calling their ``__eq__``; a value that replaced another
    may have an ``__eq__`` that raises, a tensor's.)"""
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - any failure to compare means "changed"
        return False


def _leave_inference_mode() -> None:
    """Turn off an inference mode a job entered and kept (``cm.__enter__()``). torch has
    no setter for it, only a guard that restores the previous mode when it is freed: so
    enter a ``False`` guard and keep it for good (one small object per such job)."""
    import torch
    _held_guards.append(torch._C._InferenceMode(False))
