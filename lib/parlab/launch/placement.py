"""The dry run's check: a tensor left on the CPU must not meet one on the compute device.

On a GPU, ``x_cuda + torch.arange(n)`` fails ("Expected all tensors to be on the same
device"), and a model whose forward makes a tensor without ``device=``, or keeps one
as a plain attribute that ``model.to(device)`` does not move, cannot train there. CI
has no GPU. The dry run (``launch(..., device="dry-run")``) runs the same per-rank code
on the CPU, with ``comm.device()`` returning ``cpu:0``: a device torch computes on like
the CPU but that code can only have named by asking where to put a tensor. A
``TorchFunctionMode`` sees every torch call with the arguments as written and labels
tensors:

  on the device   made by a factory with ``device=cpu:0`` (``comm.device()``), moved
                  there by ``.to(cpu:0)`` (``model.to`` moves each parameter so), or
                  computed from a tensor on the device;
  on the host     made by a factory with no device (``torch.arange(n)``), registered on
                  a module as a parameter or buffer while on the CPU, or brought back
                  by ``.cpu()``/``.to("cpu")``; or computed from host tensors only;
  unknown         anything else: made with an explicit ``device=`` other than cpu:0
                  (``device=x.device`` reads "cpu", and is right on a GPU; so
                  ``.to(x.device)`` leaves a tensor where it was), made by
                  autograd (gradients), or made before the check started.

An operation that takes a host tensor with at least one dimension and a device
tensor raises ``PlacementError`` naming the operation, the host tensor (shape, dtype,
where it was made or which module registered it) and the modules being run. Allowed,
as CUDA allows them: 0-dim host tensors (Python scalars, the optimizer's step count),
``copy_`` across devices, indexing with a host index, and the moves themselves.

What it cannot see: a tensor made before the check started (a module-level
constant), and one made with ``device="cpu"`` on purpose (unknown, not host).
"""

from __future__ import annotations

import os
import sys
import weakref

import torch
from torch.overrides import TorchFunctionMode

DEVICE = torch.device("cpu", 0)  # the compute device in the dry run
TAG = "_parlab_placement"       # attribute on a tensor: (where, origin)
SOFT = "_parlab_cpu_made"       # made with an explicit device="cpu" (to_empty)
FACTORIES = {torch.arange, torch.zeros, torch.ones, torch.empty, torch.full, torch.rand,
             torch.randn, torch.randint, torch.randperm, torch.tensor, torch.as_tensor,
             torch.eye, torch.linspace, torch.logspace, torch.empty_strided, torch.from_numpy}
EXEMPT = {torch.Tensor.copy_, torch.Tensor.__getitem__, torch.Tensor.__setitem__,
          torch.Tensor.index_put_, torch.Tensor.cuda}
_TORCH_DIR = os.path.dirname(torch.__file__)


class PlacementError(RuntimeError):
    """A CPU tensor met one on the compute device: on a GPU this operation would fail."""


