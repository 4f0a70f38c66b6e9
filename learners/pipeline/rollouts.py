"""A TRL ``rollout_func`` that plays ``CountdownTokens-v0`` episodes: the learner trains from environment episodes.

``GRPOTrainer(rollout_func=EnvRollouts(task, tokenizer, puzzles))`` hands TRL's per-process prompt slice (each
prompt ``num_generations`` times, groups contiguous) to :class:`EnvRollouts`, which

1. looks up each prompt's puzzle (the prompts are the dataset route's: :func:`learners.pipeline.data.prompt_dataset`
   of the same ``puzzles``; a prompt maps to its puzzle, so groups, shuffling and several processes need nothing
   extra);
2. resets one :class:`~countdown_env.envs.countdown_tokens.CountdownTokensEnv` per row on that puzzle (the env
   renders and tokenizes the prompt);
3. generates every active row's next turn in one batched call of a generator backend, with the env's per-turn
   budget, and steps each env with the generated chunk; with ``task.max_turns > 1`` the env answers a failed
   turn with feedback ids and the row generates again, until every episode has ended;
4. returns ``prompt_ids``, ``completion_ids`` (every id after the prompt: turns and feedback), ``logprobs`` (the
   sampler's log-probability of each generated id, 0.0 on feedback ids, as TRL's tool loop does), ``env_mask``
   (1 on generated ids, 0 on feedback ids; TRL turns it into ``tool_mask`` so the loss skips feedback), and the
   extra columns ``env_reward`` (the episode's return), ``numbers`` and ``target`` (forwarded to the reward
   functions and to the learners' seams).

Pass ``reward_funcs=[env_episode_reward]`` so that the reward is the environment's. The env scores a completion
with :func:`countdown_env.trajectory.score_trajectories`, the dataset route's scorer: on the same completion ids
the two routes give the same reward (tested).

Backends (``generator=``): :class:`HFGenerator` (``transformers`` ``generate`` on the trainer's model; CPU or GPU;
log-probs from the processed scores, i.e. the distribution actually sampled, after temperature/top-p/top-k);
:class:`VLLMColocateGenerator` (the trainer's colocated ``vllm.LLM``, ``use_vllm=True, vllm_mode="colocate"``)
and :class:`VLLMServerGenerator` (TRL's ``VLLMClient`` to ``trl vllm-serve``, ``vllm_mode="server"``), both
GPU-only and written against vLLM's documented ``SamplingParams``/``LLM.generate`` and TRL's client; their
log-probs are what the engine reports for the sampled id (``logprobs=0``). ``generator=None`` picks the vLLM one
matching the trainer's settings, else HF. With vLLM, TRL syncs the weights before calling the rollout function.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from countdown_env.puzzle import Puzzle
from countdown_env.task import CountdownTask


# ---------------------------------------------------------------------------------------------------- backends
class HFGenerator:
    """Sampling with ``transformers`` ``generate`` (left padding, ``batch_size`` rows per call).

    ``generate(prompts, budgets)`` returns, per prompt, the generated ids (cut after the first stop id and at the
    row's budget) and the log-probability of each under the sampling distribution.
    """

    name = "hf"

    def __init__(
        self,
        model,
        tokenizer,
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int | None = None,
        stop_ids: Iterable[int] = (),
        batch_size: int = 64,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.top_k = top_k or None
        eos = tokenizer.eos_token_id
        eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        self.stop_ids = sorted({*eos, *stop_ids})
        self.batch_size = int(batch_size)

    def generate(self, prompts: Sequence[Sequence[int]], budgets: Sequence[int]) -> list[tuple[list[int], list[float]]]:
        import torch

        model = self.model
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        pad = self.tokenizer.pad_token_id
        out: list[tuple[list[int], list[float]]] = []
        try:
            for start in range(0, len(prompts), self.batch_size):
                rows = [list(p) for p in prompts[start : start + self.batch_size]]
                limits = list(budgets[start : start + self.batch_size])
                width = max(map(len, rows))
                ids = torch.full((len(rows), width), pad, dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for i, row in enumerate(rows):
                    ids[i, width - len(row) :] = torch.tensor(row)
                    mask[i, width - len(row) :] = 1
                with torch.no_grad():
                    result = model.generate(
                        input_ids=ids.to(device),
                        attention_mask=mask.to(device),
                        do_sample=True,
                        temperature=self.temperature,
                        top_p=self.top_p,
                        top_k=self.top_k if self.top_k is not None else 0,
                        max_new_tokens=max(limits),
                        eos_token_id=self.stop_ids or None,
                        pad_token_id=pad,
                        output_scores=True,
                        return_dict_in_generate=True,
                    )
                new = result.sequences[:, width:].cpu()
                scores = torch.stack(result.scores, dim=1).float().log_softmax(dim=-1).cpu()
                logps = scores.gather(-1, new.unsqueeze(-1)).squeeze(-1)
                for i, limit in enumerate(limits):
                    row_ids = new[i, :limit].tolist()
                    cut = next((k + 1 for k, t in enumerate(row_ids) if t in self.stop_ids), len(row_ids))
                    out.append((row_ids[:cut], logps[i, :cut].tolist()))
        finally:
            model.train(was_training)
        return out


class VLLMColocateGenerator:
    """The trainer's colocated vLLM engine (``trainer.vllm_generation.llm``, a ``vllm.LLM``). GPU only."""

    name = "vllm-colocate"

    def __init__(self, llm, *, temperature=1.0, top_p=1.0, top_k=None, stop_ids: Iterable[int] = ()) -> None:
        self.llm = llm
        self.sampling = dict(temperature=float(temperature), top_p=float(top_p), top_k=int(top_k or 0))
        self.stop_ids = sorted(set(stop_ids))

    def generate(self, prompts: Sequence[Sequence[int]], budgets: Sequence[int]) -> list[tuple[list[int], list[float]]]:
        from vllm import SamplingParams

        params = [
            SamplingParams(n=1, max_tokens=int(b), logprobs=0, stop_token_ids=self.stop_ids, **self.sampling)
            for b in budgets
        ]
        requests = [{"prompt_token_ids": list(p)} for p in prompts]
        outputs = self.llm.generate(requests, sampling_params=params, use_tqdm=False)
        rows = []
        for output in outputs:
            completion = output.outputs[0]
            ids = list(completion.token_ids)
            logps = [float(step[token].logprob) for step, token in zip(completion.logprobs or [], ids, strict=False)]
            rows.append((ids, logps + [0.0] * (len(ids) - len(logps))))
        return rows


class VLLMServerGenerator:
    """TRL's ``VLLMClient`` (``trainer.vllm_generation.vllm_client``) to a ``trl vllm-serve`` server. GPU only.

    One request per distinct budget (the client's ``max_tokens`` is per request); ``stop_token_ids`` travels in
    ``generation_kwargs`` (vLLM's OpenAI-compatible completions endpoint accepts it).
    """

    name = "vllm-server"

    def __init__(self, client, *, temperature=1.0, top_p=1.0, top_k=None, stop_ids: Iterable[int] = ()) -> None:
        self.client = client
        self.sampling = dict(temperature=float(temperature), top_p=float(top_p), top_k=int(top_k or 0))
        self.stop_ids = sorted(set(stop_ids))

    def generate(self, prompts: Sequence[Sequence[int]], budgets: Sequence[int]) -> list[tuple[list[int], list[float]]]:
        rows: list[tuple[list[int], list[float]] | None] = [None] * len(prompts)
        for budget in sorted(set(budgets)):
            which = [i for i, b in enumerate(budgets) if b == budget]
            output = self.client.generate(
                prompts=[list(prompts[i]) for i in which],
                n=1,
                max_tokens=int(budget),
                logprobs=0,
                generation_kwargs={"stop_token_ids": self.stop_ids},
                **self.sampling,
            )
            for i, ids, logps in zip(which, output["completion_ids"], output["logprobs"], strict=True):
                rows[i] = (list(ids), [float(lp[0]) if lp else 0.0 for lp in logps])
        return rows  # type: ignore[return-value]


def trainer_generator(trainer) -> HFGenerator | VLLMColocateGenerator | VLLMServerGenerator:
    """The backend matching ``trainer``'s settings: vLLM (colocate or server) when ``use_vllm``, else HF."""
    sampling = dict(temperature=trainer.temperature, top_p=trainer.top_p, top_k=getattr(trainer, "top_k", None))
    stops = list(trainer.eos_token_ids)
    if getattr(trainer, "use_vllm", False):
        vllm = trainer.vllm_generation
        if trainer.vllm_mode == "colocate":
            return VLLMColocateGenerator(vllm.llm, stop_ids=stops, **sampling)
        return VLLMServerGenerator(vllm.vllm_client, stop_ids=stops, **sampling)
    model = trainer.accelerator.unwrap_model(trainer.model_wrapped)
    return HFGenerator(model, trainer.processing_class, stop_ids=stops, **sampling)


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
        generator: a backend with ``generate(prompts, budgets)``, or ``None`` for :func:`trainer_generator`.
        max_new_tokens: the per-turn budget (default: the trainer's ``max_completion_length``).
        env_kwargs: more ``CountdownTokensEnv`` arguments (``truncation_reward``, ``max_feedback_tokens``, ...).
    """

    def __init__(
        self,
        task: CountdownTask,
        tokenizer,
        puzzles: Iterable[Puzzle] = (),
        *,
        generator=None,
        max_new_tokens: int | None = None,
        **env_kwargs: Any,
    ) -> None:
        self.task = task
        self.tokenizer = tokenizer
        self.generator = generator
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
        generator = self.generator or trainer_generator(trainer)
        budget = int(self.max_new_tokens or trainer.max_completion_length)
        episodes = self.play([self.puzzle_of(p) for p in prompts], generator, budget)
        return {
            "prompt_ids": [e["prompt_ids"] for e in episodes],
            "completion_ids": [e["completion_ids"] for e in episodes],
            "logprobs": [e["logprobs"] for e in episodes],
            "env_mask": [e["env_mask"] for e in episodes],
            "env_reward": [e["reward"] for e in episodes],
            "numbers": [list(e["puzzle"].numbers) for e in episodes],
            "target": [e["puzzle"].target for e in episodes],
        }

    def play(self, puzzles: Sequence[Puzzle], generator, max_new_tokens: int) -> list[dict[str, Any]]:
        """Run one episode per puzzle, all rows' turns batched; returns per row ``prompt_ids``,
        ``completion_ids``, ``logprobs``, ``env_mask``, ``reward``, ``trajectory``, ``puzzle``."""
        from countdown_env.envs.countdown_tokens import CountdownTokensEnv

        envs = [
            CountdownTokensEnv(self.tokenizer, task=self.task, max_new_tokens=max_new_tokens, **self.env_kwargs)
            for _ in puzzles
        ]
        observations = [env.reset(options={"puzzle": p})[0] for env, p in zip(envs, puzzles, strict=True)]
        prompt_lengths = [len(obs) for obs in observations]
        logprobs: list[list[float]] = [[] for _ in puzzles]
        final: list[dict[str, Any] | None] = [None] * len(puzzles)
        active = list(range(len(puzzles)))
        while active:
            generated = generator.generate(
                [observations[i] for i in active], [envs[i].tokens_left_in_turn for i in active]
            )
            still = []
            for i, (ids, logps) in zip(active, generated, strict=True):
                if not ids:
                    raise RuntimeError(f"the {getattr(generator, 'name', 'generator')} backend returned no ids")
                before = len(observations[i])
                obs, reward, terminated, truncated, info = envs[i].step(np.asarray(ids, dtype=np.int64))
                taken = len(obs) - before - int(info.get("feedback_length", 0))
                logprobs[i] += [float(x) for x in logps[:taken]] + [0.0] * int(info.get("feedback_length", 0))
                observations[i] = obs
                if terminated or truncated:
                    final[i] = {"reward": float(reward), "trajectory": info["trajectory"]}
                else:
                    still.append(i)
            active = still
        episodes = []
        for i, puzzle in enumerate(puzzles):
            trajectory = final[i]["trajectory"]
            completion = observations[i][prompt_lengths[i] :]
            mask = trajectory.env_mask if trajectory.env_mask is not None else np.ones(len(completion), np.int64)
            episodes.append(
                {
                    "prompt_ids": observations[i][: prompt_lengths[i]].tolist(),
                    "completion_ids": completion.tolist(),
                    "logprobs": logprobs[i],
                    "env_mask": mask.tolist(),
                    "reward": final[i]["reward"],
                    "trajectory": trajectory,
                    "puzzle": puzzle,
                }
            )
        return episodes


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
- ``tools``: ``environment_factory`` with :class:`countdown_env.trl_env.CountdownEnvironment` (the ``check`` tool
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

        from countdown_env.trl_env import CountdownEnvironment, record_final_answers, use_tool_chat_template

        if not supports_tool_calling(tokenizer):
            use_tool_chat_template(tokenizer)
        rows = args.per_device_train_batch_size * args.steps_per_generation
        factory = CountdownEnvironment.factory(task, num_generations=args.num_generations, rows_per_process=rows)
        return {"environment_factory": factory, "reward_funcs": [record_final_answers]}
    raise ValueError(f"unknown rollouts route {route!r}; choose one of {list(ROUTES)}")
