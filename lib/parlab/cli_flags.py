"""The checks of ``python -m parlab``'s flags: every value is refused before any rank
starts or anything is measured, the error led by the flag the user typed

    python -m parlab 3d --dp 0          error: --dp 0: dp=0 must be an integer >= 1
    python -m parlab tp --ranks 3       error: --ranks 3: tp=3 must divide n_heads=4

(``check_flags``), and a run's own refusal, which names the run's field, is led by the
flag that set it (``name_the_flag``). The cap on --ranks is the launcher's own
(``parlab.launch.MAX_LOCAL_RANKS``), imported only by commands that start ranks.
"""

from __future__ import annotations

import os
import re
import sys

from .validate import check_float, check_int


def world(args) -> int:
    """The number of ranks: torchrun's (WORLD_SIZE) under torchrun, else --ranks."""
    return int(os.environ["WORLD_SIZE"]) if "WORLD_SIZE" in os.environ else args.ranks


# Flags whose values are sizes or counts, with their least value. A flag a subcommand
# lacks, or left at None (a default derived later, e.g. pipeline's --batch-size = M), is
# not checked. --seed is not here: any integer seeds (drill counts from it).
_MIN = {"ranks": 1, "steps": 1, "batch_size": 1, "micro_batches": 1, "v": 1, "dp": 1,
        "pp": 1, "cp": 1, "tp": 1, "experts": 1, "top_k": 1, "ep": 1, "bucket_kib": 1,
        "numel": 1, "sizes": 1, "gpus": 1, "global_batch": 1, "seq_len": 1, "top": 1, "n": 1}
_POSITIVE = ("lr", "capacity_factor")  # finite and > 0: --lr inf would train to NaN

# A run's check names its own fields (world_size, n_experts...): the flags that set them,
# in every command and in those whose degree is the number of ranks (tp --ranks 3: tp=3).
_FIELD_FLAG = {"world_size": "ranks", "n_experts": "experts", "n_gpus": "gpus",
               "bucket_bytes": "bucket_kib"}
_COMMAND_FIELD_FLAG = {"zero": {"zero_stage": "stage", "dp": "ranks"}, "dp": {"dp": "ranks"},
                       "tp": {"tp": "ranks"}, "cp": {"cp": "ranks"},
                       "pipeline": {"p": "ranks"}}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _refuse(dest: str, value, error) -> ValueError:
    """The error of a check, led by the flag and the value the user typed."""
    return ValueError(f"{_flag(dest)} {value}: {error}")


def check_flags(args) -> None:
    """Refuse a bad flag value before any rank starts or anything is measured: each
    size >= its least value, --lr finite and > 0, --ranks within the launcher's cap of
    local ranks, and the combinations the run's own check would report in its fields'
    names (--top-k <= --experts; 3d's degrees multiply to --ranks). Choices (--stage,
    --schedule...) are left to the run's check, which names the field before any rank
    starts; ``name_the_flag`` leads its message with the flag."""
    for dest, low in _MIN.items():
        for v in _values(args, dest):
            try:
                check_int(dest, v, low)
            except ValueError as e:
                raise _refuse(dest, v, e) from None
    for dest in _POSITIVE:
        for v in _values(args, dest):
            try:
                check_float(dest, v)
            except ValueError as e:
                raise _refuse(dest, v, e) from None
    local = "WORLD_SIZE" not in os.environ  # under torchrun --ranks is torchrun's, not ours
    if local and (hasattr(args, "ranks") or hasattr(args, "sizes")):
        from .launch import MAX_LOCAL_RANKS  # the cap the launcher would refuse later
        for dest in ("ranks", "sizes"):
            for v in _values(args, dest):
                if v > MAX_LOCAL_RANKS:
                    raise _refuse(dest, v, f"{dest}={v} must be <= {MAX_LOCAL_RANKS}, the cap "
                                  "of local ranks (set PARLAB_MAX_RANKS to raise it)")
    if args.command == "ep" and args.top_k > args.experts:
        raise _refuse("top_k", args.top_k, f"top_k={args.top_k} must be <= --experts "
                      f"{args.experts} (each token picks top_k distinct experts)")
    if not hasattr(args, "ranks"):  # plan, drill, gpu-report start no ranks of ours
        return
    ranks = f"--ranks {args.ranks}" if local else f"WORLD_SIZE={os.environ['WORLD_SIZE']}"
    if args.command == "3d":
        product = args.dp * args.pp * args.cp * args.tp
        if product != world(args):
            raise ValueError(f"--dp {args.dp} --pp {args.pp} --cp {args.cp} --tp {args.tp}: "
                             f"dp*pp*cp*tp = {product} must equal {ranks}")
    # The runs that split the batch over their ranks say so in their fields (dp=3 x
    # micro_batches...); here, in the flags that set them.
    slices = {"dp": getattr(args, "micro_batches", 1), "zero": 1, "ep": 1}.get(args.command)
    if slices and args.batch_size % (world(args) * slices):
        also = f" x --micro-batches {slices}" if args.command == "dp" else ""
        raise ValueError(f"--batch-size {args.batch_size} must be a multiple of {ranks}{also}: "
                         "every rank trains on an equal slice of the batch")


def _values(args, dest: str) -> list:
    v = getattr(args, dest, None)
    return [] if v is None else list(v) if isinstance(v, list) else [v]


def _typed(argv: list[str], dest: str) -> bool:
    flag = _flag(dest)
    return any(a == flag or a.startswith(flag + "=") for a in argv)


def name_the_flag(error: ValueError, args, argv: list[str] | None = None) -> str:
    """A run's check names its fields (``tp=3 must divide n_heads=4``); lead its message
    with the first of them that a flag the user typed set (``--ranks 3: tp=3 ...``).
    ``argv``: the command line parsed (None: ``sys.argv[1:]``, as argparse reads it)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    text = str(error)
    if text.startswith("--"):  # check_flags named it already
        return text
    aliases = {**_FIELD_FLAG, **_COMMAND_FIELD_FLAG.get(args.command, {})}
    for field in re.findall(r"\b(\w+)=", text):
        dest = aliases.get(field, field)
        if dest == "ranks" and "WORLD_SIZE" in os.environ:
            continue  # under torchrun --ranks set nothing
        if hasattr(args, dest) and _typed(argv, dest):
            return str(_refuse(dest, getattr(args, dest), text))
    return text
