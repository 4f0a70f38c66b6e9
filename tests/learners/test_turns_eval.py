"""``countdown eval --max-turns N``: pass@1 within 1..N turns (HF backend, feedback between turns)."""

from __future__ import annotations

import json

from countdown_env.puzzle import Puzzle
from countdown_env.task import CountdownTask
from learners.pipeline.evaluation.turns import evaluate_turns, format_turns

PUZZLES = [Puzzle([3, 7, 11], 21), Puzzle([2, 5, 9], 19)]


class ScriptedSampler:
    """A sampler whose n-th call answers every prompt with ``answers[n]`` (one sample per prompt)."""

    name = "scripted"
    stop_ids = ()

    def __init__(self, tokenizer, answers):
        self.tokenizer, self.answers, self.prompts = tokenizer, answers, []

    def sample(self, prompts, sampling, *, n=1, max_new_tokens):
        from learners.sampling import Sample

        assert n == 1
        text = self.answers[len(self.prompts)]
        self.prompts.append([self.tokenizer.decode(p) for p in prompts])
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return [[Sample(ids[:budget], [0.0] * len(ids[:budget]))] for budget in max_new_tokens]


def test_pass_within_turns_counts_the_turn_of_the_first_correct_answer(tiny_tokenizer):
    task = CountdownTask(template="compact", feedback="compact")
    fmt = task.format_completion
    # turn 1: "3 * 7" solves puzzle 0 only; turn 2: "2 * 5 + 9" solves puzzle 1; turn 3 never runs
    sampler = ScriptedSampler(tiny_tokenizer, [fmt("r", "3 * 7"), fmt("r", "2 * 5 + 9"), fmt("r", "1")])
    rows = [{"numbers": list(p.numbers), "target": p.target} for p in PUZZLES]
    report = evaluate_turns(sampler, tiny_tokenizer, rows, task=task, max_turns=3, samples=1, max_new_tokens=64)
    assert {t: s["pass@1"] for t, s in report["turns"].items()} == {"1": 0.5, "2": 1.0, "3": 1.0}
    assert len(sampler.prompts) == 2 and len(sampler.prompts[1]) == 1  # only the unsolved episode continues
    assert (
        "<|im_start|>user\nNumbers: [3, 7] not among the given numbers [2, 5, 9]\nTurns left: 2<|im_end|>"
        in (sampler.prompts[1][0])
    )
    assert "pass@1 within 2 turns: 1.000" in format_turns(report)


def test_cli_eval_max_turns(tiny_model_dir, tmp_path, capsys):
    from countdown_env.cli import main
    from countdown_env.helpers.jsonl import write_jsonl

    write_jsonl([{"numbers": list(p.numbers), "target": p.target} for p in PUZZLES], tmp_path / "split.jsonl")
    out = tmp_path / "turns.json"
    argv = ["eval", "--model", str(tiny_model_dir), "--split", str(tmp_path / "split.jsonl"), "--max-turns", "3"]
    assert main([*argv, "--samples", "2", "--max-new-tokens", "8", "--out", str(out), "--template", "compact"]) == 0
    printed = capsys.readouterr().out
    for t in (1, 2, 3):
        assert f"pass@1 within {t} turn" in printed
    report = json.loads(out.read_text())
    assert report["max_turns"] == 3 and set(report["turns"]) == {"1", "2", "3"}
    values = [report["turns"][t]["pass@1"] for t in ("1", "2", "3")]
    assert values == sorted(values)  # solved within t turns can only grow with t
