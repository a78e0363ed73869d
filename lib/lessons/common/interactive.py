"""``%%ranks``: type torch.distributed calls into a cell and run them on every rank.

    %load_ext lessons.common.interactive

    %%ranks 4
    x = torch.tensor([rank + 1.0])
    dist.all_reduce(x)
    x

Each rank runs the cell in its own namespace, which lives on between cells (so
tensors and groups made in one cell are there in the next). ``torch``, ``dist``,
``rank`` and ``world_size`` are predefined. What each rank printed, and the value
of the cell's last expression, are shown rank by rank.

When something goes wrong the cell says so in a few lines: which ranks, the line of
the cell (numbered as in the editor: the ``%%ranks`` line is line 1) and its text,
the exception, and a hint. A cell that hangs (say, a collective only some ranks
call) is stopped after ``--timeout`` seconds (30 by default) and says where each
rank was blocked; the ranks then start afresh, and the next cell says so once,
since the variables of earlier cells went with them. The full tracebacks and stack
dumps: ``%%ranks N --verbose``, or ``lessons.common.interactive.last_error`` after the fact.

Options: ``%%ranks N [--timeout SECONDS] [--verbose]``. The magic is a thin shell
over ``parlab.run_on_ranks``, which tests (and scripts) call directly.
"""

from __future__ import annotations

import re
import shlex
import sys

from parlab.launch import LaunchError, LaunchTimeout, run_on_ranks

DEFAULT_TIMEOUT = 30.0
USAGE = "usage: %%ranks N [--timeout SECONDS] [--verbose]"
RESTARTED = ("the ranks were restarted: variables from earlier %%ranks cells are gone; "
             "re-run the cells that define them")
last_error: str | None = None  # the full text behind the last short error message
_sources: dict[str, str] = {}  # "<ranks cell 3>" -> the code sent under that name
_FRAME = re.compile(r'File "(<ranks[^"]*>)", line (\d+)')


def parse_args(line: str) -> tuple[int, float, bool]:
    """``"4 --timeout 10"`` -> (4, 10.0, False); a clear ValueError otherwise."""
    words = shlex.split(line)
    world_size, timeout, verbose = None, DEFAULT_TIMEOUT, False
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("--timeout", "-t") and i + 1 < len(words):
            try:
                timeout = float(words[i + 1])
            except ValueError:
                raise ValueError(f"{USAGE}; --timeout wants seconds, got {words[i + 1]!r}") \
                    from None
            i += 2
            continue
        if w in ("--verbose", "-v"):
            verbose = True
            i += 1
            continue
        if w in ("-n", "--ranks") and i + 1 < len(words):
            w = words[i + 1]
            i += 1
        if not w.isdigit() or world_size is not None:
            raise ValueError(f"{USAGE}; got {line!r}")
        world_size = int(w)
        i += 1
    if world_size is None:
        raise ValueError(f"{USAGE}: say how many ranks, e.g. %%ranks 4")
    return world_size, timeout, verbose


# ------------------------------------------------------------------------------
# the magic
# ------------------------------------------------------------------------------

def ranks(line: str, cell: str) -> None:
    """Run the cell on N ranks; print each rank's output, then (if any) a short error."""
    global last_error
    try:
        world_size, timeout, verbose = parse_args(line)
    except ValueError as e:
        return _complain(f"✗ {e}")
    filename = f"<ranks cell {len(_sources) + 1}>"
    code = "\n" + cell  # line k of the code is line k of the cell, %%ranks being line 1
    _sources[filename] = code
    try:
        results = run_on_ranks(code, world_size, timeout=timeout, filename=filename)
    except SyntaxError as e:
        last_error = f"{type(e).__name__}: {e}"
        return _complain(f"✗ {type(e).__name__} at line {e.lineno}: {_line(filename, e.lineno)}"
                         f"\n  {e.msg}; nothing ran on the ranks")
    except LaunchError as e:
        last_error = _full_text(e)
        if getattr(e, "restarted", False):
            print(f"[{RESTARTED}]")
        text = format_results(_outputs_only(e.outputs or [""] * world_size))
        if text:
            print(text)
        return _complain(failure_message(e, world_size, timeout, filename, verbose))
    except ValueError as e:  # more ranks than the memory holds, a bad timeout...
        return _complain(f"✗ {e}")
    if results[0].get("restarted"):
        print(f"[{RESTARTED}]")
    errors = {r: res for r, res in enumerate(results) if res["error"]}
    shown = results if verbose or not errors else _outputs_only([r["output"] for r in results],
                                                                results)
    text = format_results(shown)
    if text:
        print(text)
    if errors:
        last_error = "\n".join(f"--- rank {r} ---\n{res['error']}" for r, res in errors.items())
        text = error_message(errors, world_size, filename, results[0].get("restarts", 0),
                             kept=True)
        _complain(text.rsplit("\n", 1)[0] if verbose else text)  # verbose: shown above


