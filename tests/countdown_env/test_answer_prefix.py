"""prefix_solvable against an independent brute force: every token string of small puzzles up to a length, judged by
the verifier alone; a prefix is solvable iff some accepted string starts with it."""

from __future__ import annotations

import random

import pytest

from countdown_env import CountdownTask, Puzzle, prefix_solvable, verify
from countdown_env.solving.answer_prefix import AnswerPrefixOracle
from countdown_env.solving.oracle import OracleLimitError, OracleLimits

MAX_TOKENS = 13
MAX_DEPTH = 3
QUERY_TOKENS = 6  # a solvable query prefix of at most this many tokens has an accepted completion within MAX_TOKENS


def _token_strings(numbers: tuple[int, ...]):
    """Every token sequence over the numbers (each at most once), the four operators and parentheses, up to
    MAX_TOKENS tokens and MAX_DEPTH nesting, that alternates operands and operators (others never parse)."""
    out = []

    def walk(tokens, left, depth, want_operand):
        out.append(tokens)
        if len(tokens) == MAX_TOKENS:
            return
        if want_operand:
            for i, n in enumerate(left):
                if n not in left[:i]:
                    walk(tokens + [str(n)], left[:i] + left[i + 1 :], depth, False)
            if depth < MAX_DEPTH:
                walk(tokens + ["("], left, depth + 1, True)
        else:
            for op in "+-*/":
                if left:
                    walk(tokens + [op], left, depth, True)
            if depth:
                walk(tokens + [")"], left, depth - 1, False)

    walk([], tuple(numbers), 0, True)
    return out


def _deepest(tokens) -> int:
    depth = deepest = 0
    for token in tokens:
        depth += (token == "(") - (token == ")")
        deepest = max(deepest, depth)
    return deepest


def _truth(puzzle: Puzzle, use_all: bool, integer: bool):
    """(every query prefix, the set of character prefixes of accepted strings), both spacings."""
    accepted_prefixes: set[str] = set()
    queries: set[str] = set()
    for tokens in _token_strings(puzzle.numbers):
        for sep in ("", " "):
            text = sep.join(tokens)
            if len(tokens) <= QUERY_TOKENS and _deepest(tokens) < MAX_DEPTH:
                queries.update(text[:i] for i in range(len(text) + 1))
                queries.add(text + sep)  # spaced: "25 + " is a prefix of "25 + 3"
            if tokens and verify(text, puzzle, use_all_numbers=use_all, integer_intermediates=integer).correct:
                accepted_prefixes.update(text[:i] for i in range(len(text) + 1))
                accepted_prefixes.add(text + " ")
                for stated in (f" = {puzzle.target}", f"={puzzle.target}"):
                    full = text + stated
                    accepted_prefixes.update(full[:i] for i in range(len(text), len(full) + 1))
    if accepted_prefixes:
        accepted_prefixes.add(" ")  # leading whitespace is stripped
    return queries, accepted_prefixes


CASES = [
    (Puzzle([2, 3, 5], 25), False, False),  # (2 + 3) * 5
    (Puzzle([2, 3, 5], 25), True, False),
    (Puzzle([4, 6, 9], 15), False, True),  # 6 + 9, or 4 * 6 - 9
    (Puzzle([3, 3, 8], 33), True, False),  # (8 + 3) * 3; a number given twice
    (Puzzle([3, 3, 8], 24), True, False),  # 8 * 3 leaves a 3 unused: unsolvable with every number
    (Puzzle([1, 12, 2], 6), False, False),  # "1" may still become 12
    (Puzzle([2, 3, 5], 97), False, False),  # unreachable: every prefix is unsolvable
]


@pytest.mark.slow
@pytest.mark.parametrize(("puzzle", "use_all", "integer"), CASES)
def test_matches_brute_force(puzzle, use_all, integer):
    queries, accepted = _truth(puzzle, use_all, integer)
    oracle = AnswerPrefixOracle(puzzle, use_all_numbers=use_all, integer_intermediates=integer)
    sample = sorted(queries)
    random.Random(0).shuffle(sample)
    sample = sample[:1500] + [q for q in queries if len(q) <= 3]
    wrong = [q for q in sample if oracle.solvable(q) != (q in accepted)]
    assert not wrong, f"{len(wrong)} of {len(sample)} disagree, e.g. {wrong[:5]}"
    assert any(q in accepted for q in sample) == (puzzle.target not in (97, 24))


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("(25 - 3) * 7 = 15", True),  # the stated result may still grow to 154
        ("(25 - 3) * 7 = 15 ", False),  # a space ended it: 15 is stated
        ("(25 - 3) * 7 = 0154", True),  # leading zeros state the same number
        ("(25 - 3) * 7 = 2", False),
        ("(25 - 3) = 22", False),  # an equation that does not reach the target
        ("(25 − 3) × 7", True),  # one-character notation is read as the verifier reads it
        ("$(25-3)*7", True),
        ("$(25-3)*7$", True),
        ("$(25-3)*7$$", False),  # closes more than was opened
        ("$$(25-3)*7$ = 154", True),  # "$$ ... $ = 154$" is accepted
        ("$$(25-3)*7$ = 153", False),
        ("`(25-3)*7$", False),  # closed with another delimiter
        ("(25-3)*7$", False),  # never opened
        ("07", False),  # a leading zero is refused
        ("(2", True),  # may become 25
        ("(25 ", True),
        ("25", False),  # 154 is only (25 - 3) * 7
        ("2 5", False),  # digits are never joined
        ("(25 - 3)7", False),  # implicit multiplication
        ("-", False),  # no unary minus in the task's rules
        ("25 ** 3", False),
        ("(25 - 3) * 7\u2003", True),  # an unusual space after a finished answer is stripped
        ("(25 - 3)\u2003* 7", False),  # but refused inside it
        ("25 - 3 * 7", False),
    ],
)
def test_edges(prefix, expected):
    assert prefix_solvable([25, 3, 7], 154, prefix) is expected


