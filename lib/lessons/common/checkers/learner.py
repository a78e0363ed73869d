"""Running a learner's function somewhere other than the notebook's kernel.

The learner writes a function in a notebook cell. It never runs in the caller: a
``time.sleep`` there would freeze the kernel, an ``os._exit`` would kill it, and
``sys.exit`` or KeyboardInterrupt would escape the checker. Other processes cannot
import a notebook, so ``learner_source`` sends the function's *source*
(``inspect.getsource``; a lambda's own text), followed by what it uses from the
notebook that can travel as text (imports, constants, helper functions). The other
side executes it with ``torch`` and ``dist`` in scope (``load_learner``) and calls it
through a checker's harness (a module-level function in ``lessons.common.checkers.<topic>``):

- ``run_learner``: on real ranks (``parlab.launch``), for exercises that communicate;
- ``call_learner``: in one child process, for those that need no communication (a
  partition, a schedule, groups), several calls in one job.

Both have a timeout and turn a hang, a process that died, ``sys.exit``, a
KeyboardInterrupt or an exception into a verdict that says which, and where.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import pickle
import re
import sys
import textwrap
import traceback
import types

import torch

from parlab.launch import LaunchError, LaunchTimeout, launch
from lessons.common.i18n import current_lang, t
from .answers import missing, shown, verdict
from .text import TEXT

__all__ = ["learner_source", "load_learner", "call_learner", "run_learner", "pure_harness",
           "LAMBDA_NAME"]

LAMBDA_NAME = "your_lambda"  # what a lambda is called on the other side (it has no name)
_LITERAL_TYPES = (int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set,
                  frozenset)


def learner_source(fn) -> tuple[str, str]:
    """(source, name) of a learner's function, ready to send to another process.

    The source is the function's own text (a ``def``, or a lambda's expression bound to
    ``LAMBDA_NAME``), then what it uses from the notebook that can travel as text: the
    modules it names (``import numpy as np``), the constants it reads (numbers, strings,
    lists of them), and the functions it calls (imported from their module, or their
    source if defined in the notebook too). They come *after* the function, so the line
    numbers in its tracebacks are the learner's own. Anything else stays behind: using
    it raises NameError over there, and the verdict says so."""
    if not callable(fn) or not isinstance(getattr(fn, "__code__", None), types.CodeType):
        raise ValueError(f"expected a function defined with def, got {type(fn).__name__}")
    name = LAMBDA_NAME if fn.__name__ == "<lambda>" else fn.__name__
    text = _function_text(fn, name)
    context = _context(fn, seen={name, "torch", "dist"})
    if context:
        text += "\n\n# what it uses from the notebook\n" + "\n".join(context) + "\n"
    return text, name


def _function_text(fn, name: str) -> str:
    """The text that defines ``fn`` as ``name``."""
    if fn.__name__ == "<lambda>":
        return f"{name} = ({_lambda_text(fn)})\n"
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise ValueError(f"cannot read the source of {fn.__name__}: {e}") from None
    if name != fn.__name__:
        src += f"{name} = {fn.__name__}\n"
    return src


def _lambda_text(fn) -> str:
    """A lambda's own expression. ``inspect.getsource`` gives the whole line around it
    (``v = check(lambda n, s: ...)``), so parse the file or notebook cell it came from and
    pick, among the lambdas starting on its line, the one that compiles to its code."""
    code = fn.__code__
    whole = "".join(linecache.getlines(code.co_filename))
    try:
        tree = ast.parse(whole)
    except (SyntaxError, ValueError):
        raise ValueError("cannot read the source of this lambda: write it with def") from None
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    for node in found:
        text = ast.get_source_segment(whole, node) or ""
        if len(found) == 1:
            return text
        try:  # several lambdas on one line: the one whose bytecode is fn's
            compiled = compile(f"({text})", "<lambda>", "eval")
        except SyntaxError:
            continue
        inner = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
        if (inner.co_code, inner.co_names) == (code.co_code, code.co_names):
            return text
    raise ValueError("cannot read the source of this lambda: write it with def")


def _names_used(code: types.CodeType) -> set[str]:
    """The global and enclosing-scope names a function (and any function inside it) reads."""
    names = set(code.co_names) | set(code.co_freevars)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names_used(c)
    return names


def _context(fn, seen: set) -> list[str]:
    """Lines that recreate what ``fn`` reads from outside itself (see ``learner_source``)."""
    env = dict(fn.__globals__)
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            env[var] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            pass
    lines = []
    for var in sorted(_names_used(fn.__code__)):
        if var in seen or var not in env or (var in vars(builtins) and env[var] is vars(builtins)[var]):
            continue
        seen.add(var)
        lines += _as_text(var, env[var], seen)
    return lines


def _as_text(var: str, value, seen: set) -> list[str]:
    """The lines that bind ``var`` to ``value`` in another process, or [] when it cannot
    travel as text (then ``var`` is undefined there, and a NameError says so)."""
    if isinstance(value, types.ModuleType):
        return [f"import {value.__name__} as {var}"] if value.__name__ != "__main__" else []
    if isinstance(value, (types.FunctionType, type)):
        module, qual = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
        if module and module != "__main__" and "." not in qual and "<" not in qual \
                and getattr(sys.modules.get(module), qual, None) is value:
            return [f"from {module} import {qual} as {var}"]
        if isinstance(value, types.FunctionType):  # a helper from the notebook: its source
            try:
                return [_function_text(value, var)] + _context(value, seen)
            except ValueError:
                return []
        return []
    if type(value) in _LITERAL_TYPES:
        text = repr(value)
        try:
            if len(text) <= 10_000 and ast.literal_eval(text) == value:
                return [f"{var} = {text}"]
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    return []


def load_learner(source: str, name: str):
    """On a rank: execute the learner's source and return the function it defines."""
    import torch.distributed as dist
    filename = f"<your {name}>"
    # its lines in linecache, so that tracebacks and stack dumps show them
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch, "dist": dist, "__name__": "learner"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


