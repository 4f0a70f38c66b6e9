"""The bf16 quality figures of R2's command (experiments/r2_smollm2/bf16): each step-50 pass@1 recomputed from the
committed per-puzzle evals by plain counting, the README's bf16 - fp32 interval from those, and the script that prints
them agrees."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

R2 = Path(__file__).resolve().parents[2] / "experiments" / "r2_smollm2"


def _pass1(run: Path) -> float:
    from countdown_env.helpers.jsonl import read_jsonl

    rows = read_jsonl(run / "evals" / "step-50.jsonl.gz")
    assert len(rows) == 256 and all(len(r["correct"]) == 4 for r in rows)
    return sum(sum(r["correct"]) / 4 for r in rows) / len(rows)


def _step50() -> tuple[list[float], list[float]]:
    bf16 = [_pass1(R2 / "bf16" / f"seed-{s}-engine-fp32" / "runs" / f"grpo-s{s}") for s in (0, 1)]
    fp32 = [_pass1(R2 / "amended" / f"seed-{s}" / "runs" / f"grpo-s{s}") for s in range(8)]
    return bf16, fp32


def test_the_readme_states_the_bf16_minus_fp32_interval_from_the_per_puzzle_evals():
    from scipy.stats import t

    bf16, fp32 = _step50()
    assert [round(v, 3) for v in bf16] == [0.225, 0.222]
    mb, mf = sum(bf16) / 2, sum(fp32) / 8
    ss = sum((v - mb) ** 2 for v in bf16) + sum((v - mf) ** 2 for v in fp32)
    half = t.ppf(0.975, 8) * math.sqrt(ss / 8) * math.sqrt(1 / 2 + 1 / 8)
    stated = f"**{mb - mf:+.3f} [{mb - mf - half:+.3f}, {mb - mf + half:+.3f}]**".replace("-", "−")
    assert stated in (R2 / "bf16" / "README.md").read_text()


@pytest.mark.slow
def test_the_quality_script_prints_the_same_figures():
    bf16, fp32 = _step50()
    out = subprocess.run([sys.executable, str(R2 / "bf16" / "quality.py")], capture_output=True, text=True, check=True)
    for seed, value in enumerate(bf16):
        assert f"seed {seed}: bf16 {value:.3f} - fp32 {fp32[seed]:.3f}" in out.stdout
    assert f"mean {sum(fp32) / 8:.3f}" in out.stdout
