"""CountdownTokens-v0 with a hand-written char tokenizer and an offline Hugging Face tokenizer: check_env,
single vs chunked stepping, EOS / stop-id / truncation edges, bad actions, observations, vector envs."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from countdown_env.envs.tokenizer_adapter import render_chat
from countdown_env.prompts import chat_messages, format_completion, prompt_text
from countdown_env.puzzle import Puzzle
from countdown_env.trajectory import score_trajectories

PUZZLE = Puzzle([3, 7, 11], 21)
RIGHT = format_completion("3 times 7 is 21", "3 * 7")
WRONG = format_completion("11 + 7 is 18", "11 + 7")
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def hf_char_tokenizer():
    """A PreTrainedTokenizerFast built offline: one token per character, ChatML markers as special tokens."""
    import string

    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["<pad>", "<unk>", *string.printable])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<|im_start|>", "<|im_end|>")])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", eos_token="<|im_end|>", bos_token=None
    )
    tok.chat_template = CHATML
    return tok


@pytest.fixture(scope="module")
def hf_tokenizer():
    return hf_char_tokenizer()


def make(tokenizer, **kwargs):
    return gym.make("CountdownTokens-v0", tokenizer=tokenizer, **{"puzzles": [PUZZLE], **kwargs})


def run_single(env, ids):
    out = None
    for i in ids:
        out = env.step(i)
        if out[2] or out[3]:
            break
    return out


@pytest.mark.parametrize("kind", ["char", "hf"])
def test_check_env_passes_without_warnings(kind, char_tokenizer, hf_tokenizer):
    tok = char_tokenizer if kind == "char" else hf_tokenizer
    env = gym.make(
        "CountdownTokens-v0", tokenizer=tok, max_new_tokens=8, n_numbers=3, value_range=(1, 20), target_range=(10, 99)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def test_module_prefixed_id(char_tokenizer):
    env = gym.make("countdown_env:CountdownTokens-v0", tokenizer=char_tokenizer, puzzles=[PUZZLE])
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.int64 and obs.ndim == 1 and info["prompt_length"] == len(obs)


def test_prompt_plain_text_for_tokenizers_without_chat_template(char_tokenizer):
    env = make(char_tokenizer)
    obs, info = env.reset()
    assert char_tokenizer.decode(obs) == prompt_text(PUZZLE)
    assert info["messages"] == chat_messages(PUZZLE)


def test_prompt_uses_chat_template_and_round_trips(hf_tokenizer):
    env = make(hf_tokenizer)
    obs, info = env.reset()
    rendered = render_chat(hf_tokenizer, chat_messages(PUZZLE))
    assert rendered.endswith("<|im_start|>assistant\n")
    assert obs.tolist() == hf_tokenizer.encode(rendered, add_special_tokens=False)
    assert hf_tokenizer.decode(obs.tolist()) == rendered
    assert info["prompt_length"] == len(obs)
    plain = make(hf_tokenizer, use_chat_template=False)
    assert hf_tokenizer.decode(plain.reset()[0].tolist()) == prompt_text(PUZZLE)


@pytest.mark.parametrize("kind", ["char", "hf"])
def test_correct_answer_single_token_steps(kind, char_tokenizer, hf_tokenizer):
    tok = char_tokenizer if kind == "char" else hf_tokenizer
    env = make(tok, max_new_tokens=200)
    obs0, _ = env.reset()
    completion = [*tok.encode(RIGHT, **({} if kind == "char" else {"add_special_tokens": False})), tok.eos_token_id]
    for i in completion[:-1]:
        obs, reward, terminated, truncated, info = env.step(i)
        assert (reward, terminated, truncated, info) == (0.0, False, False, {})
    obs, reward, terminated, truncated, info = env.step(completion[-1])
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert obs.tolist() == obs0.tolist() + completion
    assert info["completion"] == RIGHT and info["verification"].correct and info["format_ok"]
    assert info["prompt_length"] == len(obs0) and info["ignored_tokens"] == 0
    assert "token_rewards" not in info  # variable length: it lives in the trajectory (vector infos need one shape)
    rewards = info["trajectory"].token_rewards
    assert rewards.shape == (len(completion),) and rewards[-1] == 1.0 and rewards[:-1].sum() == 0.0
    traj = info["trajectory"]
    assert traj.completion_ids.tolist() == completion and traj.prompt_ids.tolist() == obs0.tolist()
    # The env's final record is exactly what the batched scorer makes of the same ids.
    (batched,) = score_trajectories(
        [PUZZLE], [completion], tok, prompt_ids=[obs0], reward_config=env.unwrapped.reward_config
    )
    assert batched == traj


def test_chunked_steps_match_single_steps(char_tokenizer):
    tok = char_tokenizer
    ids = [*tok.encode(WRONG), tok.eos_token_id]
    single = make(tok)
    single.reset()
    out_single = run_single(single, ids)
    chunked = make(tok)
    chunked.reset()
    for part in (ids[:5], np.array(ids[5:20]), tuple(ids[20:-1])):
        obs, reward, terminated, truncated, info = chunked.step(part)
        assert reward == 0.0 and not terminated and not truncated and info == {}
    out_chunked = chunked.step(np.array(ids[-1:], dtype=np.int32))
    np.testing.assert_array_equal(out_single[0], out_chunked[0])
    assert out_single[1:4] == out_chunked[1:4] == (0.0, True, False)
    assert out_single[4]["trajectory"] == out_chunked[4]["trajectory"]
    assert out_chunked[4]["verification"].reason == "wrong_value"


def test_eos_inside_a_chunk_ends_the_episode_and_drops_the_rest(char_tokenizer):
    tok = char_tokenizer
    env = make(tok)
    obs0, _ = env.reset()
    tail = [tok.pad_token_id, *tok.encode(" junk")]
    obs, reward, terminated, truncated, info = env.step([*tok.encode(RIGHT), tok.eos_token_id, *tail])
    assert terminated and not truncated and reward == 1.0
    assert len(obs) == len(obs0) + len(RIGHT) + 1 and obs[-1] == tok.eos_token_id
    assert info["ignored_tokens"] == len(tail) and info["completion"] == RIGHT


def test_stop_ids_terminate_only_when_configured(char_tokenizer):
    tok = char_tokenizer
    text = tok.encode(RIGHT)
    env = make(tok, stop_ids=[tok.stop_token_id])
    env.reset()
    _, reward, terminated, _, info = env.step([*text, tok.stop_token_id])
    assert terminated and reward == 1.0 and info["trajectory"].completion_ids[-1] == tok.stop_token_id
    plain = make(tok)
    plain.reset()
    _, reward, terminated, truncated, _ = plain.step([*text, tok.stop_token_id])
    assert not terminated and not truncated and reward == 0.0
    _, reward, terminated, _, info = plain.step(tok.eos_token_id)
    assert terminated and info["completion"] == RIGHT + "<stop>"


@pytest.mark.parametrize("mode, expected", [("zero", 0.0), ("score", 1.0)])
@pytest.mark.parametrize("chunked", [False, True])
def test_truncation_at_max_new_tokens(char_tokenizer, mode, expected, chunked):
    tok = char_tokenizer
    text = tok.encode(RIGHT)
    env = make(tok, max_new_tokens=len(text), truncation_reward=mode)
    obs0, _ = env.reset()
    extra = [tok.eos_token_id, 5, 6]
    if chunked:
        obs, reward, terminated, truncated, info = env.step([*text, *extra])
        assert info["ignored_tokens"] == len(extra)
    else:
        obs, reward, terminated, truncated, info = run_single(env, text)
    assert truncated and not terminated and reward == expected
    assert len(obs) == len(obs0) + len(text) and info["completion"] == RIGHT
    assert info["verification"].correct and info["trajectory"].token_rewards[-1] == expected


def test_eos_as_the_last_budget_token_terminates(char_tokenizer):
    tok = char_tokenizer
    ids = [*tok.encode(RIGHT), tok.eos_token_id]
    env = make(tok, max_new_tokens=len(ids))
    env.reset()
    _, reward, terminated, truncated, _ = run_single(env, ids)
    assert terminated and not truncated and reward == 1.0
    env.reset()
    _, _, terminated, truncated, _ = env.step(ids)
    assert terminated and not truncated


def test_one_token_budget(char_tokenizer):
    env = make(char_tokenizer, max_new_tokens=1)
    env.reset()
    assert env.step(7)[3] is True


def test_bad_actions_raise_and_leave_the_episode_intact(char_tokenizer):
    tok = char_tokenizer
    env = make(tok).unwrapped
    with pytest.raises(RuntimeError, match="reset"):
        env.step(5)
    obs0, _ = env.reset()
    vocab = len(tok)
    bad = [
        (vocab, ValueError, "outside the vocabulary"),
        (-1, ValueError, "outside the vocabulary"),
        ([5, vocab + 3], ValueError, "outside the vocabulary"),
        (np.array([5, -2]), ValueError, "outside the vocabulary"),
        (3.0, TypeError, "token id"),
        (True, TypeError, "token id"),
        ("a", TypeError, "token id"),
        (None, TypeError, "token id"),
        (np.array([1.0, 2.0]), TypeError, "integer dtype"),
        (np.array([True]), TypeError, "integer dtype"),
        ([5, 2.5], TypeError, "integer token ids"),
        ([], ValueError, "empty chunk"),
        (np.zeros((2, 2), dtype=np.int64), ValueError, "1-D"),
    ]
    for action, error, match in bad:
        with pytest.raises(error, match=match):
            env.step(action)
    obs, *_ = env.step(np.int32(5))
    assert obs.tolist() == [*obs0.tolist(), 5]
    env.step(tok.eos_token_id)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(5)


def test_bad_construction(char_tokenizer):
    with pytest.raises(ValueError, match="max_new_tokens"):
        make(char_tokenizer, max_new_tokens=0)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        make(char_tokenizer, stop_ids=[10_000])
    with pytest.raises(ValueError, match="truncation_reward"):
        make(char_tokenizer, truncation_reward="half")
    with pytest.raises(TypeError, match="tokenizer"):
        make(object())
    with pytest.raises(TypeError, match="apply_chat_template"):
        make(char_tokenizer, use_chat_template=True)


def test_observations_are_fresh_arrays_or_read_only_views(char_tokenizer):
    env = make(char_tokenizer)
    obs0, _ = env.reset()
    obs1, *_ = env.step(5)
    assert not np.shares_memory(obs0, obs1)
    obs1[0] = 0  # the caller owns copies: writing one changes nothing the env hands out later
    assert env.step(6)[0][0] == obs0[0] != 0
    zero_copy = make(char_tokenizer, copy_observations=False)
    view0, _ = zero_copy.reset()
    with pytest.warns(UserWarning, match="share an object"):  # Gymnasium's checker notices the shared buffer
        view1, *_ = zero_copy.step([5, 6])
        zero_copy.step(7)
    assert not view1.flags.writeable and view1.tolist() == [*view0.tolist(), 5, 6]
    zero_copy.reset()  # a fresh buffer per episode: earlier views keep their values
    assert view1.tolist() == [*view0.tolist(), 5, 6]


def test_prompt_is_tokenized_once_per_puzzle(char_tokenizer):
    class Counting(type(char_tokenizer)):
        calls = 0

        def encode(self, text):
            Counting.calls += 1
            return super().encode(text)

    env = make(Counting(), puzzles=[PUZZLE, Puzzle([2, 5, 9], 19)])
    for s in range(10):
        env.reset(seed=s)
    assert Counting.calls == 2


def test_seeded_resets_are_reproducible(char_tokenizer):
    env = gym.make("CountdownTokens-v0", tokenizer=char_tokenizer, n_numbers=3, value_range=(1, 20), seed=4)
    first = [env.reset(seed=s)[0] for s in range(5)]
    again = [env.reset(seed=s)[0] for s in range(5)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert len({a.tobytes() for a in first}) > 1


def test_vector_env_reproducible_under_seeds(char_tokenizer):
    tok = char_tokenizer

    def rollout():
        envs = gym.make_vec(
            "CountdownTokens-v0",
            num_envs=3,
            vectorization_mode="sync",
            tokenizer=tok,
            max_new_tokens=4,
            n_numbers=3,
            value_range=(1, 20),
            seed=1,
        )
        obs, _ = envs.reset(seed=7)
        steps = [envs.step(np.array([10, 11, 12])) for _ in range(4)]
        envs.close()
        return obs, steps

    obs_a, steps_a = rollout()
    obs_b, steps_b = rollout()
    assert all(np.array_equal(a, b) for a, b in zip(obs_a, obs_b, strict=True))
    last_a, last_b = steps_a[-1], steps_b[-1]
    assert last_a[3].all() and not last_a[2].any()  # truncated after 4 tokens, all three envs
    for a, b in zip(last_a[0], last_b[0], strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(last_a[1], last_b[1])


def test_hf_tokenizer_eos_from_special_tokens(hf_tokenizer):
    env = make(hf_tokenizer, max_new_tokens=300)
    env.reset()
    ids = hf_tokenizer.encode(RIGHT + "<|im_end|>", add_special_tokens=False)
    assert ids[-1] == hf_tokenizer.eos_token_id and env.unwrapped.vocab_size == len(hf_tokenizer)
    _, reward, terminated, _, info = env.step(ids)
    assert terminated and reward == 1.0 and info["completion"] == RIGHT


def test_render_ansi(char_tokenizer):
    env = make(char_tokenizer, render_mode="ansi")
    env.reset()
    env.step(char_tokenizer.encode("<reasoning>"))
    assert env.render() == prompt_text(PUZZLE) + "<reasoning>"


def test_raw_tokenizers_object_with_stop_id(hf_tokenizer):
    raw = hf_tokenizer.backend_tokenizer  # tokenizers.Tokenizer: Encoding results, no eos_token_id, no __len__
    end = raw.token_to_id("<|im_end|>")
    env = make(raw, stop_ids=[end])
    obs, _ = env.reset()
    assert raw.decode(obs.tolist()) == prompt_text(PUZZLE) and env.unwrapped.vocab_size == raw.get_vocab_size()
    _, reward, terminated, _, info = env.step([*raw.encode(RIGHT).ids, end])
    assert terminated and reward == 1.0 and info["completion"] == RIGHT


def test_huge_ids_and_budgets_get_clear_errors(char_tokenizer):
    import gymnasium as gym

    env = gym.make("CountdownTokens-v0", tokenizer=char_tokenizer, max_new_tokens=8)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        env.step([2**70])  # an OverflowError in the int64 conversion before
    with pytest.raises(ValueError, match="max_new_tokens and max_prompt_tokens must be <="):
        gym.make("CountdownTokens-v0", tokenizer=char_tokenizer, max_new_tokens=10**12)  # MemoryError at reset
