"""Countdown for TRL's ``GRPOTrainer(environment_factory=...)``: a puzzle per rollout, a ``check`` tool, the reward.

TRL 1.16 builds one environment per rollout with the factory, calls ``reset(**row)`` before generation (a returned
string is appended to the last user message of the row's prompt), exposes every public method other than
``reset``/``get_reward`` as a tool the model may call during generation (the tool's result is appended to the
completion with ``tool_mask`` 0, so the loss skips it), and, when the environment defines ``get_reward()``, adds
it as a reward function named after the class. Nothing here imports torch, transformers or TRL.

Puzzles. ``reset`` pins the puzzle from the row when it carries one (``numbers``/``target`` columns, as the
dataset route's :func:`learners.pipeline.data.prompt_dataset` rows do, or an ``index`` column), else it draws
the next one from the task by index: no ``train_dataset`` is needed (TRL then feeds placeholder rows with an
empty user message, and ``max_steps`` sets the length). The instances of one factory share a
:class:`PuzzleStream`: rollout ``j`` of generation round ``r`` on process ``p`` gets puzzle
``task.puzzle(start + global_group)``, where the global group is the row's GRPO group in TRL's gathered order
(``num_generations`` consecutive rows), so every completion of a group answers the same puzzle, deterministically
per process and seed. This relies on TRL calling ``reset`` once per row, in row order (it does: the pool instance
``i`` serves row ``i``) and on every process holding ``rows_per_process`` rows per round.

Reward. ``get_reward()`` can only read the environment's state, so the final answer reaches it through
:func:`record_final_answers`, a TRL reward function that hands each completion to its environment (TRL passes the
per-rollout ``environments`` to reward functions, and calls the user's reward functions before the environment's
``get_reward``). It returns 0.0 for every row, so only ``get_reward`` counts: the verifier's score of the final
answer block (``task.score``, the dataset route's reward), the ``check`` calls themselves earn nothing.

The tool. ``check(expression)`` returns the verifier's verdict on an expression (the value it reaches and whether
that is the target, or which rule it breaks; :func:`countdown_env.feedback.verdict_text`), at most
``max_checks`` times per rollout. It never reveals a solution. The model still has to write its answer in the
template's answer tags.

Chat templates. Tool calling needs a chat template that renders tool calls and tool messages, and a response
parser on the tokenizer. :func:`use_tool_chat_template` gives a ChatML tokenizer without one (the embedded tiny
model's) a compact ChatML tool template (:data:`TOOL_CHAT_TEMPLATE`, prefix-preserving, with generation markers)
and the matching ``response_template`` (:data:`TOOL_RESPONSE_TEMPLATE`: ``<tool_call>{json}</tool_call>``, no
reasoning field so that ``<think>`` answers stay in the content the reward reads).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ..expressions.verifier import verify
from ..feedback import verdict_text
from ..puzzle import Puzzle
from ..task import CountdownTask

DEFAULT_MAX_CHECKS = 4

CHECK_HINT = "You may test an expression with the check tool before answering."
"""Sentence appended to the prompt ``reset`` returns (the tool schema itself comes from the chat template)."""


class PuzzleStream:
    """Puzzle indices for the rollouts of one factory: ``start + global group`` (see the module docstring).

    Args:
        num_generations: completions per puzzle (TRL's ``num_generations``).
        rows_per_process: rows each process generates per round (``per_device_train_batch_size *
            steps_per_generation``); needed only with several processes.
        process_index, num_processes: this process and how many there are (default: ``RANK``/``WORLD_SIZE`` from
            the environment, as ``accelerate launch``/``torchrun`` set them; else 0 and 1).
        start: the first puzzle index.
    """

    def __init__(
        self,
        num_generations: int = 1,
        *,
        rows_per_process: int | None = None,
        process_index: int | None = None,
        num_processes: int | None = None,
        start: int = 0,
    ) -> None:
        self.num_generations = _positive(num_generations, "num_generations")
        self.process_index = int(os.environ.get("RANK", 0)) if process_index is None else int(process_index)
        self.num_processes = int(os.environ.get("WORLD_SIZE", 1)) if num_processes is None else int(num_processes)
        if not 0 <= self.process_index < self.num_processes:
            raise ValueError(f"process_index {self.process_index} outside [0, {self.num_processes})")
        self.rows_per_process = rows_per_process
        self.unusable: str | None = None  # why next_index cannot draw (checked there: rows that carry their
        # puzzle, as the dataset route's, never draw from the stream, whatever the batch sizes)
        if self.num_processes > 1:
            rows = rows_per_process
            if rows is None or isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
                self.unusable = (
                    f"rows_per_process (needed with several processes) must be a positive integer, got {rows!r}"
                )
            elif rows % self.num_generations:
                self.unusable = (
                    f"with several processes each process's {rows} rows per round must hold whole groups of "
                    f"{self.num_generations}; otherwise give the trainer a dataset with numbers/target or index columns"
                )
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise ValueError(f"start must be a non-negative integer, got {start!r}")
        self.start = start
        self.calls = 0

    def next_index(self) -> int:
        """The puzzle index of the next rollout on this process."""
        if self.unusable is not None:
            raise ValueError(self.unusable)
        call, self.calls = self.calls, self.calls + 1
        if self.num_processes == 1:
            return self.start + call // self.num_generations
        rows = self.rows_per_process
        round_, row = divmod(call, rows)
        global_row = (round_ * self.num_processes + self.process_index) * rows + row
        return self.start + global_row // self.num_generations


class CountdownEnvironment:
    """One Countdown rollout for TRL's ``environment_factory``: ``reset``, the ``check`` tool, ``get_reward``.

    Build instances with :meth:`factory` (they share one :class:`PuzzleStream`). Public methods other than
    ``reset`` and ``get_reward`` become tools, so everything else here is private.
    """

    def __init__(
        self,
        task: CountdownTask | None = None,
        *,
        max_checks: int = DEFAULT_MAX_CHECKS,
        stream: PuzzleStream | None = None,
        hint: str | None = CHECK_HINT,
    ) -> None:
        if task is not None and not isinstance(task, CountdownTask):
            raise TypeError(f"task must be a CountdownTask, got {type(task).__name__}")
        if isinstance(max_checks, bool) or not isinstance(max_checks, int) or max_checks < 0:
            raise ValueError(f"max_checks must be a non-negative integer, got {max_checks!r}")
        self._task = task if task is not None else CountdownTask()
        self._max_checks = max_checks
        self._stream = stream if stream is not None else PuzzleStream()
        self._hint = hint
        self.puzzle: Puzzle | None = None
        self.index: int | None = None
        self.checks: list[str] = []
        self.completion: Any = None

    @classmethod
    def factory(
        cls,
        task: CountdownTask | None = None,
        *,
        num_generations: int = 1,
        max_checks: int = DEFAULT_MAX_CHECKS,
        hint: str | None = CHECK_HINT,
        **stream_kwargs: Any,
    ) -> Callable[[], CountdownEnvironment]:
        """A zero-argument factory for ``GRPOTrainer(environment_factory=...)``; its instances share one
        :class:`PuzzleStream` (``num_generations`` and ``stream_kwargs`` go to it)."""
        stream = PuzzleStream(num_generations, **stream_kwargs)

        def make() -> CountdownEnvironment:
            return cls(task, max_checks=max_checks, stream=stream, hint=hint)

        make.stream = stream  # type: ignore[attr-defined]
        return make

    # -- TRL's environment protocol ---------------------------------------------------------------------------
    def reset(self, **row: Any) -> str | None:
        """Start a rollout: pin the row's puzzle (``numbers``/``target`` or ``index``), else draw the next one.

        Returns the prompt text (the task's prompt, plus :data:`CHECK_HINT`) when the row's prompt is empty (no
        dataset, or a dataset without prompts), else ``None`` (the row's prompt already asks the puzzle).
        """
        self.checks = []
        self.completion = None
        if row.get("numbers") is not None and row.get("target") is not None:
            self.puzzle, self.index = Puzzle(row["numbers"], row["target"]), row.get("index")
        elif row.get("index") is not None:
            self.index = int(row["index"])
            self.puzzle = self._task.puzzle(self.index)
        else:
            self.index = self._stream.next_index()
            self.puzzle = self._task.puzzle(self.index)
        if _prompt_text(row.get("prompt")):
            return None
        text = self._task.prompt_text(self.puzzle)
        return f"{text} {self._hint}" if self._hint else text

    def check(self, expression: str) -> str:
        """Check an arithmetic expression against the puzzle: the value it reaches, or the rule it breaks.

        Args:
            expression: an expression over the given numbers, for example "(3 + 5) * 2".

        Returns:
            The verifier's verdict on the expression (it is not an answer: write the answer in the answer tags).
        """
        if self.puzzle is None:
            raise RuntimeError("check() before reset()")
        if len(self.checks) >= self._max_checks:
            return f"No checks left (at most {self._max_checks})."
        task = self._task
        verdict = verify(
            expression if isinstance(expression, str) else str(expression),
            self.puzzle,
            use_all_numbers=task.use_all_numbers,
            integer_intermediates=task.integer_intermediates,
        )
        text = verdict_text(verdict, self.puzzle, task.feedback_template, answer_tag=task.prompt_template.answer_tag)
        self.checks.append(text)
        return text

    def get_reward(self) -> float:
        """The verifier's score (``task.score``) of the final answer block of the completion (recorded by
        :func:`record_final_answers`)."""
        if self.puzzle is None:
            raise RuntimeError("get_reward() before reset()")
        if self.completion is None:
            raise RuntimeError(
                "CountdownEnvironment.get_reward: no completion recorded; pass "
                "reward_funcs=[countdown_env.envs.trl_env.record_final_answers] to the trainer"
            )
        return float(self._task.score(self.completion, self.puzzle).reward)

    def _record(self, completion: Any) -> None:
        self.completion = completion


def record_final_answers(prompts, completions, environments=None, **kwargs) -> list[float]:
    """TRL reward function: give each rollout's environment its completion (for ``get_reward``); returns 0.0s."""
    if environments is None:
        raise ValueError("record_final_answers needs TRL's environments (GRPOTrainer(environment_factory=...))")
    for environment, completion in zip(environments, completions, strict=True):
        if isinstance(environment, CountdownEnvironment):
            environment._record(completion)
    return [0.0] * len(completions)


def _prompt_text(prompt: Any) -> str:
    """The text of a row's prompt (a string, or the content of its last message)."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[-1], Mapping):
        content = prompt[-1].get("content")
        return content if isinstance(content, str) else ""
    return ""


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


# ------------------------------------------------------------------------------------------ chat templates
TOOL_CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{ '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] + '\\n\\n' }}{%- endif %}"
    "{{ 'Tools:' }}"
    "{%- for tool in tools %}{%- set f = tool['function'] if 'function' in tool else tool %}"
    "{{ '\\n- ' + f['name'] + '(' + (f['parameters']['properties'] | list | join(', ')) + '): ' "
    "+ f['description'] }}"
    "{%- endfor %}"
    '{{ \'\\nCall one with <tool_call>{"name": ..., "arguments": {...}}</tool_call>.<|im_end|>\\n\' }}'
    "{%- elif messages[0]['role'] == 'system' %}"
    "{{ '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' and loop.first %}"
    "{%- elif message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\\n' }}{% generation %}{{ message['content'] or '' }}"
    "{%- for call in message.get('tool_calls') or [] %}{%- set f = call['function'] if 'function' in call else call %}"
    "{{ '<tool_call>' + ({'name': f['name'], 'arguments': f['arguments']} | tojson) + '</tool_call>' }}"
    "{%- endfor %}"
    "{{ '<|im_end|>' }}{% endgeneration %}{{ '\\n' }}"
    "{%- else %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""ChatML with tools: a system block listing each tool (name, parameters, description), assistant tool calls as
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, tool results as ``tool`` turns. Without tools it
renders exactly like plain ChatML."""

TOOL_RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}
"""The transformers (>= 5.13) ``response_template`` parsing :data:`TOOL_CHAT_TEMPLATE`'s assistant turns."""


def use_tool_chat_template(tokenizer: Any) -> Any:
    """Give a ChatML tokenizer :data:`TOOL_CHAT_TEMPLATE` and :data:`TOOL_RESPONSE_TEMPLATE` (returns it)."""
    vocab = tokenizer.get_vocab() if callable(getattr(tokenizer, "get_vocab", None)) else {}
    if "<|im_start|>" not in vocab or getattr(tokenizer, "eos_token", None) != "<|im_end|>":
        raise ValueError("use_tool_chat_template needs a ChatML tokenizer (<|im_start|>, eos <|im_end|>)")
    tokenizer.chat_template = TOOL_CHAT_TEMPLATE
    tokenizer.response_template = TOOL_RESPONSE_TEMPLATE
    return tokenizer