def test_rules_come_from_the_task():
    # 4 * 6 - 9 = 15 uses all three; 6 + 9 = 15 leaves 4 unused
    assert prefix_solvable([4, 6, 9], 15, "6 + 9 ")
    assert not prefix_solvable([4, 6, 9], 15, "6 + 9 ", task=CountdownTask(n_numbers=3, use_all_numbers=True))
    # 8 / 3 is not an integer: under integer_intermediates "8 / 3" can never be part of an answer
    assert prefix_solvable([3, 3, 8, 8], 24, "8 / (3 - 8 / 3")
    assert not prefix_solvable([3, 3, 8, 8], 24, "8 / (3 - 8 / 3", task=CountdownTask(integer_intermediates=True))


def test_bounds_are_one_line_errors():
    puzzle = Puzzle([25, 3, 7], 154)
    with pytest.raises(ValueError, match="LaTeX"):
        AnswerPrefixOracle(puzzle).solvable("25 \\times")
    with pytest.raises(ValueError, match="nests 97 parentheses"):
        AnswerPrefixOracle(puzzle).solvable("(" * 97)
    assert not AnswerPrefixOracle(puzzle).solvable("(" * 101 + "25")
    assert not AnswerPrefixOracle(puzzle).solvable("2" * 100_001)
    hard = AnswerPrefixOracle(Puzzle([7, 11, 13, 17, 19, 23], 1), limits=OracleLimits(max_states=50))
    with pytest.raises(OracleLimitError, match="gave up after 50 states"):
        hard.solvable("7 + (")
    with pytest.raises(TypeError):
        AnswerPrefixOracle(puzzle).solvable(None)


def _row(numbers, target, completion):
    return {"numbers": numbers, "target": target, "completion": completion}


@pytest.mark.slow
def test_label_steps_values_each_answer_token(tiny_model_dir, tmp_path):
    import json

    from countdown_env.cli import main

    rows = [
        _row([25, 3, 7], 82, "<reasoning>25 * 3 = 75</reasoning>\n<solution> 25 * 3 + 7</solution>"),
        _row([25, 3, 7], 82, "<reasoning>25 + 3 = 28</reasoning>\n<solution>(25 + 3) * 7</solution>"),
        _row([25, 3, 7], 82, "<think>no idea</think><answer>25 \\times 3 + 7</answer>"),
        _row([25, 3, 7], 82, "<reasoning>25 * 3 = 75</reasoning> cut off"),
    ]
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["label-steps", "--in", str(source), "--out", str(out), "--answer-tokens", str(tiny_model_dir)]) == 0
    labelled = [json.loads(line)["answer_tokens"] for line in out.read_text().splitlines()]
    puzzle = Puzzle([25, 3, 7], 82)
    accepted = [
        "".join(tokens)
        for tokens in _token_strings(puzzle.numbers)
        if tokens and verify("".join(tokens), puzzle).correct
    ]

    def solvable(prefix: str) -> bool:  # spacing aside: a space after digits only closes the number
        bare = prefix.replace(" ", "")
        closed = prefix.endswith(" ") and bare[-1:].isdigit()
        return any(s.startswith(bare) and not (closed and s[len(bare) : len(bare) + 1].isdigit()) for s in accepted)

    for row, labels in zip(rows[:2], labelled[:2], strict=True):
        answer = row["completion"].split("<solution>")[1].split("</solution>")[0]
        assert "".join(t["text"] for t in labels["tokens"]) == answer  # the tiny tokenizer: one token per character
        truth = [solvable(answer[: i + 1]) for i in range(len(answer))]
        assert [t["solvable"] for t in labels["tokens"]] == truth
        assert labels["first_unsolvable"] == (truth.index(False) if False in truth else None)
    assert labelled[1]["first_unsolvable"] == len("(25 +") - 1  # (25 + ... cannot reach 82 with 3 and 7
    assert "LaTeX" in labelled[2]["error"]
    assert labelled[3] is None


def test_label_steps_answer_tokens_refuses_a_model_without_tokenizer(tmp_path, capsys):
    from countdown_env.cli import main

    code = main(["label-steps", "--in", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "o.jsonl"),
                 "--answer-tokens", str(tmp_path / "no-model")])  # fmt: skip
    assert code == 2
    assert "--answer-tokens" in capsys.readouterr().err
