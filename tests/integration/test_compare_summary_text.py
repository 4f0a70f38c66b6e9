"""``summary.md``'s prose names the comparison's own settings (a missing ``f`` prefix once printed the literal
``{settings.max_steps}`` in every summary): built from settings alone, no run trained."""

from __future__ import annotations

import re

from learners.pipeline.compare.settings import CompareSettings
from learners.pipeline.compare.summary import summary_markdown


def test_every_placeholder_of_the_summary_is_filled(tmp_path):
    settings = CompareSettings(learners=["grpo"], seeds=[0], max_steps=37, eval_every=37, train_size=50, eval_limit=8,
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

    settings = CompareSettings(learners=["grpo", "s_grpo"], seeds=[0], max_steps=3, eval_every=3, train_size=8,
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


def test_a_learners_trainer_settings_layer_the_preset_its_defaults_the_sizes_and_the_sets(tmp_path):
    """One learner's trainer keywords: the ``compare`` preset's trainer section (values written here by hand), under
    the learner's registry defaults, the comparison's sizes and seed, then ``all.*`` and ``LEARNER.*``."""
    from learners.core.registry import get_learner
    from learners.pipeline.compare.settings import learner_trainer_kwargs, shared_trainer_settings

    assert shared_trainer_settings() == {
        "learning_rate": 2e-5, "lr_scheduler_type": "constant", "warmup_steps": 0, "temperature": 0.8, "top_k": 0,
        "max_grad_norm": 1.0, "logging_steps": 1, "save_strategy": "steps", "save_total_limit": 2,
        "disable_tqdm": True, "dataloader_num_workers": 0, "report_to": "none", "gradient_checkpointing": False,
    }  # fmt: skip
    settings = CompareSettings(learners=["grpo", "dapo"], seeds=[3], max_steps=5, eval_every=5, train_size=8,
                               eval_limit=4, max_new_tokens=16, prompts_per_step=2, num_generations=4,
                               overrides=["all.top_k=5", "dapo.temperature=1.0"])  # fmt: skip
    grpo = learner_trainer_kwargs(settings, "grpo", 3, tmp_path)
    dapo = learner_trainer_kwargs(settings, "dapo", 3, tmp_path)
    assert (grpo["learning_rate"], grpo["temperature"], grpo["top_k"]) == (2e-5, 0.8, 5)
    assert (dapo["temperature"], dapo["top_k"]) == (1.0, 5)
    assert (grpo["max_steps"], grpo["save_steps"], grpo["seed"], grpo["max_completion_length"]) == (5, 5, 3, 16)
    assert grpo["per_device_train_batch_size"] == 8 and grpo["output_dir"] == str(tmp_path)
    for key in get_learner("dapo").defaults:  # the registry's value is left to make_config, not overwritten
        assert key not in dapo or key in ("temperature", "top_k")
