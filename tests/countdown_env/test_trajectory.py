"""score_trajectories: episode-end rules (EOS, stop ids, truncation, padding), rewards, logprobs, errors."""

from __future__ import annotations

import numpy as np
import pytest

from countdown_env.prompts import format_completion
from countdown_env.puzzle import Puzzle
from countdown_env.rewards import RewardConfig, score_completion
from countdown_env.trajectory import Trajectory, score_trajectories

PUZZLE = Puzzle([3, 7, 11], 21)
RIGHT = format_completion("3 times 7 is 21", "3 * 7")
WRONG = format_completion("11 plus 7 is 18", "11 + 7")


def ids(tok, text, *extra):
    return [*tok.encode(text), *extra]


def test_terminated_row_keeps_eos_in_ids_not_in_text(char_tokenizer):
    tok = char_tokenizer
    row = ids(tok, RIGHT, tok.eos_token_id)
    (t,) = score_trajectories([PUZZLE], [row], tok, prompt_ids=[[5, 6, 7]])
    assert isinstance(t, Trajectory)
    assert t.completion_text == RIGHT
    assert t.completion_ids.tolist() == row and t.completion_ids.dtype == np.int64
    assert t.prompt_ids.tolist() == [5, 6, 7]
    assert t.reward == 1.0 and t.verification.correct and t.format_ok and not t.truncated
    rewards = t.token_rewards
    assert rewards.shape == (len(row),) and rewards[-1] == 1.0 and rewards.sum() == 1.0
    assert t.input_ids.tolist() == [5, 6, 7, *row]


def test_padding_after_eos_is_dropped(char_tokenizer):
    tok = char_tokenizer
    row = ids(tok, WRONG, tok.eos_token_id, tok.pad_token_id, tok.pad_token_id, *tok.encode("junk"))
    (t,) = score_trajectories([PUZZLE], [np.array(row)], tok)
    assert len(t.completion_ids) == len(WRONG) + 1
    assert t.completion_text == WRONG
    assert t.reward == 0.0 and t.verification.reason == "wrong_value"
    assert t.prompt_ids.shape == (0,)


def test_stop_ids_end_like_eos(char_tokenizer):
    tok = char_tokenizer
    row = ids(tok, RIGHT, tok.stop_token_id, *tok.encode(" 11 + 7"))
    (plain,) = score_trajectories([PUZZLE], [row], tok)
    assert plain.completion_text.endswith("<stop> 11 + 7")
    (stopped,) = score_trajectories([PUZZLE], [row], tok, stop_ids=[tok.stop_token_id])
    assert stopped.completion_text == RIGHT and stopped.completion_ids[-1] == tok.stop_token_id
    assert stopped.reward == 1.0


@pytest.mark.parametrize("mode, expected", [("zero", 0.0), ("score", 1.0)])
def test_truncation_at_budget(char_tokenizer, mode, expected):
    tok = char_tokenizer
    budget = len(RIGHT)
    row = ids(tok, RIGHT, tok.eos_token_id)  # the EOS lies one past the budget
    (t,) = score_trajectories([PUZZLE], [row], tok, max_new_tokens=budget, truncation_reward=mode)
    assert t.truncated and len(t.completion_ids) == budget and t.completion_text == RIGHT
    assert t.verification.correct  # verified either way; only the reward depends on the mode
    assert t.reward == expected and t.token_rewards[-1] == expected


def test_eos_as_last_budget_token_terminates(char_tokenizer):
    tok = char_tokenizer
    row = ids(tok, RIGHT, tok.eos_token_id)
    (t,) = score_trajectories([PUZZLE], [row], tok, max_new_tokens=len(row))
    assert not t.truncated and t.reward == 1.0


def test_short_row_without_eos_is_complete_not_truncated(char_tokenizer):
    tok = char_tokenizer
    (t,) = score_trajectories([PUZZLE], [ids(tok, RIGHT)], tok, max_new_tokens=len(RIGHT) + 5)
    assert not t.truncated and t.reward == 1.0 and len(t.completion_ids) == len(RIGHT)