class _Unsendable:
    """Stands for a value the learner returned that cannot be pickled back (a generator,
    an open file): the checker sees its repr and says it is not what was asked for."""

    def __init__(self, value):
        self.text = f"{shown(value, 60)} (a {type(value).__name__})"

    def __repr__(self):
        return self.text


def _sendable(value):
    try:
        pickle.dumps(value)
        return value
    except Exception:  # noqa: BLE001 - whatever pickling raises, the checker gets a stand-in
        return _Unsendable(value)


def _where_raised(e: BaseException) -> str:
    """' (line 3 of my_partition: return n // s)': the learner's innermost line."""
    mine = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith("<your ")]
    if not mine:
        return ""
    f = mine[-1]
    fn = f.filename[len('<your '):-1]
    if f.line:
        return t(TEXT, "learner_where_code", line=f.lineno, fn=fn, code=f.line.strip())
    return t(TEXT, "learner_where", line=f.lineno, fn=fn)


def speaking(lang: str, harness, *args):
    """On a rank: ``harness(*args)`` with the lessons speaking ``lang``, the caller's
    session language (a rank is a fresh process: it would otherwise start from
    PARLAB_LANG, not from a ``lessons.lang(...)`` made in the notebook)."""
    from lessons.common.i18n import lang as set_lang
    set_lang(lang)
    return harness(*args)


def pure_harness(source: str, name: str, calls: list):
    """In the child: the learner's function on each argument tuple of ``calls``, in order,
    stopping at the first call that does not return. Returns (the values it returned,
    None) or (those values, (kind, text)) for the call that failed: kind "missing"
    (NotImplementedError), "exit" (sys.exit), or "raised" (any other exception,
    KeyboardInterrupt included)."""
    fn = load_learner(source, name)
    values = []
    for args in calls:
        try:
            value = fn(*args)
        except NotImplementedError:
            return values, ("missing", "")
        except SystemExit as e:
            return values, ("exit", t(TEXT, "learner_exit", code='' if e.code is None else repr(e.code)))
        except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt too: the learner's, reported
            said = f": {e}" if str(e) else ""
            return values, ("raised", t(TEXT, "learner_raised", err=type(e).__name__, said=said,
                                        where=_where_raised(e)) + _name_error_hint(e))
        values.append(_sendable(value))
    return values, None


