"""R2's helper scripts (experiments/r2_smollm2): the learnable band and the registered learning-rate rule, on
hand-built inputs whose answers are worked out here."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "experiments" / "r2_smollm2"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"r2_{name}", FOLDER / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_band_keeps_puzzles_solved_sometimes_but_not_always():
    band = _load("learnable_band")
    puzzles = [
        {"numbers": [1, 2, 3], "target": 6, "correct": [False] * 4},  # never: out
        {"numbers": [4, 5, 6], "target": 15, "correct": [True, False, False, False]},  # 1 of 4: in
        {"numbers": [7, 8, 9], "target": 24, "correct": [True, True, True, False]},  # 3 of 4: in
        {"numbers": [2, 3, 4], "target": 24, "correct": [True] * 4},  # always: out
    ]
    assert band.band_of(puzzles, 4) == [{"numbers": [4, 5, 6], "target": 15}, {"numbers": [7, 8, 9], "target": 24}]


def _history(reward: float, kl: float, format_rate: float, steps: int = 30) -> list[dict]:
    return [{"step": s, "reward": reward, "kl": kl, "countdown/format_rate": format_rate} for s in range(1, steps + 1)]


@pytest.mark.parametrize(
    ("high", "expected"),
    [
        (dict(kl=0.02, format_rate=0.98), "high"),  # the higher reward passes both checks: chosen
        (dict(kl=0.30, format_rate=0.98), "low"),  # it drifts too far: the other
        (dict(kl=0.02, format_rate=0.70), "low"),  # it loses the format: the other
    ],
)
def test_the_probe_rule_takes_the_better_lr_unless_it_fails_a_check(high, expected):
    report = _load("report")
    histories = {"high": _history(0.40, **high), "low": _history(0.25, kl=0.01, format_rate=0.99)}
    choice = report.probe_choice({"high": 2e-4, "low": 5e-5}, histories)
    assert choice["chosen"] == expected
    assert choice["lr"] == {"high": 2e-4, "low": 5e-5}[expected]


def test_the_probe_rule_chooses_nothing_when_both_fail_and_windows_are_by_step():
    report = _load("report")
    bad = _history(0.3, kl=0.5, format_rate=0.5)
    assert report.probe_choice({"a": 1e-4, "b": 2e-4}, {"a": bad, "b": bad})["chosen"] is None
    # steps 1-10 do not enter the reward window (11-30)
    history = [{"step": s, "reward": 1.0 if s <= 10 else 0.0} for s in range(1, 31)]
    assert report.window_mean(history, "reward", 11, 30) == 0.0
    assert math.isnan(report.window_mean(history, "kl", 11, 30))


def test_the_probe_windows_scale_with_its_length():
    report = _load("report")
    # 20 steps (amendment 1): reward over 7-20, format and KL over 14-20; the early reward of a, the late KL of b
    a = [{"step": s, "reward": 0.9 if s <= 6 else 0.1, "kl": 0.0} for s in range(1, 21)]
    b = [{"step": s, "reward": 0.2, "kl": 0.5 if s >= 14 else 0.0} for s in range(1, 21)]
    choice = report.probe_choice({"a": 1e-4, "b": 2e-4}, {"a": a, "b": b}, steps=20)
    assert choice["figures"]["a"]["windows"] == {"reward": [7, 20], "format_and_kl": [14, 20]}
    assert choice["figures"]["a"]["reward"] == pytest.approx(0.1) and choice["figures"]["b"]["kl"] == 0.5
    assert choice["chosen"] == "a"  # b has the higher reward in the window but fails the KL check


def _write_eval(path: Path, correct: list[list[bool]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"numbers": [i, i + 1, i + 2], "target": 10 + i, "correct": c, "lengths": [50] * len(c)}
            for i, c in enumerate(correct)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_verdict_gains_intervals_and_decision_on_hand_built_evals(tmp_path):
    """Three puzzles; the shared start solves 1/4, 2/4, 0/4 (pass@1 0.25). Seed A ends at 3/4, 2/4, 1/4 (0.5), seed
    B at 2/4, 2/4, 1/4 (5/12): gains +0.25 and +1/6, mean 5/24, t interval 5/24 ± t_{0.975,1} (1/12)/sqrt(2) / ...
    computed here from the definition."""
    from scipy.stats import t

    report = _load("report")
    start = tmp_path / "start.jsonl"
    _write_eval(start, [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]])
    runs = {}
    for name, ends in (("a", [[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]]),
                       ("b", [[1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 0]])):  # fmt: skip
        run = tmp_path / name / "runs" / "grpo-s0"
        _write_eval(run / "evals" / "step-100.jsonl", ends)
        _write_eval(run / "evals" / "step-0.jsonl", [[0, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]])
        runs[name] = run
    result = report.verdict(runs, start, 100)
    assert result["gain_per_seed"]["a"] == pytest.approx(0.5 - 0.25)
    assert result["gain_per_seed"]["b"] == pytest.approx(5 / 12 - 0.25)
    gains = [0.25, 5 / 12 - 0.25]
    mean, sd = sum(gains) / 2, abs(gains[0] - gains[1]) / math.sqrt(2)
    half = t.ppf(0.975, 1) * sd / math.sqrt(2)
    low, high = result["intervals"]["t over seeds"]
    assert result["mean_gain"] == pytest.approx(mean) and low == pytest.approx(mean - half)
    assert high == pytest.approx(mean + half)
    assert result["mde"] == pytest.approx((t.ppf(0.975, 1) + t.ppf(0.80, 1)) * sd / math.sqrt(2))
    assert result["decisive"] == "t over seeds" and result["verdict"] == "learning not shown"  # low < 0 with 1 df
    own = report.verdict(runs, None, 100)  # each run's own step 0: 1/12 lower than the shared start's 0.25
    assert own["gain_per_seed"]["a"] == pytest.approx(0.5 - 1 / 6)
    text = report.verdict_markdown(result, "cmd")
    assert "learning not shown" in text and "+0.2500" in text
    assert "(interim: 2 of the 8 registered seeds" in text.splitlines()[0]
    eight = dict(result, seeds=[f"s{i}" for i in range(8)], gain_per_seed={f"s{i}": 0.0 for i in range(8)})
    eight |= {k: {f"s{i}": 0.0 for i in range(8)} for k in ("start_pass@1", "end_pass@1", "end_pass@4")}
    assert "interim" not in report.verdict_markdown(eight, "cmd").splitlines()[0]


def test_verdict_refuses_evals_of_other_puzzles(tmp_path):
    report = _load("report")
    start = tmp_path / "start.jsonl"
    _write_eval(start, [[1, 0], [0, 0]])
    run = tmp_path / "a" / "runs" / "grpo-s0"
    _write_eval(run / "evals" / "step-50.jsonl", [[1, 0]])
    with pytest.raises(ValueError, match="not the step-0 eval's puzzles"):
        report.verdict({"a": run}, start, 50)


def test_a_start_drawn_in_several_files_pools_their_samples_per_puzzle(tmp_path):
    """Amendment 4(d): four 4-sample step-0 draws are one 16-sample baseline; a puzzle solved 1/4 and 3/4 in two draws
    has pass@1 4/8; draws of unequal size pool their samples (1 of 2 and 4 of 4: 5/6, where the mean of the two draws'
    pass@1 would be 3/4); draws of other puzzles are refused."""
    report = _load("report")
    first, second = tmp_path / "s0.jsonl", tmp_path / "s1.jsonl"
    _write_eval(first, [[1, 0, 0, 0], [0, 0, 0, 0]])
    _write_eval(second, [[1, 1, 1, 0], [1, 0, 0, 0]])
    keys, scores = report.pooled_scores([first, second])
    assert keys == [((0, 1, 2), 10), ((1, 2, 3), 11)] and scores.tolist() == [4 / 8, 1 / 8]
    run = tmp_path / "a" / "runs" / "grpo-s0"
    _write_eval(run / "evals" / "step-50.jsonl", [[1, 1, 0, 0], [1, 1, 0, 0]])
    result = report.verdict({"a": run}, [first, second], 50)
    assert result["gain_per_seed"]["a"] == pytest.approx(0.5 - (4 / 8 + 1 / 8) / 2)
    assert "s0.jsonl, s1.jsonl" in result["baseline"]
    unequal = tmp_path / "s2.jsonl"
    _write_eval(first, [[1, 0], [0, 0]])
    _write_eval(unequal, [[1, 1, 1, 1], [0, 0, 0, 0]])
    assert report.pooled_scores([first, unequal])[1].tolist() == [5 / 6, 0.0]
    _write_eval(second, [[1, 1, 1, 0]])
    with pytest.raises(ValueError, match="not the puzzles of"):
        report.pooled_scores([first, second])


def test_the_format_secondary_reads_the_last_ten_training_steps_and_the_eval_row(tmp_path):
    """Amendment 5(b): run A keeps its format (0.9 over steps 91-100, though 0.0 before step 91), run B drops it (0.3
    over 91-100, 1.0 before); the eval's rate is the step-100 row of rows.csv. Shares and side means by hand."""
    from learners.pipeline.compare.results import rows_to_csv

    report = _load("report")
    runs = {}
    for name, before, after, eval_rate in (("a", 0.0, 0.9, 0.95), ("b", 1.0, 0.3, 0.25)):
        run = tmp_path / name / "runs" / "grpo-s0"
        run.mkdir(parents=True)
        history = [{"step": s, report.FORMAT_KEY: before if s <= 90 else after} for s in range(1, 101)]
        (run / "log_history.json").write_text(json.dumps(history + [{"train_runtime": 1.0}]))
        evals = [{"learner": "grpo", "seed": 0, "step": step, "format_rate": rate}
                 for step, rate in ((0, 1.0), (50, 0.5), (100, eval_rate))]  # fmt: skip
        (run / "rows.csv").write_text(rows_to_csv(evals))
        runs[name] = run
    missing = tmp_path / "c" / "runs" / "grpo-s0"
    missing.mkdir(parents=True)
    runs["c"] = missing  # no history, no rows: nan, and not counted on either side
    result = report.format_secondary(runs, {"a": 0.10, "b": 0.02, "c": 0.5}, step=100)
    assert result["window"] == [91, 100]
    assert result["per_run"]["a"] == {"train": pytest.approx(0.9), "eval": 0.95}
    assert result["per_run"]["b"] == {"train": pytest.approx(0.3), "eval": 0.25}
    assert math.isnan(result["per_run"]["c"]["train"]) and math.isnan(result["per_run"]["c"]["eval"])
    assert (result["kept"], result["dropped"], result["dropped_share"]) == (1, 1, 0.5)
    assert result["mean_gain_kept"] == pytest.approx(0.10) and result["mean_gain_dropped"] == pytest.approx(0.02)
    only_kept = report.format_secondary({"a": runs["a"]}, {"a": 0.1}, step=100)
    assert only_kept["dropped_share"] == 0.0 and math.isnan(only_kept["mean_gain_dropped"])


