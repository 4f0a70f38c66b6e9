"""The contrastive-shaping learner: config checks, the seam on a hand-made batch, homogeneous fallback, training."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from learners.contrastive.paragraphs import split_paragraphs, token_texts
from learners.contrastive.potential import contrastive_potential, shaping_terms
from learners.contrastive.scoring import NaiveScorer, ScoringJob, answer_format
from learners.core.trainer import Rollout


def _config(kwargs, **overrides):
    from learners.contrastive import ContrastiveConfig

    return ContrastiveConfig(**{**kwargs, **overrides})


def _trainer(model_dir, dataset, args, trainer_class=None, **extra):
    from transformers import AutoModelForCausalLM

    from learners.contrastive import ContrastiveTrainer
    from learners.pipeline.tiny import load_tokenizer

    return (trainer_class or ContrastiveTrainer)(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        args=args,
        train_dataset=dataset,
        processing_class=load_tokenizer(model_dir),
        **extra,
    )


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
    ]:
        with pytest.raises(ValueError, match=match):
            _config(cpu_grpo_kwargs, **bad)
    cfg = _config(cpu_grpo_kwargs)
    assert (cfg.shaping_beta, cfg.shaping_gamma, cfg.potential_clip, cfg.max_paragraph_len) == (0.1, 0.99, 5.0, 128)


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


def _hand_made_batch(tokenizer):
    """A batch as TRL hands it to seam 1: left-padded prompts, right-padded completions ending in EOS."""
    from countdown_env import Puzzle

    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad = tokenizer.pad_token_id
    prompts = [tokenizer.encode(f"Numbers: {n}\nTarget: {t}", add_special_tokens=False) for n, t in PUZZLES]
    completions = [tokenizer.encode(c, add_special_tokens=False) + [eos] for c in COMPLETIONS]
    completions[3] = completions[3][:-1]  # no EOS: truncated
    p_len, c_len = max(map(len, prompts)), max(map(len, completions))
    batch = {
        "prompt_ids": torch.tensor([[pad] * (p_len - len(p)) + p for p in prompts]),
        "prompt_mask": torch.tensor([[0] * (p_len - len(p)) + [1] * len(p) for p in prompts]),
        "completion_ids": torch.tensor([c + [pad] * (c_len - len(c)) for c in completions]),
        "completion_mask": torch.tensor([[1] * len(c) + [0] * (c_len - len(c)) for c in completions]),
        "advantages": torch.tensor([0.8, 0.8, -0.8, -0.8, 0.0, 0.0, 0.0, 0.0]),
    }
    rewards = torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    rollout = Rollout(
        rewards=rewards,
        rewards_per_func=rewards[:, None],
        num_generations=4,
        process_slice=slice(0, 8),
        inputs=[{"numbers": list(n), "target": t} for n, t in PUZZLES],
        puzzles=[Puzzle(n, t) for n, t in PUZZLES],
    )
    return batch, rollout, prompts, completions


@pytest.mark.slow
def test_shape_batch_adds_the_paragraph_terms(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    # a wide clip: the random tiny model's raw potentials often exceed 5, which would make every term equal
    args = _config(cpu_grpo_kwargs, max_paragraph_len=8, potential_clip=50.0)
    trainer = _trainer(tiny_model_dir, toy_prompt_dataset, args)
    tokenizer = trainer.processing_class
    batch, rollout, prompts, completions = _hand_made_batch(tokenizer)
    before = batch["advantages"].clone()
    out = trainer.shape_batch(batch, rollout)
    adv = out["advantages"]
    assert adv.shape == batch["completion_ids"].shape

    # homogeneous group 1: plain GRPO advantages on every token
    for i in range(4, 8):
        assert torch.all(adv[i] == before[i])

    # group 0: recompute the expected shaping independently with the naive engine
    bank_pos, bank_neg = ["3+7+11", "7*3"], ["7*3-11"]  # row 3 submitted nothing
    bridge, encode = answer_format(tokenizer)
    answers = tuple(encode(a) for a in bank_pos + bank_neg)
    for i in range(4):
        para = split_paragraphs(token_texts(tokenizer, completions[i]), max_paragraph_len=8)
        cuts = tuple(len(prompts[i]) + k for k in para.scoring_points)
        (ll,) = NaiveScorer(trainer._frozen_model).score(
            [ScoringJob(tuple(prompts[i] + completions[i]), cuts, bridge, answers)]
        )
        terms = shaping_terms(contrastive_potential(ll[:, :2], ll[:, 2:], clip=50.0))
        expected = before[i] + torch.tensor(terms)[torch.from_numpy(para.paragraph_of_token())]
        got = adv[i, : len(completions[i])]
        torch.testing.assert_close(got, expected.float(), atol=1e-4, rtol=0)
        if i < 2:  # rows with several paragraphs: the paragraphs get different terms
            assert para.count >= 2 and len(set(np.round(terms, 6))) > 1
        # every token of a paragraph carries the same value
        owner = para.paragraph_of_token()
        for n in range(para.count):
            assert torch.unique(got[torch.from_numpy(owner == n)]).numel() == 1
        assert torch.all(adv[i, len(completions[i]) :] == before[i])  # padding carries no shaping


@pytest.mark.slow
def test_ground_truth_makes_an_all_wrong_group_informative(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    args = _config(cpu_grpo_kwargs, ground_truth_mode="when_all_wrong")
    trainer = _trainer(tiny_model_dir, toy_prompt_dataset, args)
    batch, rollout, _, completions = _hand_made_batch(trainer.processing_class)
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
def test_two_training_steps_with_shaping(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    """Real TRL steps; half the rows are given a correct answer by hand, so every group is shaped."""
    from learners.contrastive import ContrastiveTrainer

    seen = []

    class Spy(_answers_by_hand(ContrastiveTrainer)):
        def shape_batch(self, batch, rollout):
            before = batch["advantages"].clone()
            out = super().shape_batch(batch, rollout)
            seen.append((before, out["advantages"].clone(), out["completion_mask"].clone()))
            return out

    args = _config(cpu_grpo_kwargs, max_paragraph_len=4, scorer="moving", max_completion_length=12)
    trainer = _trainer(tiny_model_dir, toy_prompt_dataset, args, trainer_class=Spy)
    weights = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2 and len(seen) == 2
    for before, after, mask in seen:
        assert after.shape == mask.shape
        shaping = (after - before[:, None]) * mask
        assert shaping.abs().sum() > 0  # every group had a contrast, so paragraphs were shaped
        assert shaping.abs().max() <= 0.1 * (0.99 * 5 + 5) + 1e-6  # |A_n| <= β(γ·clip + clip)
    moved = [n for n, p in trainer.model.named_parameters() if not torch.equal(weights[n], p.detach())]
    assert moved
    logs = [e for e in trainer.state.log_history if "contrastive/shaped_row_frac" in e]
    assert logs and logs[0]["contrastive/shaped_row_frac"] > 0


@pytest.mark.slow
def test_frozen_scorer_stays_frozen(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from learners.contrastive import ContrastiveTrainer

    args = _config(cpu_grpo_kwargs, max_steps=1, max_paragraph_len=4)
    trainer = _trainer(tiny_model_dir, toy_prompt_dataset, args, trainer_class=_answers_by_hand(ContrastiveTrainer))
    frozen = {n: p.detach().clone() for n, p in trainer._frozen_model.named_parameters()}
    trainer.train()
    assert all(torch.equal(frozen[n], p) for n, p in trainer._frozen_model.named_parameters())
    assert not all(p.requires_grad for p in trainer._frozen_model.parameters())
    policy = dict(trainer.model.named_parameters())
    assert any(not torch.equal(frozen[n], policy[n].detach()) for n in frozen)
