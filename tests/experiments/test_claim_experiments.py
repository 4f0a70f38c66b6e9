"""experiments/claim_experiments.py on hand-made comparison folders: the paired contrasts, the cost ratios, the void
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
    path = Path(__file__).resolve().parents[2] / "experiments" / "claim_experiments.py"
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


# ---- preconditions (docs/experiments.md, "Preconditions of the claims") ----


@pytest.mark.parametrize(
    "figures, above, status",
    [
        ((0.5, 0.4, 0.6), True, "holds"),
        ((0.2, 0.1, 0.25), True, "fails"),
        ((0.3, 0.2, 0.4), True, "undecided"),
        ((0.8, 0.78, 0.82), False, "fails"),  # S-GRPO keeps 80 % of its loss tokens: not below 0.5
        ((0.4, 0.35, 0.45), False, "holds"),
        (None, True, "not measured"),
    ],
)
def test_precondition_status_by_interval_and_side(claims, tmp_path, figures, above, status):
    p = claims.Precondition("planted", lambda *a: figures, 0.285 if above else 0.5, above=above)
    assert claims.precondition_status(p, tmp_path, tmp_path, None, {})["status"] == status


def plant_precondition(root: Path, name: str, report: dict) -> None:
    folder = root / "preconditions" / name
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(report))


def test_a_failed_precondition_makes_the_claim_untestable(claims, tmp_path):
    """E3 whose early gain the registered rule reproduces, but whose potential does not predict success here."""
    planted_e3(tmp_path)
    plant_precondition(tmp_path, "contrastive_potential", {"result": {"spearman": 0.1, "spearman_ci": [0.0, 0.2]}})
    result = claims.analyse(claims.EXPERIMENTS["e3"], tmp_path / "e3_contrastive")
    assert result["registered"] == "early gain reproduced"
    assert result["claim"]["verdict"].startswith("untestable at this scale: P1")
    assert "0.1 [0, 0.2]" in result["claim"]["verdict"]
    report = claims.markdown(claims.EXPERIMENTS["e3"], result, "cmd")
    assert "**Claim verdict: untestable at this scale" in report

    plant_precondition(tmp_path, "contrastive_potential_unused", {})  # an unrelated folder changes nothing
    (tmp_path / "preconditions" / "contrastive_potential" / "results.json").write_text(
        json.dumps({"result": {"spearman": 0.6, "spearman_ci": [0.4, 0.7]}})
    )
    result = claims.analyse(claims.EXPERIMENTS["e3"], tmp_path / "e3_contrastive")
    assert result["claim"]["verdict"] == "early gain reproduced"


def test_e4_is_untestable_when_step_zero_completions_are_cut(claims, tmp_path):
    base = tmp_path / "e4_ps_ppo"
    (base).mkdir()
    (base / "compare.json").write_text(json.dumps({"max_new_tokens": 40}))
    cut = {}
    for s in range(8):
        same = [[True, False, True, False] for _ in PUZZLES]
        plant_run(base, "ps_ppo", s, same, metrics={"ps_ppo/cutoff_kept_frac": 0.2}, wall=1.0)
        plant_run(base, "grpo", s, same, metrics={}, wall=4.0)
        # grpo's step-0 eval: s + 2 of its 16 samples reach the 40-token budget
        rows = [dict(numbers=n, target=t, correct=[False] * 4, lengths=[40 if 4 * j + i < s + 2 else 12 for i in
                range(4)]) for j, (n, t) in enumerate(PUZZLES)]  # fmt: skip
        (base / "runs" / f"grpo-s{s}" / "evals" / "step-0.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
        cut[s] = (s + 2) / 16
    result = claims.analyse(claims.EXPERIMENTS["e4"], base)
    check = result["preconditions"][0]
    assert (check["value"], check["low"], check["high"]) == pytest.approx(t_interval(list(cut.values())))
    assert check["status"] == "fails" and result["registered"] == "reproduced"
    assert result["claim"]["verdict"].startswith("untestable at this scale: share of step-0 eval completions cut")


def test_e6_engagement_below_one_percent_is_untestable_and_reports_the_mde(claims, tmp_path):
    diffs = planted_e6(tmp_path, mask_share=0.0008)
    result = claims.analyse(claims.EXPERIMENTS["e6"], tmp_path / "e6_trust_region")
    mask = result["contrasts"][0]
    values = list(diffs.values())
    sd = math.sqrt(sum((v - sum(values) / 6) ** 2 for v in values) / 5)
    assert mask["mde"] == pytest.approx((student_t.ppf(0.975, 5) + student_t.ppf(0.8, 5)) * sd / math.sqrt(6))
    statuses = {c["figure"].split(":")[0]: c["status"] for c in result["preconditions"]}
    assert statuses == {"prime_rl": "fails", "dapo": "holds", "grpo": "holds"}  # the planted clip share is 2 %
    assert "mask matters: reproduced" in result["registered"]
    assert result["claim"]["verdict"].startswith("untestable at this scale: prime_rl: share of loss tokens its DPPO")


def plant_e4b(root: Path, deltas: dict[str, int], *, grpo_gain: bool = True) -> Path:
    """grpo solves 3 + (s % 2) first samples at step 60 (none at step 0 when ``grpo_gain``, else as many); each
    PS-PPO arm solves ``deltas[arm]`` fewer (a Δ pass@1 of -delta/16 in every seed); forward tokens 0.3x grpo's."""
    base = root / "e4b_ps_ppo_budget"
    folders = {"optimized_64": "main", "optimized_128": "optimized_128", "uniform_64": "uniform_64"}
    none = [[False] * 4 for _ in PUZZLES]
    for s in SEEDS:
        solved = 1 + s % 2 if grpo_gain else 0
        grid = [[i < solved + 2] + [False] * 3 for i in range(len(PUZZLES))]
        start = grid if not grpo_gain else none
        plant_run(base / "main", "grpo", s, {0: start, 60: grid}, metrics={}, wall=10.0)
        for arm, folder in folders.items():
            fewer = [[i < solved + 2 - deltas[arm]] + [False] * 3 for i in range(len(PUZZLES))]
            plant_run(base / folder, "ps_ppo", s, {0: start, 60: fewer}, metrics={"ps_ppo/cutoff_kept_frac": 0.4},
                      wall=3.0)  # fmt: skip
    return base


