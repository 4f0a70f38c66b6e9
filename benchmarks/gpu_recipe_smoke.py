"""The GPU recipe ``qwen2.5-3b-tinyzero-vllm`` for about ten minutes on one GPU, with a random-init model of its real
size: the prepared device check of the recipe (no weights reach the lent machine, so no accuracy is measured here,
only that the recipe runs at full size and what a step costs).

NOT RUN YET: written in a session that had no GPU lent; its first run is the first test of the recipe on a GPU. What
it does, on one CUDA GPU (one H200 planned):

1. builds a random-init Qwen2 with Qwen2.5-3B-Instruct's layer shapes (hidden 2048, 36 layers, 16 query and 2
   key/value heads, MLP 11008, tied embeddings) and the project's character tokenizer, so the vocabulary is ~100
   tokens (110) instead of 151 936: 2.77 B parameters instead of 3.09 B (the embedding is the difference), saved in
   bfloat16 to a scratch folder (not under ``$OUT``);
2. runs ``countdown train --learner grpo --config qwen2.5-3b-tinyzero-vllm --set model=THAT_FOLDER`` with the
   recipe's every setting but the run's length: ``--steps`` steps (default 20 with vLLM, 8 without), 2000 training
   puzzles, one eval of 64 puzzles x 1 sample at the end, no checkpoints, under a wall limit (``--limit``, default
   480 s); vLLM colocated when ``import vllm`` works, else transformers generation (said in the results). A random
   model rarely samples its end-of-turn token, so nearly every completion runs to the recipe's 768 tokens: the
   costliest case;
3. samples ``nvidia-smi``'s memory in use every 5 s and writes ``OUT/gpu_recipe_smoke.json`` (parameters, backend,
   steps done, median and every seconds per step from TRL's ``step_time``, peak GPU memory, exit status, the command)
   and ``OUT/train.log`` (the run's output).

Needs on the device: a CUDA torch and transformers (preinstalled there), the project with its dependencies (trl,
accelerate, datasets, ...: carried as wheels), optionally vllm. ``--cpu-smoke`` runs the same plumbing on the CPU
with a 2-layer model, 2 steps and no vLLM (``tests/integration/test_gpu_recipe.py``).

    python benchmarks/gpu_recipe_smoke.py --out "$OUT"            # on the GPU machine
    python benchmarks/gpu_recipe_smoke.py --out /tmp/x --cpu-smoke  # the plumbing, on a CPU
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RECIPE = "qwen2.5-3b-tinyzero-vllm"
QWEN2_5_3B = dict(hidden_size=2048, num_layers=36, num_heads=16, num_kv_heads=2, intermediate_size=11008)
"""Qwen2.5-3B-Instruct's layer shapes (its config.json on the Hub)."""
CPU_SMOKE = dict(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=128)


def build_model(out: Path, shape: dict, dtype: str) -> int:
    """A random-init Qwen2 of ``shape`` with the project's character tokenizer, saved to ``out``; its parameters."""
    import torch
    from transformers import GenerationConfig, Qwen2ForCausalLM

    from learners.pipeline.models.tiny import build_char_tokenizer, save_tokenizer, tiny_config

    tokenizer = build_char_tokenizer()
    config = tiny_config(
        len(tokenizer),
        hidden_size=shape["hidden_size"],
        num_layers=shape["num_layers"],
        num_heads=shape["num_heads"],
        intermediate_size=shape["intermediate_size"],
        max_position_embeddings=4096,
    )
    config.num_key_value_heads = shape["num_kv_heads"]
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(getattr(torch, dtype))
    model.generation_config = GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id, bos_token_id=config.bos_token_id
    )
    model.save_pretrained(out)
    save_tokenizer(tokenizer, out)
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def have_vllm() -> bool:
    try:
        import vllm  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure to import means: train without it
        return False
    return True


class MemorySampler(threading.Thread):
    """The largest ``nvidia-smi`` memory.used (MiB) seen every ``period`` seconds until stopped."""

    def __init__(self, period: float = 5.0):
        super().__init__(daemon=True)
        self.period, self.peak_mib, self.stopped = period, None, threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                text = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                      capture_output=True, text=True, timeout=10).stdout  # fmt: skip
                used = max(int(v) for v in text.split() if v.strip().isdigit())
                self.peak_mib = used if self.peak_mib is None else max(self.peak_mib, used)
            except (OSError, ValueError, subprocess.SubprocessError):
                pass
            self.stopped.wait(self.period)


