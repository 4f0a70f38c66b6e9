"""countdown_env.envs.trl_env: CountdownEnvironment (reset/check/get_reward, puzzle stream) and two steps of learners
with ``environment_factory`` on the tiny model (a scripted generator makes the tool calls: the tiny model would not).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from countdown_env.envs.trl_env import (
    CountdownEnvironment,
    PuzzleStream,
    record_final_answers,
    use_tool_chat_template,
)
from countdown_env.puzzle import Puzzle
from countdown_env.solving.solver import solve
from countdown_env.task import CountdownTask

TASK = CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(10, 100), template="compact", feedback="compact")


def test_importable_without_torch():
    code = (
        "import sys, countdown_env.envs.trl_env; print(any(m in sys.modules for m in ('torch', 'transformers', 'trl')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_reset_draws_puzzles_by_group_and_pins_rows():
    make = CountdownEnvironment.factory(TASK, num_generations=2)
    envs = [make() for _ in range(4)]
    prompts = [env.reset(prompt=[{"role": "user", "content": ""}]) for env in envs]
    assert [env.index for env in envs] == [0, 0, 1, 1]
    assert (
        prompts[0]
        == TASK.prompt_text(TASK.puzzle(0)) + " You may test an expression with the check tool before answering."
    )
    assert envs[2].puzzle == TASK.puzzle(1)
    env = make()
    assert env.reset(prompt=[{"role": "user", "content": "asked"}], numbers=[3, 7, 11], target=21) is None
    assert env.puzzle == Puzzle([3, 7, 11], 21)
    env.reset(index=17)
    assert env.puzzle == TASK.puzzle(17) and make.stream.calls == 4


def test_stream_with_several_processes_keeps_groups_whole():
    rows, g = 4, 2
    streams = [PuzzleStream(g, rows_per_process=rows, process_index=p, num_processes=2) for p in range(2)]
    # round 0: process 0 holds global rows 0-3 (groups 0, 1), process 1 rows 4-7 (groups 2, 3); round 1: 4..7
    assert [streams[0].next_index() for _ in range(8)] == [0, 0, 1, 1, 4, 4, 5, 5]
    assert [streams[1].next_index() for _ in range(8)] == [2, 2, 3, 3, 6, 6, 7, 7]
    split = PuzzleStream(4, rows_per_process=6, process_index=0, num_processes=2)
    with pytest.raises(ValueError, match="whole groups"):
        split.next_index()
    # rows that carry their puzzle never draw: such a stream does not stop a run (the tools route's dataset)
    env = CountdownEnvironment(TASK, stream=split)
    env.reset(numbers=[3, 7, 11], target=21)
    assert env.puzzle == Puzzle([3, 7, 11], 21)
    with pytest.raises(ValueError, match="rows_per_process"):
        PuzzleStream(2, process_index=0, num_processes=2).next_index()


def test_check_tool_and_get_reward():
    env = CountdownEnvironment(TASK, max_checks=2)
    env.reset(numbers=[3, 7, 11], target=21)
    assert env.check("3 + 7") == "Value: 10"
    assert env.check("3 * 7") == "Value: 21\nCorrect"
    assert env.check("3 * 7").startswith("No checks left")
    with pytest.raises(RuntimeError, match="record_final_answers"):
        env.get_reward()
    completion = [{"role": "assistant", "content": TASK.format_completion("r", "3 * 7")}]
    assert record_final_answers(None, [completion], environments=[env]) == [0.0]
    assert env.get_reward() == 1.0 == TASK.score(completion, env.puzzle).reward


def test_check_schema_and_tool_template(tiny_tokenizer):
    import copy

    from transformers.utils import get_json_schema
    from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

    schema = get_json_schema(CountdownEnvironment().check)
    assert schema["function"]["name"] == "check"
    assert list(schema["function"]["parameters"]["properties"]) == ["expression"]
    tok = use_tool_chat_template(copy.deepcopy(tiny_tokenizer))
    assert supports_tool_calling(tok) and is_chat_template_prefix_preserving(tok)
    plain = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
    ]
    assert tok.apply_chat_template(plain, tokenize=False) == tiny_tokenizer.apply_chat_template(plain, tokenize=False)


# ---------------------------------------------------------------------------------------- two learner steps
TOOL_RESULT_PREFIX = "\n<|im_start|>tool\n"


def scripted_generate(tokenizer):
    """A stand-in for ``model.generate``: first turn calls ``check``, after a tool result it answers."""
    import torch

    calls = {"n": 0}

    def generate(input_ids, attention_mask=None, **kwargs):
        rows = []
        for i, row in enumerate(input_ids.tolist()):
            text = tokenizer.decode(row, skip_special_tokens=False)
            numbers = [int(x) for x in re.findall(r"Numbers: ([\d, ]+)", text)[-1].split(",")]
            target = int(re.findall(r"Target: (\d+)", text)[-1])
            a, b, c = numbers
            if "<|im_start|>tool" not in text:
                expr = f"{a} + {b}"
                out = f'<tool_call>{{"name": "check", "arguments": {{"expression": "{expr}"}}}}</tool_call>'
            else:
                expr = solve(Puzzle(numbers, target)) if i % 2 else f"{a} * {b} * {c}"
                out = TASK.format_completion("tried", expr)
            rows.append(tokenizer.encode(out + "<|im_end|>", add_special_tokens=False))
        calls["n"] += 1
        width = max(map(len, rows))
        pad = tokenizer.pad_token_id
        completion = torch.tensor([r + [pad] * (width - len(r)) for r in rows], dtype=input_ids.dtype)
        return torch.cat([input_ids, completion], dim=1)

    return generate


@pytest.mark.parametrize("learner", ["grpo", "s_grpo"])
def test_two_steps_with_environment_factory(learner, tiny_model_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from learners.core.registry import get_learner
    from learners.pipeline.models.tiny import tiny_cpu_kwargs
    from learners.pipeline.models.tokenizer_io import load_tokenizer

    spec = get_learner(learner)
    args = spec.make_config(**tiny_cpu_kwargs(tmp_path / "out", max_completion_length=256, learning_rate=1e-4))
    config_class, trainer_class = spec.load()
    tokenizer = use_tool_chat_template(load_tokenizer(tiny_model_dir))
    factory = CountdownEnvironment.factory(TASK, num_generations=args.num_generations)
    trainer = trainer_class(
        model=AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        reward_funcs=[record_final_answers],
        args=args,
        processing_class=tokenizer,
        environment_factory=factory,
        task=TASK,
    )
    trainer.model.generate = scripted_generate(tokenizer)
    seen = []
    calculate = trainer._calculate_rewards
    shape = trainer.shape_batch

    def spy_rewards(inputs, prompts, completions, completion_ids_list):
        rewards = calculate(inputs, prompts, completions, completion_ids_list)
        envs = [(env.index, env.puzzle, list(env.checks)) for env in trainer.environments]
        seen.append({"envs": envs, "completions": completions, "rewards": rewards.clone()})
        return rewards

    def spy_shape(batch, rollout):
        seen[-1]["batch"] = {k: v.clone() for k, v in batch.items() if isinstance(v, torch.Tensor)}
        seen[-1]["rollout"] = rollout
        return shape(batch, rollout)

    trainer._calculate_rewards = spy_rewards
    trainer.shape_batch = spy_shape
    trainer.train()
    assert trainer.state.global_step == 2 and len(seen) == 2
    assert trainer.reward_func_names[0] == "record_final_answers"
    assert trainer.reward_func_names[-1] == "CountdownEnvironment"

    for step, record in enumerate(seen):
        envs, batch = record["envs"], record["batch"]
        # puzzles by group: 8 rows = 2 groups of 4, puzzle indices 2*step and 2*step + 1
        assert [index for index, _, _ in envs] == [2 * step] * 4 + [2 * step + 1] * 4
        for i, (index, puzzle, checks) in enumerate(envs):
            assert puzzle == TASK.puzzle(index)
            messages = record["completions"][i]
            roles = [m["role"] for m in messages]
            assert roles == ["assistant", "tool", "assistant"], roles
            call = messages[0]["tool_calls"][0]["function"]
            assert call["name"] == "check"
            assert call["arguments"] == {"expression": f"{puzzle.numbers[0]} + {puzzle.numbers[1]}"}
            assert messages[1]["content"] == checks[0] and checks[0].startswith(f"Value: {sum(puzzle.numbers[:2])}")
            # environment tokens: the tool result (and the next assistant opening) has tool_mask 0
            ids = batch["completion_ids"][i][batch["completion_mask"][i].bool()].tolist()
            mask = batch["tool_mask"][i][: len(ids)].tolist()
            tool_text = tokenizer.decode(
                [t for t, m in zip(ids, mask, strict=False) if m == 0], skip_special_tokens=False
            )
            assert tool_text == f"{TOOL_RESULT_PREFIX}{checks[0]}<|im_end|>\n<|im_start|>assistant\n"
            policy_text = tokenizer.decode(
                [t for t, m in zip(ids, mask, strict=False) if m == 1], skip_special_tokens=False
            )
            assert policy_text.startswith("<tool_call>") and policy_text.endswith("</solution><|im_end|>")
            # the environment's reward is the verifier's score of the final answer
            expected = TASK.score(messages, puzzle).reward
            assert record["rewards"][i, -1].item() == expected and record["rewards"][i, 0].item() == 0.0
        if len(trainer.reward_func_names) == 2:
            assert record["rollout"].rewards.tolist() == record["rewards"][:, -1].tolist()
        assert record["rewards"][:, -1].tolist() == [0.0, 1.0] * 4  # odd rows answer with the solver's solution
        assert record["rollout"].puzzles == [puzzle for _, puzzle, _ in envs]  # the seams see the env's puzzles
    assert any(float(e.get("grad_norm", 0)) > 0 for e in trainer.state.log_history)  # advantages reached the loss
