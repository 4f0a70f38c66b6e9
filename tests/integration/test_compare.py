"""``countdown compare``: a --quick comparison end to end (CSV, summary, PNG, a failing learner, --resume) and the
statistics of the summary on hand-made examples."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil

import numpy as np
import pytest

from countdown_env.cli import main
from countdown_env.helpers.atomic import write_text
from learners.pipeline import compare
from learners.pipeline.compare import (
    CSV_COLUMNS,
    CUMULATIVE_COLUMNS,
    CompareSettings,
    learner_table,
    mean_ci,
    paired_bootstrap_diff,
    parse_overrides,
    read_rows,
    runs,
)

HEADER = (
    "learner,seed,step,pass@1,pass@4,format_rate,mean_completion_tokens,train_reward,wall_seconds,"
    "generated_tokens,loss_tokens,forward_tokens"
)


def quick_args(model, out, *extra):
    return ["compare", "--quick", "--seeds", "0", "--model", str(model), "--out", str(out), *extra]


@pytest.fixture(scope="module")
def quick_dir(tiny_model_dir, tmp_path_factory):
    """grpo and ps_ppo (1 seed x 2 steps, tiny sizes) plus an s_grpo run whose config is invalid."""
    out = tmp_path_factory.mktemp("compare") / "out"
    argv = quick_args(tiny_model_dir, out, "--learners", "grpo", "ps_ppo", "s_grpo")
    rc = main([*argv, "--set", "s_grpo.max_loss_tokens=0", "--keep-checkpoints"])
    assert rc == 1  # one run failed; the command says so
    return out


def same_rows(a, b):
    """Equal row lists (NaN equal to NaN)."""
    return len(a) == len(b) and all(
        x[c] == y[c] or (isinstance(x[c], float) and math.isnan(x[c]) and math.isnan(y[c]))
        for x, y in zip(a, b, strict=True)
        for c in x
    )


def rows_by_run(rows):
    out = {}
    for row in rows:
        out.setdefault((row["learner"], row["seed"]), []).append(row)
    return out


@pytest.mark.slow
def test_results_csv(quick_dir):
    text = (quick_dir / "results.csv").read_text()
    assert text.splitlines()[0] == HEADER == ",".join(CSV_COLUMNS)
    runs = rows_by_run(read_rows(quick_dir / "results.csv"))
    assert set(runs) == {("grpo", 0), ("ps_ppo", 0)}  # the failed run wrote no rows
    for rows in runs.values():
        assert [r["step"] for r in rows] == [0, 1, 2]  # step 0, every step (--eval-every 1), the end
        assert all(r[c] == 0 for c in CUMULATIVE_COLUMNS for r in rows[:1])
        for column in CUMULATIVE_COLUMNS:
            values = [r[column] for r in rows]
            assert values == sorted(values), column
        assert rows[-1]["generated_tokens"] > 0 and rows[-1]["wall_seconds"] > 0
        assert all(r["loss_tokens"] <= r["forward_tokens"] for r in rows)
        assert math.isnan(rows[0]["train_reward"]) and not math.isnan(rows[-1]["train_reward"])
        assert all(0 <= r["pass@1"] <= r["pass@4"] <= 1 for r in rows)
    # same prompts and rollouts at step 1 (same model, seed, RNG): the same tokens were generated
    assert runs[("grpo", 0)][1]["generated_tokens"] == runs[("ps_ppo", 0)][1]["generated_tokens"]
    # plain GRPO trains on every generated token and forwards whole micro-batches
    grpo_final = runs[("grpo", 0)][-1]
    assert grpo_final["loss_tokens"] == grpo_final["generated_tokens"]
    assert grpo_final["forward_tokens"] == 2 * 8 * 16  # 2 steps x 8 rows x 16 columns


@pytest.mark.slow
def test_summary_plot_and_run_files(quick_dir):
    summary = (quick_dir / "summary.md").read_text()
    assert summary.startswith("# Learner comparison")
    assert "Command: `countdown compare --learners grpo ps_ppo s_grpo" in summary
    machine = next(line for line in summary.splitlines() if line.startswith("Machine: "))
    assert "torch " in machine and f"{os.cpu_count()} cores" in machine
    for name in ("| grpo |", "| ps_ppo |", "| s_grpo |"):
        assert name in summary
    assert "## Failed runs" in summary and "max_loss_tokens must be >= 1" in summary
    assert "yes (prompt digests agree)" in summary
    assert (quick_dir / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    error = (quick_dir / "runs" / "s_grpo-s0" / "ERROR").read_text()
    assert "ValueError" in error
    for learner in ("grpo", "ps_ppo"):
        run = quick_dir / "runs" / f"{learner}-s0"
        assert json.loads((run / "DONE").read_text())["steps"] == 2
        lines = (run / "final_eval.jsonl").read_text().splitlines()
        assert len(lines) == 4 and len(json.loads(lines[0])["correct"]) == 4
    assert not list(quick_dir.rglob(".*.tmp-*"))  # no temporary file of an atomic write left behind


@pytest.mark.slow
def test_resume_on_finished_dir_does_nothing(quick_dir, tiny_model_dir, capsys):
    before = (quick_dir / "results.csv").read_bytes()
    done = {p: p.stat().st_mtime_ns for p in quick_dir.glob("runs/*/DONE")}
    capsys.readouterr()
    rc = main(quick_args(tiny_model_dir, quick_dir, "--learners", "grpo", "ps_ppo", "--resume"))
    err = capsys.readouterr().err
    assert rc == 0
    assert err.count("done before, skipped") == 2
    assert "step " not in err  # nothing trained or evaluated
    assert (quick_dir / "results.csv").read_bytes() == before
    assert {p: p.stat().st_mtime_ns for p in quick_dir.glob("runs/*/DONE")} == done


@pytest.mark.slow
def test_resume_continues_from_checkpoint(quick_dir, tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(quick_dir, out)
    run = out / "runs" / "grpo-s0"
    (run / "DONE").unlink()
    (run / "final_eval.jsonl").unlink()
    shutil.rmtree(run / "checkpoint-2")  # interrupted after the step-1 checkpoint
    original = rows_by_run(read_rows(quick_dir / "results.csv"))[("grpo", 0)]
    capsys.readouterr()
    rc = main(quick_args(tiny_model_dir, out, "--learners", "grpo", "ps_ppo", "--resume"))
    err = capsys.readouterr().err
    assert rc == 0
    assert "grpo seed 0: resuming from checkpoint-1" in err and "ps_ppo seed 0: done before, skipped" in err
    resumed = rows_by_run(read_rows(out / "results.csv"))[("grpo", 0)]
    assert [r["step"] for r in resumed] == [0, 1, 2]
    assert same_rows(resumed[:2], original[:2])  # rows up to the checkpoint are restored, not recomputed
    # the same RNG state and prompts after the checkpoint: step 2 generated what the uninterrupted run did
    assert resumed[2]["generated_tokens"] == original[2]["generated_tokens"]
    assert resumed[2]["wall_seconds"] > resumed[1]["wall_seconds"]
    assert (run / "DONE").is_file() and (run / "final_eval.jsonl").is_file()
    assert not list(run.glob("checkpoint-*"))  # removed once done (no --keep-checkpoints this time)


@pytest.mark.slow
def test_a_later_process_takes_the_seeds_step0_eval_from_its_saved_file(quick_dir, tiny_model_dir, tmp_path, capsys):
    """A run first started by a later process (a ``--resume`` in another session) reads its seed's step-0 eval from
    the file the first process saved instead of evaluating again: a value planted in that file comes back."""
    out = tmp_path / "out"
    shutil.copytree(quick_dir, out)
    saved = out / "step0-evals" / "seed-0.json"
    report = json.loads(saved.read_text())
    grpo_step0 = (out / "runs" / "grpo-s0" / "evals" / "step-0.jsonl").read_text().splitlines()
    assert report["puzzles"] == [json.loads(line) for line in grpo_step0]  # what the first run evaluated
    report["overall"]["pass@1"] = 0.123457  # no eval of these puzzles gives it (its denominator is 4 x puzzles)
    report["puzzles"][0]["correct"] = [not c for c in report["puzzles"][0]["correct"]]
    write_text(saved, json.dumps(report))
    shutil.rmtree(out / "runs" / "ps_ppo-s0")  # as if this run had not started before the first process ended
    capsys.readouterr()
    assert main(quick_args(tiny_model_dir, out, "--learners", "grpo", "ps_ppo", "--resume")) == 0
    ps_ppo = rows_by_run(read_rows(out / "results.csv"))[("ps_ppo", 0)]
    assert [r["step"] for r in ps_ppo] == [0, 1, 2]
    assert ps_ppo[0]["pass@1"] == pytest.approx(0.123457)
    evals = (out / "runs" / "ps_ppo-s0" / "evals" / "step-0.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in evals] == report["puzzles"]


@pytest.mark.slow
def test_a_damaged_step0_file_is_evaluated_again_and_rewritten(quick_dir, tiny_model_dir, tmp_path):
    """A saved step-0 report that does not read (a truncated file) is not trusted: the seed's next run evaluates step
    0 itself, which gives what the first run's eval gave (same model, eval seed and puzzles), and the file is
    written anew."""
    out = tmp_path / "out"
    shutil.copytree(quick_dir, out)
    saved = out / "step0-evals" / "seed-0.json"
    saved.write_text(saved.read_text()[:100])
    shutil.rmtree(out / "runs" / "ps_ppo-s0")
    assert main(quick_args(tiny_model_dir, out, "--learners", "grpo", "ps_ppo", "--resume")) == 0
    first = (out / "runs" / "grpo-s0" / "evals" / "step-0.jsonl").read_text()
    assert (out / "runs" / "ps_ppo-s0" / "evals" / "step-0.jsonl").read_text() == first
    assert json.loads(saved.read_text())["puzzles"] == [json.loads(line) for line in first.splitlines()]


def test_refuses_non_empty_dir(tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(quick_args(tiny_model_dir, out, "--learners", "grpo")) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(quick_args(tiny_model_dir, out, "--learners", "grpo", "--overwrite")) == 2
    assert "refusing to delete" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine"


def test_parse_overrides():
    """train's grammar with a learner in front; the earlier LEARNER.key / all.key form (R1-R3's registered commands)
    reads the same and is recorded in the new one."""
    from learners.pipeline.compare.settings import canonical_override

    expected = {"grpo": {"learning_rate": 1e-5}, "all": {"beta": 0.01}}
    assert parse_overrides(["grpo.trainer.learning_rate=1e-5", "trainer.beta=0.01"], ["grpo"]) == expected
    assert parse_overrides(["grpo.learning_rate=1e-5", "all.beta=0.01"], ["grpo"]) == expected
    assert parse_overrides(["all.trainer.beta=0.01"], ["grpo"]) == {"all": {"beta": 0.01}}
    assert [canonical_override(item) for item in ("all.beta=0.01", "grpo.beta=[1, 2]", "grpo.trainer.beta=0")] == [
        "trainer.beta=0.01", "grpo.trainer.beta=[1, 2]", "grpo.trainer.beta=0"]  # fmt: skip
    for bad, why in (("learning_rate=1e-5", "form"), ("nobody.beta=0", "neither"), ("grpo.beta", "form"),
                     ("eval.limit=4", "trainer keys only"), ("grpo.lora.rank=4", "trainer keys only"),
                     ("trainer..beta=1", "form"), ("trainer.a.b=1", "one name")):  # fmt: skip
        with pytest.raises(ValueError, match=why):
            parse_overrides([bad], ["grpo"])


def test_mean_ci_uses_the_exact_t_quantile_beyond_ten_seeds():
    """12 seeds: t(0.975, 11) = 2.200985 (printed tables); a 1.96 fallback would give a 0.89x half-width."""
    import math

    values = [0.30, 0.31, 0.29, 0.33, 0.28, 0.32, 0.30, 0.35, 0.27, 0.31, 0.30, 0.34]
    mean, low, high = mean_ci(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 11)
    assert (high - low) / 2 == pytest.approx(2.200985 * sd / math.sqrt(12), rel=1e-5)


def test_mean_ci():
    mean, low, high = mean_ci([0.2, 0.3, 0.4])
    half = 4.302653 * 0.1 / math.sqrt(3)  # t(0.975, 2 df) x sd / sqrt(n)
    assert (
        mean == pytest.approx(0.3)
        and low == pytest.approx(0.3 - half, rel=1e-6)
        and high == pytest.approx(0.3 + half, rel=1e-6)
    )
    assert math.isnan(mean_ci([0.5])[1])


def _fake_run(out, learner, seed, counts, steps=2):
    """A finished run whose final eval has 4 samples per puzzle with ``counts`` correct."""
    run = out / "runs" / f"{learner}-s{seed}"
    run.mkdir(parents=True)
    lines = [
        json.dumps({"numbers": [i + 1, 2, 3], "target": 10 + i, "correct": [j < c for j in range(4)]})
        for i, c in enumerate(counts)
    ]
    (run / "final_eval.jsonl").write_text("\n".join(lines) + "\n")
    (run / "DONE").write_text(json.dumps({"prompt_digest": f"s{seed}"}))
    pass1 = float(np.mean(counts) / 4)
    return {
        "learner": learner,
        "seed": seed,
        "step": steps,
        "pass@1": pass1,
        "pass@4": 0.0,
        "format_rate": 1.0,
        "mean_completion_tokens": 10.0,
        "train_reward": 0.0,
        "wall_seconds": 2.0 if learner == "grpo" else 1.0,
        "generated_tokens": 100,
        "loss_tokens": 100 if learner == "grpo" else 50,
        "forward_tokens": 100 if learner == "grpo" else 25,
    }


def test_paired_bootstrap_hand_example(tmp_path):
    # seed 0: pass@1 per puzzle grpo [.5, 0, .5, 0], dr_grpo [1, 0, .5, .25] -> differences [.5, 0, 0, .25]
    # seed 1: both [0, 0, 0, 1] -> differences 0.  Paired difference = mean over seeds (.1875 + 0) / 2 = .09375.
    # pass@4 (any of 4 correct): seed 0 differences [0, 0, 0, 1] -> .25; seed 1 -> 0; overall .125.
    rows = [
        _fake_run(tmp_path, "grpo", 0, [2, 0, 2, 0]),
        _fake_run(tmp_path, "dr_grpo", 0, [4, 0, 2, 1]),
        _fake_run(tmp_path, "grpo", 1, [0, 0, 0, 4]),
        _fake_run(tmp_path, "dr_grpo", 1, [0, 0, 0, 4]),
    ]
    settings = CompareSettings(
        learners=["grpo", "dr_grpo"], seeds=[0, 1], max_steps=2, eval_every=1, train_size=4, eval_limit=4,
        max_new_tokens=16, prompts_per_step=2, num_generations=4,
    )  # fmt: skip
    table = {e["learner"]: e for e in learner_table(tmp_path, settings, rows)}
    diff, low, high = table["dr_grpo"]["diff@1"]
    assert diff == pytest.approx(0.09375)
    assert 0.0 <= low <= diff <= high <= 0.25  # no resample can leave [0, (.5 + 0) / 2]
    assert table["dr_grpo"]["diff@4"][0] == pytest.approx(0.125)
    assert table["dr_grpo"]["pass@1"][0] == pytest.approx((0.4375 + 0.25) / 2)
    assert table["grpo"]["pass@1"][0] == pytest.approx((0.25 + 0.25) / 2)
    assert math.isnan(table["grpo"]["diff@1"][0])
    assert [e["learner"] for e in learner_table(tmp_path, settings, rows)] == ["dr_grpo", "grpo"]  # ranked
    assert table["dr_grpo"]["speed"]["wall_seconds"] / table["dr_grpo"]["base_speed"]["wall_seconds"] == 0.5
    assert table["dr_grpo"]["speed"]["forward_tokens"] == 12.5

    # the bootstrap itself: a constant difference has a degenerate interval; pairing removes the shared part
    same = {0: np.array([0.0, 1.0, 0.5]), 1: np.array([1.0, 1.0, 0.0])}
    shifted = {s: v + 0.25 for s, v in same.items()}
    assert paired_bootstrap_diff(shifted, same)[:3] == pytest.approx((0.25, 0.25, 0.25))
    assert paired_bootstrap_diff(same, {2: np.zeros(3)})[3] == 0  # no shared seed


def test_default_warm_start_falls_back_loudly(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "SHIPPED_WARM_START", tmp_path / "not-shipped")
    with pytest.warns(UserWarning, match="RANDOMLY INITIALISED"):
        path = compare.default_warm_start(tmp_path)
    assert (path / "config.json").is_file() and path == tmp_path / "init-model"


def test_csv_round_trip(tmp_path):
    row = {c: 1 for c in CSV_COLUMNS} | {"learner": "grpo", "train_reward": math.nan, "wall_seconds": 0.5}
    path = write_text(tmp_path / "r.csv", compare.rows_to_csv([row]))
    with open(path) as handle:
        assert next(csv.reader(handle)) == list(CSV_COLUMNS)
    back = read_rows(path)[0]
    assert math.isnan(back["train_reward"]) and back["wall_seconds"] == 0.5 and back["step"] == 1


def test_a_negative_seed_is_refused_at_once(capsys):
    from countdown_env.cli import main

    assert main(["compare", "--quick", "--seeds", "-1", "--learners", "grpo", "--out", "unused"]) == 2
    assert "--seeds must be >= 0" in capsys.readouterr().err


def test_seed_t_difference_includes_training_variance():
    """The headline Δ: mean of per-seed paired differences, Student t over seeds (scipy's quantile, 2 df here)."""
    from scipy.stats import t

    from learners.pipeline.evaluation.statistics import paired_seed_diff

    learner = {0: np.array([1.0, 1.0, 0.0, 1.0]), 1: np.array([0.0, 0.0, 0.0, 1.0]), 2: np.array([1.0, 1.0, 1.0, 1.0])}
    base = {0: np.array([0.0, 1.0, 0.0, 1.0]), 1: np.array([0.0, 1.0, 0.0, 1.0]), 2: np.array([0.0, 1.0, 0.0, 1.0])}
    per_seed = [0.25, -0.25, 0.5]  # by hand: (3-2)/4, (1-2)/4, (4-2)/4
    mean = sum(per_seed) / 3
    sd = (sum((d - mean) ** 2 for d in per_seed) / 2) ** 0.5
    half = t.ppf(0.975, 2) * sd / 3**0.5
    diff, low, high, n = paired_seed_diff(learner, base)
    assert n == 3 and diff == pytest.approx(mean) and (low, high) == pytest.approx((mean - half, mean + half))
    # the puzzle bootstrap holds the seeds fixed: its interval is narrower than the t interval here
    _, b_low, b_high, _ = paired_bootstrap_diff(learner, base)
    assert b_high - b_low < high - low


def test_engagement_reads_the_mechanism_metrics_and_says_never_acted(tmp_path):
    from learners.pipeline.compare.engagement import engagement_markdown, engagement_rows

    def run(name, history):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "log_history.json").write_text(json.dumps(history))
        return folder

    history_ps = [{"step": 1, "ps_ppo/cutoff_kept_frac": 1.0, "ps_ppo/mean_cutoff_tokens": 40.0,
                   "ps_ppo/kept_token_frac": 0.5}, {"step": 1, "eval_pass@1": 0.2},
                  {"step": 2, "ps_ppo/cutoff_kept_frac": 1.0, "ps_ppo/mean_cutoff_tokens": 60.0,
                   "ps_ppo/kept_token_frac": 0.7}]  # fmt: skip
    history_prime = [{"step": 1, "prime_rl/is_masked": 0.1, "prime_rl/mismatch_kl": 0.01},
                     {"step": 2, "prime_rl/is_masked": 0.3, "prime_rl/mismatch_kl": 0.03}]  # fmt: skip
    rows = engagement_rows({("ps_ppo", 0): run("ps", history_ps), ("prime_rl", 0): run("pr", history_prime)})
    values = {(r["learner"], r["metric"]): r["value"] for r in rows}
    assert values[("ps_ppo", "ps_ppo/cutoff_kept_frac")] == 0.0  # kept 1.0 in every step: nothing truncated
    assert values[("ps_ppo", "ps_ppo/mean_cutoff_tokens")] == pytest.approx(50.0)
    assert values[("ps_ppo", "ps_ppo/kept_token_frac")] == pytest.approx(0.4)  # 1 - mean(0.5, 0.7)
    assert values[("prime_rl", "prime_rl/is_masked")] == pytest.approx(0.2)
    text = "\n".join(engagement_markdown(rows, ["prime_rl", "ps_ppo"]))
    truncation = next(line for line in text.splitlines() if "share of loss tokens truncated" in line)
    assert "never acted" in truncation
    masked = next(line for line in text.splitlines() if "DPPO mask" in line)
    assert "acted" in masked and "never" not in masked


