"""A TRL ``rollout_func`` that plays ``CountdownTokens-v0`` episodes: the learner trains from environment episodes.

``GRPOTrainer(rollout_func=EnvRollouts(task, tokenizer, puzzles))`` hands TRL's per-process prompt slice (each
prompt ``num_generations`` times, groups contiguous) to :class:`EnvRollouts`, which

1. looks up each prompt's puzzle (the prompts are the dataset route's: :func:`learners.pipeline.data.prompt_dataset`
   of the same ``puzzles``; a prompt maps to its puzzle, so groups, shuffling and several processes need nothing
   extra);
2. resets one :class:`~countdown_env.envs.countdown_tokens.CountdownTokensEnv` per row on that puzzle (the env
   renders and tokenizes the prompt);
3. generates every active row's next turn in one batched call of a :class:`learners.sampling.Sampler`, with the
   env's per-turn budget, and steps each env with the generated chunk; with ``task.max_turns > 1`` the env
   answers a failed turn with feedback ids and the row generates again, until every episode has ended;
4. returns ``prompt_ids``, ``completion_ids`` (every id after the prompt: turns and feedback), ``logprobs`` (the
   sampler's log-probability of each generated id, 0.0 on feedback ids, as TRL's tool loop does), ``env_mask``
   (1 on generated ids, 0 on feedback ids; TRL turns it into ``tool_mask`` so the loss skips feedback), and the
   extra columns ``env_reward`` (the episode's return), ``numbers`` and ``target`` (forwarded to the reward
   functions and to the learners' seams).

Pass ``reward_funcs=[env_episode_reward]`` so that the reward is the environment's. The env scores a completion
with :func:`countdown_env.trajectory.score_trajectories`, the dataset route's scorer: on the same completion ids
the two routes give the same reward (tested).

The sampler (``sampler=``, default :func:`learners.sampling.trainer_sampler`: the trainer's colocated vLLM engine,
its vLLM server client, else ``transformers`` on the policy) reports the log-probability of each sampled id under
the distribution it sampled; the settings default to the trainer's (:func:`learners.sampling.trainer_sampling`).
With vLLM, TRL syncs the weights before calling the rollout function.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from countdown_env.puzzle import Puzzle
from countdown_env.task import CountdownTask


# ------------------------------------------------------------------------------------------------ rollouts
def prompt_key(prompt: Any) -> str:
    """A dictionary key for a dataset prompt (text, or chat messages)."""
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)


class EnvRollouts:
    """TRL ``rollout_func`` over ``CountdownTokens-v0`` (module docstring).

    Args:
        task: the :class:`~countdown_env.task.CountdownTask` (prompt, rules, reward, turns).
        tokenizer: the trainer's tokenizer (the env renders prompts with its chat template).
        puzzles: the puzzles of the training dataset (its prompts are ``task.messages(p)``); more can be added
            with :meth:`add`.
        sampler: a :class:`learners.sampling.Sampler`, or ``None`` for the trainer's (``trainer_sampler``).
        sampling: the :class:`learners.sampling.Sampling` settings, or ``None`` for the trainer's.
        max_new_tokens: the per-turn budget (default: the trainer's ``max_completion_length``).
        env_kwargs: more ``CountdownTokensEnv`` arguments (``truncation_reward``, ``max_feedback_tokens``, ...).
    """

    def __init__(
        self,
        task: CountdownTask,
        tokenizer,
        puzzles: Iterable[Puzzle] = (),
        *,
        sampler=None,
        sampling=None,
        max_new_tokens: int | None = None,
        **env_kwargs: Any,
    ) -> None:
        self.task = task
        self.tokenizer = tokenizer
        self.sampler = sampler
        self.sampling = sampling
        self.max_new_tokens = max_new_tokens
        self.env_kwargs = env_kwargs
        self.puzzles: dict[str, Puzzle] = {}
        self.add(puzzles)
        self.__name__ = "countdown_env_rollouts"

    def add(self, puzzles: Iterable[Puzzle]) -> None:
        """Register puzzles: their prompts (chat messages and plain text) map to them."""
        for puzzle in puzzles:
            self.puzzles[prompt_key(self.task.messages(puzzle))] = puzzle
            self.puzzles[prompt_key(self.task.prompt_text(puzzle))] = puzzle

    def puzzle_of(self, prompt: Any) -> Puzzle:
        try:
            return self.puzzles[prompt_key(prompt)]
        except KeyError:
            raise KeyError(
                f"EnvRollouts: no registered puzzle has the prompt {prompt!r}; build the dataset with "
                "learners.pipeline.data.prompt_dataset(puzzles, task) from the puzzles given to EnvRollouts"
            ) from None

    def __call__(self, prompts: list[Any], trainer) -> dict[str, list]:
        from ..sampling import trainer_sampler, trainer_sampling

        sampler = self.sampler or trainer_sampler(trainer)
        sampling = self.sampling or trainer_sampling(trainer)
        budget = int(self.max_new_tokens or trainer.max_completion_length)
        episodes = self.play([self.puzzle_of(p) for p in prompts], sampler, sampling, budget)
        return {
            "prompt_ids": [e["prompt_ids"] for e in episodes],
            "completion_ids": [e["completion_ids"] for e in episodes],
            "logprobs": [e["logprobs"] for e in episodes],
            "env_mask": [e["env_mask"] for e in episodes],
            "env_reward": [e["reward"] for e in episodes],
            "numbers": [list(e["puzzle"].numbers) for e in episodes],
            "target": [e["puzzle"].target for e in episodes],
        }

    def play(self, puzzles: Sequence[Puzzle], sampler, sampling, max_new_tokens: int) -> list[dict[str, Any]]:
        """Run one episode per puzzle, all rows' turns batched; returns per row ``prompt_ids``,
        ``completion_ids``, ``logprobs``, ``env_mask``, ``reward``, ``trajectory``, ``puzzle``.

        ``sampling.seed`` (when set) seeds the first turn; turn ``t`` uses ``seed + 1000 * t``."""
        import dataclasses

        from countdown_env.envs.countdown_tokens import CountdownTokensEnv

        envs = [
            CountdownTokensEnv(self.tokenizer, task=self.task, max_new_tokens=max_new_tokens, **self.env_kwargs)
            for _ in puzzles
        ]
        observations = [env.reset(options={"puzzle": p})[0] for env, p in zip(envs, puzzles, strict=True)]
        prompt_lengths = [len(obs) for obs in observations]
        logprobs: list[list[float]] = [[] for _ in puzzles]
        masks: list[list[int]] = [[] for _ in puzzles]
        final: list[dict[str, Any] | None] = [None] * len(puzzles)
        active = list(range(len(puzzles)))
        turn = 0
        while active:
            settings = (
                sampling if sampling.seed is None else dataclasses.replace(sampling, seed=sampling.seed + 1000 * turn)
            )
            generated = sampler.sample(
                [observations[i].tolist() for i in active],
                settings,
                max_new_tokens=[envs[i].tokens_left_in_turn for i in active],
            )
            turn += 1
            still = []
            for i, (sample,) in zip(active, generated, strict=True):
                ids, logps = sample.ids, sample.logprobs
                if not ids:
                    raise RuntimeError(f"the {getattr(sampler, 'name', 'sampler')} sampler returned no ids")
                before = len(observations[i])
                try:
                    obs, reward, terminated, truncated, info = envs[i].step(np.asarray(ids, dtype=np.int64))
                except Exception as exc:  # noqa: BLE001 - one sample's failure must not kill the batch
                    final[i] = self._failed(puzzles[i], observations[i], prompt_lengths[i], ids, masks[i], exc)
                    logprobs[i] += [float(x) for x in logps[: len(ids)]]
                    continue
                feedback = int(info.get("feedback_length", 0))
                taken = len(obs) - before - feedback
                logprobs[i] += [float(x) for x in logps[:taken]] + [0.0] * feedback
                masks[i] += [1] * taken + [0] * feedback
                observations[i] = obs
                if terminated or truncated:
                    final[i] = {"reward": float(reward), "trajectory": info["trajectory"]}
                else:
                    still.append(i)
            active = still
        episodes = []
        failures = [f["error"] for f in final if "error" in f]
        if failures:
            print(
                f"countdown: warning: {len(failures)} of {len(puzzles)} episodes failed in the environment and score "
                f"0 (first: {failures[0]})",
                file=sys.stderr,
            )
        for i, puzzle in enumerate(puzzles):
            trajectory = final[i]["trajectory"]
            episodes.append(
                {
                    "prompt_ids": trajectory.prompt_ids.tolist(),
                    "completion_ids": trajectory.completion_ids.tolist(),
                    "logprobs": logprobs[i],
                    "env_mask": trajectory.env_mask.tolist()
                    if trajectory.env_mask is not None
                    else [1] * len(trajectory.completion_ids),
                    "reward": final[i]["reward"],
                    "trajectory": trajectory,
                    "puzzle": puzzle,
                    "error": final[i].get("error"),
                }
            )
        return episodes

    def _failed(self, puzzle, observation, prompt_length, ids, mask, exc: Exception) -> dict[str, Any]:
        """A failed episode: the ids played so far plus the failing turn's, reward 0, and the reason in its
        verification (``episode_error``) and ``error``."""
        from countdown_env.expressions.verifier import EPISODE_ERROR, Verification
        from countdown_env.trajectory import Trajectory

        error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        completion = np.concatenate([observation[prompt_length:], np.asarray(ids, dtype=np.int64)])
        full_mask = mask + [1] * len(ids)
        turns = 1 + sum(1 for a, b in zip(full_mask, full_mask[1:], strict=False) if a == 0 and b == 1)
        trajectory = Trajectory(
            puzzle=puzzle,
            prompt_ids=observation[:prompt_length].copy(),
            completion_ids=completion,
            completion_text=self.tokenizer.decode(list(ids), skip_special_tokens=True),
            reward=0.0,
            verification=Verification(False, EPISODE_ERROR, None, (), None, error),
            format_ok=False,
            truncated=False,
            env_mask=np.asarray(full_mask, dtype=np.int64),
            turns=turns,
        )
        return {"reward": 0.0, "trajectory": trajectory, "error": error}


def env_episode_reward(prompts, completions, env_reward=None, **kwargs) -> list[float]:
    """TRL reward function for :class:`EnvRollouts`: the environment's episode return (``env_reward`` column)."""
    if env_reward is None:
        raise ValueError("env_episode_reward needs the env_reward column that EnvRollouts returns")
    return [float(r) for r in env_reward]


# ---------------------------------------------------------------------------------------------- the routes
ROUTES = ("dataset", "env", "tools")
"""How a learner gets its completions and rewards (``countdown train --rollouts``, ``countdown compare --rollouts``):

- ``dataset``: TRL generates from the prompt dataset, the trainer scores with the env's scorer (the default);
- ``env``: :class:`EnvRollouts` plays ``CountdownTokens-v0`` episodes (several turns with feedback when the task's
  ``max_turns > 1``), the reward is the episode's return;
- ``tools``: ``environment_factory`` with :class:`countdown_env.envs.trl_env.CountdownEnvironment` (the ``check`` tool
  during generation, ``get_reward`` from the verifier).
"""


def route_kwargs(route: str, task: CountdownTask, tokenizer, puzzles: Sequence[Puzzle], args) -> dict[str, Any]:
    """The extra trainer keyword arguments of a route (``reward_funcs`` and the rollout hook); ``{}`` for
    ``dataset``. The dataset stays the dataset route's (``prompt_dataset(puzzles, task)``): ``env`` maps its
    prompts to ``puzzles``, ``tools`` pins each rollout's puzzle from its ``numbers``/``target``. For ``tools`` a
    ChatML tokenizer whose template cannot render tool calls (the tiny model's) gets the tool template."""
    if route == "dataset":
        return {}
    if route == "env":
        return {"rollout_func": EnvRollouts(task, tokenizer, puzzles), "reward_funcs": [env_episode_reward]}
    if route == "tools":
        from trl.chat_template_utils import supports_tool_calling

        from countdown_env.envs.trl_env import CountdownEnvironment, record_final_answers, use_tool_chat_template

        if not supports_tool_calling(tokenizer):
            use_tool_chat_template(tokenizer)
        rows = args.per_device_train_batch_size * args.steps_per_generation
        factory = CountdownEnvironment.factory(task, num_generations=args.num_generations, rows_per_process=rows)
        return {"environment_factory": factory, "reward_funcs": [record_final_answers]}
    raise ValueError(f"unknown rollouts route {route!r}; choose one of {list(ROUTES)}")