def step_times(log: str) -> list[float]:
    """TRL's logged ``step_time`` of every training step, from the run's printed log dicts."""
    times = []
    for line in log.splitlines():
        line = line.strip()
        if line.startswith("{") and "'step_time'" in line:
            try:
                times.append(float(ast.literal_eval(line)["step_time"]))
            except (ValueError, SyntaxError, KeyError):
                continue
    return times


def train_command(model: Path, run: Path, steps: int, vllm: bool, cpu: bool) -> list[str]:
    sets = [f"model={model}", "data={train_size: 2000, eval_size: 64}", f"eval.every={steps}", "eval.samples=1",
            "eval.limit=64", "eval.batch_size=64", f"trainer.max_steps={steps}", "trainer.save_strategy='no'",
            f"trainer.use_vllm={str(vllm).lower()}", "trainer.disable_tqdm=true"]  # fmt: skip
    if cpu:  # the plumbing only: tiny sizes, float32
        sets += ["data={train_size: 16, eval_size: 4}", "eval.limit=4", "eval.batch_size=4", "eval.max_new_tokens=8",
                 "trainer.per_device_train_batch_size=8", "trainer.gradient_accumulation_steps=1",
                 "trainer.num_generations=4", "trainer.max_completion_length=8",
                 "trainer.model_init_kwargs={dtype: float32}"]  # fmt: skip
    countdown = [sys.executable, "-m", "countdown_env.cli"]
    return [*countdown, "train", "--learner", "grpo", "--config", RECIPE, "--output-dir", str(run),
            *(x for s in sets for x in ("--set", s))]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for gpu_recipe_smoke.json and train.log ($OUT)")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 20 with vLLM, 8 without)")
    parser.add_argument("--limit", type=float, default=480.0, help="wall seconds the training run may take")
    parser.add_argument("--cpu-smoke", action="store_true", help="the plumbing on a CPU: 2-layer model, 2 steps")
    args = parser.parse_args(argv)
    from countdown_env.helpers.atomic import write_text

    if args.steps is not None and args.steps < 1:
        print(f"gpu_recipe_smoke: error: --steps must be >= 1, got {args.steps}", file=sys.stderr)
        return 2
    import torch

    if not args.cpu_smoke and not torch.cuda.is_available():
        print("gpu_recipe_smoke: error: no CUDA GPU here (use --cpu-smoke to check the plumbing)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    vllm = not args.cpu_smoke and have_vllm()
    steps = args.steps or (2 if args.cpu_smoke else 20 if vllm else 8)
    scratch = Path(tempfile.mkdtemp(prefix="gpu-recipe-smoke-"))
    try:
        started = time.perf_counter()
        shape = CPU_SMOKE if args.cpu_smoke else QWEN2_5_3B
        parameters = build_model(scratch / "model", shape, "float32" if args.cpu_smoke else "bfloat16")
        built_s = time.perf_counter() - started
        command = train_command(scratch / "model", scratch / "run", steps, vllm, args.cpu_smoke)
        sampler = MemorySampler()
        if not args.cpu_smoke:
            sampler.start()
        started = time.perf_counter()
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.limit, env=env, cwd=ROOT)
            log, status = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as exc:
            log = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            log += (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            status = "timeout"
        wall = time.perf_counter() - started
        sampler.stopped.set()
        times = step_times(log)
        result = dict(
            recipe=RECIPE,
            model_shape=shape,
            parameters=parameters,
            note="random-init weights; vocabulary of 110 characters instead of 151 936 (2.77 B parameters vs 3.09 B)",
            backend="vllm colocate" if vllm else "transformers generate (vllm not importable)",
            steps_planned=steps,
            steps_done=len(times),
            seconds_per_step_median=statistics.median(times) if times else None,
            seconds_per_step=times,
            peak_gpu_memory_mib=sampler.peak_mib,
            model_build_seconds=round(built_s, 1),
            train_wall_seconds=round(wall, 1),
            exit_status=status,
            command=" ".join(command[2:]).replace(str(scratch), "SCRATCH"),
            torch=torch.__version__,
            gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        )
        write_text(out / "train.log", log.replace(str(scratch), "SCRATCH"))
        write_text(out / "gpu_recipe_smoke.json", json.dumps(result, indent=2) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k != "seconds_per_step"}, indent=2))
        return 0 if status == 0 else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