@pytest.mark.slow
def test_run_records_name_the_shipped_warm_start_not_a_machine_path(tmp_path):
    out = tmp_path / "cmp"
    assert main(["compare", "--quick", "--seeds", "0", "--learners", "grpo", "--out", str(out)]) == 0
    text = (out / "runs" / "grpo-s0" / "resolved_config.json").read_text()
    assert json.loads(text)["model"] == "warm-start"
    record = json.loads(text)
    assert record["precision"] == "fp32" and record["precision_setting"] == "auto"  # the tiny model stays float32
    assert isinstance(record["cpu"]["model"], str) and isinstance(record["cpu"]["flags"], list)  # the machine named
    from importlib.metadata import version

    assert record["versions"]["torch"] == version("torch") and record["versions"]["trl"] == version("trl")
    assert (
        str(runs.SHIPPED_WARM_START) not in text
        and str(runs.SHIPPED_WARM_START) not in (out / "summary.md").read_text()
    )


def test_eval_samples_names_the_pass_at_k_column_and_is_recorded(tmp_path, tiny_model_dir):
    """--eval-samples 16: the run's eval section asks 16 completions per puzzle, results name pass@16, and the
    recorded command reproduces it (a comparison's sample count is not resumable: a change is refused)."""
    import argparse

    from learners.commands.compare import add_arguments, settings_from_args
    from learners.pipeline.compare.results import csv_columns
    from learners.pipeline.compare.settings import run_config

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    settings = settings_from_args(parser.parse_args(["--learners", "grpo", "--quick", "--eval-samples", "16"]))
    assert settings.eval_samples == 16 and "--eval-samples 16" in settings.command()
    assert "eval_samples" not in CompareSettings.RESUMABLE
    assert "--eval-samples" not in settings_from_args(parser.parse_args(["--learners", "grpo", "--quick"])).command()
    row = {c: 0.5 for c in CSV_COLUMNS} | {"learner": "grpo", "seed": 0, "step": 2, "pass@16": 0.75}
    path = write_text(tmp_path / "r.csv", compare.rows_to_csv([row], 16))
    assert csv_columns(16)[4] == "pass@16" and read_rows(path)[0]["pass@16"] == 0.75
    with pytest.raises(ValueError, match="--eval-samples must be >= 1"):
        CompareSettings(learners=["grpo"], seeds=[0], max_steps=1, eval_every=1, train_size=1, eval_limit=1,
                        max_new_tokens=1, prompts_per_step=1, num_generations=2, eval_samples=0)  # fmt: skip
    from countdown_env.helpers.jsonl import write_jsonl
    from countdown_env.task import CountdownTask

    write_jsonl([{"numbers": [3, 4, 5], "target": 12}], tmp_path / "train-s0.jsonl")
    config = run_config(settings, "grpo", 0, tmp_path / "run", model=tiny_model_dir, task=CountdownTask(),
                        train_file=tmp_path / "train-s0.jsonl")  # fmt: skip
    assert config.eval.samples == 16


