"""R3's verdict script (experiments/r3_smollm2/report.py) on hand-built seed folders whose answers are worked out
here: the paired difference per arm, the grpo replication, and the refusals that keep the pairing honest."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from shutil import rmtree

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "experiments" / "r3_smollm2"
PUZZLES = [([1, 2, 3], 6), ([4, 5, 6], 15), ([7, 8, 9], 24), ([2, 3, 4], 24)]
MACHINE = {"cpu": {"model": "Xeon", "flags": ["avx2", "amx_bf16"]}, "versions": {"torch": "2.9"}, "precision": "fp32"}


def _report():
    spec = importlib.util.spec_from_file_location("r3_report", FOLDER / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(root: Path, learner: str, seed: int, correct: dict[int, list[int]], machine=MACHINE) -> Path:
    """A run folder with evals at each step: ``correct[step][i]`` of 16 samples of puzzle i are right."""
    run = root / f"seed-{seed}" / "runs" / f"{learner}-s{seed}"
    (run / "evals").mkdir(parents=True)
    for step, counts in correct.items():
        rows = [{"numbers": n, "target": t, "correct": [i < c for i in range(16)], "lengths": [70] * 16}
                for (n, t), c in zip(PUZZLES, counts, strict=True)]  # fmt: skip
        (run / "evals" / f"step-{step}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "resolved_config.json").write_text(json.dumps({"learner": learner, **machine}))
    return run


def _seed(root: Path, seed: int, grpo: list[int], t_spmo: list[int], machines=None, start=(4, 4, 4, 4)) -> Path:
    """Seed folder with grpo and t_spmo runs: their step-50 counts, a shared step-0 eval, ``machines`` per arm."""
    machines = machines or {}
    _run(root, "grpo", seed, {0: list(start), 50: grpo}, machines.get("grpo", MACHINE))
    _run(root, "t_spmo", seed, {0: list(start), 50: t_spmo}, machines.get("t_spmo", MACHINE))
    return root / f"seed-{seed}"


def test_the_paired_difference_and_the_replication_on_hand_counts(tmp_path):
    report = _report()
    # seed 0: grpo 8,8,8,8 of 16 (0.5), t_spmo 12,8,8,8 (0.5625): d = +0.0625
    # seed 1: grpo 8,8,8,8 (0.5),     t_spmo 10,8,8,8 (0.53125): d = +0.03125.  mean d = 0.046875
    folders = [_seed(tmp_path, 0, [8] * 4, [12, 8, 8, 8]), _seed(tmp_path, 1, [8] * 4, [10, 8, 8, 8])]
    result = report.verdict(folders, 50)
    primary = result["arms"]["t_spmo"]["pass@1"]
    assert primary["mean"] == pytest.approx(0.046875)
    assert primary["per_seed"] == {0: pytest.approx(0.0625), 1: pytest.approx(0.03125)}
    # t over 2 seeds: mean 0.046875, SD 0.0221, t_0.975,1 = 12.706 -> half-width 12.706 x 0.0221 / sqrt(2) = 0.1986
    low, high = primary["intervals"]["t over seeds"]
    assert (low, high) == (pytest.approx(0.046875 - 0.19855, abs=1e-4), pytest.approx(0.046875 + 0.19855, abs=1e-4))
    assert primary["decisive"] == "t over seeds" and result["arms"]["t_spmo"]["decision"] == "no difference shown"
    # pass@16 per puzzle is 1 wherever any sample is right: both arms 1 everywhere, difference 0
    assert result["arms"]["t_spmo"]["pass@16"]["mean"] == 0.0
    # grpo's own gain: 0.5 - 0.25 in both seeds, no spread: the t interval collapses onto +0.25, above 0
    assert result["gains"]["grpo"]["mean"] == pytest.approx(0.25) and result["replication"] == "replicated"
    assert "interim: grpo 2, contrastive 0, s_grpo 0, t_spmo 2 of the pilot's 8 seeds" in report.verdict_markdown(
        result, "cmd"
    )
    one_seed = report.verdict(folders[:1], 50)  # a puzzle bootstrap alone decides nothing
    assert one_seed["replication"] == "not decided (one seed: no interval over seeds)"


def test_a_seed_whose_grpo_run_has_not_finished_says_so(tmp_path):
    report = _report()
    _run(tmp_path, "t_spmo", 0, {0: [4] * 4, 50: [8] * 4})
    result = report.verdict([tmp_path / "seed-0"], 50)
    assert result["replication"] is None and result["arms"] == {}
    assert "the registered replication of R2, **no grpo run at the step**" in report.verdict_markdown(result, "cmd")


def test_each_statistic_reads_its_first_8_seeds_in_seed_order(tmp_path):
    """Amendment 5 (c): an arm reads the first 8 seeds that have it and grpo; grpo's gain the first 8 with grpo. Seeds
    0-9 here, seed 2 without t_spmo: t_spmo reads 0, 1, 3-8 (seed 9's large difference is not read) and grpo's gain
    0-7 (seeds 8 and 9 gain far more and are not read)."""
    report = _report()
    folders = []
    for seed in range(10):
        grpo = [12] * 4 if seed >= 8 else [8] * 4  # gain 0.5 at seeds 8-9, 0.25 before
        t_spmo = [16] * 4 if seed == 9 else [9] * 4  # d = -0.1875 at seed 8, +0.25 at seed 9, +0.0625 before
        folders.append(_seed(tmp_path, seed, grpo, t_spmo))
    rmtree(tmp_path / "seed-2" / "runs" / "t_spmo-s2")
    result = report.verdict(folders, 50)
    primary = result["arms"]["t_spmo"]["pass@1"]
    assert sorted(primary["per_seed"]) == [0, 1, 3, 4, 5, 6, 7, 8]
    assert primary["mean"] == pytest.approx((7 * 0.0625 - 0.1875) / 8)
    assert result["gains"]["grpo"]["seeds"] == list(range(8)) and result["gains"]["grpo"]["mean"] == pytest.approx(0.25)
    assert result["per_run"]["grpo-s9"]["read"] is False and result["per_run"]["t_spmo-s8"]["read"] is True
    assert result["per_run"]["grpo-s9"]["gain"] == pytest.approx(0.5)
    assert "interim: contrastive 0, s_grpo 0 of the pilot's 8" in report.verdict_markdown(result, "cmd")  # no data
    for seed in range(10):  # every arm with 8 seeds or more: the page is the registered one, not interim
        for arm in ("contrastive", "s_grpo"):
            _run(tmp_path, arm, seed, {0: [4] * 4, 50: [8] * 4})
    assert "interim" not in report.verdict_markdown(report.verdict(folders, 50), "cmd").splitlines()[0]


def test_an_arms_own_gain_resamples_puzzles_jointly_across_seeds(tmp_path):
    """PROTOCOL.md registers the joint puzzle bootstrap for the own gains: two seeds that drew the very same evals
    carry no more information than one, so their gain's bootstrap interval is the one seed's (resampling each seed's
    puzzles apart would narrow it by about sqrt(2))."""
    report = _report()
    end = [8, 12, 4, 16]  # per-puzzle gains over the shared start of 4/16: 0.25, 0.5, 0, 0.75
    folders = [_seed(tmp_path, seed, end, end) for seed in (0, 1)]
    two = report.verdict(folders, 50)["gains"]["grpo"]["intervals"]["paired puzzle bootstrap"]
    one = report.verdict(folders[:1], 50)["gains"]["grpo"]["intervals"]["paired puzzle bootstrap"]
    assert two == pytest.approx(one) and two[1] - two[0] > 0.3


def test_holm_steps_down():
    report = _report()
    assert report.holm({"a": 0.01, "b": 0.04, "c": 0.5}) == {"a": True, "b": False, "c": False}  # 0.04 > 0.05/2
    assert report.holm({"a": 0.01, "b": 0.02, "c": 0.03}) == {"a": True, "b": True, "c": True}
    assert report.holm({"a": float("nan"), "b": 0.001}) == {"a": False, "b": True}


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("cpu", {"model": "AMD EPYC", "flags": ["avx2"]}),
        ("versions", {"torch": "2.10"}),
        ("precision", "bf16"),
    ],
)
def test_arms_of_one_seed_on_different_machines_are_refused(tmp_path, capsys, field, other):
    report = _report()
    folder = _seed(tmp_path, 0, [8] * 4, [8] * 4, {"t_spmo": {**MACHINE, field: other}})
    assert_refused(report, [folder], capsys, f"seed 0: grpo and t_spmo differ in {field}")


def test_seeds_whose_grpo_ran_in_other_precisions_do_not_pool(tmp_path, capsys):
    report = _report()
    bf16 = {**MACHINE, "precision": "bf16"}
    folders = [_seed(tmp_path, 0, [8] * 4, [8] * 4),
               _seed(tmp_path, 1, [8] * 4, [8] * 4, {"grpo": bf16, "t_spmo": bf16})]  # fmt: skip
    assert_refused(report, folders, capsys, "different precisions")


def test_arms_of_a_seed_on_other_prompts_are_refused(tmp_path, capsys):
    report = _report()
    folder = _seed(tmp_path, 0, [8] * 4, [8] * 4)
    for learner, digest in (("grpo", "aaa"), ("t_spmo", "bbb")):
        done = {"learner": learner, "seed": 0, "steps": 50, "wall_seconds": 100.0, "prompt_digest": digest}
        (folder / "runs" / f"{learner}-s0" / "DONE").write_text(json.dumps(done))
    assert_refused(report, [folder], capsys, "seed 0: its arms trained on different prompts")


def test_a_run_without_a_machine_record_is_refused(tmp_path, capsys):
    report = _report()
    folder = _seed(tmp_path, 0, [8] * 4, [8] * 4)
    (folder / "runs" / "t_spmo-s0" / "resolved_config.json").write_text(json.dumps({"learner": "t_spmo"}))
    assert_refused(report, [folder], capsys, "names no cpu, versions, precision")


def assert_refused(report, folders, capsys, message):
    with pytest.raises(SystemExit) as exit_info:
        report.main(["verdict", *map(str, folders)])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    "path", sorted([*FOLDER.glob("verdict*.md"), *FOLDER.glob("pilot*.md")]), ids=lambda path: path.name
)
def test_every_committed_verdict_comes_back_from_its_command(path, tmp_path):
    """Each committed R3 verdict page (interim or final) and pilot page is recomputed by the command printed in it,
    from the committed per-puzzle evals and run records: the same text but for the command's ``--out``."""
    from tests.scripts import recomputed_page

    subcommand = path.name.split("-")[0].removesuffix(".md")  # verdict-*.md, pilot.md
    again, committed = recomputed_page(path, ("experiments/r3_smollm2/report.py", subcommand), tmp_path / path.name)
    assert again == committed


def _pilot_seeds(root: Path, counts: dict[int, dict[str, list[int]]]) -> list[Path]:
    """Seeds 0 and 1 with every arm: ``counts[seed][arm]`` correct of 16 per puzzle at step 50."""
    for seed, arms in counts.items():
        for learner, end in arms.items():
            _run(root, learner, seed, {0: [4] * 4, 50: end})
    return [root / f"seed-{seed}" for seed in counts]


def test_the_pilot_rule_plans_the_seed_count_from_the_pooled_spread(tmp_path):
    """d per arm and seed worked out by hand; the pooled SD averages the three two-seed variances; the MDE is
    (t_0.975,n-1 + t_0.80,n-1) σ / √n with scipy's quantiles."""
    from scipy.stats import t

    report = _report()
    grpo = [8, 8, 8, 8]  # pass@1 0.5 in both seeds
    # d = (sum of counts - 32) / 64: seed 0 / seed 1
    wide = {
        0: {"grpo": grpo, "contrastive": [12, 8, 8, 8], "s_grpo": [8, 8, 8, 8], "t_spmo": [4, 8, 8, 8]},
        1: {"grpo": grpo, "contrastive": [8, 8, 8, 8], "s_grpo": [14, 8, 8, 8], "t_spmo": [8, 8, 8, 8]},
    }
    result = report.pilot(_pilot_seeds(tmp_path / "wide", wide))
    d = {"contrastive": (4 / 64, 0.0), "s_grpo": (0.0, 6 / 64), "t_spmo": (-4 / 64, 0.0)}
    assert result["per_arm"] == {arm: {0: pytest.approx(a), 1: pytest.approx(b)} for arm, (a, b) in d.items()}
    pooled = math.sqrt(sum((a - b) ** 2 / 2 for a, b in d.values()) / 3)
    assert result["pooled_sd"] == pytest.approx(pooled) and pooled > 0.047  # wider than planned: 13 seeds
    assert result["seeds"] == 13
    assert result["mdes"][13] == pytest.approx((t.ppf(0.975, 12) + t.ppf(0.8, 12)) * pooled / math.sqrt(13))
    assert result["mdes"][13] > 0.04 and "no count up to 13" in report.pilot_markdown(result, "cmd")

    same = {seed: {"grpo": grpo, "contrastive": grpo, "s_grpo": grpo, "t_spmo": [9, 8, 8, 8]} for seed in (0, 1)}
    narrow = report.pilot(_pilot_seeds(tmp_path / "narrow", same))
    assert narrow["pooled_sd"] == 0.0 and narrow["planning_sd"] == 0.033  # the floor of the rule
    assert narrow["seeds"] == 8  # (2.365 + 0.896) x 0.033 / √8 = 0.038; 7 seeds (not allowed) would give 0.042

    # amendment 4 (e): seed 0 and the first other seed with every arm, here seed 3; the same figures as seeds 0 and 1
    moved = report.pilot(_pilot_seeds(tmp_path / "seed3", {0: wide[0], 3: wide[1]}))
    assert moved["per_arm"] == {arm: {0: pytest.approx(a), 3: pytest.approx(b)} for arm, (a, b) in d.items()}
    assert moved["pooled_sd"] == pytest.approx(pooled) and moved["seeds"] == 13
    page = report.pilot_markdown(moved, "cmd")
    assert "seeds 0 and 3" in page and "amendment 4 (e)" in page and "| d(seed 3) |" in page


def test_the_pilot_refuses_anything_but_seed_0_and_one_other_with_every_arm(tmp_path, capsys):
    report = _report()
    folders = [_seed(tmp_path, 0, [8] * 4, [8] * 4), _seed(tmp_path, 1, [8] * 4, [8] * 4)]  # t_spmo only
    every = {arm: [8] * 4 for arm in ("grpo", "contrastive", "s_grpo", "t_spmo")}
    without_0 = _pilot_seeds(tmp_path / "no0", {1: every, 2: every})
    three = _pilot_seeds(tmp_path / "three", {0: every, 1: every, 2: every})
    for attempt in (folders, without_0, three):
        with pytest.raises(SystemExit) as exit_info:
            report.main(["pilot", *map(str, attempt)])
        assert exit_info.value.code == 2 and "every arm and grpo of seed 0 and one other" in capsys.readouterr().err


def test_an_arms_run_checks_average_the_first_and_last_ten_logged_steps(tmp_path, capsys):
    report = _report()
    run = tmp_path / "t_spmo-s3"
    run.mkdir()
    steps = [{"step": i, "step_time": 60 + i, "kl": 0.01 * i if i != 7 else 0.9, "countdown/format_rate": 1.0,
              "tspmo/loss_token_share": 0.5 if i <= 10 else 0.25} for i in range(1, 26)]  # fmt: skip
    (run / "log_history.json").write_text(json.dumps([*steps, {"step": 25, "train_runtime": 1.0}]))
    (run / "DONE").write_text(json.dumps({"wall_seconds": 2000, "steps": 25}))
    checks = report.arm_checks(run)
    assert checks["steps"] == 25
    assert checks["windows"]["tspmo/loss_token_share"] == (0.5, 0.25)
    first = (sum(0.01 * i for i in range(1, 11) if i != 7) + 0.9) / 10
    assert checks["windows"]["kl"] == (pytest.approx(first), pytest.approx(sum(0.01 * i for i in range(16, 26)) / 10))
    assert checks["kl_max"] == (0.9, 7)
    assert checks["step_seconds"]["median"] == 73 and checks["step_seconds"]["per_step"] == 80
    assert math.isnan(checks["windows"]["reward"][0])  # not logged: no figure, not a zero
    assert report.main(["arm", str(run)]) == 0 and "max 0.9 at step 7" in capsys.readouterr().out
    (run / "log_history.json").write_text(json.dumps(steps[:19]))
    with pytest.raises(SystemExit) as exit_:
        report.main(["arm", str(run)])
    assert exit_.value.code == 2 and "19 logged steps" in capsys.readouterr().err


def test_the_seed_table_on_hand_counts(tmp_path, capsys):
    report = _report()
    # step 0: 4 of 16 right on every puzzle; grpo at 50: 8 each; t_spmo at 50: 16, 0, 8, 8
    folder = _seed(tmp_path, 6, [8] * 4, [16, 0, 8, 8])
    assert report.main(["seed", str(folder)]) == 0
    rows = {line.split(" | ")[0].strip("| "): line.strip("| ").split(" | ")[1:] for line in
            capsys.readouterr().out.splitlines()[2:]}  # fmt: skip
    # pass@4 of c right of 16 is 1 - C(16-c, 4) / C(16, 4): c = 4 -> 1 - 495/1820, c = 8 -> 1 - 70/1820
    assert rows["pass@1"] == ["0.250", "0.500", "0.500"]
    half = 1 - 70 / 1820
    assert rows["pass@4"] == [f"{1 - 495 / 1820:.3f}", f"{half:.3f}", f"{(1 + 0 + 2 * half) / 4:.3f}"]
    assert rows["pass@16"] == ["1.000", "1.000", "0.750"]
    assert rows["all samples agree"] == ["0.00", "0.00", "0.50"]
