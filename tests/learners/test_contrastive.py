"""The contrastive-shaping learner: config and base preset, the seam on a hand-made batch, homogeneous fallback,
training. Expected shaping values are computed here by hand from hand-made log-likelihoods."""

from __future__ import annotations

import math

import pytest
import torch


def _config(kwargs, **overrides):
    from learners.contrastive import ContrastiveConfig

    return ContrastiveConfig(**{**kwargs, **overrides})


def _contrastive(make_trainer, args, trainer_class=None, **extra):
    from learners.contrastive import ContrastiveTrainer

    return make_trainer(trainer_class or ContrastiveTrainer, args, reward_funcs=None, **extra)


def test_config_rejects_bad_values(cpu_grpo_kwargs):
    for bad, match in [
        (dict(potential_tau=0.0), "potential_tau"),
        (dict(potential_clip=-1.0), "potential_clip"),
        (dict(shaping_gamma=1.5), "shaping_gamma"),
        (dict(max_paragraph_len=0), "max_paragraph_len"),
        (dict(ground_truth_mode="maybe"), "ground_truth_mode"),
        (dict(scorer="stale"), "scorer must be"),
        (dict(scorer_engine="turbo"), "scorer_engine"),
        (dict(scorer_engine="vllm"), "scorer_model_name_or_path"),
        (dict(scorer_kv_slack=-0.1), "scorer_kv_slack"),
        (dict(base_learner="ppo"), "base_learner"),
    ]:
        with pytest.raises(ValueError, match=match):
            _config(cpu_grpo_kwargs, **bad)
    cfg = _config(cpu_grpo_kwargs)
    assert (cfg.shaping_beta, cfg.shaping_gamma, cfg.potential_clip, cfg.max_paragraph_len) == (0.1, 0.99, 5.0, 128)


def test_base_learner_presets(cpu_grpo_kwargs):
    from learners.contrastive.config import BASE_LEARNERS, PRESET_FIELDS
    from learners.core.registry import get_learner
    from learners.grpo import PRESETS

    assert {"grpo", "dr_grpo", "dapo", "prime_rl", "cispo"} <= set(BASE_LEARNERS) and "gspo" not in BASE_LEARNERS
    # every field of those presets can come from base_learner
    assert set(PRESET_FIELDS) == set().union(*(PRESETS[name] for name in BASE_LEARNERS))
    with pytest.raises(ValueError, match="base_learner must be one of"):
        _config(cpu_grpo_kwargs, base_learner="gspo")  # sets importance_sampling_level, not a deferred field
    prime = _config(cpu_grpo_kwargs)  # the shaping post: prime-rl's defaults
    assert prime.base_learner == "prime_rl"
    assert (prime.loss_type, prime.scale_rewards, prime.kl_tau, prime.dppo_mask_low, prime.dppo_mask_high) == (
        "dapo", "none", 1e-3, 0.2, 0.2,
    )  # fmt: skip
    assert math.isinf(prime.epsilon) and prime.filter_zero_advantages and prime.uses_prime_rl_loss
    trl = _config(cpu_grpo_kwargs, base_learner="grpo")  # TRL-default GRPO, for ablation
    assert (trl.loss_type, trl.scale_rewards, trl.epsilon, trl.kl_tau) == ("grpo", "group", 0.2, 0.0)
    assert trl.dppo_mask_low is None and not trl.filter_zero_advantages and trl.vllm_importance_sampling_correction
    # an explicit value wins, even one equal to TRL's default
    assert _config(cpu_grpo_kwargs, scale_rewards="group").scale_rewards == "group"
    assert get_learner("contrastive").make_config(**cpu_grpo_kwargs).base_learner == "prime_rl"
    assert get_learner("contrastive_grpo").make_config(**cpu_grpo_kwargs).loss_type == "grpo"