def test_e4b_dose_response_reading(claims, tmp_path):
    base = plant_e4b(tmp_path, {"optimized_64": 1, "optimized_128": 0, "uniform_64": 0})
    result = claims.analyse(claims.EXPERIMENTS["e4b"], base)
    by_arm = {c["a"]: c for c in result["contrasts"] if c["b"] == "grpo" and c["k"] == 1}
    assert by_arm["optimized_64"]["diff"] == pytest.approx(-1 / 16)  # outside ±0.03: does not hold
    assert by_arm["optimized_128"]["diff"] == 0.0
    assert result["cost_ratios"][0]["forward_tokens"]["ratio"] == pytest.approx(0.3)
    assert result["registered"] == "not reproduced (dose-response: breaks between B/L ≈ 0.5 and 0.25)"
    gain = next(c for c in result["preconditions"] if c["figure"].startswith("grpo's"))
    assert gain["status"] == "holds" and gain["value"] == pytest.approx(sum(3 + s % 2 for s in SEEDS) / 16 / 6)

    both = plant_e4b(tmp_path / "both", {"optimized_64": 0, "optimized_128": 0, "uniform_64": 0})
    result = claims.analyse(claims.EXPERIMENTS["e4b"], both)
    assert result["registered"].startswith("reproduced (dose-response: holds at the paper's budgets")


def test_e4b_is_untestable_when_grpo_does_not_learn(claims, tmp_path):
    base = plant_e4b(tmp_path, {"optimized_64": 0, "optimized_128": 0, "uniform_64": 0}, grpo_gain=False)
    result = claims.analyse(claims.EXPERIMENTS["e4b"], base)
    assert result["registered"].startswith("reproduced")  # equivalent, but only because nothing moved
    assert result["claim"]["verdict"].startswith("untestable at this scale: grpo's pass@1 gain over its own step 0 0")