def test_rewards_match_score_completion_for_a_batch(char_tokenizer):
    tok = char_tokenizer
    config = RewardConfig(format_bonus=0.25)
    texts = [RIGHT, WRONG, "3 * 7", "<solution>3 * 7</solution>", "", RIGHT + " trailing"]
    puzzles = [PUZZLE, PUZZLE.to_dict(), PUZZLE, PUZZLE, PUZZLE, Puzzle([1, 2], 3)]
    rows = [ids(tok, t, tok.eos_token_id) for t in texts]
    out = score_trajectories(puzzles, rows, tok, reward_config=config)
    for traj, text, puzzle in zip(out, texts, puzzles, strict=True):
        expected = score_completion(text, Puzzle.from_dict(puzzle) if isinstance(puzzle, dict) else puzzle, config)
        assert traj.reward == expected.reward
        assert traj.verification == expected.verification and traj.format_ok == expected.format_ok
    assert out[0].reward == 1.25 and out[1].reward == 0.25 and out[1].puzzle == PUZZLE


def test_logprobs_are_cut_with_the_ids(char_tokenizer):
    tok = char_tokenizer
    row = ids(tok, "ab", tok.eos_token_id, tok.pad_token_id)
    logprobs = [-0.1, -0.2, -0.3, -9.0]
    (t,) = score_trajectories([PUZZLE], [row], tok, logprobs=[logprobs])
    np.testing.assert_allclose(t.logprobs, [-0.1, -0.2, -0.3])
    with pytest.raises(ValueError, match="logprobs"):
        score_trajectories([PUZZLE], [row], tok, logprobs=[logprobs[:2]])


def test_one_batch_decode_call_when_available(char_tokenizer):
    class Batched(type(char_tokenizer)):
        calls = 0

        def batch_decode(self, rows):
            Batched.calls += 1
            return [self.decode(r) for r in rows]

    tok = Batched()
    rows = [ids(tok, t, tok.eos_token_id) for t in (RIGHT, WRONG, RIGHT)]
    out = score_trajectories([PUZZLE] * 3, rows, tok)
    assert Batched.calls == 1 and [t.reward for t in out] == [1.0, 0.0, 1.0]


def test_trajectories_compare_by_value_and_are_read_only(char_tokenizer):
    tok = char_tokenizer
    row = ids(tok, RIGHT, tok.eos_token_id)
    (a,) = score_trajectories([PUZZLE], [row], tok)
    (b,) = score_trajectories([PUZZLE], [list(row)], tok)
    (c,) = score_trajectories([PUZZLE], [row[:-2] + row[-1:]], tok)
    assert a == b and a != c
    with pytest.raises(ValueError):
        a.completion_ids[0] = 0


def test_bad_input_raises_clear_errors(char_tokenizer):
    tok = char_tokenizer
    with pytest.raises(ValueError, match="rows"):
        score_trajectories([PUZZLE, PUZZLE], [[1]], tok)
    with pytest.raises(TypeError, match="integer"):
        score_trajectories([PUZZLE], [[1.5, 2.0]], tok)
    with pytest.raises(ValueError, match="negative"):
        score_trajectories([PUZZLE], [[3, -1]], tok)
    with pytest.raises(ValueError, match="1-D"):
        score_trajectories([PUZZLE], [[[1, 2]]], tok)
    with pytest.raises(ValueError, match="truncation_reward"):
        score_trajectories([PUZZLE], [[1]], tok, truncation_reward="half")
    with pytest.raises(ValueError, match="max_new_tokens"):
        score_trajectories([PUZZLE], [[1]], tok, max_new_tokens=0)
    with pytest.raises(ValueError, match="stop"):
        score_trajectories([PUZZLE], [[1]], tok, stop_ids=[-3])
    with pytest.raises(ValueError, match="numbers"):
        score_trajectories([{"target": 3}], [[1]], tok)
    assert score_trajectories([], [], tok) == []