class PlacementCheck(TorchFunctionMode):
    """While active, raise ``PlacementError`` where CUDA would refuse to mix devices."""

    def __enter__(self):
        from torch.nn.modules import module as nn_module
        self._hooks = [
            nn_module.register_module_parameter_registration_hook(self._registered("parameter")),
            nn_module.register_module_buffer_registration_hook(self._registered("buffer")),
        ]
        # nn.Parameter(t) is a new Python object over t's data: it inherits t's label
        # (a tensor-parallel shard cut from a weight already on the device)
        self._new_parameter = torch.nn.Parameter.__new__

        def new_parameter(cls, data=None, requires_grad=True):
            p = self._new_parameter(cls, data, requires_grad)
            if getattr(data, TAG, None):
                _tag(p, *getattr(data, TAG))
            elif getattr(data, SOFT, False):  # model.to_empty(device="cpu")
                _candidate(p, f"a parameter of shape {tuple(p.shape)}")
            return p

        torch.nn.Parameter.__new__ = new_parameter
        return super().__enter__()

    def __exit__(self, *exc):
        _names.clear()
        torch.nn.Parameter.__new__ = self._new_parameter
        for h in self._hooks:
            h.remove()
        return super().__exit__(*exc)

    @staticmethod
    def _registered(kind):
        """A parameter or buffer registered on a module: made inside
        ``with torch.device(comm.device())`` it is on the device; a CPU buffer is on the
        host; a CPU parameter is named, and counts as host until moved (``_where``)."""
        def hook(module, name, tensor):
            if tensor is None or tensor.device.type != "cpu":
                return
            what = f"{kind} {name!r} of {type(module).__name__}"
            if torch.get_default_device() == DEVICE:
                _tag(tensor, "device", None)
            elif kind == "buffer":
                _tag(tensor, "host", f"{what}, registered on the CPU")
            else:
                _candidate(tensor, what)
        return hook

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in FACTORIES:
            target = kwargs.get("device")
            if target is None and torch.get_default_device().type == "cpu":
                _tag_all(out, "host", f"{_name(func)} without device= at {_caller()}")
            elif target is not None and _is_device(target):
                _tag_all(out, "device", None)
            return out
        if kwargs.get("device") is not None:
            # torch.empty_like(p, device=...): model.to_empty(device=...) swaps it into p
            on = _is_device(kwargs["device"])
            if on:
                _tag_all(out, "device", None)
            elif isinstance(out, torch.Tensor):  # materialised on the CPU: host if made a Parameter
                _set(out, SOFT, True)
            if args and type(args[0]) is torch.nn.Parameter and on:
                _tag(args[0], "device", None)
            return out
        if func in (torch.Tensor.to, torch.Tensor.cpu):
            return self._moved(func, args, kwargs, out)
        tensors = list(_tensors(args)) + list(_tensors(kwargs.values()))
        on_device = any(_where(t) == "device" for t in tensors)
        host = [t for t in tensors if _where(t) == "host"]
        if on_device and func not in EXEMPT:
            stray = next((t for t in host if t.dim() > 0), None)
            if stray is not None:
                raise PlacementError(self._message(func, stray))
        if func in EXEMPT:
            return out
        if on_device:
            _tag_all(out, "device", None)
        elif host:
            _tag_all(out, "host", getattr(host[0], TAG)[1])
        return out

    def _moved(self, func, args, kwargs, out):
        """``.to(...)``/``.cpu()``: the result is where it was sent; a parameter sent to
        the device is marked too (``model.to`` keeps the Parameter, swapping its data)."""
        source = args[0]
        if func is torch.Tensor.cpu:
            target = "cpu"  # a name, brought back: not .to(t.device)'s torch.device below
        else:
            target = kwargs.get("device")
            for a in args[1:]:
                if isinstance(a, (str, torch.device)):
                    target = a
                elif isinstance(a, torch.Tensor):
                    target = a.device if _where(a) != "device" else DEVICE
        if target is None:  # a dtype change: stays where it was
            if isinstance(out, torch.Tensor) and out is not source and hasattr(source, TAG):
                setattr(out, TAG, getattr(source, TAG))
            return out
        if _is_device(target):
            _tag(out, "device", None)
            if isinstance(source, torch.nn.Parameter):
                _tag(source, "device", None)
        elif isinstance(target, torch.device):
            # .to(t.device): the device of some tensor, which reads "cpu" here and is right
            # on a GPU; the result stays where the source was
            if out is not source and hasattr(source, TAG):
                setattr(out, TAG, getattr(source, TAG))
        else:  # .cpu(), .to("cpu"): brought back to the host
            if out is source:  # already on the CPU, so torch returned it: on a GPU it is a copy
                out = source.view_as(source)
            _tag(out, "host", f".to({str(target)!r}) at {_caller()}")
        return out

    def _message(self, func, stray) -> str:
        where, origin = getattr(stray, TAG)
        modules = _forwards()
        named = next((f"{type(modules[0]).__name__}.{n}" for n, p in
                      modules[0].named_parameters() if p is stray), None) if modules else None
        if named:
            origin = f"{named}: {origin}"
        inside = " > ".join(dict.fromkeys(type(m).__name__ for m in modules))
        inside = inside or "no module's forward"
        return (f"{_name(func)} mixes a tensor on the compute device with a CPU tensor "
                f"(shape {tuple(stray.shape)}, {str(stray.dtype).removeprefix('torch.')}: "
                f"{origin}), inside {inside}. On a GPU this raises \"Expected all tensors to "
                "be on the same device\": create it with device=... (comm.device(), or an "
                "input's .device), or register it as a buffer so that model.to(device) moves it.")


# id(parameter) -> (weakref, "parameter 'weight' of Linear"): parameters registered or
# materialised on the CPU while the check runs (FSDP2's own, made from buffers it put on
# the device it was given, stay unknown)
_names: dict = {}


def _where(t):
    tag = getattr(t, TAG, None)
    if tag:
        return tag[0]
    ref, what = _names.get(id(t), (None, None))
    if ref is not None and ref() is t and t.device.type == "cpu":  # put on the CPU, never moved
        _tag(t, "host", f"{what}, left on the CPU: the model was not moved with .to(device)")
        return "host"
    return None


def _candidate(p, what) -> None:
    """A parameter put on the CPU: host when used, unless moved (tagged) by then."""
    _names[id(p)] = (weakref.ref(p), what)


def _tag(t, where, origin) -> None:
    _set(t, TAG, (where, origin))


def _set(t, attribute, value) -> None:
    if isinstance(t, torch.Tensor):
        try:
            setattr(t, attribute, value)
        except (AttributeError, RuntimeError):  # a tensor type without a __dict__
            pass


def _tag_all(out, where, origin) -> None:
    for t in _tensors((out,)):
        _tag(t, where, origin)


def _tensors(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


def _is_device(target) -> bool:
    try:
        return torch.device(target) == DEVICE
    except (RuntimeError, TypeError):
        return False


def _name(func) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    return (name.replace("_VariableFunctionsClass.", "torch.").replace("TensorBase.", "Tensor.")
            .replace("_TensorBase.", "Tensor."))


def _forwards() -> list:
    """The modules whose ``forward`` is running, outermost first (from the stack)."""
    names = []
    f = sys._getframe(1)
    while f is not None:
        # Module.__call__ runs _call_impl with the module as self, whatever its forward is
        owner = f.f_locals.get("self") if f.f_code.co_name == "_call_impl" else None
        if isinstance(owner, torch.nn.Module):
            names.append(owner)
        f = f.f_back
    return names[::-1]


def _caller() -> str:
    """file:line (function) of the first frame outside torch and this file."""
    f = sys._getframe(1)
    while f is not None and (f.f_code.co_filename.startswith(_TORCH_DIR)
                             or f.f_code.co_filename == __file__):
        f = f.f_back
    if f is None:
        return "?"
    path = f.f_code.co_filename
    here = os.getcwd()
    path = os.path.relpath(path, here) if path.startswith(here) else path
    return f"{path}:{f.f_lineno} ({f.f_code.co_name})"