def _name_error_hint(e: BaseException) -> str:
    if not isinstance(e, NameError):
        return ""
    return t(TEXT, "learner_name_error", name=getattr(e, "name", None) or "it")


def call_learner(fn, calls, *, label: str, timeout: float = 10.0) -> tuple[list, dict | None]:
    """Call the learner's function (one that needs no communication) on each argument
    tuple of ``calls`` in a child process: never in the caller, where a ``time.sleep``
    would freeze the notebook and an ``os._exit`` would kill it.

    Returns ``(values, None)`` when every call returned, or ``(values so far, verdict)``
    for the first call that did not (NotImplementedError: "not answered yet"; an
    exception, ``sys.exit``, a hang past ``timeout`` seconds, the process dying: what
    happened, in words). A checker looks at the values in order first, so that a wrong
    answer in an early case is reported before a failure in a later one, as if the
    calls had run here. ``label`` names the function in the messages."""
    try:
        source, name = learner_source(fn)
    except ValueError as e:
        return [], verdict(False, str(e))
    calls = [tuple(c) for c in calls]
    with _RankOutput() as printed:
        try:
            values, failed = launch(speaking, 1, current_lang(), pure_harness, source, name, calls,
                                    timeout=timeout)[0]
        except LaunchError as e:
            return [], _launch_verdict(e, label, 1, timeout, printed.lines,
                                       hint=t(TEXT, "learner_slow_hint"))
    if failed is None:
        return values, None
    kind, text = failed
    args = ", ".join(shown(a, 20) for a in calls[len(values)])
    if kind == "missing":
        return values, missing(t(TEXT, "learner_write", name=label))
    return values, verdict(False, f"{label}({args}) {text}")


def run_learner(harness, fn, world_size: int, *args, timeout: float = 20.0) -> tuple[list | None, dict | None]:
    """Run ``harness(source, name, *args)`` on ``world_size`` ranks.

    Returns ``(results by rank, None)``, or ``(None, verdict)`` when the learner's
    function is not written yet, raised on some rank, ended a rank's process, or was
    still running after ``timeout`` seconds: the verdict names the rank and the line,
    without parlab's own frames."""
    try:
        source, name = learner_source(fn)
    except ValueError as e:
        return None, verdict(False, str(e))
    with _RankOutput() as printed:
        try:
            return launch(speaking, world_size, current_lang(), harness, source, name, *args,
                          timeout=timeout), None
        except LaunchError as e:
            text = str(e)
            if not isinstance(e, LaunchTimeout) and ("NotImplementedError" in text
                                                       or "NotWritten" in text):
                return None, missing(t(TEXT, "learner_write", name=name))
            # a checker's watch stopped a rank before a wrong message (watch.Diagnosis):
            # its text is the verdict, not a traceback
            said = re.search(r"^(?:[\w.]+\.)?Diagnosis: (.+)$", e.remote_traceback.strip()
                             .rsplit("\n", 1)[-1]) if e.remote_traceback else None
            if said and not isinstance(e, LaunchTimeout):
                return None, verdict(False, said.group(1))
            return None, _launch_verdict(e, name, world_size, timeout, printed.lines)


