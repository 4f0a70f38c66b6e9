"""``summary.md``'s prose names the comparison's own settings (a missing ``f`` prefix once printed the literal
``{settings.steps}`` in every summary): built from settings alone, no run trained."""

from __future__ import annotations

import re

from learners.pipeline.compare.settings import CompareSettings
from learners.pipeline.compare.summary import summary_markdown


def test_every_placeholder_of_the_summary_is_filled(tmp_path):
    settings = CompareSettings(learners=["grpo"], seeds=[0], steps=37, eval_every=37, train_size=50, eval_limit=8,
                               max_new_tokens=64, prompts_per_step=2, num_generations=4)  # fmt: skip
    info = dict(model="warm-start", task={"name": "tiny"}, eval_puzzles=8)
    text = summary_markdown(tmp_path, settings, [], {}, info, [])
    assert "Final figures at step 37:" in text
    assert not re.search(r"\{[a-z_]+(\.[a-z_]+)*\}", text), re.findall(r"\{[a-z_.]+\}", text)