def test_submitted_answer_is_verbatim():
    from learners.contrastive import submitted_answer

    text = "<reasoning>\nx\n</reasoning>\n<solution>\n(10 * 9) - 42\n</solution>"
    assert submitted_answer(text) == "\n(10 * 9) - 42\n"
    assert submitted_answer("<solution>1</solution> <solution> 2 </solution>") == " 2 "
    assert submitted_answer("<answer>3</answer>", tag="answer") == "3"
    assert submitted_answer("<solution>1+2") is None
    assert submitted_answer("no tags") is None


# Group 0 (puzzle 3,7,11 -> 21): two correct, one wrong, one without an answer -> shaped.
# Group 1 (puzzle 2,5,9 -> 19): all wrong -> homogeneous, plain GRPO.
COMPLETIONS = [
    "<reasoning>\n3+7=10\n\n10+11=21\n</reasoning>\n<solution>3+7+11</solution>",
    "<reasoning>\n11*3=33\n\nno. 7*3=21\n</reasoning>\n<solution>7*3</solution>",
    "<reasoning>\n7*3=21\n</reasoning>\n<solution>7*3-11</solution>",
    "<reasoning>\nhmm\n\nhmm\n",
    "<reasoning>\n2*9=18\n</reasoning>\n<solution>2*9</solution>",
    "<reasoning>\n9+5=14\n</reasoning>\n<solution>9+5</solution>",
    "<reasoning>\n5*2=10\n</reasoning>\n<solution>5*2-9</solution>",
    "<reasoning>\n?\n</reasoning>\n<solution>19</solution>",
]
PUZZLES = [((3, 7, 11), 21)] * 4 + [((2, 5, 9), 19)] * 4


def _hand_made_batch(trainer):
    """A batch as TRL hands it to seam 1 (left-padded prompts, right-padded completions ending in EOS) and its
    rollout."""
    tokenizer = trainer.processing_class
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad = tokenizer.pad_token_id
    prompts = [tokenizer.encode(f"Numbers: {n}\nTarget: {t}", add_special_tokens=False) for n, t in PUZZLES]
    completions = [tokenizer.encode(c, add_special_tokens=False) + [eos] for c in COMPLETIONS]
    completions[3] = completions[3][:-1]  # no EOS, no answer
    p_len, c_len = max(map(len, prompts)), max(map(len, completions))
    trainer.max_completion_length = max(trainer.max_completion_length, c_len)  # as TRL's: within the budget
    batch = {
        "prompt_ids": torch.tensor([[pad] * (p_len - len(p)) + p for p in prompts]),
        "prompt_mask": torch.tensor([[0] * (p_len - len(p)) + [1] * len(p) for p in prompts]),
        "completion_ids": torch.tensor([c + [pad] * (c_len - len(c)) for c in completions]),
        "completion_mask": torch.tensor([[1] * len(c) + [0] * (c_len - len(c)) for c in completions]),
        "advantages": torch.tensor([0.8, 0.8, -0.8, -0.8, 0.0, 0.0, 0.0, 0.0]),
    }
    rewards = torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    inputs = [{"numbers": list(n), "target": t} for n, t in PUZZLES]
    rollout = trainer.make_rollout(batch, inputs, rewards[:, None])  # verdicts scored once, as in training
    return batch, rollout, prompts, completions


# Hand-made log-likelihoods ℓ(a | prefix n) by answer text, n = 0, 1, 2 (rows with one paragraph use n = 0, 1).
LOGLIK = {"3+7+11": (-3.0, -2.0, -1.0), "7*3": (-2.5, -2.5, -3.0), "7*3-11": (-2.0, -3.0, -4.0)}
# Group 0 with the character tokenizer (one token per character, tags one token each), split at blank lines:
# (tokens of paragraph 1 incl. "<reasoning>" "\n", number of paragraphs); the last paragraph owns the tail.
PARAGRAPHS = [(10, 2), (11, 2), (19, 1), (7, 2)]


