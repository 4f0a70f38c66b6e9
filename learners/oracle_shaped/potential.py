"""The oracle potential at each scoring point of a completion: Φ_n = ±c from the exact reachability of the state the
reasoning is in after paragraph n (see the package docstring). Torch-free."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from countdown_env.puzzle import Puzzle
from countdown_env.solving.oracle import StepOracle
from countdown_env.steps.labels import label_completion


def oracle_potentials(
    token_texts: Sequence[str], scoring_points: Sequence[int], puzzle: Puzzle, oracle: StepOracle, scale: float
) -> np.ndarray | None:
    """Φ_0 … Φ_N at the given token prefix lengths (``Paragraphs.scoring_points``) of a completion given as its
    per-token texts; ``None`` when the reasoning holds a unit the step grammar cannot read (refused: not guessed)."""
    text = "".join(token_texts)
    labels = label_completion(text, puzzle, oracle)
    if not labels.parsed:
        return None
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in token_texts])])
    reachable = [labels.reachable_at(int(offsets[k])) for k in scoring_points]
    return scale * (2.0 * np.array(reachable, dtype=np.float64) - 1.0)
