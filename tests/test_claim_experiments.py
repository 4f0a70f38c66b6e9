"""benchmarks/claim_experiments.py on hand-made comparison folders: the paired contrasts, the cost ratios, the void
check and the pre-registered decision rules, with every expected figure computed here from the planted values."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
from scipy.stats import t as student_t

from learners.pipeline.compare.results import rows_to_csv

SEEDS = range(6)
PUZZLES = [([1, 2, 3], 6), ([4, 5, 6], 15), ([2, 2, 9], 13), ([7, 3, 1], 21)]


def t_interval(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the Student t 95 % interval, computed here from scipy's quantile."""
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    half = student_t.ppf(0.975, len(values) - 1) * sd / math.sqrt(len(values))
    return mean, mean - half, mean + half


@pytest.fixture(scope="module")
def claims():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "claim_experiments.py"
    spec = importlib.util.spec_from_file_location("claim_experiments", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def plant_run(folder: Path, learner: str, seed: int, correct, *, metrics: dict, wall: float):
    """``correct``: one grid of sample outcomes (puzzles x samples) for eval steps 0 and 100, or {step: grid}."""
    run = folder / "runs" / f"{learner}-s{seed}"
    (run / "evals").mkdir(parents=True)
    by_step = correct if isinstance(correct, dict) else {0: correct, 100: correct}
    for step, grid in by_step.items():
        lines = [json.dumps({"numbers": n, "target": t, "correct": c}) for (n, t), c in zip(PUZZLES, grid, strict=True)]
        (run / "evals" / f"step-{step}.jsonl").write_text("\n".join(lines) + "\n")
    rows = [dict(learner=learner, seed=seed, step=100, wall_seconds=wall, forward_tokens=10 * wall,
                 loss_tokens=5 * wall, generated_tokens=1000.0)]  # fmt: skip
    (run / "rows.csv").write_text(rows_to_csv(rows))
    (run / "log_history.json").write_text(json.dumps([dict(metrics, step=s) for s in (1, 2)]))
    (run / "DONE").write_text("{}")


def planted_e6(root: Path, *, mask_share: float = 0.01) -> dict[int, float]:
    """prime_rl solves k more of the 4 puzzles' first samples than its mask-off arm in seed s (k = 1 or 2, so the
    pass@1 difference is k/16 per seed); dapo and grpo are equal. Returns the planted per-seed pass@1 differences."""
    base = root / "e6_trust_region"
    diffs = {}
    for s in SEEDS:
        k = 1 + s % 2
        off = [[False] * 4 for _ in PUZZLES]
        on = [[i < k] + [False] * 3 for i in range(len(PUZZLES))]
        diffs[s] = k / 16
        plant_run(base / "main", "prime_rl", s, on, metrics={"prime_rl/is_masked": mask_share}, wall=2.0)
        plant_run(base / "prime_rl_mask_off", "prime_rl", s, off, metrics={"prime_rl/is_masked": 0.0}, wall=2.0)
        for learner in ("dapo", "grpo"):
            plant_run(base / "main", learner, s, off, metrics={"clip_ratio/region_mean": 0.02}, wall=3.0)
    return diffs


def test_e6_contrast_interval_and_rule(claims, tmp_path):
    diffs = planted_e6(tmp_path)
    result = claims.analyse(claims.EXPERIMENTS["e6"], tmp_path / "e6_trust_region")
    mask = result["contrasts"][0]
    assert (mask["diff"], mask["low"], mask["high"]) == pytest.approx(t_interval(list(diffs.values())))
    assert mask["step"] == 100 and mask["seeds"] == list(SEEDS)
    verdict = "\n".join(result["verdict"])
    assert "mask matters: reproduced" in verdict
    assert "clip-higher (pass@4): not reproduced** (interval contains 0)" in verdict


def test_e6_is_void_when_a_mechanism_never_acted(claims, tmp_path):
    planted_e6(tmp_path, mask_share=0.0)
    result = claims.analyse(claims.EXPERIMENTS["e6"], tmp_path / "e6_trust_region")
    assert "Verdict: void" in "\n".join(result["verdict"]) and "prime_rl" in "\n".join(result["verdict"])


def test_no_verdict_until_every_registered_seed_finished(claims, tmp_path):
    planted_e6(tmp_path)
    (tmp_path / "e6_trust_region" / "main" / "runs" / "grpo-s5" / "DONE").unlink()
    result = claims.analyse(claims.EXPERIMENTS["e6"], tmp_path / "e6_trust_region")
    assert result["verdict"][0].startswith("No verdict yet") and "grpo: [5]" in result["verdict"][0]


def test_e4_rule_and_cost_ratio(claims, tmp_path):
    base = tmp_path / "e4_ps_ppo"
    for s in range(8):
        same = [[s % 2 == 0, False, True, False] for _ in PUZZLES]
        plant_run(base, "ps_ppo", s, same, metrics={"ps_ppo/cutoff_kept_frac": 0.2}, wall=1.0)
        plant_run(base, "grpo", s, same, metrics={"clip_ratio/region_mean": 0.0}, wall=4.0)
    result = claims.analyse(claims.EXPERIMENTS["e4"], base)
    ratio = result["cost_ratios"][0]["forward_tokens"]
    assert ratio["ratio"] == pytest.approx(0.25) and ratio["per_step_b"] == pytest.approx(0.4)
    assert result["void_checks"]["ps_ppo"]["ok"]  # kept 0.2 -> truncated share 0.8 > 0
    assert result["contrasts"][0]["diff"] == 0.0
    assert result["verdict"][-1] == "**Verdict: reproduced.**"


def test_e5_decides_the_lora_half_while_the_full_weight_half_is_missing(claims, tmp_path):
    base = tmp_path / "e5_lora"
    for s in SEEDS:
        k = 1 + s % 2  # s_grpo and t_spmo |G|=50 solve k more first samples than grpo: +k/16 pass@1
        worse = [[False] * 4 for _ in PUZZLES]
        better = [[i < k] + [False] * 3 for i in range(len(PUZZLES))]
        plant_run(base / "lora", "grpo", s, worse, metrics={}, wall=1.0)
        plant_run(base / "lora", "s_grpo", s, better, metrics={}, wall=1.0)
        plant_run(base / "lora", "t_spmo", s, worse, metrics={}, wall=1.0)
        plant_run(base / "lora_g50", "t_spmo", s, better, metrics={}, wall=5.0)
    result = claims.analyse(claims.EXPERIMENTS["e5"], base)
    g50 = next(c for c in result["contrasts"] if c["a"] == "t_spmo_g50_lora")
    assert g50["diff"] == pytest.approx(sum(1 + s % 2 for s in SEEDS) / 16 / len(SEEDS))
    ratio = next(r for r in result["cost_ratios"] if r["a"] == "t_spmo_g50_lora")
    assert ratio["wall_seconds"]["ratio"] == pytest.approx(5.0)
    verdict = "\n".join(result["verdict"])
    assert "Verdict under LoRA: reproduced; without LoRA: not run yet" in verdict


def planted_e3(root: Path, *, shaped: float = 0.8) -> dict[int, float]:
    """The frozen-scorer arm solves k more first samples than prime_rl at step 30 (k = 1 or 2: +k/16 pass@1) and the
    same at step 60; the moving arm equals prime_rl throughout. Returns the planted step-30 differences."""
    base = root / "e3_contrastive"
    none = [[False] * 4 for _ in PUZZLES]
    diffs = {}
    for s in range(8):
        k = 1 + s % 2
        better = [[i < k] + [False] * 3 for i in range(len(PUZZLES))]
        diffs[s] = k / 16
        plant_run(base / "early", "prime_rl", s, {0: none, 30: none, 60: none}, metrics={}, wall=2.0)
        plant_run(base / "early", "contrastive", s, {0: none, 30: better, 60: none},
                  metrics={"contrastive/shaped_row_frac": shaped}, wall=3.0)  # fmt: skip
        plant_run(base / "early_moving", "contrastive", s, {0: none, 30: none, 60: none},
                  metrics={"contrastive/shaped_row_frac": shaped}, wall=4.0)  # fmt: skip
    return diffs


def test_e3_early_gain_rule_at_step_30(claims, tmp_path):
    diffs = planted_e3(tmp_path)
    result = claims.analyse(claims.EXPERIMENTS["e3"], tmp_path / "e3_contrastive")
    early = next(c for c in result["contrasts"] if (c["a"], c["b"], c["step"], c["k"]) == ("frozen", "prime_rl", 30, 1))
    assert (early["diff"], early["low"], early["high"]) == pytest.approx(t_interval(list(diffs.values())))
    late = next(c for c in result["contrasts"] if (c["a"], c["b"], c["step"]) == ("frozen", "prime_rl", 60))
    assert late["diff"] == 0.0
    ratio = next(r for r in result["cost_ratios"] if r["a"] == "moving")
    assert ratio["wall_seconds"]["ratio"] == pytest.approx(2.0)
    assert "**Verdict: early gain reproduced**." in result["verdict"]
    assert result["verdict"][-1] == "**Probe: not run.**"  # no probe folder planted
    report = claims.markdown(claims.EXPERIMENTS["e3"], result, "cmd")
    assert f"| {result['arms']['prime_rl']} | DPPO mask: share of loss tokens masked | - | not logged |" in report
    assert " nan" not in report  # the planted prime_rl runs log no trust-region metric


def test_e3_probe_paragraphs_and_truncation(claims, tmp_path):
    planted_e3(tmp_path)
    base = tmp_path / "e3_contrastive"
    (base / "long_probe").mkdir()
    (base / "long_probe" / "compare.json").write_text(json.dumps({"max_new_tokens": 50}))
    expected_paragraphs, expected_truncation = [], []
    for s in range(3):
        run = base / "long_probe" / "runs" / f"contrastive-s{s}"
        (run / "evals").mkdir(parents=True)
        counts = [2.0 + 0.1 * (1 + 0.1 * s) * step for step in range(1, 31)]  # 30 logged steps, rising
        history = [{"step": i + 1, "contrastive/paragraphs_per_shaped_row": c} for i, c in enumerate(counts)]
        (run / "log_history.json").write_text(json.dumps([*history, {"step": 30, "train_loss": 0.1}]))
        expected_paragraphs.append(sum(counts[-10:]) / 10 - sum(counts[:10]) / 10)
        # 4 puzzles x 4 samples: one sample reaches the 50-token budget at step 0, s + 8 of them at step 30
        for step, n_long in ((0, 1), (30, s + 8)):
            lengths = [50 if i < n_long else 20 for i in range(16)]
            rows = [dict(numbers=n, target=t, correct=[False] * 4, lengths=lengths[4 * j : 4 * j + 4])
                    for j, (n, t) in enumerate(PUZZLES)]  # fmt: skip
            lines = [json.dumps(r) for r in rows]
            (run / "evals" / f"step-{step}.jsonl").write_text("\n".join(lines) + "\n")
        expected_truncation.append((s + 8 - 1) / 16)
        (run / "DONE").write_text("{}")
    result = claims.analyse(claims.EXPERIMENTS["e3"], base)
    probe = result["extra"]
    for key, expected in (("paragraphs", expected_paragraphs), ("truncation", expected_truncation)):
        assert probe[key]["ci"] == pytest.approx(t_interval(expected))
    assert result["verdict"][-1] == "**Probe: hacking reproduced.**"


def test_e3_is_void_when_nothing_was_shaped(claims, tmp_path):
    planted_e3(tmp_path, shaped=0.0)
    result = claims.analyse(claims.EXPERIMENTS["e3"], tmp_path / "e3_contrastive")
    assert "Verdict: void" in result["verdict"][-1]