def test_replay_finds_the_first_step_sampled_differently_and_the_float_gaps_before_it(tmp_path):
    report = _load("report")

    def entry(step, reward, grad_norm, step_time):
        return {
            "step": step,
            "reward": reward,
            "countdown/accuracy": 0.5,
            "completions/mean_length": 70.0,
            "num_tokens": 100.0 * step,
            "grad_norm": grad_norm,
            "step_time": step_time,
        }

    first = [
        entry(1, 0.25, 0.04, 50.0),
        entry(2, 0.5, 0.02, 60.0),
        entry(3, 0.75, 0.03, 50.0),
        entry(4, 0.5, 0.1, 40.0),
    ]
    again = [
        entry(1, 0.25, 0.04, 200.0),
        entry(2, 0.5, 0.02002, 240.0),
        entry(3, 0.5, 0.03, 250.0),
        entry(5, 1.0, 0.1, 1.0),
    ]
    folders = []
    for name, history in (("a", first), ("b", again)):
        run = tmp_path / name / "runs" / "grpo-s4"
        run.mkdir(parents=True)
        (run / "log_history.json").write_text(json.dumps(history))
        folders.append(tmp_path / name)
    result = report.replay(tmp_path / "a" / "runs" / "grpo-s4", tmp_path / "b" / "runs" / "grpo-s4")
    assert result["steps_compared"] == 3  # steps 1-3 are in both
    assert result["first_step_sampled_differently"] == 3  # the reward differs there
    assert result["steps_sampled_identically"] == 2
    assert result["largest_relative_gap_before"] == {"grad_norm": pytest.approx(0.00002 / 0.02)}
    assert result["median_step_time_ratio"] == pytest.approx(4.0)  # ratios 4, 4 and 5
    assert report.main(["replay", str(folders[0]), str(folders[1])]) == 0


@pytest.mark.parametrize("path", sorted((FOLDER / "amended").glob("*step*.md")), ids=lambda path: path.name)
def test_every_committed_verdict_comes_back_from_its_command(path, tmp_path):
    """Each committed verdict (registered or interim) is recomputed by the command printed in it, from the committed
    per-puzzle evals: the same text but for the command's ``--out``."""
    from tests.scripts import recomputed_page

    again, committed = recomputed_page(path, ("experiments/r2_smollm2/report.py", "verdict"), tmp_path / path.name)
    assert again == committed
