"""Evaluation: the unbiased pass@k estimator, CIs, the HF backend, end-to-end reports."""

from __future__ import annotations

import itertools
import json
import math

import pytest


@pytest.mark.parametrize("n,c,k", [(4, 0, 1), (4, 1, 1), (4, 2, 2), (5, 3, 4), (10, 1, 10), (8, 8, 3), (7, 2, 6)])
def test_pass_at_k_matches_the_combinatorial_definition(n, c, k):
    from learners.pipeline.evaluation.statistics import pass_at_k

    expected = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)
    # and the definition itself: share of k-subsets holding at least one correct sample
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(samples, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets), abs=1e-12)


def test_pass_at_k_rejects_bad_input():
    from learners.pipeline.evaluation.statistics import pass_at_k

    for args in [(4, 5, 1), (4, -1, 1), (4, 1, 0), (4, 1, 5)]:
        with pytest.raises(ValueError):
            pass_at_k(*args)


def test_bootstrap_ci_brackets_the_mean_and_is_seeded():
    from learners.pipeline.evaluation.statistics import bootstrap_ci

    values = [0.0, 1.0] * 50
    low, high = bootstrap_ci(values, seed=3)
    assert low < 0.5 < high and 0.3 < low and high < 0.7
    assert bootstrap_ci(values, seed=3) == (low, high)
    assert bootstrap_ci([0.25]) == (0.25, 0.25)
    assert all(math.isnan(v) for v in bootstrap_ci([]))


def samples_of(*ids_lists):
    from learners.sampling import Sample

    return [Sample(list(ids), [0.0] * len(ids)) for ids in ids_lists]


class ScriptedSampler:
    """Returns fixed completions: for puzzle i, ``correct_counts[i]`` correct ones then wrong ones."""

    name = "scripted"

    def __init__(self, tokenizer, rows, correct_counts, solutions):
        self.tokenizer, self.rows, self.counts, self.solutions = tokenizer, rows, correct_counts, solutions

    def sample(self, prompts, sampling, *, n=1, max_new_tokens):
        eos = self.tokenizer.eos_token_id
        out = []
        for count, solution in zip(self.counts, self.solutions, strict=True):
            good = self.tokenizer.encode(f"<reasoning>\nok\n</reasoning>\n<solution>{solution}</solution>") + [eos]
            bad = self.tokenizer.encode("<reasoning>\nhm\n</reasoning>\n<solution>1 + 1 + 1</solution>") + [eos]
            out.append(samples_of(*([good] * count + [bad] * (n - count))))
        assert len(out) == len(prompts)
        return out


def test_evaluate_reports_exact_pass_at_k_per_n_numbers(tiny_tokenizer):
    from learners.pipeline.evaluation.evaluate import evaluate
    from learners.pipeline.evaluation.report import format_report
    from learners.pipeline.evaluation.statistics import pass_at_k

    rows = [
        {"numbers": [3, 7, 11], "target": 21},
        {"numbers": [2, 5, 9], "target": 19},
        {"numbers": [1, 2, 3, 4], "target": 24},
    ]
    solutions = ["3 + 7 + 11", "2 * 5 + 9", "1 * 2 * 3 * 4"]
    counts = [4, 1, 0]
    sampler = ScriptedSampler(tiny_tokenizer, rows, counts, solutions)
    report = evaluate(sampler, tiny_tokenizer, rows, samples=4, temperature=0.8, max_new_tokens=200, template="compact")
    three = report["by_n_numbers"]["3"]
    assert three["n_puzzles"] == 2
    assert three["pass@1"] == pytest.approx((1.0 + 0.25) / 2)
    assert three["pass@4"] == pytest.approx(1.0)
    assert report["by_n_numbers"]["4"]["pass@1"] == 0.0
    overall = report["overall"]
    assert overall["pass@4"] == pytest.approx((1 + pass_at_k(4, 1, 4) + 0) / 3)
    assert overall["format_rate"] == 1.0 and overall["truncation_rate"] == 0.0
    low, high = overall["pass@1_ci95"]
    assert low <= overall["pass@1"] <= high
    json.dumps(report)
    assert "pass@4" in format_report(report)