def _complain(text: str) -> None:
    sys.stdout.flush()
    print(text, file=sys.stderr, flush=True)


def load_ipython_extension(ipython) -> None:
    ipython.register_magic_function(ranks, magic_kind="cell", magic_name="ranks")


# ------------------------------------------------------------------------------
# what the ranks printed
# ------------------------------------------------------------------------------

def format_results(results: list[dict]) -> str:
    """Rank by rank: printed output, then the value (or the full error). Ranks with
    nothing to show are left out when some rank has something."""
    blocks = []
    for rank, res in enumerate(results):
        if not (res.get("output") or res.get("error") or res.get("value") is not None):
            continue
        lines = [f"── rank {rank} " + "─" * 30]
        if res.get("output"):
            lines.append(res["output"].rstrip("\n"))
        if res.get("error"):
            lines.append(res["error"].rstrip("\n"))
        elif res.get("value") is not None:
            lines.append(f"→ {res['value']}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _outputs_only(outputs: list[str], results: list[dict] | None = None) -> list[dict]:
    return [{"output": o, "value": (results[r]["value"] if results else None), "error": None}
            for r, o in enumerate(outputs)]


# ------------------------------------------------------------------------------
# short error messages
# ------------------------------------------------------------------------------

def error_message(errors: dict[int, dict], world_size: int, filename: str, restarts: int,
                  kept: bool, running: LaunchTimeout | None = None) -> str:
    """Ranks that raised, grouped by (exception, line): one line each, then a hint.
    ``kept``: the ranks live on (every rank finished); ``running``: the ranks still
    running when one failed, after which all were stopped."""
    groups: dict[tuple, list[int]] = {}
    for r, res in sorted(errors.items()):
        info = res.get("error_info") or res.get("info") or {}
        where = _where(info.get("frames", []), filename)
        message = _first_line(info.get("message", "")) or _last_line(res.get("error", ""))
        groups.setdefault((info.get("type", "error"), message, where), []).append(r)
    lines = []
    for (etype, message, where), rs in list(groups.items())[:3]:
        lines.append(f"✗ {_ranks(rs, world_size)} raised {etype}: {message}")
        if where:
            lines.append(f"  at {where}")
    if len(groups) > 3:
        lines.append(f"  … and {len(groups) - 3} other errors")
    if running is not None:
        lines.append(f"  {_ranks(running.ranks, world_size)} still running a second later "
                     f"({_blocked(running, filename, who=False)}): all ranks were stopped")
    types = {k[0] for k in groups}
    if "NameError" in types:
        hint = ("if an earlier %%ranks cell defined that name: " + RESTARTED if restarts else
                f"the ranks are separate processes: names from ordinary cells do not exist "
                f"there; define it in a %%ranks {world_size} cell")
    elif running is not None:
        hint = (f"the others were probably waiting for {_ranks(sorted(errors), None)} in a "
                "collective; the next %%ranks cell starts on fresh ranks (variables from "
                "earlier cells are gone)")
    elif kept:
        hint = ("the ranks are still running and keep their variables: fix the line and "
                "run the cell again")
    else:
        hint = "all ranks were stopped; the next %%ranks cell starts on fresh ranks"
    lines.append(f"  hint: {hint}")
    lines.append(f"  (full traceback: %%ranks {world_size} --verbose, or "
                 "lessons.common.interactive.last_error)")
    return "\n".join(lines)


def failure_message(e: LaunchError, world_size: int, timeout: float, filename: str,
                    verbose: bool) -> str:
    """The short text for a cell that timed out, or failed on some ranks while others
    waited, or lost a rank. With ``verbose`` the full text follows."""
    tail = f"\n\n{_full_text(e)}" if verbose else ""
    if isinstance(e, LaunchTimeout):
        return timeout_message(e, world_size, timeout, filename) + tail
    if e.rank_errors:
        return error_message(e.rank_errors, world_size, filename, getattr(e, "restarts", 0),
                             kept=False, running=e.still_running) + tail
    return (f"✗ {_first_line(str(e))}\n  hint: the next %%ranks cell starts on fresh ranks "
            f"(variables from earlier cells are gone)") + tail


def timeout_message(e: LaunchTimeout, world_size: int, timeout: float, filename: str) -> str:
    finished = sorted(set(range(world_size)) - set(e.ranks))
    lines = [f"✗ the cell did not finish within {timeout:g} s (set with %%ranks {world_size} "
             f"--timeout SECONDS); all {world_size} ranks were stopped",
             f"  {_blocked(e, filename)}"]
    if finished and "finished" not in (e.hint or ""):
        lines.append(f"  {_ranks(finished, world_size)} had finished the cell")
    hint = (e.hint or "").replace("pass a larger timeout=", "raise --timeout")
    lines.append(f"  hint: {hint}" if hint else "")
    lines.append("  the next %%ranks cell starts on fresh ranks (variables from earlier cells "
                 "are gone)")
    return "\n".join(x for x in lines if x)


def _blocked(e: LaunchTimeout, filename: str, who: bool = True) -> str:
    """'rank 0 blocked at line 5: dist.all_reduce(x)', grouping ranks blocked alike."""
    groups: dict[str, list[int]] = {}
    for r in e.ranks:
        frames = [(f, int(n)) for f, n in _FRAME.findall(_main_thread(e.dumps.get(r, "")))]
        where = _where(frames[::-1], filename)  # faulthandler lists the innermost first
        groups.setdefault(where or "(it did not say where)", []).append(r)
    name = (lambda rs: _ranks(rs, None) + " ") if who or len(groups) > 1 else (lambda rs: "")
    return "; ".join(f"{name(rs)}blocked at {w}" if not w.startswith("(") else
                     f"{name(rs)}{w}" for w, rs in groups.items())


def _main_thread(dump: str) -> str:
    for block in dump.split("\n\n"):
        if "rank_main" in block:
            return block
    return dump


def _where(frames: list, filename: str) -> str:
    """'line 5: x.sum()' for the innermost frame of this cell (frames outermost first),
    plus the line of an earlier cell it called into, if the error is there."""
    frames = [(f, n) for f, n in frames]
    here = [(f, n) for f, n in frames if f == filename]
    parts = [f"line {here[-1][1]}: {_line(filename, here[-1][1])}"] if here else []
    if frames and frames[-1][0] != filename:
        f, n = frames[-1]
        parts.append(f"line {n} of an earlier %%ranks cell: {_line(f, n)}")
    return " → ".join(parts)


def _line(filename: str, lineno: int | None) -> str:
    lines = _sources.get(filename, "").splitlines()
    if lineno and 0 < lineno <= len(lines):
        return lines[lineno - 1].strip()
    return "?"


def _ranks(rs: list[int], world_size: int | None) -> str:
    if world_size and len(rs) == world_size and world_size > 1:
        return f"all {world_size} ranks"
    return (f"rank {rs[0]}" if len(rs) == 1 else "ranks " + ", ".join(map(str, rs)))


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _last_line(text: str) -> str:
    return _first_line(text.strip().splitlines()[-1]) if text.strip() else ""


def _full_text(e: LaunchError) -> str:
    parts = [str(e)]
    for r, res in sorted(e.rank_errors.items()):
        if r != e.rank:
            parts.append(f"--- traceback from rank {r} ---\n{res['error']}")
    running = e.still_running
    for r, dump in sorted((running.dumps if running is not None else
                           getattr(e, "dumps", {})).items()):
        parts.append(f"--- stack of rank {r} ---\n{_main_thread(dump)}")
    return "\n".join(parts)
