"""`python -m parlab ...` (and `python -m lessons ...`) refuses a bad flag value naming the flag typed, with a nonzero
exit and no traceback, before any rank starts or anything is measured."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import clis
import paths
from parlab.launch import MAX_LOCAL_RANKS

ROOT = paths.ROOT
COMMANDS = [c for c in clis.COMMANDS if c not in ("gpu-report", "failover")]


@pytest.fixture
def no_ranks(monkeypatch):
    """Any rank started (a measurement, a run) fails the test: refusals come first."""
    def launch(*a, **k):
        raise AssertionError("a rank started before the flags were refused")
    monkeypatch.setattr(sys.modules["parlab.launch"], "launch", launch)
    monkeypatch.delenv("WORLD_SIZE", raising=False)


CASES = [
    # the tester's cases: each named a field the user never typed, or was not refused
    (["3d", "--dp", "0"], r"--dp 0: dp=0 must be an integer >= 1"),
    (["3d", "--micro-batches", "0"], r"--micro-batches 0: micro_batches=0 must be an integer >= 1"),
    (["ep", "--experts", "0"], r"--experts 0: experts=0 must be an integer >= 1"),
    (["ep", "--experts", "1"], r"--top-k 2: top_k=2 must be <= --experts 1"),
    (["pipeline", "--micro-batches", "0"],
     r"--micro-batches 0: micro_batches=0 must be an integer >= 1"),
    (["train", "--steps", "0"], r"--steps 0: steps=0 must be an integer >= 1"),
    (["train", "--lr", "inf"], r"--lr inf: lr=inf must be a finite number"),
    (["train", "--lr", "nan"], r"--lr nan: lr=nan must be a finite number"),
    (["train", "--lr", "0"], r"--lr 0.0: lr=0.0 must be > 0"),
    (["info", "--ranks", "0"], r"--ranks 0: ranks=0 must be an integer >= 1"),
    (["alpha-beta", "--ranks", str(MAX_LOCAL_RANKS + 1)],
     rf"--ranks {MAX_LOCAL_RANKS + 1}: ranks={MAX_LOCAL_RANKS + 1} must be <= {MAX_LOCAL_RANKS}"),
    # the other flags and subcommands
    (["collectives", "--ranks", "-1"], r"--ranks -1: ranks=-1 must be an integer >= 1"),
    (["ring", "--ranks", str(MAX_LOCAL_RANKS + 1)], rf"--ranks {MAX_LOCAL_RANKS + 1}: "),
    (["bytes", "--sizes", "2", "0"], r"--sizes 0: sizes=0 must be an integer >= 1"),
    (["bytes", "--sizes", str(MAX_LOCAL_RANKS + 8)], rf"--sizes {MAX_LOCAL_RANKS + 8}: "),
    (["bytes", "--numel", "0"], r"--numel 0: numel=0 must be an integer >= 1"),
    (["tp", "--batch-size=0"], r"--batch-size 0: batch_size=0 must be an integer >= 1"),
    (["ep", "--capacity-factor", "0"], r"--capacity-factor 0.0: capacity_factor=0.0 must be > 0"),
    (["pipeline", "--v", "0"], r"--v 0: v=0 must be an integer >= 1"),
    (["dp", "--bucket-kib", "0"], r"--bucket-kib 0: bucket_kib=0 must be an integer >= 1"),
    (["plan", "--gpus", "0"], r"--gpus 0: gpus=0 must be an integer >= 1"),
    (["drill", "--n", "0"], r"--n 0: n=0 must be an integer >= 1"),
    # combinations, in the flags that set them
    (["3d", "--ranks", "4"], r"--dp 2 --pp 2 --cp 1 --tp 2: dp\*pp\*cp\*tp = 8 must equal --ranks 4"),
    (["dp", "--ranks", "3"], r"--batch-size 8 must be a multiple of --ranks 3 x --micro-batches 1"),
    (["zero", "--ranks", "3"], r"--batch-size 8 must be a multiple of --ranks 3"),
    (["ep", "--ranks", "2", "--batch-size", "5"], r"--batch-size 5 must be a multiple of --ranks 2"),
    # a run's own check, led by the flag that set its field
    (["zero", "--stage", "7"], r"--stage 7: zero_stage=7 must be one of"),
    (["3d", "--zero-stage", "5"], r"--zero-stage 5: zero_stage=5 must be one of"),
    (["tp", "--ranks", "3"], r"--ranks 3: tp=3 must divide n_heads=4"),
    (["cp", "--ranks", "3"], r"--ranks 3: seq_len=64 must be divisible by 2\*cp=6"),
    (["ep", "--ep", "3"], r"--ep 3: ep=3 must divide world_size=4"),
    (["dp", "--variant", "ring"], r"--variant ring: variant='ring' must be one of"),
    (["pipeline", "--schedule", "x"], r"--schedule x: schedule='x' must be one of"),
]


@pytest.mark.parametrize("argv, message", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_bad_flag_is_refused_naming_it_before_any_rank_starts(argv, message, no_ranks,
                                                                  capsys):
    with pytest.raises(SystemExit, match="^error: " + message) as e:
        clis.main(argv)
    assert e.value.code not in (0, None)  # a string: printed to stderr, exit status 1
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS)
def test_the_defaults_of_every_command_pass_the_flag_checks(command, monkeypatch):
    """The checks refuse nothing a command accepts by default (3d: 8 ranks for 2x2x2)."""
    called = []
    cli = clis.cli_of(command)
    stand_in = lambda args, out: called.append(1)  # noqa: E731
    monkeypatch.setattr(cli, "COMMANDS", [(n, stand_in if n == command else fn)
                                          for n, fn in cli.COMMANDS])
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    cli.main([command])
    assert called == [1]


def _torchrun_env(monkeypatch, world):
    for k, v in {"RANK": "0", "WORLD_SIZE": str(world), "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE":
                 str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}.items():
        monkeypatch.setenv(k, v)


def test_under_torchrun_the_ranks_are_torchruns(no_ranks, monkeypatch):
    _torchrun_env(monkeypatch, 4)  # --ranks is ignored: neither checked nor named
    with pytest.raises(SystemExit, match=r"^error: --dp 1 --pp 1 --cp 1 --tp 2: dp\*pp\*cp\*tp "
                                         r"= 2 must equal WORLD_SIZE=4"):
        clis.main(["3d", "--ranks", "2", "--dp", "1", "--pp", "1", "--tp", "2"])
    with pytest.raises(SystemExit, match=r"^error: tp=3 must divide n_heads=4"):
        _torchrun_env(monkeypatch, 3)
        clis.main(["tp", "--ranks", "3"])


@pytest.mark.parametrize("stray", [{"WORLD_SIZE": "4"}, {"RANK": "0", "WORLD_SIZE": "2"}])
def test_a_stray_world_size_is_named_not_taken_for_torchrun(no_ranks, monkeypatch, stray):
    """A WORLD_SIZE left over in the shell is neither torchrun's world (which would skip
    the --ranks cap and name WORLD_SIZE in 3d's product) nor ignored: the flags' check
    names the variables, before any rank starts."""
    for k in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(k, raising=False)
    for k, v in stray.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(SystemExit, match=r"^error: .*WORLD_SIZE=.*not a torchrun worker"):
        clis.main(["3d", "--ranks", str(MAX_LOCAL_RANKS + 1)])
    with pytest.raises(SystemExit, match=r"^error: .*WORLD_SIZE="):
        clis.main(["tp", "--ranks", "2"])


@pytest.mark.parametrize("argv, message", [
    (["train", "--steps", "0"], "--steps 0: steps=0 must be an integer >= 1"),
    (["alpha-beta", "--ranks", str(MAX_LOCAL_RANKS + 1)], f"--ranks {MAX_LOCAL_RANKS + 1}: "),
    (["3d", "--micro-batches", "0"], "--micro-batches 0: micro_batches=0"),
])
def test_from_a_terminal_one_error_line_and_a_nonzero_exit(argv, message):
    """The real command line: exit status 1, `error: ...` on stderr, no traceback, and
    nothing printed first (alpha-beta printed its measurements, then refused 33 ranks)."""
    run = subprocess.run([sys.executable, "-m", clis.package_of(argv[0]), *argv], capture_output=True,
                         text=True, timeout=120, cwd=ROOT,
                         env={k: v for k, v in os.environ.items() if k != "WORLD_SIZE"})
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith("error: " + message), run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""
