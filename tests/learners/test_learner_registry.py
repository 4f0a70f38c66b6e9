"""The learner registry collects each algorithm package's ``spec.py``: the project's own by listing ``learners``'
sub-folders (a folder added to a copy of the project trains with no other edit), another distribution's through the
``countdown.learners`` entry points (a folder of its own and a dist-info naming its spec, nothing edited in
``learners``); either is listed, builds its config and trains through the same API as the shipped ones."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOY_SPEC = """
from pathlib import Path

from learners.core.spec import AlgorithmSpec, LearnerSpec, Mechanism

SPEC = AlgorithmSpec(
    learners={
        "toy": LearnerSpec(
            __package__, "ToyConfig", "ToyTrainer", "keeps the first loss tokens of each row", {"toy_keep_first": 1},
            (Mechanism("toy/loss_token_frac", "toy: share of loss tokens dropped", complement=True),),
        )
    },
    config_sources=(Path(__file__).with_name("config.py"),),
)
"""
TOY_INIT = """
from countdown_env.helpers.lazy_exports import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {"ToyConfig": "config", "ToyTrainer": "trainer"}, globals())
"""
TOY_CONFIG = """
from dataclasses import dataclass, field

from learners.core.config import CountdownConfig


@dataclass
class ToyConfig(CountdownConfig):
    toy_keep_first: int = field(default=3, metadata={"help": "loss tokens kept per row"})
"""
TOY_TRAINER = """
from learners.core.trainer import CountdownGRPOTrainer


class ToyTrainer(CountdownGRPOTrainer):
    def shape_batch(self, batch, rollout):
        before = self.loss_mask(batch)
        kept = before * (before.cumsum(dim=1) <= self.args.toy_keep_first)
        self.set_loss_mask(batch, kept)
        self.log_ratio_metrics({"toy/loss_token_frac": (kept.sum(), before.sum())}, rollout.mode)
        return batch
