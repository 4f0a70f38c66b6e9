"""The ``countdown`` command used as a careless user would (issue 15): outputs that are inputs, reruns into full
folders, kills mid-build, damaged splits, settings that cannot be met, typos in configs, missing models, odd
bytes in external data. Each case runs the real command in a subprocess (``python -m countdown_env.cli``) unless
it needs the slow training imports, and checks the exit status, the one-line error and that no data was lost."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COUNTDOWN_DEBUG": "", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
SMALL = ["--n-numbers", "3", "--train", "12", "--eval", "4", "--value-range", "1", "20", "--target-range", "10", "200"]


def countdown(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "countdown_env.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env or ENV,
        cwd=ROOT,
        timeout=timeout,
    )


def assert_user_error(result: subprocess.CompletedProcess, command: str, *needles: str) -> str:
    """Exit status 2, one ``countdown COMMAND: error: ...`` line on stderr, no traceback; returns the line."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith(f"countdown {command}: error: "), result.stderr
    for needle in needles:
        assert needle in lines[-1], (needle, lines[-1])
    return lines[-1]


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------------------------- 1. no data loss
def test_clean_sft_never_eats_its_input(tmp_path):
    data = tmp_path / "data.jsonl"
    row = {"numbers": [3, 4], "target": 7, "response": "<think>add</think><answer>3 + 4</answer>"}
    data.write_text(json.dumps(row) + "\n")
    before = data.read_bytes()
    assert_user_error(countdown("clean-sft", data, data), "clean-sft", "is (or contains) the input")
    assert data.read_bytes() == before
    # a folder output holding the input
    folder = tmp_path / "dir"
    folder.mkdir()
    inside = folder / "sft.jsonl"
    inside.write_bytes(before)
    assert_user_error(countdown("clean-sft", inside, folder), "clean-sft", "input")
    assert inside.read_bytes() == before
    # a binary input: the existing output is left as it was
    out = tmp_path / "out.jsonl"
    assert countdown("clean-sft", data, out).returncode == 0
    kept = out.read_bytes()
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    assert_user_error(countdown("clean-sft", binary, out, "--overwrite"), "clean-sft", "not UTF-8")
    assert out.read_bytes() == kept
    assert_user_error(countdown("clean-sft", data, out), "clean-sft", "--overwrite")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary leftovers


def test_rebuild_needs_overwrite_and_replaces_the_folder_whole(tmp_path):
    out = tmp_path / "splits"
    assert countdown("build-splits", *SMALL, "--jsonl-only", "--no-progress", "--out", out).returncode == 0
    first = tree_digest(out)
    again = countdown("build-splits", *SMALL, "--seed", "1", "--jsonl-only", "--no-progress", "--out", out)
    assert_user_error(again, "build-splits", "not empty", "--overwrite")
    assert tree_digest(out) == first
    rebuilt = ["--n-numbers", "3", "--train", "0", "--eval", "4", "--seed", "1", "--value-range", "1", "20"]
    result = countdown("build-splits", *rebuilt, "--target-range", "10", "200", "--jsonl-only", "--no-progress",
                       "--out", out, "--overwrite")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not (out / "train.jsonl").exists()  # the old seed-0 train split went with the old folder
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spec"]["seed"] == 1 and "train.jsonl" not in manifest["files"]


def test_split_outputs_refuse_their_inputs(tmp_path):
    out = tmp_path / "splits"
    assert countdown("build-splits", *SMALL, "--jsonl-only", "--no-progress", "--out", out).returncode == 0
    result = countdown("build-splits", *SMALL, "--exclude", out / "test.jsonl", "--out", out, "--overwrite")
    assert_user_error(result, "build-splits", "input")
    assert_user_error(countdown("merge-splits", out, "--out", out, "--overwrite"), "merge-splits", "input")


