"""`python -m parlab ...`: the strategy commands run and agree with the single device."""
import re

import pytest

from clis import main


def _diffs(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"\|diff\| (\S+)", text)]


@pytest.mark.parametrize("argv", [
    ["dp", "--ranks", "2", "--steps", "2"],
    ["dp", "--ranks", "2", "--steps", "2", "--variant", "naive", "--micro-batches", "2"],
    ["zero", "--ranks", "2", "--steps", "2", "--stage", "3"],
    ["tp", "--ranks", "2", "--steps", "2"],
    ["tp", "--ranks", "4", "--steps", "2", "--sequence-parallel"],
])
def test_strategy_commands_match_the_single_device(argv, capsys):
    main(argv)
    out = capsys.readouterr().out
    diffs = _diffs(out)
    assert len(diffs) == 2 and max(diffs) < 1e-5, out


def test_zero_command_reports_memory_and_traffic(capsys):
    main(["zero", "--ranks", "2", "--steps", "1", "--stage", "2"])
    out = capsys.readouterr().out
    assert "holds (measured / ZeRO formula" in out and "bytes sent per rank per step" in out


@pytest.mark.parametrize("argv", [["dp", "--ranks", "3"], ["zero", "--stage", "7"],
                                  ["dp", "--variant", "ring"], ["dp", "--lr", "nan"],
                                  ["zero", "--steps", "0"], ["dp", "--bucket-kib", "0"],
                                  ["pipeline", "--ranks", "2", "--micro-batches", "0"],
                                  ["pipeline", "--ranks", "2", "--lr", "inf"],
                                  ["tp", "--ranks", "3"], ["tp", "--steps", "0"],
                                  ["tp", "--ranks", "8", "--sequence-parallel"]])
def test_bad_input_exits_with_the_constraint(argv, capsys):
    """One `error:` line naming the constraint, raised before any rank starts; no traceback."""
    with pytest.raises(SystemExit, match="^error: [^\n]*must") as e:
        main(argv)
    assert "Traceback" not in str(e.value) + capsys.readouterr().err


def test_pipeline_command(capsys):
    main(["pipeline", "--ranks", "2", "--micro-batches", "2", "--steps", "2", "--schedule", "gpipe"])
    out = capsys.readouterr().out
    diffs = _diffs(out)
    assert len(diffs) == 2 and max(diffs) < 1e-5, out
    assert "simulated [2, 2]" in out and "(P-1)/(vM+P-1) = 33.3%" in out
    with pytest.raises(SystemExit, match="^error: --micro-batches 6: interleaved 1F1B needs micro_batches divisible by p"):
        main(["pipeline", "--ranks", "4", "--micro-batches", "6", "--schedule", "interleaved", "--v", "2"])


@pytest.mark.parametrize("sp, expect", [
    (False, {("forward", "all_reduce"): 2, ("backward", "all_reduce"): 2}),
    (True, {("forward", "all_gather"): 2, ("forward", "reduce_scatter"): 2,
            ("backward", "all_gather"): 4, ("backward", "reduce_scatter"): 2}),
])
@pytest.mark.timeout(120)
def test_tp_command_counts_one_layers_collectives_beside_the_formula(sp, expect, capsys):
    """Each row: traced count and bytes | the formula's count, bytes and the operators it
    counts (cost.tp_comm_per_layer's sites), none of them empty."""
    main(["tp", "--ranks", "2", "--steps", "2"] + (["--sequence-parallel"] if sp else []))
    out = capsys.readouterr().out
    rows = re.findall(r"^  (forward|backward) +(\w+) +(\d+) x +(\S+ \S+) \| "
                      r"(\d+) x +(\S+ \S+)  (\S.*)$", out, re.M)
    assert {(d, op): int(n) for d, op, n, *_ in rows} == expect, out
    for _, _, n, sent, k, formula_sent, sites in rows:
        assert (n, sent) == (k, formula_sent), out  # count and bytes
        assert re.search(r"\b(f|g|g-bar)\b", sites) and "attn." in sites, out
    total = re.search(r"^  total +(\d+) x +(\S+ \S+) \| (\d+) x +(\S+ \S+)  "
                      r"(\d+) \(t-1\)/t M, M = ", out, re.M)
    assert total and total[1] == total[3] and total[2] == total[4], out  # count and bytes
    assert total[5] == ("10" if sp else "8"), out


@pytest.mark.parametrize("argv", [
    ["cp", "--ranks", "2", "--steps", "2"],
    ["cp", "--ranks", "4", "--steps", "2", "--layout", "contiguous", "--attention", "ulysses"],
])
def test_cp_command_matches_the_single_device(argv, capsys):
    main(argv)
    out = capsys.readouterr().out
    diffs = _diffs(out)
    assert len(diffs) == 2 and max(diffs) < 1e-5, out


