"""Warm starts shipped as LoRA adapters (learners.pipeline.models.adapters): cast, merge, cache, refuse damage.

The merge is checked against the LoRA update computed here from the adapter's own tensors, W + (alpha / r) B A,
not against PEFT's merge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")


def _tiny_adapter(base: Path, out: Path, *, rank: int = 2, seed: int = 0) -> Path:
    """A LoRA adapter on every linear layer of ``base`` with non-zero B (a fresh adapter's B is 0), saved to ``out``."""
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    from learners.pipeline.runs.lora import lora_config

    torch.manual_seed(seed)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base), lora_config(rank, "all-linear"))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.05)
    model.save_pretrained(out)
    (out / "countdown_task.json").write_text('{"marker": "the adapter\'s task"}\n')
    return out


@pytest.fixture(scope="module")
def adapter_dir(tiny_model_dir, tmp_path_factory):
    return _tiny_adapter(tiny_model_dir, tmp_path_factory.mktemp("adapter"))


def _lora_update(adapter: Path) -> dict[str, torch.Tensor]:
    """{base weight name: (alpha / r) B A}, from the adapter's saved tensors and config alone."""
    from safetensors.torch import load_file

    config = json.loads((adapter / "adapter_config.json").read_text())
    scale = config["lora_alpha"] / config["r"]
    tensors = load_file(adapter / "adapter_model.safetensors")
    updates = {}
    for name, a in tensors.items():
        if ".lora_A." not in name:
            continue
        b = tensors[name.replace(".lora_A.", ".lora_B.")]
        base_name = name.replace("base_model.model.", "").replace(".lora_A.weight", ".weight")
        updates[base_name] = scale * (b.float() @ a.float())
    return updates


def test_cast_adapter_halves_the_file_and_rounds_each_value(adapter_dir, tmp_path):
    import shutil

    from safetensors.torch import load_file

    from learners.pipeline.models.adapters import cast_adapter

    copy = Path(shutil.copytree(adapter_dir, tmp_path / "a"))
    before = load_file(copy / "adapter_model.safetensors")
    size = (copy / "adapter_model.safetensors").stat().st_size
    cast_adapter(copy, "bfloat16")
    after = load_file(copy / "adapter_model.safetensors")
    assert after.keys() == before.keys()
    assert all(t.dtype == torch.bfloat16 for t in after.values())
    for name, tensor in before.items():
        assert torch.equal(after[name], tensor.to(torch.bfloat16))
    assert (copy / "adapter_model.safetensors").stat().st_size < 0.6 * size


def test_merge_adapter_adds_the_lora_update_to_every_adapted_weight(tiny_model_dir, adapter_dir, tmp_path):
    from transformers import AutoModelForCausalLM

    from learners.pipeline.models.adapters import merge_adapter

    out = merge_adapter(adapter_dir, tmp_path / "merged", base=tiny_model_dir)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).state_dict()
    merged = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).state_dict()
    updates = _lora_update(adapter_dir)
    assert len(updates) == 7 * json.loads((tiny_model_dir / "config.json").read_text())["num_hidden_layers"]
    assert merged.keys() == base.keys()
    for name, weight in base.items():
        expected = weight + updates[name] if name in updates else weight
        assert torch.allclose(merged[name], expected, atol=1e-6), name
    assert (out / "countdown_task.json").read_text() == (adapter_dir / "countdown_task.json").read_text()
    assert (out / "tokenizer.json").is_file()


def test_merged_model_is_built_once_and_refuses_a_damaged_adapter(tiny_model_dir, adapter_dir, tmp_path):
    import shutil

    from learners.core.checkpoints import write_checkpoint_manifest
    from learners.pipeline.models.adapters import ShippedAdapter, merged_model

    shipped = Path(shutil.copytree(adapter_dir, tmp_path / "shipped"))
    write_checkpoint_manifest(shipped)
    adapter = ShippedAdapter(name="tiny-warm-start", base=str(tiny_model_dir), folder=shipped)
    messages: list[str] = []
    first = merged_model(adapter, tmp_path / "cache", log=messages.append)
    again = merged_model(adapter, tmp_path / "cache", log=messages.append)
    assert first == again and first.parent == tmp_path / "cache" / "models"
    assert len(messages) == 1 and "merging" in messages[0]  # built once, then found intact
    # the adapter file changed after its manifest: refused in one line, nothing merged
    with open(shipped / "adapter_model.safetensors", "r+b") as fh:
        fh.seek(-8, 2)
        fh.write(b"\0" * 8)
    with pytest.raises(ValueError, match="damaged .*adapter_model.safetensors"):
        merged_model(adapter, tmp_path / "cache2", log=messages.append)
    assert not (tmp_path / "cache2" / "models").exists() or not any((tmp_path / "cache2" / "models").iterdir())


def test_merged_model_needs_its_base_installed(tmp_path, monkeypatch):
    from learners.pipeline.models.adapters import SMOLLM2_WARM_START, merged_model

    if not (SMOLLM2_WARM_START.folder / "adapter_model.safetensors").is_file():
        pytest.skip("the SmolLM2 warm start is not shipped in this checkout")
    monkeypatch.setenv("COUNTDOWN_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(FileNotFoundError, match="countdown models install smollm2-135m"):
        merged_model(SMOLLM2_WARM_START.name)