def test_damaged_split_fails_with_one_line_on_load(tmp_path):
    from countdown_env.splits.folders import read_split_rows
    from countdown_env.splits.manifest import SplitIntegrityError

    out = tmp_path / "splits"
    assert countdown("build-splits", *SMALL, "--no-progress", "--out", out).returncode == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert {"train.jsonl", "test.jsonl", "dataset_dict.json"} <= set(manifest["files"])
    assert any(name.endswith(".arrow") for name in manifest["files"])
    assert len(read_split_rows(out)) == 4
    eval_file = out / "test.jsonl"
    eval_file.write_bytes(eval_file.read_bytes().replace(b'"target":', b'"target": ', 1))
    with pytest.raises(SplitIntegrityError, match="test.jsonl does not match"):
        read_split_rows(out)
    with pytest.raises(SplitIntegrityError, match="test.jsonl does not match"):
        read_split_rows(eval_file)
    # countdown eval checks the split before loading any model weights: a stub folder is enough here
    model = tmp_path / "model"
    model.mkdir()
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (model / name).write_text("{}")
    assert_user_error(countdown("eval", "--model", model, "--split", out), "eval", "manifest.json")


@pytest.mark.slow
def test_kill_9_leaves_the_old_or_the_complete_new_split(tmp_path):
    """SIGKILL a rebuild (--overwrite) at 24 random moments: the folder is then the old build or the new one,
    whole (its manifest verifies and names the seed), never a mix."""
    from countdown_env.splits.manifest import verify_split

    out = tmp_path / "splits"
    args = ["build-splits", "--n-numbers", "3", "4", "--train", "40", "--eval", "8", "--no-progress", "--out", out]
    assert countdown(*args, "--seed", "0").returncode == 0
    old = tree_digest(out)
    start = time.perf_counter()
    assert countdown(*args, "--seed", "1", "--overwrite").returncode == 0
    new = tree_digest(out)
    span = time.perf_counter() - start
    assert countdown(*args, "--seed", "0", "--overwrite").returncode == 0 and tree_digest(out) == old
    rng = random.Random(15)
    outcomes = {"old": 0, "new": 0, "absent": 0}
    for trial in range(24):
        seed = "1" if tree_digest(out) == old else "0"
        before = tree_digest(out)
        proc = subprocess.Popen(
            [sys.executable, "-m", "countdown_env.cli", *map(str, args), "--seed", seed, "--overwrite"],
            env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(rng.uniform(0.05, span * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not out.exists():  # killed between the two renames: the next writer renames the old copy back
            outcomes["absent"] += 1
            assert_user_error(countdown(*args, "--seed", "0"), "build-splits", "recovered")
            assert tree_digest(out) == before
            continue
        after = tree_digest(out)
        assert after in (old, new), f"trial {trial}: a mixed folder"
        assert verify_split(out) is not None
        outcomes["old" if after == before else "new"] += 1
    assert sum(outcomes.values()) == 24


# --------------------------------------------------------------------------------- 2. parallel and sharded builds
def test_num_proc_and_shards_give_the_one_process_bytes(tmp_path):
    args = ["--n-numbers", "3", "4", "--train", "30", "--eval", "6", "--seed", "3", "--no-progress"]
    one, two, merged = tmp_path / "one", tmp_path / "two", tmp_path / "merged"
    assert countdown("build-splits", *args, "--out", one).returncode == 0
    assert countdown("build-splits", *args, "--num-proc", "2", "--out", two).returncode == 0
    shards = [tmp_path / f"shard{k}" for k in range(3)]
    for k, shard in enumerate(shards):
        assert countdown("build-splits", *args, "--shard", f"{k}/3", "--out", shard).returncode == 0
    assert_user_error(countdown("merge-splits", *shards[:2], "--out", merged), "merge-splits", "missing shards 2/3")
    assert countdown("merge-splits", *reversed(shards), "--out", merged).returncode == 0
    assert tree_digest(one) == tree_digest(two) == tree_digest(merged)
    assert_user_error(countdown("build-splits", *args, "--shard", "3/3", "--out", tmp_path / "x"), "build-splits",
                      "K/N")  # fmt: skip


def test_no_counts_skips_the_difficulty_and_allows_eight_numbers(tmp_path):
    out = tmp_path / "eight"
    result = countdown("build-splits", "--n-numbers", "8", "--train", "2", "--eval", "2", "--no-counts",
                       "--jsonl-only", "--no-progress", "--out", out)  # fmt: skip
    assert result.returncode == 0, result.stderr
    row = json.loads((out / "test.jsonl").read_text().splitlines()[0])
    assert row["n_numbers"] == 8 and "difficulty" not in row and "num_solutions" not in row
    assert_user_error(countdown("build-splits", "--n-numbers", "7", "--out", tmp_path / "x"), "build-splits",
                      "--no-counts")  # fmt: skip


# --------------------------------------------------------------------------------------------- 4. fail fast
# Fail fast is checked as bounded work (a fixed number of probe draws), never as seconds: the seconds it takes are
# printed by benchmarks/bench_refusals.py (a timed test failed CI under load, issue 35 item 13).
def _counting(monkeypatch, cls, name: str) -> list:
    calls: list = []
    original = getattr(cls, name)

    def counted(self, *args, **kwargs):
        calls.append(args)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, counted)
    return calls


@pytest.mark.parametrize("n", [3, 6])
def test_impossible_uniform_targets_fail_after_a_bounded_probe(n, monkeypatch):
    from countdown_env.solving.generator import _SOLVE_MS, UnsatisfiableSettings, _probe_attempts
    from countdown_env.task import PuzzleGenerator

    # 2 * 2 * 2 = 8 is the most three numbers in 1..2 make; six make 64, never a prime above it
    target = (9, 9) if n == 3 else (67, 67)
    gen = PuzzleGenerator(n_numbers=n, value_range=(1, 2), target_range=target, target_mode="uniform", seed=0)
    solves = _counting(monkeypatch, type(gen), "_solve")
    with pytest.raises(UnsatisfiableSettings, match="target_range"):
        gen[0]
    assert len(solves) <= _probe_attempts(_SOLVE_MS, n, 4)  # the probe's budget of solves (about a second), no more


def test_unreachable_min_solutions_fails_after_a_bounded_probe(monkeypatch):
    from countdown_env.solving.generator import _COUNT_MS, UnsatisfiableSettings, _probe_attempts
    from countdown_env.task import PuzzleGenerator

    gen = PuzzleGenerator(n_numbers=6, min_solutions=1_000_000, seed=0)
    counts = _counting(monkeypatch, type(gen), "_count")
    with pytest.raises(UnsatisfiableSettings, match="min_solutions=1000000"):
        gen[0]
    assert 0 < len(counts) <= _probe_attempts(_COUNT_MS, 6, 4)


def test_build_splits_with_unreachable_settings_fails_before_writing(tmp_path):
    result = countdown("build-splits", "--n-numbers", "4", "--min-solutions", "1000000", "--out", tmp_path / "x")
    assert_user_error(result, "build-splits", "min_solutions=1000000")
    assert not (tmp_path / "x").exists()


def test_bad_numbers_are_refused_everywhere_with_one_message():
    from countdown_env.splits import SplitSpec
    from countdown_env.task import CountdownTask, PuzzleGenerator

    for build in (CountdownTask, PuzzleGenerator, SplitSpec):
        with pytest.raises(ValueError, match=r"value_range must be a pair \(low, high\) of integers, got \(1.5, 10\)"):
            build(value_range=(1.5, 10))
        with pytest.raises(ValueError, match="seed must be a non-negative integer, got -1"):
            build(seed=-1)


@pytest.mark.parametrize("command", [["build-splits", *SMALL, "--out", "{tmp}/x"], ["build-sft", "--size", "2",
                                     "--out", "{tmp}/x.jsonl"], ["demo", "--count", "2"]])  # fmt: skip
def test_negative_seed_is_refused_by_every_command(command, tmp_path):
    result = countdown(*[c.format(tmp=tmp_path) for c in command], "--seed", "-1")
    assert_user_error(result, command[0], "seed must be a non-negative integer, got -1")


# ------------------------------------------------------------------------------------------- 6. one error style
@pytest.mark.parametrize(
    "args, needle",
    [
        (["build-splits", "--train", "-1", "--out", "{tmp}/x"], "train_size must be a non-negative integer"),
        (["build-splits", "--n-numbers", "7", "--out", "{tmp}/x"], "n_numbers"),
        (["build-sft", "--style", "wrong", "--out", "{tmp}/x.jsonl"], "wrong"),
        (["clean-sft", "{tmp}/missing.jsonl", "{tmp}/x.jsonl"], "missing.jsonl"),
        (["merge-splits", "{tmp}/nothing", "--out", "{tmp}/y"], "not a shard folder"),
    ],
)
def test_user_errors_are_one_line(args, needle, tmp_path):
    assert_user_error(countdown(*[a.format(tmp=tmp_path) for a in args]), args[0], needle)


def test_countdown_debug_shows_the_traceback(tmp_path):
    result = countdown("build-splits", "--train", "-1", "--out", tmp_path / "x", env={**ENV, "COUNTDOWN_DEBUG": "1"})
    assert result.returncode != 0 and "Traceback" in result.stderr and "SplitError" in result.stderr


# ---------------------------------------------------------------------------------- 5. config validation (train)
def write_config(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, needle",
    [
        ("modle: tiny\n", "did you mean 'model'"),
        ("trainr: {max_steps: 1}\n", "did you mean 'trainer'"),
        ("model: tiny\ntrainer: {max_steps: 1\n", "c.yaml:3:1: YAML syntax error"),  # file and line
    ],
)
def test_train_config_typos_fail_before_any_work(tmp_path, text, needle):
    config = write_config(tmp_path / "c.yaml", text)
    result = countdown("train", "--config", config, "--output-dir", tmp_path / "run")
    line = assert_user_error(result, "train", needle)
    assert str(config) in line or "did you mean" in line
    assert not (tmp_path / "run").exists()


def test_train_key_typos_and_models_fail_before_data(tmp_path, capsys):
    from countdown_env.cli import main

    base = ["train", "--config", "cpu-tiny", "--output-dir", str(tmp_path / "run")]
    cases = [
        (["--set", "trainer.learnig_rate=1e-5"], "did you mean 'learning_rate'"),
        (["--set", "task.n_number=3"], "did you mean 'n_numbers'"),
        (["--set", "data.train_sise=10"], "did you mean 'train_size'"),
        (["--set", "eval.evry=5"], "did you mean 'every'"),
        (["--model", "does/not/exist"], "does not exist"),
        (["--model", str(tmp_path / "empty")], "missing config.json"),
    ]
    (tmp_path / "empty").mkdir()
    for extra, needle in cases:
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith("countdown train: error: ") and needle in err, (extra, err)
        assert not (tmp_path / "run").exists()  # refused before the run folder, its data or its model


BAD_ROWS = [
    ('{"numbers": [3, 5, 7], "target": "six"}', "target must be a positive integer, got 'six'"),
    ('{"numbers": [3, 5, 7], "target": 1e999}', "target must be a positive integer, got inf"),
    ('{"numbers": [3, 5, 7], "target": 1' + "0" * 100 + "}", "target must be at most 1000000000000"),
    ('{"numbers": [' + ", ".join(["3"] * 500_000) + '], "target": 10}', "at most 32 numbers, got 500000"),
]


def _split_with_bad_row(path: Path, bad: str, before: int = 5) -> Path:
    """A jsonl split whose row ``before + 1`` is ``bad`` among good rows."""
    good = [json.dumps({"numbers": [3, 5, 7], "target": t}) for t in range(20, 30)]
    path.write_text("\n".join(good[:before] + [bad] + good[before:]) + "\n")
    return path


@pytest.mark.parametrize("bad, needle", BAD_ROWS, ids=["word", "1e999", "10^100", "500k-numbers"])
def test_bad_split_rows_are_named_before_any_model_loads(bad, needle, tmp_path):
    """Issue 44 item 4: a bad row was refused only after the weights loaded (7-22 s, after a "Loading weights" bar).
    ``eval`` and ``train`` name the row in one line, before a weight is read or the run folder is made."""
    split = _split_with_bad_row(tmp_path / "s.jsonl", bad)
    bars = {**ENV, "HF_HUB_DISABLE_PROGRESS_BARS": "0"}  # a log has no bars by default: keep the one that would tell
    result = countdown("eval", "--model", "warm-start", "--split", split, "--out", tmp_path / "r.json", env=bars)
    assert_user_error(result, "eval", f"{split}: row 6: ", needle)
    assert "Loading weights" not in result.stderr
    assert not (tmp_path / "r.json").exists()
    config = write_config(tmp_path / "c.yaml", f"model: tiny\ndata: {{train: {split}}}\ntrainer: {{max_steps: 1}}\n")
    result = countdown("train", "--config", config, "--output-dir", tmp_path / "run")
    assert_user_error(result, "train", f"data.train {split}: row 6: ", needle)
    assert not (tmp_path / "run").exists()  # no init model written, no folder claimed


def test_eval_model_that_does_not_exist_fails_at_once(tmp_path):
    split = tmp_path / "s.jsonl"
    split.write_text('{"numbers": [3, 4], "target": 7}\n')
    assert_user_error(countdown("eval", "--model", "does/not/exist", "--split", split), "eval", "does not exist")
    assert not (ROOT / "does").exists()  # nothing created where the missing model's default report would go
    (tmp_path / "empty").mkdir()
    assert_user_error(countdown("eval", "--model", tmp_path / "empty", "--split", split), "eval", "missing config.json")
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == []


@pytest.mark.parametrize("network", ["HF_HUB_OFFLINE=1", "HF_ENDPOINT=http://127.0.0.1:9"])
def test_a_hub_model_without_a_network_fails_before_loading_anything(network, tmp_path):
    """Issue 36 item 3: ``--model Qwen/Qwen3-0.6B`` with the Hub switched off (HF_HUB_OFFLINE) or unreachable (an
    endpoint that refuses connections) and an empty cache is one line naming the cause, for train, eval and serve,
    before torch or transformers is imported (transformers' own look-ups retried for ~70 s before saying so)."""
    key, value = network.split("=")
    env = {k: v for k, v in ENV.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT")}
    env.update({key: value, "HF_HUB_CACHE": str(tmp_path / "empty-cache"), "HF_HOME": str(tmp_path / "hf")})
    split = tmp_path / "s.jsonl"
    split.write_text('{"numbers": [3, 4], "target": 7}\n')
    code = (
        "import sys\nfrom countdown_env.cli import main\nrc = main(sys.argv[1:])\n"
        "print(rc, sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))\n"
    )
    why = "HF_HUB_OFFLINE is set" if key == "HF_HUB_OFFLINE" else "http://127.0.0.1:9 cannot be reached"
    for args in (["train", "--output-dir", str(tmp_path / "run")], ["eval", "--split", str(split)], ["serve"]):
        result = subprocess.run([sys.executable, "-c", code, *args, "--model", "Qwen/Qwen3-0.6B"], capture_output=True,
                                text=True, env=env, cwd=ROOT, timeout=120)  # fmt: skip
        assert result.stdout.strip() == "2 []", (args, result.stdout, result.stderr)
        (line,) = [x for x in result.stderr.splitlines() if x.strip()]
        assert line.startswith(f"countdown {args[0]}: error: model 'Qwen/Qwen3-0.6B' is not a local folder"), line
        assert why in line, line


# --------------------------------------------------------------------------------------------- 7. cleaning
def test_cleaning_handles_megabyte_rows_and_drops_rows_whose_digits_would_change():
    """The megabyte rows are cleaned correctly; their time (milliseconds: linear scans) is printed by
    benchmarks/bench_refusals.py."""
    from countdown_env.sft.cleaning import CHANGED_DIGITS, clean_row

    megabyte = "<think>" + "why " * 215_000 + "<answer>" * 20_000 + "</think>\n<answer>3 + 4</answer>"
    assert len(megabyte) > 1_000_000
    row = {"numbers": [3, 4], "target": 7, "response": megabyte}
    assert clean_row(row)[1] == "ok"
    opens = {"numbers": [3, 4], "target": 7, "response": "<answer>" * 130_000}  # 1 MB of unclosed tags
    assert clean_row(opens)[1] == "no_answer"
    for answer in ("5² + 3", "1$2 + 3", "①② * 3", "`5`2 + 3"):
        fused = {"numbers": [52, 3], "target": 55, "response": f"<think>t</think><answer>{answer}</answer>"}
        assert clean_row(fused) == (None, CHANGED_DIGITS), answer
    fine = {"numbers": [52, 3], "target": 55, "response": "<think>t</think><answer>$52 + 3$</answer>"}
    assert clean_row(fine)[1] == "ok"


def test_out_dot_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """``--out .`` gets one clear line (it failed with "PosixPath('.') has an empty name"); replacing the current
    folder would leave the shell in a deleted directory, so it is refused and nothing is written."""
    from countdown_env.cli import main

    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    args = ["build-splits", "--n-numbers", "3", "--train", "4", "--eval", "2", "--value-range", "1", "20",
            "--target-range", "10", "100", "--out", ".", "--no-progress", "--jsonl-only"]  # fmt: skip
    assert main(args) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "current folder" in line and "empty name" not in line
    assert list(here.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["here"]
