"""``python -m parlab``'s flags (``add_flags``: each subcommand's, with help and defaults)
and their checks, which ``python -m lessons`` shares: every value is refused before any rank
starts or anything is measured, the error led by the flag the user typed

    python -m parlab 3d --dp 0          error: --dp 0: dp=0 must be an integer >= 1
    python -m parlab tp --ranks 3       error: --ranks 3: tp=3 must divide n_heads=4

(``check_flags``), and a run's own refusal, which names the run's field, is led by the
flag that set it (``name_the_flag``). The cap on --ranks is the launcher's own
(``parlab.launch.MAX_LOCAL_RANKS``), imported only by commands that start ranks.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from .validate import check_float, check_int


def printer():
    """``print`` on rank 0 (or with no torchrun), nothing on the other ranks."""
    quiet = os.environ.get("RANK", "0") != "0"
    return (lambda *a, **k: None) if quiet else print


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024


def _under_torchrun() -> bool:
    """A whole torchrun environment (launch/torchrun.py); a stray WORLD_SIZE is not one."""
    from .launch.torchrun import under_torchrun
    return under_torchrun()


def world(args) -> int:
    """The number of ranks: torchrun's (WORLD_SIZE) under torchrun, else --ranks."""
    return int(os.environ["WORLD_SIZE"]) if _under_torchrun() else args.ranks


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
    if hasattr(args, "ranks") or hasattr(args, "sizes"):
        from .launch.torchrun import check_launcher_env
        check_launcher_env()  # a stray RANK/WORLD_SIZE is named here, not taken for torchrun
    local = not _under_torchrun()  # under torchrun --ranks is torchrun's, not ours
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
        if dest == "ranks" and _under_torchrun():
            continue  # under torchrun --ranks set nothing
        if hasattr(args, dest) and _typed(argv, dest):
            return str(_refuse(dest, getattr(args, dest), text))
    return text


# --- the flags themselves ---------------------------------------------------------------

