"""Step labels: hand-built completions, each with the state every step is taken in written out by hand, labelled as
an independent brute force labels them (valid, solvable_after, first_mistake); the generator's traces; and
``countdown label-steps`` (rows written back, the process-reward layout, bad rows refused with one line)."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest

from countdown_env.cli import main
from countdown_env.puzzle import Puzzle
from countdown_env.sft.traces import make_trace
from countdown_env.solving.oracle import StepOracle
from countdown_env.steps.labels import label_completion
from tests.brute_force import reachable

F = Fraction
R = "<reasoning>\n{}\n</reasoning>\n<solution>x</solution>"

# (numbers, target, rules, completion, [(step text, the state it is taken in, by hand)], unparsed units)
CASES = [
    # a straight chain in the trace grammar, then its check paragraph (no new steps)
    ([25, 3, 7], 82, {}, R.format("Try 25 * 3 = 75. 75 + 7 = 82. Reached 82.\n\nCheck: 25 * 3 + 7 = 82."),
     [("25 * 3 = 75", [25, 3, 7]), ("75 + 7 = 82", [75, 7])], 0),
    # a dead end with two probes from the state after Try, then the right attempt from the numbers again
    ([25, 3, 7, 4], 91, {},
     R.format("Try 25 + 4 = 29. 29 * 3 = 87, 87 + 7 = 94, too high. 29 - 7 = 22, too low. Dead end.\n\n"
              "Try 4 * 3 = 12. 25 - 12 = 13. 13 + 7 = 20, too low. Back up. 13 * 7 = 91. Reached 91."),
     [("25 + 4 = 29", [25, 3, 7, 4]), ("29 * 3 = 87", [29, 3, 7]), ("87 + 7 = 94", [87, 7]),
      ("29 - 7 = 22", [29, 3, 7]), ("4 * 3 = 12", [25, 3, 7, 4]), ("25 - 12 = 13", [25, 12, 7]),
      ("13 + 7 = 20", [13, 7]), ("13 * 7 = 91", [13, 7])], 0),
    # a new "Try" starts from the given numbers even without "Dead end."
    ([25, 3, 7], 82, {}, R.format("Try 25 + 3 = 28. 28 * 7 = 196, too high. Try 25 * 3 = 75. 75 + 7 = 82."),
     [("25 + 3 = 28", [25, 3, 7]), ("28 * 7 = 196", [28, 7]), ("25 * 3 = 75", [25, 3, 7]), ("75 + 7 = 82", [75, 7])],
     0),
    # wrong arithmetic breaks the state (None: nothing at hand) until Back up returns to the state before it;
    # Back up after a committed step undoes it; an operand no longer at hand is invalid too
    ([10, 6, 4], 24, {},
     R.format("10 + 6 = 16\n16 + 4 = 21\n16 * 4 = 64\nBack up.\nBack up.\n16 + 4 = 20\nBack up.\n"
              "6 - 4 = 2\n10 + 4 = 14\n2 * 12 = 24"),
     [("10 + 6 = 16", [10, 6, 4]), ("16 + 4 = 21", [16, 4]), ("16 * 4 = 64", None), ("16 + 4 = 20", [16, 4]),
      ("6 - 4 = 2", [16, 4]), ("10 + 4 = 14", None), ("2 * 12 = 24", None)], 0),
    # a number used twice when given once, backed up from; fractions; the right answer after prose
    ([1, 2, 3, 8], 24, {},
     R.format("Let me think.\n2 + 2 = 4\nBack up.\n1 / 3 = 1/3\n8 / 1/3 = 24"),
     [("2 + 2 = 4", [1, 2, 3, 8]), ("1 / 3 = 1/3", [1, 2, 3, 8]), ("8 / 1/3 = 24", [F(1, 3), 2, 8])], 0),
    # a negative intermediate is allowed by default and can still lead to the target
    ([5, 3, 4], 8, {}, R.format("3 - 5 = -2\n-2 * 4 = -8\nBack up.\n4 * -2 = -8"),
     [("3 - 5 = -2", [5, 3, 4]), ("-2 * 4 = -8", [-2, 4]), ("4 * -2 = -8", [-2, 4])], 0),
    # under integer_intermediates a fraction and a negative step are invalid; Dead end. mends a broken state
    ([6, 4, 3], 8, {"integer_intermediates": True},
     R.format("4 / 6 = 2/3\nDead end.\n3 - 4 = -1\nDead end.\n6 - 4 = 2\n2 + 6 = 8"),
     [("4 / 6 = 2/3", [6, 4, 3]), ("3 - 4 = -1", [6, 4, 3]), ("6 - 4 = 2", [6, 4, 3]), ("2 + 6 = 8", [2, 3])], 0),
    # under use_all_numbers reaching the target early with a number left over is not the end
    ([4, 2, 1], 8, {"use_all_numbers": True}, R.format("4 * 2 = 8\n8 - 1 = 7\nBack up.\n8 * 1 = 8"),
     [("4 * 2 = 8", [4, 2, 1]), ("8 - 1 = 7", [8, 1]), ("8 * 1 = 8", [8, 1])], 0),
    # TinyZero tags, a compact step, "Step k:" prefixes, then a unit that cannot be read stops the labels
    ([25, 3, 7], 82, {}, "<think>Step 1: 25*3 = 75\n75 + 7 = 82, so 25 * 3 + 7 = 82\n75 - 7 = 68</think>",
     [("25*3 = 75", [25, 3, 7])], 2),
    # generation stopped inside the reasoning: its last unit may be cut short ("= 8" of "= 82"), so it is not read
    ([25, 3, 7], 82, {}, "<reasoning>\n25 * 3 = 75\n75 + 7 = 8", [("25 * 3 = 75", [25, 3, 7])], 1),
    # an unsolvable puzzle: no first mistake, whatever is written
    ([2, 3], 100, {}, R.format("2 * 3 = 6"), [("2 * 3 = 6", [2, 3])], 0),
    # the target is one of the numbers
    ([5, 9], 9, {}, R.format("9 is already one of the numbers.\n\nCheck: 9 = 9."), [], 0),
]  # fmt: skip


def _expected(numbers, target, rules, steps):
    """Labels by brute force from the hand-written states: an operation is valid when its operands are in the state,
    the rules allow it and its result is exact; solvable_after is the brute force on the state it leads to."""
    use_all, integer = rules.get("use_all_numbers", False), rules.get("integer_intermediates", False)
    labels = []
    for text, state in steps:
        a, op, b, c = re.fullmatch(r"(\S+?)\s*([-+*/])\s*(\S+) = (\S+)", text).groups()
        a, b, c = F(a), F(b), F(c)
        rest = [F(v) for v in state or []]  # a broken state (None) holds nothing
        ok = a in rest and (rest.remove(a) or b in rest)
        if ok:
            rest.remove(b)
            value = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}[op]
            ok = value == c and not (integer and (value.denominator != 1 or value <= 0))
        labels.append((ok, ok and reachable([*rest, c], target, use_all, integer)))
    before = reachable(numbers, target, use_all, integer)
    first = next((i for i, (_, solvable) in enumerate(labels) if not solvable), None) if before else None
    return labels, before, first


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_hand_built_completions_are_labelled_as_brute_force_labels_them(case):
    numbers, target, rules, completion, steps, n_unparsed = case
    labels = label_completion(completion, Puzzle(numbers, target), StepOracle(target, **rules))
    expected, before, first = _expected(numbers, target, rules, steps)
    assert [s.step.text for s in labels.steps] == [text for text, _ in steps]
    assert [(s.valid, s.solvable_after) for s in labels.steps] == expected
    assert labels.solvable_before == before
    assert labels.first_mistake == first
    assert len(labels.unparsed) == n_unparsed


def test_the_cases_cover_both_labels_and_a_first_mistake():
    """The hand-built set is not trivial: valid and invalid steps, solvable and unsolvable states, mistakes."""
    seen = set()
    for numbers, target, rules, _, steps, _ in CASES:
        labels, _, first = _expected(numbers, target, rules, steps)
        seen.update(labels)
        seen.add(("first", first is not None))
    assert {(True, True), (True, False), (False, False), ("first", True), ("first", False)} <= seen


@pytest.mark.parametrize("style", ["direct", "search", "long"])
def test_generator_traces_are_valid_throughout_and_their_dead_ends_are_the_first_mistake(style):
    for seed in range(6):
        puzzle = Puzzle([25, 3, 7, 4], 91)
        trace = make_trace(puzzle, style=style, seed=seed)
        labels = label_completion(trace.completion(), puzzle, StepOracle(puzzle.target))
        assert labels.parsed and all(s.valid for s in labels.steps)
        assert labels.steps[-1].solvable_after  # the last step reaches the target
        assert labels.first_mistake == (0 if "Dead end." in trace.reasoning else labels.first_mistake)
        if "Dead end." not in trace.reasoning and "Back up." not in trace.reasoning:
            assert labels.first_mistake is None


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_label_steps_writes_rows_and_the_process_reward_layout(tmp_path, capsys):
    rows = [
        {
            "id": "a",
            "numbers": [25, 3, 7],
            "target": 82,
            "completion": R.format("25 * 3 = 75\n75 + 8 = 83\n75 + 7 = 82"),
        },
        {"id": "b", "nums": [2, 3], "target": 5, "completion": "<think>I add them: 2 + 3 = 5 done</think>"},
    ]
    _write(tmp_path / "in.jsonl", rows)
    out, prm = tmp_path / "out.jsonl", tmp_path / "prm.jsonl"
    assert main(["label-steps", "--in", str(tmp_path / "in.jsonl"), "--out", str(out), "--prm-out", str(prm)]) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written[0]["id"] == "a" and written[0]["first_mistake"] == 1 and written[0]["solvable_before"] is True
    assert [(s["text"], s["valid"], s["solvable_after"]) for s in written[0]["steps"]] == [
        ("25 * 3 = 75", True, True), ("75 + 8 = 83", False, False), ("75 + 7 = 82", False, False)
    ]  # fmt: skip  # the wrong line broke the state: nothing follows from it without backing up
    assert written[1]["steps"] == [] and written[1]["unparsed"] == ["I add them: 2 + 3 = 5 done"]
    prm_rows = [json.loads(line) for line in prm.read_text().splitlines()]
    assert len(prm_rows) == 1  # the row not read to its end is left out
    assert prm_rows[0]["completions"] == ["25 * 3 = 75", "75 + 8 = 83", "75 + 7 = 82"]
    assert prm_rows[0]["labels"] == [True, False, False]
    assert "[25, 3, 7]" in prm_rows[0]["prompt"] and "82" in prm_rows[0]["prompt"]


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"numbers": [1, 2], "target": 3}', "'completion' must be a string"),
        ('{"numbers": [1, 2], "completion": "x"}', "needs 'numbers'"),
        ('{"numbers": [1, 0], "target": 3, "completion": "x"}', "positive integer"),
        ('{"numbers": [1, 2], "target": 3.0, "completion": "x"}', "write it as 3"),  # as `countdown verify` reads it
        ('{"numbers": [1, 2, 3, 4, 5, 6, 7], "target": 3, "completion": "x"}', "at most 6 values"),
        ("[1, 2]", "expected a JSON object"),
        ("{not json", "not valid JSON"),
    ],
)
def test_bad_rows_are_refused_with_one_line_and_nothing_is_written(tmp_path, capsys, line, message):
    good = json.dumps({"numbers": [1, 2], "target": 3, "completion": "1 + 2 = 3"})
    (tmp_path / "in.jsonl").write_text(good + "\n" + line + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["label-steps", "--in", str(tmp_path / "in.jsonl"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and ("row 2" in err or ":2:" in err)
    assert not out.exists()


@pytest.mark.parametrize(
    "reasoning",
    [
        "\u0662\u0665 * \u0663 = \u0667\u0665.",  # Arabic-Indic digits: the verifier refuses them, so no step is read
        "25 * 3 = 75. 75 + " + "9" * 5000 + " = 82.",  # past Python's int-conversion limit: unparsed, not a crash
    ],
)
def test_steps_are_read_with_the_verifiers_numbers(reasoning):
    from countdown_env import verify

    completion = f"<reasoning>{reasoning}</reasoning><solution>25*3+7</solution>"
    labels = label_completion(completion, Puzzle([25, 3, 7], 82), StepOracle(82))
    assert labels.unparsed and all(s.valid for s in labels.steps)
    assert len(labels.unparsed) == 1 and reasoning.split(". ")[-1].rstrip(".") in labels.unparsed[0]
    assert not verify(reasoning.split(". ")[-1].split(" = ")[0], Puzzle([25, 3, 7], 82)).correct


def test_label_steps_never_writes_over_its_input(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    _write(source, [{"numbers": [1, 2], "target": 3, "completion": "1 + 2 = 3"}])
    before = source.read_bytes()
    assert main(["label-steps", "--in", str(source), "--out", str(source)]) == 2
    assert "input" in capsys.readouterr().err and source.read_bytes() == before