class _HandScorer:
    """Returns LOGLIK for each scoring point, keyed by the decoded span; records the answers it was asked for."""

    def __init__(self, tokenizer):
        self.tokenizer, self.asked = tokenizer, []

    def score(self, jobs):
        import numpy as np

        out = []
        for job in jobs:
            texts = [self.tokenizer.decode(list(a.span)) for a in job.answers]
            self.asked.append(texts)
            out.append(np.array([[LOGLIK[t][i] for t in texts] for i in range(len(job.cuts))]))
        return out


def _lse(values):
    return math.log(sum(math.exp(v) for v in values) / len(values))


def test_shape_batch_adds_the_paragraph_terms(make_trainer, cpu_grpo_kwargs):
    trainer = _contrastive(make_trainer, _config(cpu_grpo_kwargs))
    scorer = _HandScorer(trainer.processing_class)
    trainer._get_scorer = lambda: scorer
    batch, rollout, _, completions = _hand_made_batch(trainer)
    before = batch["advantages"].clone()
    out = trainer.shape_batch(batch, rollout)
    adv = out["advantages"]
    assert adv.shape == batch["completion_ids"].shape
    # B+ = {3+7+11, 7*3}, B- = {7*3-11}, sorted; row 3 submitted nothing
    assert scorer.asked == [["3+7+11", "7*3", "7*3-11"]] * 4

    def phi(n):
        return _lse([LOGLIK["3+7+11"][n], LOGLIK["7*3"][n]]) - _lse([LOGLIK["7*3-11"][n]])

    # A_n = β(γΦ_n − Φ_{n−1}) with β = 0.1, γ = 0.99; |Φ| < 5, so the clip does not act. Φ ≈ (-0.719, 0.781, 2.434)
    terms = [0.1 * (0.99 * phi(1) - phi(0)), 0.1 * (0.99 * phi(2) - phi(1))]
    assert [round(phi(n), 3) for n in range(3)] == [-0.719, 0.781, 2.434]
    for i, (first, count) in enumerate(PARAGRAPHS):
        n = len(completions[i])
        expected = torch.full((n,), before[i].item() + terms[0])
        if count == 2:
            expected[first:] = before[i].item() + terms[1]
        torch.testing.assert_close(adv[i, :n], expected, atol=1e-6, rtol=0)
        assert torch.all(adv[i, n:] == before[i])  # padding carries no shaping
    for i in range(4, 8):  # homogeneous group 1: plain advantages (0), and prime-rl drops zero-advantage tokens
        assert torch.all(adv[i] == before[i])
        assert trainer.loss_mask(out)[i].sum() == 0
    assert trainer.loss_mask(out)[:4].sum() == sum(len(c) for c in completions[:4])


@pytest.mark.slow
def test_ground_truth_makes_an_all_wrong_group_informative(make_trainer, cpu_grpo_kwargs):
    args = _config(cpu_grpo_kwargs, ground_truth_mode="when_all_wrong")
    trainer = _contrastive(make_trainer, args)
    batch, rollout, _, completions = _hand_made_batch(trainer)
    before = batch["advantages"].clone()
    adv = trainer.shape_batch(batch, rollout)["advantages"]
    # group 1 had no correct answer: with a* in B+ it is shaped now, so its tokens differ from the GRPO value
    assert any(not torch.all(adv[i, : len(completions[i])] == before[i]) for i in range(4, 8))
    assert trainer._ground_truths  # a* came from the solver


def _answers_by_hand(base):
    """The tiny random model writes no answers: give every group an alternating correct and wrong one."""

    class AnswersByHand(base):
        def _local_rows(self, batch, rollout):
            rows = super()._local_rows(batch, rollout)
            for i, row in enumerate(rows):
                row.answer, row.correct, row.truncated = ("1+2", True, False) if i % 2 else ("2*2", False, False)
            return rows

    return AnswersByHand