"""


def install_distribution(root: Path, package: str, entry_points: dict[str, str], files: dict[str, str]) -> Path:
    """A distribution as pip would leave it: ``root/package/`` and ``root/<package>-0.1.dist-info`` whose
    ``entry_points.txt`` holds ``entry_points`` in the ``countdown.learners`` group. Returns ``root``."""
    (root / package).mkdir(parents=True)
    for name, text in files.items():
        (root / package / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    info = root / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n", encoding="utf-8")
    lines = [f"{name} = {value}" for name, value in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(["[countdown.learners]", *lines, ""]), encoding="utf-8")
    return root


def toy_distribution(root: Path, package: str = "toy_learner") -> Path:
    files = {"__init__.py": TOY_INIT, "spec.py": TOY_SPEC, "config.py": TOY_CONFIG, "trainer.py": TOY_TRAINER}
    return install_distribution(root, package, {"toy": f"{package}.spec:SPEC"}, files)


@pytest.fixture
def on_path(monkeypatch):
    """Put a folder on sys.path (its dist-info visible to importlib.metadata); its packages leave sys.modules after."""

    def add(root: Path) -> Path:
        monkeypatch.syspath_prepend(str(root))
        for package in (p.name for p in root.iterdir() if p.is_dir() and not p.name.endswith(".dist-info")):
            for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
                monkeypatch.delitem(sys.modules, name)
        return root

    yield add
    for name in [m for m in sys.modules if m.startswith(("toy_learner", "twin_learner", "broken_learner"))]:
        del sys.modules[name]


def test_a_learner_of_another_distribution_is_collected_beside_the_shipped_ones(tmp_path, on_path):
    from learners.core.registry import LEARNERS, collect

    on_path(toy_distribution(tmp_path))
    algorithms, learners = collect()
    toy = learners["toy"]
    assert (toy.module, toy.config_class, toy.trainer_class) == ("toy_learner", "ToyConfig", "ToyTrainer")
    assert dict(toy.defaults) == {"toy_keep_first": 1}
    assert [m.metric for m in toy.mechanisms] == ["toy/loss_token_frac"]
    assert algorithms["toy"].config_sources == (tmp_path / "toy_learner" / "config.py",)
    # the shipped learners are untouched by the newcomer
    assert {name: spec for name, spec in learners.items() if name != "toy"} == LEARNERS


def test_the_config_digest_covers_a_registered_learners_config_file(tmp_path, on_path, monkeypatch):
    from learners.core import registry, trainer_fields

    shipped = trainer_fields.stack_key()["config_sources"]
    on_path(toy_distribution(tmp_path))
    monkeypatch.setattr(registry, "ALGORITHMS", registry.collect()[0])
    with_toy = trainer_fields.stack_key()["config_sources"]
    (tmp_path / "toy_learner" / "config.py").write_text(TOY_CONFIG + "# edited\n", encoding="utf-8")
    assert len({shipped, with_toy, trainer_fields.stack_key()["config_sources"]}) == 3


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("twin", "learner 'grpo' is registered by both 'grpo' and 'twin'"),
        ("grpo", "algorithm 'grpo' is registered twice"),
    ],
)
def test_a_learner_name_or_entry_point_registered_twice_is_refused(tmp_path, on_path, entry, message):
    from learners.core.registry import collect

    twin = """
    from learners.core.spec import AlgorithmSpec, LearnerSpec

    SPEC = AlgorithmSpec({"grpo": LearnerSpec("twin_learner", "TwinConfig", "TwinTrainer")})
    """
    files = {"__init__.py": "", "spec.py": twin}
    on_path(install_distribution(tmp_path, "twin_learner", {entry: "twin_learner.spec:SPEC"}, files))
    with pytest.raises(RuntimeError, match=re.escape(message)) as refused:
        collect()
    assert "twin" in str(refused.value)  # the newcomer is named, whichever came first on sys.path


def test_an_entry_point_that_is_not_an_algorithm_spec_is_refused(tmp_path, on_path):
    from learners.core.registry import collect

    files = {"__init__.py": "", "spec.py": "SPEC = {'broken': 'not a spec'}\n"}
    on_path(install_distribution(tmp_path, "broken_learner", {"broken": "broken_learner.spec:SPEC"}, files))
    with pytest.raises(RuntimeError, match=re.escape("broken = 'broken_learner.spec:SPEC' is not an AlgorithmSpec")):
        collect()


TRAIN_TOY = """
import json, sys
from pathlib import Path

from learners.core.registry import LEARNERS, get_learner

listed_without_torch = "toy" in LEARNERS and "torch" not in sys.modules
out = Path(sys.argv[1])
config = get_learner("toy").make_config(output_dir=str(out), use_cpu=True, bf16=False)
override = get_learner("toy").make_config(output_dir=str(out), use_cpu=True, bf16=False, toy_keep_first=2)

from countdown_env.cli import main

code = main(["train", "--learner", "toy", "--output-dir", str(out), *sys.argv[2:]])

from learners.pipeline.compare.engagement import engagement_rows

rows = engagement_rows({("toy", 0): out})
print(json.dumps({"listed_without_torch": listed_without_torch, "config": type(config).__name__,
                  "keep_first": [config.toy_keep_first, override.toy_keep_first], "code": code, "rows": rows}))
