"""The embedded tiny model and its character tokenizer survive a save/reload round trip."""

from __future__ import annotations

import json

import pytest


def test_tokenizer_reloads_as_itself_and_round_trips(tiny_model_dir):
    from transformers import AutoProcessor, AutoTokenizer

    from learners.pipeline.models.tiny import IM_END, ROUND_TRIP_TEXT, TAGS, check_round_trip

    for loader in (AutoTokenizer, AutoProcessor):  # TRL loads processing classes with AutoProcessor
        tok = loader.from_pretrained(tiny_model_dir)
        assert "Qwen2" not in type(tok).__name__
        check_round_trip(tok)
        ids = tok.encode(ROUND_TRIP_TEXT, add_special_tokens=False)
        assert tok.decode(ids) == ROUND_TRIP_TEXT
        assert tok.eos_token == IM_END and tok.pad_token_id is not None and tok.pad_token_id != tok.eos_token_id
        for tag in TAGS:
            assert len(tok.encode(tag, add_special_tokens=False)) == 1


def test_one_token_per_character(tiny_tokenizer):
    text = "12 + (3 * 4) / 5 - 6\n"
    assert len(tiny_tokenizer.encode(text, add_special_tokens=False)) == len(text)


def test_unknown_characters_map_to_unk(tiny_tokenizer):
    ids = tiny_tokenizer.encode("3×4", add_special_tokens=False)
    assert ids[1] == tiny_tokenizer.unk_token_id and len(ids) == 3


def test_chat_template_marks_assistant_tokens(tiny_tokenizer):
    messages = [
        {"role": "user", "content": "Numbers: 1, 2\nTarget: 3"},
        {"role": "assistant", "content": "<reasoning>\n1 + 2 = 3\n</reasoning>\n<solution>1 + 2</solution>"},
    ]
    out = tiny_tokenizer.apply_chat_template(
        messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = out["input_ids"], out["assistant_masks"]
    assistant = [i for i, m in zip(ids, mask, strict=True) if m]
    assert tiny_tokenizer.decode(assistant) == messages[1]["content"] + "<|im_end|>"
    prompt = tiny_tokenizer.apply_chat_template(messages[:1], tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>assistant\n")


def test_model_size_and_generation_stop(tiny_model_dir, tiny_tokenizer):
    import torch
    from transformers import AutoModelForCausalLM

    from learners.pipeline.models.tiny import count_parameters

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert 0.9e6 < count_parameters(model) < 1.2e6
    assert model.config.eos_token_id == tiny_tokenizer.eos_token_id
    assert model.generation_config.eos_token_id == tiny_tokenizer.eos_token_id
    prompt = tiny_tokenizer("Numbers: 1", return_tensors="pt")
    out = model.generate(**prompt, max_new_tokens=5, do_sample=False)
    assert out.shape[1] <= prompt["input_ids"].shape[1] + 5
    assert torch.isfinite(model(**prompt).logits).all()


def test_build_is_deterministic(tmp_path):
    from safetensors.torch import load_file

    from learners.pipeline.models.tiny import build_tiny_model

    a = build_tiny_model(tmp_path / "a", seed=1, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    b = build_tiny_model(tmp_path / "b", seed=1, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys() and all((wa[k] == wb[k]).all() for k in wa)
    assert json.loads((a / "tokenizer_config.json").read_text())["auto_map"]


def test_bad_shape_is_a_clear_error(tmp_path):
    from learners.pipeline.models.tiny import build_tiny_model

    with pytest.raises(ValueError, match="divisible"):
        build_tiny_model(tmp_path, hidden_size=30, num_heads=4)


def test_round_trip_check_catches_a_lossy_tokenizer():
    from learners.pipeline.models.tiny import check_round_trip

    class Lossy:
        def encode(self, text, add_special_tokens=False):
            return list(text.replace(" ", ""))

        def decode(self, ids, **kwargs):
            return "".join(ids)

    with pytest.raises(ValueError, match="round-trip"):
        check_round_trip(Lossy())