@pytest.mark.slow
def test_two_training_steps_with_shaping(make_trainer, cpu_grpo_kwargs):
    """Real TRL steps; half the rows are given a correct answer by hand, so every group is shaped."""
    from learners.contrastive import ContrastiveTrainer

    seen = []

    class Spy(_answers_by_hand(ContrastiveTrainer)):
        def shape_batch(self, batch, rollout):
            before = batch["advantages"].clone()
            out = super().shape_batch(batch, rollout)
            seen.append((before, out["advantages"].clone(), out["completion_mask"].clone()))
            return out

    args = _config(cpu_grpo_kwargs, max_paragraph_len=4, scorer="moving", max_completion_length=12, num_iterations=2)
    trainer = _contrastive(make_trainer, args, trainer_class=Spy)
    weights = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2 and len(seen) == 1  # num_iterations=2: one generation, two updates
    for before, after, mask in seen:
        assert after.shape == mask.shape
        shaping = (after - before[:, None]) * mask
        assert shaping.abs().sum() > 0  # every group had a contrast, so paragraphs were shaped
        assert shaping.abs().max() <= 0.1 * (0.99 * 5 + 5) + 1e-6  # |A_n| <= β(γ·clip + clip)
    moved = [n for n, p in trainer.model.named_parameters() if not torch.equal(weights[n], p.detach())]
    assert moved
    logs = [e for e in trainer.state.log_history if "contrastive/shaped_row_frac" in e]
    assert logs and logs[0]["contrastive/shaped_row_frac"] > 0
    assert any("prime_rl/is_masked" in e for e in trainer.state.log_history)  # prime-rl's loss ran (π_old exists)


@pytest.mark.slow
def test_frozen_scorer_stays_frozen(make_trainer, cpu_grpo_kwargs):
    from learners.contrastive import ContrastiveTrainer

    args = _config(cpu_grpo_kwargs, max_steps=1, max_paragraph_len=4)
    trainer = _contrastive(make_trainer, args, trainer_class=_answers_by_hand(ContrastiveTrainer))
    frozen = {n: p.detach().clone() for n, p in trainer._frozen_model.named_parameters()}
    ids = torch.arange(3, 19).reshape(2, 8)
    with torch.no_grad():
        before = trainer._frozen_model(input_ids=ids).logits.clone()
    trainer.train()
    assert all(torch.equal(frozen[n], p) for n, p in trainer._frozen_model.named_parameters())
    assert not all(p.requires_grad for p in trainer._frozen_model.parameters())
    policy = dict(trainer.model.named_parameters())
    assert any(not torch.equal(frozen[n], policy[n].detach()) for n in frozen)
    # the scorer's *outputs* stay frozen too: TRL patches the policy's forward with a closure over the policy itself,
    # which a plain deepcopy would share (the copy's forward would then run the live policy)
    live = trainer.accelerator.unwrap_model(trainer.model)
    with torch.no_grad():
        after = trainer._frozen_model(input_ids=ids).logits
        moved = live.eval()(input_ids=ids).logits
    assert torch.equal(before, after)
    assert not torch.allclose(moved, before)


@pytest.mark.parametrize("engine", ["naive", "prefix_shared"])
def test_transformers_scorers_are_refused_under_sharded_parameters(engine, make_trainer, cpu_grpo_kwargs, monkeypatch):
    """Under FSDP or ZeRO-3 (every forward a collective of all processes) a transformers scorer would score each
    process's own number of rollouts with a frozen copy holding one shard: refused at construction, with the way
    out. (ZeRO-3 itself runs in tests/multiproc/test_deepspeed.py where deepspeed is installed.)"""
    monkeypatch.setattr("learners.contrastive.trainer.lockstep_forward", lambda trainer: True)
    with pytest.raises(ValueError, match=f"scorer_engine '{engine}' does not support sharded parameters.*vllm"):
        _contrastive(make_trainer, _config(cpu_grpo_kwargs, scorer_engine=engine))