"""


@pytest.mark.slow
def test_a_learner_added_as_a_folder_alone_trains_through_countdown_train(tmp_path, tiny_model_dir, toy_puzzles):
    """The toy learner, in its own folder outside the project, trains two steps through ``countdown train``: its
    spec's default reaches the config, its shape_batch runs (its metric is logged) and compare's engagement table
    reads its mechanism from the spec."""
    import os

    from countdown_env.helpers.jsonl import write_jsonl

    root = toy_distribution(tmp_path / "site")
    rows = [{"numbers": list(p.numbers), "target": p.target} for p in toy_puzzles]
    write_jsonl(rows, tmp_path / "train.jsonl")
    write_jsonl(rows[:4], tmp_path / "eval.jsonl")
    settings = [
        f"model={tiny_model_dir}",
        "data=" + json.dumps({"train": str(tmp_path / "train.jsonl"), "eval": str(tmp_path / "eval.jsonl")}),
        "eval.every=0",
        "trainer.max_steps=2",
        "trainer.per_device_train_batch_size=8",
        "trainer.num_generations=4",
        "trainer.max_completion_length=8",
        "trainer.logging_steps=1",
        "trainer.save_steps=100",
        "trainer.disable_tqdm=true",
    ]
    args = ["--config", "cpu-tiny", *(x for s in settings for x in ("--set", s))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-c", TRAIN_TOY, str(tmp_path / "run"), *args], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, run.stderr[-3000:]
    assert result["listed_without_torch"] and result["config"] == "ToyConfig"
    assert result["keep_first"] == [1, 2]  # the spec's default over the class's 3; an explicit value wins
    history = json.loads((tmp_path / "run" / "log_history.json").read_text())
    fractions = [e["toy/loss_token_frac"] for e in history if "toy/loss_token_frac" in e]
    assert len(fractions) == 2 and all(0 < f < 1 for f in fractions)  # <= 1 of each row's up to 8 tokens kept
    assert [(r["metric"], r["logged_steps"]) for r in result["rows"]] == [("toy/loss_token_frac", 2)]
    assert result["rows"][0]["value"] == pytest.approx(1 - sum(fractions) / 2)


def test_learner_classes_follow_one_naming_rule():
    from learners.core.registry import LEARNERS
    from learners.core.spec import LearnerSpec

    for spec in LEARNERS.values():
        stem = spec.config_class.removesuffix("Config")
        assert spec.config_class == stem + "Config" and spec.trainer_class == stem + "Trainer"
    with pytest.raises(ValueError, match="<X>Config and <X>Trainer"):
        LearnerSpec("somewhere", "ToyConfig", "ToyLearner")


@pytest.mark.slow
def test_a_folder_added_to_the_project_trains_with_no_other_edit(tmp_path, tiny_model_dir, toy_puzzles):
    """Issue 46 item 5: ``learners/toy/`` (spec, config, trainer) dropped into a copy of the project is listed by
    the registry and trains a step through ``countdown train``: no entry point, no reinstall, no list edited."""
    import os
    import shutil

    import learners
    from countdown_env.helpers.jsonl import write_jsonl

    tree = tmp_path / "tree"
    shutil.copytree(Path(learners.__file__).parent, tree / "learners", ignore=shutil.ignore_patterns("__pycache__"))
    folder = tree / "learners" / "toy"
    folder.mkdir()
    for name, text in {"__init__.py": TOY_INIT, "spec.py": TOY_SPEC, "config.py": TOY_CONFIG,
                       "trainer.py": TOY_TRAINER}.items():  # fmt: skip
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    rows = [{"numbers": list(p.numbers), "target": p.target} for p in toy_puzzles]
    write_jsonl(rows, tmp_path / "train.jsonl")
    settings = [f"model={tiny_model_dir}", "data=" + json.dumps({"train": str(tmp_path / "train.jsonl")}),
                "eval.every=0", "trainer.max_steps=1", "trainer.per_device_train_batch_size=8",
                "trainer.num_generations=4", "trainer.max_completion_length=8", "trainer.save_steps=100"]  # fmt: skip
    code = (
        "import sys, learners\n"
        "from countdown_env.cli import main\n"
        "print(learners.__file__)\n"
        "sys.exit(main(['train', '--learner', 'toy', '--config', 'cpu-tiny', '--output-dir', sys.argv[1],"
        " *sys.argv[2:]]))\n"
    )
    args = [x for s in settings for x in ("--set", s)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run"), *args], capture_output=True, text=True,
                         env=env, cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[0].startswith(str(tree))  # the copy's learners, not the installed one
    history = json.loads((tmp_path / "run" / "log_history.json").read_text())
    assert [e["step"] for e in history if "toy/loss_token_frac" in e] == [1]
    assert json.loads((tmp_path / "run" / "resolved_config.json").read_text())["learner"] == "toy"
