"""docs/learners.md's "Adding a learner": its four files, written into a copy of the learners package with no other
edit, register a learner that `countdown train` trains for one step."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def template_files() -> dict[str, str]:
    """``{file name: code}`` of the section's ``learners/sign_grpo/*.py`` blocks."""
    text = (ROOT / "docs" / "learners.md").read_text()
    section = text.split("## Adding a learner", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"`learners/sign_grpo/(\w+\.py)`:.*?```python\n(.*?)```", section, re.S)
    return dict(found)


def test_the_template_is_four_files_of_few_lines():
    files = template_files()
    assert sorted(files) == ["__init__.py", "config.py", "spec.py", "trainer.py"]
    assert sum(len(code.strip().splitlines()) for code in files.values()) <= 60


@pytest.mark.slow
def test_the_template_registers_and_trains_with_no_other_edit(tmp_path):
    package = tmp_path / "learners"
    shutil.copytree(ROOT / "learners", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "sign_grpo").mkdir()
    for name, code in template_files().items():
        (package / "sign_grpo" / name).write_text(code)
    out = tmp_path / "run"
    # the copy is imported as `learners` (the editable install's finder would otherwise map the name to the repo)
    code = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('learners', {str(package / '__init__.py')!r}, "
        f"submodule_search_locations=[{str(package)!r}])\n"
        "learners = sys.modules['learners'] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(learners)\n"
        "from learners.core.registry import LEARNERS\n"
        "from countdown_env.cli import main\n"
        f"status = main(['train', '--learner', 'sign_grpo', '--model', 'tiny', '--max-steps', '1', "
        f"'--output-dir', {str(out)!r}, '--set', 'eval.every=0'])\n"
        "print(json.dumps([status, learners.__file__, 'sign_grpo' in LEARNERS]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    status, where, registered = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(where).is_relative_to(package) and registered, done.stderr[-2000:]
    assert status == 0, done.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["learner"] == "sign_grpo" and summary["steps"] == 1
