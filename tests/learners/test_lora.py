"""LoRA runs (E5 of docs/experiments.md): ``runs.driver.make_trainer(peft_config=...)`` trains only the adapter, and
``countdown compare --lora-rank R`` records it, reproduces it in its command line and saves adapter checkpoints."""

from __future__ import annotations

import json

import pytest

from countdown_env.cli import main
from learners.pipeline.compare import CompareSettings
from learners.pipeline.runs.lora import LORA_TARGETS, lora_config


def expected_lora_parameters(config: dict, rank: int) -> int:
    """r x (in + out) per adapted projection, from the model's own shapes (q/o: heads, k/v: key-value heads)."""
    hidden = config["hidden_size"]
    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    q_out = config["num_attention_heads"] * head_dim
    kv_out = config.get("num_key_value_heads", config["num_attention_heads"]) * head_dim
    per_layer = rank * ((hidden + q_out) + 2 * (hidden + kv_out) + (q_out + hidden))
    return config["num_hidden_layers"] * per_layer


@pytest.mark.slow
def test_make_trainer_with_lora_trains_the_adapter_only(tiny_model_dir, tiny_tokenizer, tmp_path):
    from countdown_env import Puzzle
    from countdown_env.task import CountdownTask
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.runs.driver import make_trainer
    from learners.pipeline.runs.run_config import RunConfig

    task = CountdownTask(n_numbers=3)
    puzzles = [Puzzle([1, 2, 3], 6), Puzzle([4, 5, 6], 15)]
    args = dict(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2, max_completion_length=8,
                max_steps=1, report_to="none")  # fmt: skip
    trainer = make_trainer("grpo", RunConfig().learner_config(**args), model=tiny_model_dir, task=task,
                           tokenizer=tiny_tokenizer, train_dataset=prompt_dataset(puzzles, task), train_puzzles=puzzles,
                           peft_config=lora_config(2))  # fmt: skip
    trainable = {n: p.numel() for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    assert {n.split(".")[-4] for n in trainable} == set(LORA_TARGETS)
    config = json.loads((tiny_model_dir / "config.json").read_text())
    assert sum(trainable.values()) == expected_lora_parameters(config, 2)


def test_lora_rank_must_be_positive():
    with pytest.raises(ValueError, match="rank"):
        lora_config(0)
    with pytest.raises(ValueError, match="--lora-rank"):
        CompareSettings(learners=["grpo"], seeds=[0], max_steps=1, eval_every=1, train_size=4, eval_limit=1,
                        max_new_tokens=4, prompts_per_step=1, num_generations=2, lora_rank=0)  # fmt: skip


def test_compare_lora_run_records_and_saves_the_adapter(tiny_model_dir, tmp_path):
    out = tmp_path / "cmp"
    argv = ["compare", "--quick", "--seeds", "0", "--model", str(tiny_model_dir), "--out", str(out),
            "--learners", "grpo", "--lora-rank", "2", "--keep-checkpoints"]  # fmt: skip
    assert main(argv) == 0
    settings = json.loads((out / "compare.json").read_text())
    assert settings["lora_rank"] == 2
    assert "--lora-rank 2" in CompareSettings(**settings).command()
    run = out / "runs" / "grpo-s0"
    record = json.loads((run / "resolved_config.json").read_text())
    assert record["lora"]["rank"] == 2 and record["model"] == str(tiny_model_dir)  # as the user named it
    checkpoint = sorted(run.glob("checkpoint-*"))[-1]
    adapter = json.loads((checkpoint / "adapter_config.json").read_text())
    assert adapter["r"] == 2 and set(adapter["target_modules"]) == set(LORA_TARGETS)
    assert not (checkpoint / "model.safetensors").exists()  # the adapter only, not the whole model
    assert "LoRA adapter of rank 2" in (out / "summary.md").read_text()


def test_compare_trains_an_all_linear_adapter_on_a_train_file(tiny_model_dir, tmp_path):
    import random

    from learners.pipeline.runs.lora import LORA_ALL_LINEAR

    pool = [{"numbers": [a, b, c], "target": a + b + c} for a, b, c in ((3, 5, 7), (2, 9, 11), (4, 6, 13), (1, 8, 17))]
    train_file = tmp_path / "band.jsonl"
    train_file.write_text("".join(json.dumps(row) + "\n" for row in pool))
    out = tmp_path / "cmp"
    argv = ["compare", "--quick", "--seeds", "3", "--model", str(tiny_model_dir), "--out", str(out),
            "--learners", "grpo", "--lora-rank", "2", "--lora-targets", "all-linear", "--train-file",
            str(train_file), "--train-size", "3", "--keep-checkpoints"]  # fmt: skip
    assert main(argv) == 0
    shuffled = list(pool)
    random.Random(3).shuffle(shuffled)
    used = [json.loads(line) for line in (out / "data" / "train-s3.jsonl").read_text().splitlines()]
    assert used == shuffled[:3]
    settings = CompareSettings(**json.loads((out / "compare.json").read_text()))
    assert f"--lora-targets all-linear --train-file {train_file}" in settings.command()
    checkpoint = sorted((out / "runs" / "grpo-s3").glob("checkpoint-*"))[-1]
    adapter = json.loads((checkpoint / "adapter_config.json").read_text())
    assert set(adapter["target_modules"]) == set(LORA_ALL_LINEAR)


def test_compare_refuses_a_train_file_holding_an_eval_puzzle(tiny_model_dir, tmp_path, capsys):
    from countdown_env.splits.eval_sets import load_eval_set

    held_out = load_eval_set("tiny_n3", as_dataset=False)[5]
    train_file = tmp_path / "band.jsonl"
    rows = [{"numbers": [3, 5, 7], "target": 15}, {"numbers": held_out["numbers"][::-1], "target": held_out["target"]}]
    train_file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    argv = ["compare", "--quick", "--seeds", "0", "--model", str(tiny_model_dir), "--out", str(tmp_path / "cmp"),
            "--learners", "grpo", "--train-file", str(train_file)]  # fmt: skip
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "line 2" in err and "eval puzzle" in err


def test_train_lora_section_saves_the_adapter_and_a_merged_final(tiny_model_dir, tmp_path, monkeypatch):
    """``lora: {rank, targets}`` in a run config trains the adapter only; ``final/`` loads as a plain model whose
    weights equal the base's plus B A scaled by alpha / r (computed here from the saved adapter)."""
    import torch
    from safetensors.torch import load_file

    from learners.core.checkpoints import checkpoint_problem
    from learners.core.trainer import CountdownGRPOTrainer

    # the random tiny model solves nothing: alternate rewards give every group a gradient, so B leaves zero
    monkeypatch.setattr(CountdownGRPOTrainer, "countdown_env_reward",
                        lambda self, prompts, completions, *a, **k: [float(i % 2) for i in range(len(completions))])

    rows = [{"numbers": [a, b, c], "target": a + b + c} for a, b, c in ((3, 5, 7), (2, 9, 11), (4, 6, 13), (1, 8, 17))]
    train_file = tmp_path / "train.jsonl"
    train_file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "run"
    sets = [f"model={tiny_model_dir}", "data=" + json.dumps({"train": str(train_file)}), "eval.every=0",
            "trainer.max_steps=1", "trainer.per_device_train_batch_size=4", "trainer.num_generations=4",
            "trainer.max_completion_length=8", "trainer.learning_rate=0.05", "lora={rank: 2, targets: all-linear}"]
    argv = ["train", "--learner", "grpo", "--config", "cpu-tiny", "--output-dir", str(out)]
    assert main(argv + [x for s in sets for x in ("--set", s)]) == 0  # fmt: skip
    adapter_dir = out / "final" / "adapter"
    adapter = json.loads((adapter_dir / "adapter_config.json").read_text())
    assert adapter["r"] == 2 and adapter["lora_alpha"] == 4
    assert checkpoint_problem(out / "final") is None
    base, final = load_file(tiny_model_dir / "model.safetensors"), load_file(out / "final" / "model.safetensors")
    lora = load_file(adapter_dir / "adapter_model.safetensors")
    changed = 0
    for key, weight in base.items():
        stem = "base_model.model." + key.removesuffix(".weight")
        a, b = lora.get(stem + ".lora_A.weight"), lora.get(stem + ".lora_B.weight")
        expected = weight if a is None else weight + (b @ a) * (adapter["lora_alpha"] / adapter["r"])
        torch.testing.assert_close(final[key], expected, rtol=0, atol=1e-6)
        changed += a is not None and not torch.equal(final[key], weight)
    assert changed > 0  # one step with a gradient moved B off zero


@pytest.mark.parametrize(
    "section, needle",
    [("{rank: 0}", "lora.rank must be an integer >= 1"), ("{targets: attention}", "lora.rank"),
     ("{rank: 2, tagets: attention}", "did you mean"), ("{rank: 2, targets: everything}", "LoRA targets must be"),
     ("{rank: 2, targets: []}", "lora.targets must be"), ("[2]", "must be a mapping")],
)  # fmt: skip
def test_train_lora_section_bad_values_fail_in_one_line(tiny_model_dir, tmp_path, capsys, section, needle):
    argv = ["train", "--config", "cpu-tiny", "--model", str(tiny_model_dir), "--output-dir", str(tmp_path / "run"),
            "--set", f"lora={section}"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_the_engine_sync_leaves_a_bf16_base_untouched_and_rounds_the_merge_once(tiny_model_dir):
    """A bf16 LoRA run holds its frozen base in bfloat16. TRL's sync merged the adapter into it in place and took it
    out again: PEFT adds and subtracts the delta rounded to bfloat16, so every sync moved the base. The project's CPU
    sync (learners.core.vllm_sync.merged_named_params) sends W + delta in float32 (the engine's loader rounds it once
    into its own dtype), under vLLM's names, and writes nothing into the model."""
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM
    from trl.generation.vllm_generation import VLLMGeneration

    from learners.core.vllm_sync import merged_named_params
    from learners.pipeline.runs.lora import LORA_ALL_LINEAR

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.bfloat16)
    plain_names = {name for name, _ in base.named_parameters()}
    model = get_peft_model(base, lora_config(4, tuple(LORA_ALL_LINEAR)))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:  # a trained adapter: neither factor zero
                param.copy_(torch.randn(param.shape, generator=generator) * 0.05)
    before = {name: param.detach().clone() for name, param in model.named_parameters()}
    generation = VLLMGeneration.__new__(VLLMGeneration)  # only the model and TRL's name fixing are used
    generation.model = model
    for _ in range(3):
        sent = dict(merged_named_params(generation))
    assert all(torch.equal(param, before[name]) for name, param in model.named_parameters())  # bit for bit
    assert set(sent) == plain_names
    layer = model.base_model.model.model.layers[0].self_attn.q_proj
    weight = layer.base_layer.weight.float()
    delta = (layer.lora_B["default"].weight.float() @ layer.lora_A["default"].weight.float()) * layer.scaling["default"]
    assert torch.equal(sent["model.layers.0.self_attn.q_proj.weight"], weight + delta)
    assert not torch.equal((weight + delta).to(torch.bfloat16), layer.base_layer.weight)  # the adapter shows in bf16