@pytest.mark.parametrize("layout, imbalance", [("contiguous", "1.60"), ("zigzag", "1.00")])
def test_cp_command_shows_bytes_and_work_beside_the_formulas(layout, imbalance, capsys):
    main(["cp", "--ranks", "4", "--steps", "1", "--layout", layout])
    out = capsys.readouterr().out
    rows = re.findall(r"^  rank \d: forward (\d+) x p2p .*backward (\d+) x .*total (.+) \| "
                      r"(\d+) x, (.+)$", out, re.M)
    assert len(rows) == 4 and all(int(f) + int(b) == int(n) and t == want
                                  for f, b, t, n, want in rows), out
    work = re.findall(r"= (\S+) blocks \| cost.causal_work_per_rank (\S+)$", out, re.M)
    assert len(work) == 4 and all(a == b for a, b in work), out
    assert f"measured {imbalance}, predicted {imbalance}" in out


@pytest.mark.parametrize("argv", [["cp", "--ranks", "3"], ["cp", "--layout", "striped"],
                                  ["cp", "--attention", "flash"], ["cp", "--steps", "0"],
                                  ["cp", "--ranks", "8", "--attention", "ulysses",
                                   "--layout", "contiguous"]])
def test_cp_bad_input_exits_with_the_constraint(argv, capsys):
    with pytest.raises(SystemExit, match="^error: [^\n]*must") as e:
        main(argv)
    assert "Traceback" not in str(e.value) + capsys.readouterr().err


def test_plan_command_ranks_and_lists_the_infeasible(capsys):
    main(["plan", "--model", "70B", "--gpus", "512", "--gpu", "H100-80GB", "--top", "3"])
    out = capsys.readouterr().out
    assert "on 512 x H100-SXM5-80GB, global batch 1024 x 4096 tokens" in out
    ranked = re.findall(r"^ +(\d+)\. dp=\d+ tp=\d+ pp=\d+.*: ([\d.]+) s/step", out, re.M)
    assert [int(i) for i, _ in ranked] == [1, 2, 3]
    times = [float(t) for _, t in ranked]
    assert times == sorted(times)
    assert "fits in one node (NVLink4)" in out and "infeasible (" in out
    assert "GB short" in out and "pp=32 must divide n_layers=80" in out


@pytest.mark.parametrize("argv", [["plan", "--gpu", "Z100"], ["plan", "--model", "9T"],
                                  ["plan", "--gpus", "0"], ["plan", "--top", "0"],
                                  ["plan", "--seq-len", "-1"]])
def test_plan_bad_input_exits_with_the_constraint(argv, capsys):
    with pytest.raises(SystemExit, match="^error: [^\n]*must") as e:
        main(argv)
    assert "Traceback" not in str(e.value) + capsys.readouterr().err


@pytest.mark.timeout(600)
@pytest.mark.parametrize("argv", [
    ["3d", "--ranks", "8", "--dp", "2", "--pp", "2", "--tp", "2", "--steps", "2"],
    ["3d", "--ranks", "4", "--dp", "2", "--pp", "1", "--tp", "2", "--steps", "2",
     "--sequence-parallel", "--zero-stage", "1"],
])
def test_3d_command_prints_the_mesh_and_matches_the_single_device(argv, capsys):
    main(argv)
    out = capsys.readouterr().out
    diffs = _diffs(out)
    assert len(diffs) == 2 and max(diffs) < 1e-5, out
    assert "DP replica 1:" in out and "TP groups" in out and "step times" in out


@pytest.mark.parametrize("argv", [["3d", "--ranks", "4", "--dp", "2", "--pp", "2", "--tp", "2"],
                                  ["3d", "--ranks", "8", "--zero-stage", "4"],
                                  ["3d", "--ranks", "8", "--tp", "3", "--dp", "1", "--pp", "1"]])
def test_3d_bad_input_exits_with_the_constraint(argv, capsys):
    with pytest.raises(SystemExit, match="^error: [^\n]*must") as e:
        main(argv)
    assert "Traceback" not in str(e.value) + capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["ep", "--ranks", "2", "--steps", "2", "--experts", "4", "--top-k", "2",
     "--capacity-factor", "1.0"],
    ["ep", "--ranks", "4", "--steps", "2", "--experts", "4", "--top-k", "1", "--ep", "2"],
])
def test_ep_command_matches_the_single_device_and_reports_drops(argv, capsys):
    main(argv)
    out = capsys.readouterr().out
    diffs = _diffs(out)
    assert len(diffs) == 2 and max(diffs) < 1e-5, out
    assert out.count("same as the single device") == 2 and "DIFFERENT" not in out, out
    assert "tokens per expert" in out and "cost.moe_all_to_all_bytes" in out, out
    if "--capacity-factor" not in argv:
        assert "dropped 0 of" in out, out


