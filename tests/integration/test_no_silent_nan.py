"""Nothing NaN (issue 35 item 4, and the one-line refusals of items 9-10): non-finite or absurd settings are refused
before any work, and a run whose loss or weights stop being finite stops at that step, saving nothing of it."""

from __future__ import annotations

import math

import pytest
import torch

from learners.pipeline.runs.checks import validate_config
from learners.pipeline.runs.config import load_config


@pytest.mark.parametrize(
    "override, needle",
    [
        ("trainer.learning_rate=.inf", "trainer.learning_rate must be a finite number, got inf"),
        ("trainer.learning_rate=1e300", "trainer.learning_rate must be in (0, 1]"),
        ("trainer.beta=.nan", "trainer.beta must be a finite number, got nan"),
        ("trainer.weight_decay=.inf", "trainer.weight_decay must be a finite number"),
        ("trainer.weight_decay=-0.1", "trainer.weight_decay must be in [0, 1]"),
        ("trainer.temperature=0", "trainer.temperature must be > 0"),
        ("trainer.report_to=[[1]]", "trainer.report_to must be a tracker name"),
        ("trainer.per_device_train_batch_size=8.0", "must be int, got 8.0"),
        ("trainer.max_steps=1e100", "trainer.max_steps must be int"),
        ("trainer.max_steps=100000000000", "trainer.max_steps must be >= 1 (or -1: epochs) and at most 10000000"),
        ("trainer.seed=-1", "trainer.seed must be >= 0"),
        ("eval.every=[1]", "eval.every must be int, got [1]"),
        ("eval.limit=x", "eval.limit must be int, got 'x'"),
        ("eval.batch_size=0", "eval.batch_size must be >= 1"),
        ("eval.temperature=.inf", "eval.temperature must be a finite number"),
        ("tiny.hidden_size=abc", "tiny.hidden_size must be int, got 'abc'"),
        ("tiny.num_heads=3", "must be a multiple of tiny.num_heads"),
        ("data.train_size=-1", "data.train_size must be >= 0"),
    ],
)
def test_bad_values_in_every_section_are_one_line_before_any_work(override, needle):
    with pytest.raises(ValueError) as info:
        validate_config("grpo", load_config("cpu-tiny", [override]))
    message = str(info.value)
    assert needle in message and "\n" not in message


def test_absurd_epochs_are_refused_as_a_step_count():
    config = load_config("cpu-tiny", ["trainer.max_steps=-1", "trainer.num_train_epochs=1e9"])
    with pytest.raises(ValueError, match=r"num_train_epochs=1000000000.0 is 1e\+12 steps .* set trainer.max_steps"):
        validate_config("grpo", config)
    validate_config("grpo", load_config("cpu-tiny", ["trainer.max_steps=-1", "trainer.num_train_epochs=2"]))


def test_a_refused_value_leaves_nothing_behind(tmp_path, capsys):
    from countdown_env.cli import main

    out = tmp_path / "run"
    cases = [
        ["eval.limit=x"],
        ["tiny.hidden_size=abc"],
        ["trainer.per_device_train_batch_size=8.0"],
        ["trainer.per_device_train_batch_size=6", "trainer.num_generations=4"],
    ]  # the last: TRL's own check
    for overrides in cases:
        assert main(["train", "--output-dir", str(out), *[x for o in overrides for x in ("--set", o)]]) == 2
        assert capsys.readouterr().err.count("\n") == 1, overrides
        assert not out.exists(), overrides  # no init-model/, data/ or resolved_config.json left behind


def test_the_guard_names_the_loss_or_the_weight():
    from learners.core.finite_guard import FiniteGuard

    model = torch.nn.Linear(2, 2)
    guard = FiniteGuard()
    guard.note_loss(torch.tensor(0.5))
    assert guard.problem(model) is None
    guard.note_loss(torch.tensor(math.nan))
    guard.note_loss(torch.tensor(0.5))  # a later finite micro-batch does not hide it
    assert guard.problem(model) == "the loss"
    assert guard.problem(model) is None  # reset for the next step
    with torch.no_grad():
        model.bias[1] = math.inf
    assert guard.problem(model) == "the weights (bias)"


def test_a_run_whose_weights_turn_nan_stops_at_that_step_and_saves_nothing_of_it(make_trainer, cpu_grpo_kwargs):
    """``learning_rate=inf`` passed to the trainer directly (the CLI refuses it): the first update makes every weight
    NaN; the run stops at step 1 in one line and writes no checkpoint-1 (the newest checkpoint stays a good one)."""
    from pathlib import Path

    from learners.core.config import CountdownConfig
    from learners.core.finite_guard import NonFiniteTraining
    from learners.core.trainer import CountdownGRPOTrainer

    kwargs = dict(cpu_grpo_kwargs, learning_rate=math.inf, save_strategy="steps", save_steps=1, max_steps=2)
    trainer = make_trainer(CountdownGRPOTrainer, CountdownConfig(**kwargs))
    with pytest.raises(NonFiniteTraining, match=r"^training stopped at step 1: the weights \(.*\) became NaN"):
        trainer.train()
    assert not list(Path(kwargs["output_dir"]).glob("checkpoint-*"))


# --------------------------------------------------------------------------------- item 9: bounded work and input
def _alias_bomb(levels: int = 9) -> str:
    """A "billion laughs" YAML list: each level nine aliases of the one below (9**9 strings once expanded)."""
    parts = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        parts.append(f"&a{level} [{', '.join([f'*a{level - 1}'] * 9)}]")
    return "[" + ", ".join(parts) + "]"