class HelpWithDefaults(argparse.HelpFormatter):
    """Each flag's help ends with its default, unless its help says it already (a default
    worked out later, None: "default: M") or the flag is a switch (--sequence-parallel,
    gpu-report's --no-compile: its default is the value of the switch left off)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("default" in text or not action.option_strings or action.nargs == 0
                or action.default is None or action.default is argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def add_flags(p, name: str) -> None:
    """The flags of subcommand ``name`` on its parser ``p``."""
    if name == "plan":  # a prediction: no ranks start
        p.add_argument("--model", default="70B", help="a planner.MODELS name, e.g. 70B, 175B")
        p.add_argument("--gpus", type=int, default=512, help="GPUs in the cluster")
        p.add_argument("--gpu", default="H100-80GB", help="a hardware preset or alias")
        p.add_argument("--global-batch", type=int, default=None,
                       help="sequences per step (default: about 4M tokens)")
        p.add_argument("--seq-len", type=int, default=None,
                       help="tokens per sequence (default: the model's)")
        p.add_argument("--top", type=int, default=10, help="layouts to list")
        return
    if name == "gpu-report":  # its ranks are the GPUs here
        from .gpu_report import add_arguments
        add_arguments(p)
        return
    p.add_argument("--ranks", type=int, default=8 if name == "3d" else 4,  # 3d: 2x2x2
                   help="local ranks (ignored under torchrun)")
    if name in ("train", "dp", "zero", "pipeline", "tp", "cp", "ep"):
        steps = 50 if name == "train" else 3 if name in ("pipeline", "tp", "cp", "ep") else 5
        p.add_argument("--steps", type=int, default=steps, help="optimizer steps")
        p.add_argument("--batch-size", type=int, default=None if name == "pipeline" else 8,
                       help="global batch, sequences per step"
                       + (" (default: M, one sequence per micro-batch)"
                          if name == "pipeline" else ""))
        p.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate")
    if name == "dp":
        p.add_argument("--variant", default="bucketed", help="naive, bucketed or ddp")
        p.add_argument("--bucket-kib", type=int, default=64,
                       help="gradient bucket size in KiB, one all-reduce each (bucketed)")
        p.add_argument("--micro-batches", type=int, default=1,
                       help="per rank, per step (gradient accumulation)")
        p.add_argument("--compression", default=None,
                       help="fp16, topk or sign (naive only; default: none)")
    if name == "pipeline":
        p.add_argument("--schedule", default="1f1b", help="gpipe, 1f1b, interleaved or zb-h1")
        p.add_argument("--micro-batches", type=int, default=8, help="per step (the papers' M)")
        p.add_argument("--v", type=int, default=1, help="model chunks per rank (interleaved)")
        p.add_argument("--compute", default="real", help="real or emulated (sleeps)")
    if name == "tp":
        p.add_argument("--sequence-parallel", action="store_true",
                       help="Korthikanti's sequence parallelism on top")
    if name == "3d":
        for axis, what in (("dp", "data-parallel replicas"), ("pp", "pipeline stages"),
                          ("tp", "tensor-parallel ranks per stage")):
            p.add_argument(f"--{axis}", type=int, default=2, help=what)
        p.add_argument("--cp", type=int, default=1, help="context-parallel ranks (ring attention)")
        p.add_argument("--micro-batches", type=int, default=4, help="per replica, per step")
        p.add_argument("--schedule", default="1f1b", help="gpipe, 1f1b or interleaved")
        p.add_argument("--zero-stage", type=int, default=0, help="0 (all-reduce), 1, 2 or 3")
        p.add_argument("--sequence-parallel", action="store_true",
                       help="Korthikanti's sequence parallelism inside each TP group")
        p.add_argument("--compute", default="real", help="real or emulated (sleeps)")
        p.add_argument("--steps", type=int, default=3, help="optimizer steps")
        p.add_argument("--batch-size", type=int, default=None,
                       help="global batch, sequences per step (default: dp x micro-batches)")
        p.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate")
    if name == "ep":
        p.add_argument("--experts", type=int, default=8, help="experts per MoE layer")
        p.add_argument("--top-k", type=int, default=2, help="experts each token is sent to")
        p.add_argument("--capacity-factor", type=float, default=None,
                       help="an expert takes at most factor x its even share of the "
                       "batch's assignments, the rest are dropped (default: no cap)")
        p.add_argument("--ep", type=int, default=None,
                       help="expert-parallel ranks; the rest replicate (default: all ranks)")
    if name == "cp":
        p.add_argument("--layout", default="zigzag", help="contiguous or zigzag")
        p.add_argument("--attention", default="ring", help="ring or ulysses")
    if name == "zero":
        p.add_argument("--stage", default="3", help="0, 1, 2, 3, ddp or fsdp2")


def cli_main(prog: str, doc: str, commands, add_flags_fn, out, argv=None) -> None:
    """Parse ``argv`` for one of ``commands`` ((name, cmd_<name>) pairs), check every flag
    and run the command; a ValueError leaves with "error: ..." led by the flag typed."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0],
                                 epilog=f"{prog} <command> --help: the command's flags")
    sub = ap.add_subparsers(dest="command", required=True)
    for name, fn in commands:
        # the one line of cmd_<name>'s docstring: the command's line in --help and the
        # description atop its own --help (tests hold every command to one; a stand-in
        # without one, as tests put there, gets none)
        about = (fn.__doc__ or "").strip()
        p = sub.add_parser(name, help=about or None, formatter_class=HelpWithDefaults,
                           description=about[:1].upper() + about[1:] + "." if about else None)
        p.set_defaults(fn=fn)
        add_flags_fn(p, name)
    args = ap.parse_args(argv)
    try:
        check_flags(args)  # every flag value, before any rank starts or anything is measured
        args.fn(args, out)
    except ValueError as e:
        sys.exit(f"error: {name_the_flag(e, args, argv)}")