def test_evaluate_counts_truncated_answers_as_wrong(tiny_tokenizer):
    from learners.pipeline.evaluation.evaluate import evaluate

    class Truncating:
        name = "t"

        def sample(self, prompts, sampling, *, n=1, max_new_tokens):
            ids = tiny_tokenizer.encode("<reasoning>\n3 + 7 + 11 = 21 " + "x" * 50)[:max_new_tokens]
            return [samples_of(*[ids] * n) for _ in prompts]

    report = evaluate(
        Truncating(), tiny_tokenizer, [{"numbers": [3, 7, 11], "target": 21}], samples=2, max_new_tokens=20
    )
    assert report["overall"]["pass@1"] == 0.0 and report["overall"]["truncation_rate"] == 1.0


def test_evaluate_rejects_greedy_with_several_samples(tiny_tokenizer):
    from learners.pipeline.evaluation.evaluate import evaluate

    with pytest.raises(ValueError, match="greedy"):
        evaluate(None, tiny_tokenizer, [{"numbers": [1, 2], "target": 3}], samples=4, temperature=0.0)


@pytest.mark.slow
def test_hf_backend_on_the_tiny_model_end_to_end(tiny_model_dir, tmp_path):
    from countdown_env.helpers.jsonl import write_jsonl
    from learners.pipeline.evaluation.eval_models import evaluate_model_dir
    from learners.pipeline.evaluation.report import write_report

    split = tmp_path / "eval.jsonl"
    write_jsonl([{"numbers": [3, 7, 11], "target": 21}, {"numbers": [2, 5, 9, 4], "target": 19}], split)
    report = evaluate_model_dir(
        tiny_model_dir, split, samples=3, temperature=1.0, max_new_tokens=12, seed=0, template="compact"
    )
    assert set(report["by_n_numbers"]) == {"3", "4"}
    assert report["overall"]["samples"] == 3 and 0.0 <= report["overall"]["pass@1"] <= 1.0
    assert 1 <= report["overall"]["mean_completion_tokens"] <= 12
    again = evaluate_model_dir(
        tiny_model_dir, split, samples=3, temperature=1.0, max_new_tokens=12, seed=0, template="compact"
    )
    assert again["overall"] == report["overall"]  # seeded
    path = write_report(report, tmp_path / "r" / "report.json")
    assert json.loads(path.read_text())["model"] == str(tiny_model_dir)
    with pytest.raises(FileNotFoundError):
        evaluate_model_dir(tiny_model_dir, tmp_path / "missing.jsonl")


def write_header_only_safetensors(path, shapes: dict) -> None:
    """A safetensors file whose header names tensors of these shapes (float32, the data left out: only the header is
    read by ``parameter_count``)."""
    import struct

    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 4 * math.prod(shape)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob)


def test_auto_backend_is_vllm_from_40_m_parameters_on_and_transformers_below(tiny_model_dir, tmp_path, monkeypatch):
    import importlib.util

    from learners.pipeline.evaluation.eval_models import resolve_backend
    from learners.pipeline.models.parameters import parameter_count

    real = tmp_path / "real"
    real.mkdir()
    write_header_only_safetensors(real / "model-00001-of-00002.safetensors", {"embed": (49152, 576)})
    write_header_only_safetensors(real / "model-00002-of-00002.safetensors", {"a": (6000, 2000), "b": (10,)})
    assert parameter_count(real) == 49152 * 576 + 6000 * 2000 + 10  # 40.3 M: both shards counted
    assert resolve_backend("auto", real) == "vllm"
    (real / "model-00002-of-00002.safetensors").unlink()
    assert resolve_backend("auto", real) == "hf"  # 28.3 M
    write_header_only_safetensors(real / "model-00002-of-00002.safetensors", {"a": (6000, 2000), "b": (10,)})
    assert resolve_backend("hf", real) == "hf"
    assert resolve_backend("auto", tiny_model_dir) == "hf" and resolve_backend("vllm", tiny_model_dir) == "vllm"
    (tmp_path / "bin-only").mkdir()
    assert parameter_count(tmp_path / "bin-only") is None and resolve_backend("auto", tmp_path / "bin-only") == "hf"
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else find_spec(name, *a))
    assert resolve_backend("auto", real) == "hf"  # no vLLM installed: transformers