def _launch_verdict(e: LaunchError, name: str, world_size: int, timeout: float,
                    printed: int, hint: str = "") -> dict:
    """What happened to the learner's function on the ranks, plainly: still running at
    the timeout (where each rank was, and how much it printed), a process that died
    (its exit code or signal), ``sys.exit``, or an exception (its line)."""
    where = (t(TEXT, "learner_on_ranks", n=world_size) if world_size > 1
             else t(TEXT, "learner_in_process"))
    if isinstance(e, LaunchTimeout):
        at = {r: _learner_line(e.dumps.get(r, "")) or w for r, w in e.blocked_in.items()}
        ranks = (t(TEXT, "learner_sep").join(t(TEXT, "learner_rank_at", r=r, where=w) for r, w in at.items())
                 if world_size > 1 else "".join(t(TEXT, "learner_it_at", where=w) for w in at.values()))
        talk = (t(TEXT, "learner_printed", n=f"{printed:,}") if printed > _RankOutput.SHOWN else "")
        # the launcher's hint tells a rank waiting in a collective from a slow job
        hint = hint or _sentence(e.hint)
        return verdict(False, t(TEXT, "learner_timeout", name=name, timeout=f"{timeout:g}", where=where,
                                ranks=t(TEXT, "learner_ranks_end", ranks=ranks) if ranks else "",
                                hint=hint, talk=talk), timed_out=True)
    if not e.remote_traceback:  # the process ended without a word: os._exit, a crash, OOM
        how = re.search(r"\((exit code [^)]*|killed by signal \w+)\)", str(e))
        rank = (t(TEXT, "learner_rank_process", r=e.rank) if world_size > 1
                else t(TEXT, "learner_the_process"))
        return verdict(False, t(TEXT, "learner_died", name=name, rank=rank,
                                how=how.group(1) if how else t(TEXT, "learner_it_died")))
    last = [ln for ln in e.remote_traceback.strip().splitlines() if ln.strip()][-1:]
    if last and last[0].startswith("SystemExit"):
        code = last[0].partition(":")[2].strip()
        return verdict(False, t(TEXT, "learner_exit_rank", name=name, code=code, r=e.rank))
    return verdict(False, t(TEXT, "learner_raised_ranks", name=name, err=_short(str(e))))


def _sentence(text: str) -> str:
    """'the job is slow' -> 'The job is slow.' (and '' stays '')."""
    text = text.strip()
    if not text:
        return ""
    return text[0].upper() + text[1:] + ("" if text[-1] in ".?!)" else ".")


def _learner_line(dump: str) -> str:
    """'line 3 of my_partition': the innermost line of the learner's own code in a rank's
    stack dump (faulthandler lists the innermost frame first), or '' if none is there.
    The launcher names the innermost frame outside torch, which for a function stuck in
    print is the pipe's code, not the learner's loop."""
    m = re.search(r'File "<your ([^>]+)>", line (\d+)', dump)
    return f"line {m.group(2)} of {m.group(1)}" if m else ""


class _RankOutput:
    """While a checker runs learner code: count the lines the ranks print (the launcher
    prints them here as "[rank r] ..."), show the first ``SHOWN`` and drop the rest, so
    that a print in a loop neither floods the notebook nor goes unnoticed: the timeout
    verdict says how many lines there were, and a last line says how many were hidden."""

    SHOWN = 200

    def __init__(self):
        self.lines = 0
        self._stdout = sys.stdout

    def __enter__(self):
        self._stdout = sys.stdout
        sys.stdout = self
        return self

    def write(self, text: str) -> int:
        for piece in text.splitlines(True):
            if self.lines < self.SHOWN:
                self._stdout.write(piece)
            self.lines += piece.endswith("\n")
        return len(text)

    def flush(self):
        self._stdout.flush()

    def __getattr__(self, attr):  # encoding, isatty, ...: the real stream's
        return getattr(self._stdout, attr)

    def __exit__(self, *exc):
        sys.stdout = self._stdout
        if self.lines > self.SHOWN:
            print(f"[parlab] {self.lines - self.SHOWN:,} more lines printed by your function "
                  f"were not shown ({self.lines:,} in all)", flush=True)
        return False


def _short(text: str, keep: int = 6) -> str:
    """The learner-facing tail of a remote traceback: lines from the learner's own code
    (``<your ...>``) and the exception line, not parlab's frames."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    mine = [i for i, ln in enumerate(lines) if "<your " in ln]
    if mine:
        picked = lines[mine[0]:]
        picked = [ln for ln in picked if "parlab" not in ln or "<your " in ln]
        return " | ".join(picked[-keep:])
    return " | ".join(lines[-3:])