def test_a_comparison_recorded_in_the_earlier_names_resumes(tmp_path):
    """compare.json of R1-R3 holds ``steps`` (now ``max_steps``) and ``--set`` in the LEARNER.key / all.key form:
    the same settings written today resume it, a changed one is still refused."""
    import json

    from learners.pipeline.compare import prepare_dir

    settings = CompareSettings(learners=["grpo"], seeds=[0], max_steps=3, eval_every=3, train_size=4, eval_limit=2,
                               max_new_tokens=8, prompts_per_step=2, num_generations=2,
                               overrides=["all.beta=0.01", "grpo.temperature=1.0"])  # fmt: skip
    assert settings.overrides == ["trainer.beta=0.01", "grpo.trainer.temperature=1.0"]
    recorded = settings.to_dict()
    recorded["steps"] = recorded.pop("max_steps")
    recorded["overrides"] = ["all.beta=0.01", "grpo.temperature=1.0"]
    (tmp_path / "compare.json").write_text(json.dumps(recorded))
    prepare_dir(tmp_path, settings, resume=True, overwrite=False)
    longer = CompareSettings(**{**settings.to_dict(), "max_steps": 4})
    with pytest.raises(ValueError, match="max_steps"):
        prepare_dir(tmp_path, longer, resume=True, overwrite=False)
    assert "--max-steps 3" in settings.command() and "--set grpo.trainer.temperature=1.0" in settings.command()