@pytest.mark.parametrize(
    "text, needle",
    [
        (f"model: tiny\nrollouts: {_alias_bomb()}\n", "aliases (*name) are expanded"),
        ("model: tiny\ntrainer: {report_to: &a [*a]}\n", "nests more than 32 levels"),  # an alias of itself
        ("model: tiny\ntrainer: {report_to: " + "[" * 5000 + "]" * 5000 + "}\n", "nests more than 32 levels"),
    ],
)
def test_yaml_that_expands_or_nests_without_bound_is_refused(tmp_path, text, needle):
    config = tmp_path / "c.yaml"
    config.write_text(text)
    with pytest.raises(ValueError, match=r"c\.yaml: the YAML") as info:
        load_config(config)
    assert needle in str(info.value)


def _no_parsing(monkeypatch):
    """Make any YAML parse fail the test: a refusal must come before the parser runs."""
    import yaml

    def parse(*args, **kwargs):
        raise AssertionError("the YAML was parsed")

    monkeypatch.setattr(yaml, "load", parse)


def test_config_file_over_the_size_cap_is_refused_unread(tmp_path, monkeypatch):
    """A 200 MB YAML took 337 s to refuse after parsing (issue 44 item 3): a file beyond the cap is refused by its
    size, naming the cap, before any parsing."""
    from learners.pipeline.runs.config import MAX_CONFIG_BYTES

    config = tmp_path / "big.yaml"
    line = b"  key: value\n"
    config.write_bytes(b"trainer:\n" + line * (MAX_CONFIG_BYTES // len(line) + 1))
    size = config.stat().st_size
    assert size > MAX_CONFIG_BYTES
    _no_parsing(monkeypatch)
    refusal = rf"big\.yaml: the file has {size} bytes, more than MAX_CONFIG_BYTES"
    with pytest.raises(ValueError, match=refusal) as info:
        load_config(config)
    assert "\n" not in str(info.value)


def test_config_over_the_key_cap_is_refused_before_parsing(tmp_path, monkeypatch):
    """Under the size cap, a flood of keys (a 38 MB file of 2 M keys took 278 s) is refused by counting their
    indicators before parsing; a block mapping of exactly the cap's keys (one ':' each) still parses."""
    from learners.pipeline.runs.config import MAX_CONFIG_BYTES, MAX_CONFIG_KEYS

    at_cap = tmp_path / "at_cap.yaml"
    at_cap.write_text("tiny:\n" + "".join(f"  k{i}: 1\n" for i in range(MAX_CONFIG_KEYS - 1)))
    over = tmp_path / "over.yaml"
    over.write_text("tiny:\n" + "".join(f"  k{i}: 1\n" for i in range(MAX_CONFIG_KEYS)))
    assert over.stat().st_size <= MAX_CONFIG_BYTES
    from learners.pipeline.runs.config import _parse_yaml_file

    assert len(_parse_yaml_file(at_cap)["tiny"]) == MAX_CONFIG_KEYS - 1
    _no_parsing(monkeypatch)
    refusal = rf"over\.yaml: the YAML writes more than MAX_CONFIG_KEYS \({MAX_CONFIG_KEYS}\)"
    with pytest.raises(ValueError, match=refusal):
        load_config(over)
    from learners.pipeline.runs.config import parse_override_value

    with pytest.raises(ValueError, match="--set trainer.report_to: the YAML writes more than MAX_CONFIG_KEYS"):
        parse_override_value("trainer.report_to", "[" + ",".join(["a"] * (MAX_CONFIG_KEYS + 2)) + "]")


def test_set_values_are_bounded_and_one_line():
    with pytest.raises(ValueError, match=r"--set trainer.report_to=\[: not a YAML value"):
        load_config("cpu-tiny", ["trainer.report_to=["])
    with pytest.raises(ValueError, match="--set trainer.report_to: the YAML nests more than 32 levels"):
        load_config("cpu-tiny", ["trainer.report_to=" + "[" * 40 + "]" * 40])
    from learners.pipeline.compare.settings import parse_overrides

    with pytest.raises(ValueError, match=r"--set all.beta=\[: not a YAML value"):
        parse_overrides(["all.beta=["], ["grpo"])


def test_solve_gives_up_at_its_limit_in_one_line(capsys):
    """Eight twelve-digit numbers ran 260 s (495 MB) without a bound; ``--max-seconds`` stops the search with a line
    that says it proves nothing."""
    from countdown_env.cli import main

    numbers = ["123456789012", "234567890123", "345678901234", "456789012345", "567890123456", "678901234567",
               "789012345678", "890123456789"]  # fmt: skip
    assert main(["solve", *numbers, "--target", "999999999999", "--max-seconds", "0.2"]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "no answer within --max-seconds 0.2" in line and "no proof" in line
    assert main(["solve", "25", "3", "7", "--target", "82"]) == 0  # a small puzzle is unaffected
    assert capsys.readouterr().out.strip() == "25 * 3 + 7"


@pytest.mark.parametrize(
    "space, needle", [("1000", "does not fit this machine's"), ("lots", "must be a whole number of GiB")]
)
def test_a_kv_cache_the_machine_cannot_hold_is_refused_before_the_engine_starts(space, needle, tmp_path, capsys,
                                                                                 monkeypatch):  # fmt: skip
    """``VLLM_CPU_KVCACHE_SPACE=1000`` failed as "Engine core initialization failed. See root cause above" after the
    engine start; it is one line before any model is loaded."""
    from countdown_env.cli import main

    split = tmp_path / "s.jsonl"
    split.write_text('{"numbers": [3, 4, 9], "target": 21}\n')
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", space)
    argv = ["eval", "--model", "warm-start", "--split", str(split), "--backend", "vllm", "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and f"VLLM_CPU_KVCACHE_SPACE={space if space.isdigit() else repr(space)}" in line
    assert needle in line and not (tmp_path / "r").exists()
