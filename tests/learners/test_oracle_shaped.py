"""The oracle-shaped learner: registration and config, the seam on hand-made completions whose states are worked out
by hand, refusal of unreadable reasoning, and two real training steps on the tiny multi-step warm start."""

from __future__ import annotations

import pytest
import torch

# (completion, puzzle, Φ after each scoring point by hand: the numbers, then each paragraph's end)
CASES = [
    # 25 * 3 = 75 leaves {75, 7}: 82 still reachable; then 82 is reached
    ("<reasoning>\nTry 25 * 3 = 75.\n\n75 + 7 = 82. Reached 82.\n</reasoning>\n<solution>25 * 3 + 7</solution>",
     ((25, 3, 7), 82), (5.0, 5.0, 5.0)),
    # 25 + 3 = 28 leaves {28, 7}: 82 is out of reach (28+7, 28*7, 28-7, 28/7 and 28, 7 themselves all miss)
    ("<reasoning>\nTry 25 + 3 = 28.\n\n28 * 7 = 196.\n</reasoning>\n<solution>28 * 7</solution>",
     ((25, 3, 7), 82), (5.0, -5.0, -5.0)),
    # a dead end, then the right attempt: the paragraph ending in "Dead end." is back at the numbers
    ("<reasoning>\nTry 25 + 3 = 28. Dead end.\n\nTry 25 * 3 = 75. 75 + 7 = 82.\n</reasoning>\n<solution>x</solution>",
     ((25, 3, 7), 82), (5.0, 5.0, 5.0)),
]  # fmt: skip
UNREADABLE = "<reasoning>\nTry 25 * 3 + 7 = 82.\n</reasoning>\n<solution>25 * 3 + 7</solution>"


def _config(kwargs, **overrides):
    from learners.oracle_shaped import OracleShapedConfig

    return OracleShapedConfig(**{**kwargs, **overrides})


def test_registered_with_prime_rl_preset_and_config_checks(cpu_grpo_kwargs):
    from learners.core.registry import get_learner

    config = get_learner("oracle_shaped").make_config(**cpu_grpo_kwargs)
    assert type(config).__name__ == "OracleShapedConfig" and config.dppo_mask_low == 0.2  # prime-rl's loss
    for bad in ({"potential_scale": 0.0}, {"shaping_gamma": 1.5}, {"max_paragraph_len": 0}):
        with pytest.raises(ValueError):
            _config(cpu_grpo_kwargs, **bad)


def _batch(trainer, completions, puzzles, advantages):
    tokenizer = trainer.processing_class
    eos, pad = tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.pad_token_id
    prompts = [tokenizer.encode(f"Numbers: {n}\nTarget: {t}", add_special_tokens=False) for n, t in puzzles]
    ids = [tokenizer.encode(c, add_special_tokens=False) + [eos] for c in completions]
    assert [tokenizer.decode(i[:-1]) for i in ids] == completions  # the character tokenizer reads them as written
    p_len, c_len = max(map(len, prompts)), max(map(len, ids))
    trainer.max_completion_length = max(trainer.max_completion_length, c_len)
    batch = {
        "prompt_ids": torch.tensor([[pad] * (p_len - len(p)) + p for p in prompts]),
        "prompt_mask": torch.tensor([[0] * (p_len - len(p)) + [1] * len(p) for p in prompts]),
        "completion_ids": torch.tensor([c + [pad] * (c_len - len(c)) for c in ids]),
        "completion_mask": torch.tensor([[1] * len(c) + [0] * (c_len - len(c)) for c in ids]),
        "advantages": torch.tensor(advantages),
    }
    inputs = [{"numbers": list(n), "target": t} for n, t in puzzles]
    rollout = trainer.make_rollout(batch, inputs, torch.zeros(len(puzzles), 1))
    return batch, rollout, ids


def test_shape_batch_adds_the_oracle_terms_and_refuses_unreadable_rows(make_trainer, cpu_grpo_kwargs):
    from learners.oracle_shaped import OracleShapedTrainer
    from learners.pipeline.models import SHIPPED_MULTI_STEP_DIR

    args = _config(cpu_grpo_kwargs, filter_zero_advantages=False)
    trainer = make_trainer(OracleShapedTrainer, args, reward_funcs=None, model_dir=SHIPPED_MULTI_STEP_DIR)
    completions = [c for c, _, _ in CASES] + [UNREADABLE]
    puzzles = [p for _, p, _ in CASES] + [CASES[0][1]]
    batch, rollout, ids = _batch(trainer, completions, puzzles, [0.5, -0.5, 0.5, 0.25])
    out = trainer.shape_batch(batch, rollout)["advantages"]
    assert out.shape == batch["completion_ids"].shape
    for i, (completion, _, phi) in enumerate(CASES):
        terms = [0.1 * (0.99 * phi[n] - phi[n - 1]) for n in (1, 2)]  # β(γΦ_n − Φ_{n−1})
        n_tokens = len(ids[i])
        blank = completion.index("\n\n") + 2  # paragraph 2 starts after the blank line
        second = len(trainer.processing_class.encode(completion[:blank], add_special_tokens=False))
        torch.testing.assert_close(out[i, :second], torch.full((second,), 0.5 * (-1) ** (i == 1) + terms[0]))
        expected = torch.full((n_tokens - second,), 0.5 * (-1) ** (i == 1) + terms[1])
        torch.testing.assert_close(out[i, second:n_tokens], expected)
    assert torch.all(out[3, : len(ids[3])] == 0.25)  # refused: the plain advantage
    logged = trainer._metrics["train"]
    assert logged["oracle_shaped/unparsed_row_frac"][-1] == pytest.approx(0.25)
    assert logged["oracle_shaped/shaped_row_frac"][-1] == pytest.approx(0.75)


@pytest.mark.slow
def test_two_training_steps_on_the_multi_step_warm_start(make_trainer, cpu_grpo_kwargs):
    """Real TRL steps from the shipped multi-step warm start, which writes the trace grammar the oracle reads."""
    from learners.oracle_shaped import OracleShapedTrainer
    from learners.pipeline.models import SHIPPED_MULTI_STEP_DIR

    seen = []

    class Spy(OracleShapedTrainer):
        def shape_batch(self, batch, rollout):
            before = batch["advantages"].clone()
            out = super().shape_batch(batch, rollout)
            seen.append((before, out["advantages"].clone(), out["completion_mask"].clone()))
            return out

    args = _config(cpu_grpo_kwargs, max_completion_length=256, temperature=1.0)
    trainer = make_trainer(Spy, args, reward_funcs=None, model_dir=SHIPPED_MULTI_STEP_DIR)
    weights = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2 and len(seen) == 2
    shaped_rows = 0
    for before, after, mask in seen:
        shaping = (after - (before[:, None] if before.dim() == 1 else before)) * mask
        assert shaping.abs().max() <= 0.1 * (0.99 * 5 + 5) + 1e-6  # |A_n| <= β(γc + c)
        shaped_rows += int((shaping.abs().sum(dim=1) > 0).sum())
    assert shaped_rows > 0  # the warm start's reasoning was read and shaped
    assert any(not torch.equal(weights[n], p.detach()) for n, p in trainer.model.named_parameters())
    logs = [e for e in trainer.state.log_history if "oracle_shaped/shaped_row_frac" in e]
    assert logs and max(e["oracle_shaped/shaped_row_frac"] for e in logs) > 0