@pytest.mark.parametrize(
    ("template", "tags"),
    [("default", ("reasoning", "solution")), ("compact", ("reasoning", "solution")), ("tinyzero", ("think", "answer"))],
)
def test_evaluate_scores_with_the_task_tags(tiny_tokenizer, template, tags):
    """``countdown eval``'s scorer: one correct and one wrong answer in the template's own tags score 1 and 0 (the
    same verdict as the task's reward); an answer in another template's tags does not count."""
    from countdown_env import Puzzle
    from countdown_env.task import CountdownTask
    from learners.pipeline.evaluation.evaluate import evaluate

    think, answer = tags
    other = "answer" if answer == "solution" else "solution"
    texts = [
        f"<{think}>\nok\n</{think}>\n<{answer}>3 * 7</{answer}>",
        f"<{think}>\nhm\n</{think}>\n<{answer}>3 + 7</{answer}>",
        f"<{think}>\nok\n</{think}>\n<{other}>3 * 7</{other}>",
    ]

    class Fixed:
        def sample(self, prompts, sampling, *, n=1, max_new_tokens):
            eos = tiny_tokenizer.eos_token_id
            return [samples_of(*[tiny_tokenizer.encode(t, add_special_tokens=False) + [eos] for t in texts])]

    task = CountdownTask(n_numbers=3, template=template)
    rows = [{"numbers": [3, 7, 11], "target": 21}]
    report = evaluate(Fixed(), tiny_tokenizer, rows, task=task, samples=3, max_new_tokens=64, per_puzzle=True)
    assert report["puzzles"][0]["correct"] == [True, False, False]
    puzzle = Puzzle([3, 7, 11], 21)
    assert [task.score(t, puzzle).reward for t in texts] == [1.0, 0.0, 0.0]
    assert report["template"] == template and report["task"]["template"] == template


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--samples", "0"], "--samples must be >= 1, got 0"),
        (["--temperature", "-1"], "--temperature must be >= 0"),
        (["--max-new-tokens", "0"], "--max-new-tokens must be >= 1"),
    ],
)
def test_eval_names_the_bad_flag(tiny_model_dir, tmp_path, capsys, flags, message):
    from countdown_env.cli import main

    argv = ["eval", "--model", str(tiny_model_dir), "--split", str(tmp_path / "x.jsonl"), *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_eval_defaults_are_sized_to_the_model(tiny_model_dir, tmp_path, capsys):
    """``eval --limit 128`` on SmolLM2 kept the tiny model's 4 samples x 768 tokens (~18 min here; issue 44 item 11):
    from 40 M parameters on the defaults are 2 samples x 256 tokens, said in one line and in --help; a value the
    user gives is kept; the tiny models keep 4 x 768."""
    import argparse

    from countdown_env.cli import main
    from learners.commands import eval as eval_command

    real = tmp_path / "real"
    real.mkdir()
    write_header_only_safetensors(real / "model.safetensors", {"embed": (49152, 576), "a": (6000, 2000)})  # 40.3 M
    args = argparse.Namespace(samples=None, max_new_tokens=None)
    line = eval_command.sized_defaults(args, real)
    assert (args.samples, args.max_new_tokens) == (2, 256)
    assert line == "a 40.3 M-parameter model: --samples 2 --max-new-tokens 256 (the defaults of models from 40 M on)"
    args = argparse.Namespace(samples=8, max_new_tokens=None)
    assert "--max-new-tokens 256" in eval_command.sized_defaults(args, real) and args.samples == 8
    args = argparse.Namespace(samples=None, max_new_tokens=None)
    assert eval_command.sized_defaults(args, tiny_model_dir) is None
    assert (args.samples, args.max_new_tokens) == (4, 768)
    assert main(["eval", "--help"]) == 0
    usage = " ".join(capsys.readouterr().out.split())
    assert "default 4 for the tiny models, 2 for a model of 40 M parameters or more" in usage
    assert "default 768 for the tiny models, 256 from 40 M parameters on" in usage


def test_the_speed_line_states_tokens_time_and_rate():
    from learners.pipeline.evaluation.report import speed_line

    report = {"backend": "vllm", "generation_seconds": 125.0, "generated_tokens_per_second": 12.5}
    assert speed_line(report) == "generation (vllm): 1562 tokens in 2m 05s, 12.5 tokens/s"
    assert "no tokens" in speed_line({"backend": "hf", "generation_seconds": 0.0, "generated_tokens_per_second": None})


def test_parameter_count_reads_headers_and_gives_up_on_a_damaged_file(tmp_path):
    import torch
    from safetensors.torch import save_file

    from learners.pipeline.models.parameters import parameter_count

    save_file({"a": torch.zeros(3, 4), "b": torch.zeros(5)}, str(tmp_path / "model.safetensors"))
    assert parameter_count(tmp_path) == 3 * 4 + 5
    for damaged in (b"{}", b"\xff" * 8 + b"{}", (10).to_bytes(8, "little") + b"not json!!"):
        (tmp_path / "model.safetensors").write_bytes(damaged)
        assert parameter_count(tmp_path) is None