# --- python -m lessons drill ------------------------------------------------------------

def _drill(monkeypatch, capsys, answers, argv):
    import io
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(a + "\n" for a in answers)))
    main(["drill"] + argv)
    return capsys.readouterr().out


def test_drill_right_answers_score_full(monkeypatch, capsys):
    from lessons.common.drills.quiz import quiz_questions
    qs = quiz_questions("pp", 4, 5)
    out = _drill(monkeypatch, capsys, [repr(q.answer) for q in qs],
                 ["--topic", "pp", "--n", "4", "--seed", "5"])
    assert out.count("right: ") == 4, out
    assert out.rstrip().endswith("score: 4 right of 4 on the first try"), out
    assert all(q.section in out.replace("\n    ", " ") for q in qs)


def test_drill_wrong_answers_score_zero_and_show_the_answer(monkeypatch, capsys):
    from lessons.common.drills.quiz import quiz_questions
    qs = quiz_questions(("cp", "3d"), 3, 0)
    # a wrong answer, then the second try (wrong again, or empty: show the answer)
    answers = [repr(qs[0].answer * 1.5), repr(qs[0].answer * 1.5),
               repr(qs[1].answer * 1.5), "", repr(qs[2].answer * 1.5), ""]
    out = _drill(monkeypatch, capsys, answers, ["--topic", "cp,3d", "--n", "3"])
    assert out.count("not yet: ") == 3 and "too high" in out, out
    assert out.count("wrong: ") == 3, out
    assert out.rstrip().endswith("score: 0 right of 3 on the first try"), out
    assert all(f"the answer is {q.answer_text}." in out for q in qs)


def test_drill_ends_cleanly_at_end_of_input(monkeypatch, capsys):
    from lessons.common.drills.quiz import quiz_questions
    q = quiz_questions(None, 1, 2)[0]
    out = _drill(monkeypatch, capsys, [repr(q.answer), ""], ["--n", "5", "--seed", "2"])
    assert "skipped. The answer is" in out and "end of input" in out
    assert out.rstrip().endswith("score: 1 right of 1 on the first try, 1 skipped "
                                 "(stopped after 2 of 5)"), out


def test_drill_through_a_real_pipe():
    import subprocess
    import sys
    from lessons.common.drills.quiz import quiz_questions
    q = quiz_questions("collectives", 1, 7)[0]
    run = subprocess.run([sys.executable, "-m", "lessons", "drill", "--topic", "collectives",
                          "--n", "2", "--seed", "7"], input=f"{q.answer!r}\nnonsense\n",
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "must be a number, got 'nonsense'" in run.stdout, run.stdout
    assert "score: 1 right of 1 on the first try (stopped after 1 of 2)" in run.stdout


@pytest.mark.parametrize("argv, match", [
    (["--topic", "pipeline"], r"--topic pipeline: topic='pipeline' must be one of collectives"),
    (["--n", "0"], r"--n 0: n=0 must be"),
    (["--n", "1000000000"], r"--n 1000000000: n=1000000000 must be at most 1000: a quiz asks"),
    (["--seed", "1" + "0" * 30], r"--seed 1" + "0" * 30 + r": seed=1" + "0" * 30 + " must be within"),
])
def test_drill_bad_input_exits_with_the_constraint(argv, match):
    with pytest.raises(SystemExit, match="^error: " + match):
        main(["drill"] + argv)


def test_drill_asks_its_questions_one_at_a_time(monkeypatch):
    """A quiz of the most questions allowed that ends at its first answer builds one
    question, not all of them (a billion questions built up front once hung the drill)."""
    from lessons.common.drills import quiz
    built = []
    real = quiz.next_question
    monkeypatch.setattr(quiz, "next_question", lambda *a, **kw: built.append(a) or real(*a, **kw))
    quiz.run_quiz(n=quiz.MAX_QUESTIONS, read=lambda prompt: (_ for _ in ()).throw(EOFError),
                  out=lambda *a: None)
    assert len(built) == 1
    for bad in (quiz.MAX_QUESTIONS + 1, 10 ** 9, 2 ** 20000):  # refused before any question
        with pytest.raises(ValueError, match=r"^n=.* must be at most 1000"):
            quiz.run_quiz(n=bad, read=None, out=None)
    with pytest.raises(ValueError, match=r"^seed=.* must be within"):
        quiz.quiz_questions(n=1, seed=2 ** 20000)
    assert built[1:] == []


def test_drill_refuses_to_run_once_per_rank(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(SystemExit, match=r"^error: WORLD_SIZE=4: the drill must run as one"):
        main(["drill"])
