"""E8's committed figures, recomputed from its committed states with code of the test's own (bootstrap aside)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

OUT = Path(__file__).resolve().parents[2] / "experiments" / "results" / "monte_carlo_vs_exact_values"


def ranking(states: list[dict], k: int) -> float:
    agree = pairs = 0.0
    for prompt in {s["prompt"] for s in states}:
        group = [s for s in states if s["prompt"] == prompt]
        good = [sum(s["successes"][:k]) / k for s in group if s["exact"]]
        bad = [sum(s["successes"][:k]) / k for s in group if not s["exact"]]
        for g in good:
            for b in bad:
                agree += 1.0 if g > b else 0.5 if g == b else 0.0
                pairs += 1
    return agree / pairs


def test_every_figure_recomputes_from_the_states():
    states = [json.loads(line) for line in gzip.decompress((OUT / "states.jsonl.gz").read_bytes()).splitlines()]
    report = json.loads((OUT / "results.json").read_text())
    for model, block in report["models"].items():
        mine = [s for s in states if s["model"] == model]
        figures = block["figures"]
        assert figures["states"] == len(mine) and figures["solvable"] == sum(s["exact"] for s in mine)
        assert all(len(s["successes"]) == 64 for s in mine)
        for k, entry in figures["k_curve"].items():
            assert entry["ranking"] == pytest.approx(ranking(mine, int(k)))
        reaching = next((int(k) for k, e in figures["k_curve"].items() if ranking(mine, int(k)) >= 0.9), None)
        assert figures["smallest_k_reaching"] == reaching
        solvable = [s for s in mine if s["exact"]]
        unsolvable = [s for s in mine if not s["exact"]]
        assert figures["never_solved_though_solvable"] == pytest.approx(
            sum(not any(s["successes"]) for s in solvable) / len(solvable)
        )
        assert figures["solved_though_unsolvable"] == pytest.approx(
            sum(any(s["successes"]) for s in unsolvable) / len(unsolvable)
        )