@pytest.mark.slow  # imports E1's script (torch, trl) for its decide(): ~1 s inside the suite, 20 s alone under load
def test_e1_corrected_reading_counts_a_cell_voided_by_another_strategy(claims, tmp_path):
    """Six planted cells: uniform lowest in 4 (one of them void only through heuristic's failed check), optimized
    in 2. Registered reading: 3 of 5 valid -> inconclusive; corrected: 4 of 6 -> not reproduced."""

    def cell(seed, budget, lowest, failed=None):
        names = ("optimized", "uniform", "time_prior", "heuristic")
        strategies = {s: {"unbiased_pass": s != failed} for s in names}
        return dict(batch_seed=seed, budget=budget, lowest=lowest, optimized_separated=lowest == "optimized",
                    valid=failed is None, strategies=strategies)  # fmt: skip

    cells = [cell(0, 16, "uniform", failed="heuristic"), cell(1, 16, "uniform"), cell(2, 16, "uniform"),
             cell(0, 32, "optimized"), cell(1, 32, "optimized"), cell(2, 32, "uniform")]  # fmt: skip
    (tmp_path / "ps_ppo_cutoff_variance").mkdir()
    (tmp_path / "ps_ppo_cutoff_variance" / "results.json").write_text(json.dumps({"cells": cells}))
    result = claims.analyse_e1(tmp_path)
    assert result["registered_rule"]["verdict"] == "inconclusive"
    assert result["corrected_rule"]["verdict"] == "not reproduced"
    assert result["corrected_rule"]["lowest_counts"]["uniform"] == 4
    # a failed check of the lowest strategy (or of optimized) still voids the cell
    assert not claims.cell_valid_corrected(cell(0, 16, "uniform", failed="uniform"))
    assert not claims.cell_valid_corrected(cell(0, 16, "uniform", failed="optimized"))


def test_an_undecided_precondition_the_rule_needs_reads_undecided_and_makes_the_claim_untestable(claims, tmp_path):
    needed = claims.Precondition("grpo's gain", lambda *a: (0.013, -0.005, 0.031), 0.0, must_hold=True)
    check = claims.precondition_status(needed, tmp_path, tmp_path, None, {})
    assert check["status"] == "undecided"  # learning not shown is not "fails"
    verdict = claims.claim_verdict({"preconditions": [check], "registered": "reproduced"})["verdict"]
    assert verdict.startswith("untestable at this scale: grpo's gain 0.013 [-0.005, 0.031] (needs > 0): undecided")
    assert "fails" not in verdict
    optional = claims.Precondition("P1", lambda *a: (0.3, 0.2, 0.4), 0.285)  # undecided, not needed by the rule
    check = claims.precondition_status(optional, tmp_path, tmp_path, None, {})
    verdict = claims.claim_verdict({"preconditions": [check], "registered": "reproduced"})["verdict"]
    assert verdict.startswith("reproduced (preconditions not settled: P1 0.3 [0.2, 0.4]")


def test_e4b_states_the_margin_against_grpos_own_gain_and_the_power_to_hold(claims, tmp_path):
    base = plant_e4b(tmp_path, {"optimized_64": 0, "optimized_128": 0, "uniform_64": 0}, grpo_gain=False)
    lines = "\n".join(claims.analyse(claims.EXPERIMENTS["e4b"], base)["verdict"])
    # grpo's step 60 equals its step 0 in every seed: a gain of 0, which the ±0.03 margin holds
    assert "grpo's own pass@1 gain over step 0 at step 60: +0.000" in lines and "still fit inside the margin" in lines
    assert lines.count("Power to hold") == 3 and "per-seed SD 0.000, 6 seeds" in lines
    learned = plant_e4b(tmp_path / "learned", {"optimized_64": 0, "optimized_128": 0, "uniform_64": 0})
    lines = "\n".join(claims.analyse(claims.EXPERIMENTS["e4b"], learned)["verdict"])
    gain = sum(1 + s % 2 + 2 for s in SEEDS) / 16 / 6  # planted: 3 or 4 of 16 first samples at step 60, 0 at step 0
    assert f"+{gain:.3f}" in lines and f"the margin is {0.03 / gain:.1f}x that gain" in lines
    assert "not fit inside the margin" in lines
