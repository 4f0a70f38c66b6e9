"""Precision as a run setting (issue 63 items 1 and 4): ``auto`` resolves from the machine's flags, the learner's
config and the colocated engine follow it, the record states it, and a warmup that a scheduler ignores is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

XEON_AMX = (
    "model name\t: Intel(R) Xeon(R) Platinum\nflags\t\t: fpu sse avx avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
)
EPYC_AVX2 = "model name\t: AMD EPYC 7B12\nflags\t\t: fpu sse avx avx2 fma\n"
AVX512_BF16_ONLY = "model name\t: AMD EPYC 9B14\nflags\t\t: fpu avx avx2 avx512f avx512_bf16\n"


@pytest.mark.parametrize(
    ("cpuinfo", "cuda_bf16", "expected"),
    [
        (XEON_AMX, False, "bf16"),
        (EPYC_AVX2, False, "fp32"),
        (AVX512_BF16_ONLY, False, "bf16"),
        ("", False, "fp32"),
        (EPYC_AVX2, True, "bf16"),
    ],  # fmt: skip
)
def test_auto_resolves_from_the_cpu_flags_and_the_gpu(cpuinfo, cuda_bf16, expected):
    from learners.pipeline.machine import cpu_flag_list
    from learners.pipeline.precision import resolve_precision

    flags = cpu_flag_list(cpuinfo)
    native = {"amx_bf16", "avx512_bf16"} & set(cpuinfo.split())
    assert bool(native) == ("bf16" in cpuinfo)  # the fixtures say what they mean
    assert resolve_precision("auto", flags=flags, cuda_bf16=cuda_bf16) == expected
    for asked in ("fp32", "bf16"):  # an explicit setting is taken as asked, on any machine
        assert resolve_precision(asked, flags=flags, cuda_bf16=cuda_bf16) == asked


def test_auto_keeps_the_tiny_models_in_float32(tmp_path):
    """The tiny models' matmuls are too small for bfloat16 units: ``auto`` is fp32 under 40 M parameters, whatever the
    CPU; a model of unknown size (a Hub id) follows the hardware."""
    from learners.pipeline.precision import BF16_FROM_PARAMETERS, model_precision, resolve_precision
    from learners.pipeline.runs.run_config import RunConfig

    flags = ["avx512f", "amx_bf16"]
    assert resolve_precision("auto", flags=flags, cuda_bf16=False, parameters=BF16_FROM_PARAMETERS - 1) == "fp32"
    assert resolve_precision("auto", flags=flags, cuda_bf16=False, parameters=BF16_FROM_PARAMETERS) == "bf16"
    assert resolve_precision("auto", flags=flags, cuda_bf16=False, parameters=None) == "bf16"
    assert resolve_precision("bf16", flags=[], cuda_bf16=False, parameters=10) == "bf16"  # as asked
    assert model_precision("auto", "tiny") == "fp32"
    assert RunConfig.load("cpu-tiny").resolved_precision == "fp32"  # the warm start: 1.07 M parameters
    assert RunConfig.load("cpu-tiny", sets=["model=warm-start"]).resolved_precision == "fp32"


def test_this_machine_resolves_auto_by_its_own_flags():
    from learners.pipeline.precision import resolve_precision

    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    first = text.split("\n\n")[0]
    native = any(f in first.split() for f in ("amx_bf16", "avx512_bf16"))
    assert resolve_precision("auto", cuda_bf16=False) == ("bf16" if native else "fp32")


def test_a_bad_precision_and_a_disagreeing_trainer_bf16_are_refused():
    from learners.pipeline.runs.run_config import RunConfig

    with pytest.raises(ValueError, match="precision: 'fp16' is not one of auto, fp32, bf16"):
        RunConfig.load("cpu-tiny", sets=["precision=fp16"])
    with pytest.raises(ValueError, match="disagree"):  # when the config is checked, before anything is built
        RunConfig.load("cpu-tiny", sets=["precision=fp32", "trainer.bf16=true"])
    assert RunConfig.load("cpu-tiny", sets=["trainer.bf16=false"]).resolved_precision == "fp32"


def test_the_learner_config_follows_the_precision(tmp_path):
    from learners.pipeline.runs.run_config import RunConfig

    def config(*sets, **flags):
        return RunConfig.load("cpu-tiny", sets=list(sets), flags=flags).learner_config(output_dir=str(tmp_path))

    full = config(precision="bf16")
    assert full.bf16 is True and full.use_cpu is True
    assert not full.model_init_kwargs  # a full fine-tune keeps float32 weights
    lora = config("lora.rank=4", precision="bf16")
    assert lora.model_init_kwargs == {"dtype": "bfloat16"}  # the frozen base in bfloat16
    fp32 = config("lora.rank=4", precision="fp32")
    assert fp32.bf16 is False and not fp32.model_init_kwargs
    assert RunConfig().learner_config(output_dir=str(tmp_path)).bf16 is False  # the tiny model, auto: float32


def test_a_bf16_vllm_run_corrects_the_engine_trainer_mismatch_unless_told(tmp_path):
    from learners.core.registry import get_learner
    from learners.core.trainer_fields import trainer_fields
    from learners.pipeline.runs.run_config import RunConfig

    def correction(*sets, **flags):
        run = RunConfig.load("cpu-tiny-vllm", sets=list(sets), flags=flags)
        return run.learner_config(output_dir=str(tmp_path)).vllm_importance_sampling_correction

    assert correction(precision="bf16") is True
    assert correction("trainer.vllm_importance_sampling_correction=false", precision="bf16") is False  # the config's
    trl_default = trainer_fields(get_learner("grpo"))["vllm_importance_sampling_correction"]
    assert correction(precision="fp32") is trl_default  # TRL's default, as before


def test_the_record_states_the_resolved_precision_and_the_cpu():
    from learners.pipeline.runs.record import run_record
    from learners.pipeline.runs.run_config import RunConfig

    record = run_record(RunConfig.load("cpu-tiny", flags={"precision": "bf16"}))
    assert record["precision"] == "bf16" and record["precision_setting"] == "bf16"
    assert set(record["cpu"]["flags"]) <= {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}
    assert isinstance(record["cpu"]["model"], str) and json.loads(json.dumps(record)) == record


def test_a_resume_holds_an_old_record_as_float32(tmp_path):
    """Records written before precision existed were float32 runs: resuming one in bf16 is a change."""
    from learners.pipeline.runs.record import check_resume

    (tmp_path / "resolved_config.json").write_text(json.dumps({"learner": "grpo", "model": "tiny"}))
    new = {"learner": "grpo", "model": "tiny", "precision": "fp32", "precision_setting": "auto",
           "cpu": {"model": "another CPU", "flags": []}}  # fmt: skip
    assert check_resume(tmp_path, new, allow_changes=False) == {}
    with pytest.raises(ValueError, match="precision: 'fp32' -> 'bf16'"):
        check_resume(tmp_path, {**new, "precision": "bf16"}, allow_changes=False)


@pytest.mark.parametrize("scheduler", ["constant", "reduce_lr_on_plateau"])
def test_a_warmup_the_scheduler_ignores_is_refused_naming_both(scheduler):
    from learners.pipeline.runs.run_config import RunConfig

    with pytest.raises(ValueError) as caught:
        RunConfig.load("cpu-tiny", sets=[f"trainer.lr_scheduler_type={scheduler}", "trainer.warmup_steps=5"])
    assert f"lr_scheduler_type: {scheduler}" in str(caught.value) and "warmup_steps: 5" in str(caught.value)
    RunConfig.load("cpu-tiny", sets=["trainer.lr_scheduler_type=constant_with_warmup", "trainer.warmup_steps=5"])
    RunConfig.load("cpu-tiny", sets=["trainer.lr_scheduler_type=constant", "trainer.warmup_steps=0"])


def test_the_smollm2_preset_applies_its_warmup():
    """The shipped preset's 5 warmup steps: the schedule it builds really starts low (R2's `constant` did not)."""
    import torch
    from transformers import get_scheduler

    from learners.pipeline.runs.config import load_config

    trainer = load_config("cpu-smollm2-vllm")["trainer"]
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=trainer["learning_rate"])
    schedule = get_scheduler(trainer["lr_scheduler_type"], optimizer, num_warmup_steps=trainer["warmup_steps"],
                             num_training_steps=trainer["max_steps"])  # fmt: skip
    rates = []
    for _ in range(7):
        rates.append(schedule.get_last_lr()[0])
        optimizer.step()
        schedule.step()
    assert rates[0] < rates[4] < trainer["learning_rate"] and rates[5] == rates[6] == trainer["learning_rate"]


BF16_CPU = (
    any(f in Path("/proc/cpuinfo").read_text().split() for f in ("amx_bf16", "avx512_bf16"))
    if Path("/proc/cpuinfo").is_file()
    else False
)


@pytest.mark.slow
@pytest.mark.skipif(not BF16_CPU, reason="this CPU has no amx_bf16/avx512_bf16: bf16 would be emulated (slow)")
def test_a_bf16_lora_run_of_two_steps_on_the_two_layer_smollm2(smollm2_truncated_dir, tmp_path):
    """The 2-layer SmolLM2 in bf16 with LoRA: the frozen base loads in bfloat16, the adapter and AdamW's state are
    float32, the step runs under bfloat16 autocast."""
    import torch

    from learners.pipeline.runs.driver import build_trainer
    from learners.pipeline.runs.run_config import RunConfig

    sets = [f"model={smollm2_truncated_dir}", "lora.rank=4", "lora.targets=all-linear", "data.train_size=16",
            "data.eval_size=0", "eval.every=0", "trainer.max_steps=2", "trainer.per_device_train_batch_size=4",
            "trainer.num_generations=4", "trainer.max_completion_length=8", "trainer.learning_rate=1e-2",
            "trainer.beta=0.0"]  # fmt: skip
    run = RunConfig.load("cpu-tiny", sets=sets, flags={"precision": "bf16"})
    trainer = build_trainer(run, tmp_path / "run")
    assert trainer.accelerator.mixed_precision == "bf16"
    dtypes = {n: p.dtype for n, p in trainer.model.named_parameters()}
    assert {d for n, d in dtypes.items() if "lora_" in n} == {torch.float32}
    assert {d for n, d in dtypes.items() if "lora_" not in n} == {torch.bfloat16}
    _check_adapter_casts_are_skipped_bit_identically(trainer)
    trainer.train()
    assert trainer.state.global_step == 2
    states = [state for state in trainer.optimizer.state_dict()["state"].values() if "exp_avg" in state]
    assert states and {state["exp_avg"].dtype for state in states} == {torch.float32}  # AdamW's state in float32
    assert os.path.isdir(tmp_path / "run")


def _check_adapter_casts_are_skipped_bit_identically(trainer):
    """The trainer's log-probabilities skip PEFT's cast of each LoRA input to float32 under bf16 autocast (autocast
    casts it back at once), with TRL's log-probabilities and gradients."""
    import torch
    from peft.tuners.tuners_utils import BaseTunerLayer
    from trl import GRPOTrainer

    model = trainer.model
    casting_seen = []
    layers = [module for module in model.modules() if isinstance(module, BaseTunerLayer)]
    hooks = [layer.register_forward_pre_hook(lambda m, a: casting_seen.append(m.cast_input_dtype_enabled))
             for layer in layers]  # fmt: skip
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(10, 1000, (3, 12), generator=generator)
    mask = torch.ones_like(input_ids)

    def logps_and_grads(method):
        model.zero_grad(set_to_none=True)
        logps, _, _ = method(trainer, model, input_ids, mask, 6)
        logps.sum().backward()
        return logps.detach(), [p.grad.clone() for p in model.parameters() if p.requires_grad]

    try:
        ours = logps_and_grads(type(trainer)._get_per_token_logps_and_entropies)
        assert layers and casting_seen and not any(casting_seen)
        casting_seen.clear()
        trls = logps_and_grads(GRPOTrainer._get_per_token_logps_and_entropies)
        assert casting_seen and all(casting_seen)
    finally:
        for hook in hooks:
            hook.remove()
        model.zero_grad(set_to_none=True)
    # equal bit for bit on this project's Xeon; held to bfloat16's resolution, since the LM head's projection now
    # runs on fewer rows (the completion tokens: tests/learners/test_base_trainer.py) and another CPU's kernels may
    # block a shorter matrix differently
    torch.testing.assert_close(ours[0], trls[0], rtol=0, atol=1e-2)
    assert len(ours[1]) == len(trls[1])
    for a, b in zip(ours[1], trls[1], strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-2 * float(b.abs().max()))
    assert all(layer.cast_input_dtype_enabled for layer in layers)  # restored after the call
