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


def test_the_trainer_settings_line_states_what_the_runs_were_given(tmp_path):
    """The summary once printed the shared defaults (learning_rate 2e-05, temperature 0.8) beside a list of overrides
    that replaced them (R3's preconditions ran at 2e-4 and T = 1.0). It states the values the runs were given, per
    learner where they differ: an ``all.*`` override for both, one learner's own override, the shared default for
    the other."""
    import json

    settings = CompareSettings(learners=["grpo", "s_grpo"], seeds=[0], steps=3, eval_every=3, train_size=8,
                               eval_limit=4, max_new_tokens=16, prompts_per_step=2, num_generations=4,
                               overrides=["all.learning_rate=2e-4", "s_grpo.temperature=1.0"])  # fmt: skip
    info = dict(model="warm-start", task={"name": "tiny"}, eval_puzzles=4)
    text = summary_markdown(tmp_path, settings, [], {}, info, [])
    line = next(line for line in text.splitlines() if "trainer settings" in line)
    per_learner = dict(re.findall(r"(grpo|s_grpo) (\{[^}]*\})", line))
    grpo, s_grpo = json.loads(per_learner["grpo"]), json.loads(per_learner["s_grpo"])
    assert grpo["learning_rate"] == s_grpo["learning_rate"] == 2e-4
    assert (grpo["temperature"], s_grpo["temperature"]) == (0.8, 1.0)
    assert "2e-05" not in line
