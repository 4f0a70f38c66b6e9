"""``countdown train``: run a registered learner from a YAML preset (:mod:`learners.pipeline.runs.config`), with
checkpoints, resume and a PNG (:mod:`learners.pipeline.runs.driver`)."""

from __future__ import annotations

import argparse
import json

from . import Setting, add_precision_option

HELP = "train a registered learner (GRPO presets, ...) from a YAML preset"
USES_TORCH = True  # the `countdown` command adds --threads (countdown_env.helpers.threads)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..core.registry import LEARNERS

    def learner_name(name: str) -> str:
        if name not in LEARNERS:
            raise argparse.ArgumentTypeError(f"unknown learner {name!r}; choose one of {', '.join(LEARNERS)}")
        return name

    parser.add_argument(
        "--learner", default="grpo", type=learner_name, choices=list(LEARNERS), help="registered learner"
    )
    parser.add_argument(
        "--config",
        default="cpu-tiny",
        help="YAML preset path or packaged name (cpu-tiny, ...), or a plain TRL GRPOConfig YAML (flat keys)",
    )
    parser.add_argument("--output-dir", help="checkpoints, final model, logs, PNG (default: runs/train)")
    parser.add_argument(
        "--model",
        action=Setting,
        key="model",
        type=str,
        help="shortcut for --set model=PATH ('tiny', 'warm-start', 'warm-start-multistep' (give it 384 completion "
        "tokens), a folder or a Hub id)",
    )
    add_precision_option(parser, "shortcut for --set precision=X (default: the config's, auto)", setting=True)
    parser.add_argument("--max-steps", action=Setting, key="trainer.max_steps", type=int,
                        help="shortcut for --set trainer.max_steps=N")  # fmt: skip
    parser.add_argument("--report-to", action=Setting, key="trainer.report_to", type=str,
                        help="shortcut for --set trainer.report_to=X (e.g. tensorboard)")  # fmt: skip
    parser.add_argument(
        "--rollouts",
        action=Setting,
        key="rollouts",
        type=str,
        choices=("dataset", "env", "tools"),
        help="shortcut for --set rollouts=X: dataset (TRL generates, env scorer), env (CountdownTokens-v0 episodes "
        "via rollout_func), tools (environment_factory with the check tool)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override any YAML entry (value parsed as YAML); repeatable",
    )
    parser.add_argument(
        "--async",
        dest="async_rollouts",
        action=Setting,
        key="async",
        nargs=0,
        const={},  # the section, kept as the config gives it (config.merge_layer)
        help="generation (the colocated vLLM engine) runs ahead of the update: the YAML's async section",
    )
    parser.add_argument(
        "--max-staleness",
        action=Setting,
        key="async.max_staleness",
        type=int,
        help="with --async: samples at most this many policy versions old (default 1)",
    )
    parser.add_argument("--no-progress", action=Setting, key="trainer.disable_tqdm", nargs=0, const=True,
                        help="no progress bar (TRL's; trainer.disable_tqdm)")  # fmt: skip
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=None,
        help="continue the run in --output-dir from its newest complete checkpoint (or from PATH); a run that "
        "already reached max_steps is left as it is",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="empty a non-empty --output-dir that holds an earlier run first"
    )
    parser.add_argument(
        "--allow-changes",
        action="store_true",
        help="with --resume: continue the run with settings other than its own (e.g. more steps); each change is "
        "recorded in resolved_config.json with the step it took effect",
    )
    add_trl_flags(parser)


def add_trl_flags(parser: argparse.ArgumentParser) -> None:
    """TRL's spellings (learners.pipeline.runs.trl_args), hidden from --help but for one line of the epilog: a
    trainer option is a :class:`Setting` of the trainer section; the script's keys are read by ``run_config``."""
    from ..pipeline.runs.trl_args import SCRIPT_KEYS, trainer_option_names

    parser.allow_abbrev = False  # hundreds of options: a prefix must not silently pick one
    for name in sorted(trainer_option_names() - set(SCRIPT_KEYS)):
        parser.add_argument(f"--{name}", dest=f"trl:{name}", action=Setting, key=f"trainer.{name}", nargs="*",
                            help=argparse.SUPPRESS)  # fmt: skip
    for name in SCRIPT_KEYS:
        parser.add_argument(f"--{name}", dest=f"trl:{name}", help=argparse.SUPPRESS)
    parser.epilog = (
        "TRL's spellings work too: any GRPOConfig field (or the learner's own option) as --NAME VALUE "
        "(--learning_rate 1e-5 --report_to tensorboard --bf16 False), --output_dir, --model_name_or_path, "
        "--dataset_name DIR [--dataset_train_split train --dataset_test_split test]; --config may be a plain TRL "
        "GRPOConfig YAML (applied to the cpu-tiny preset)."
    )


def run(args: argparse.Namespace) -> int:
    """Train the run of :func:`run_config` into its output folder and print its summary."""
    from ..pipeline.runs.config import find_config
    from ..pipeline.runs.driver import train
    from ..pipeline.runs.processes import run_processes

    run, output_dir = run_config(args)
    summary = train(
        run, output_dir, resume=args.resume, overwrite=args.overwrite, inputs=[find_config(args.config)],
        allow_changes=args.allow_changes,
    )  # fmt: skip
    if run_processes().is_main:  # under accelerate launch: one summary, not one per process
        print(json.dumps(summary, indent=2))
    return 0


def run_config(args: argparse.Namespace):
    """The command's :class:`~learners.pipeline.runs.run_config.RunConfig` and output folder, checked, nothing written.

    The settings in their order: the preset (or a flat TRL YAML over ``cpu-tiny``), then ``--set``, then the flags
    (TRL's script keys ``--model_name_or_path``/``--dataset_name``, then the flags that write settings as they are
    parsed, :class:`~learners.commands.Setting`, the last given holding)."""
    from ..pipeline.runs.config import merge_layer
    from ..pipeline.runs.run_config import RunConfig
    from ..pipeline.runs.trl_args import FLAT_BASE_PRESET, SCRIPT_KEYS, flat_trl_yaml, to_settings

    if getattr(args, "allow_changes", False) and not getattr(args, "resume", None):
        raise ValueError("--allow-changes is a setting of --resume: it lets a resumed run change its settings")
    if getattr(args, "max_staleness", None) is not None and getattr(args, "async_rollouts", None) is None:
        raise ValueError("--max-staleness is a setting of --async: give both")
    preset, yaml_settings, yaml_output_dir = args.config, {}, None
    flat = flat_trl_yaml(args.config)
    if flat is not None:  # a plain TRL GRPOConfig YAML: its keys on top of the cpu-tiny preset
        preset = FLAT_BASE_PRESET
        yaml_settings, yaml_output_dir = to_settings(flat)
    script = {name: getattr(args, f"trl:{name}", None) for name in SCRIPT_KEYS}
    script_settings, flag_output_dir = to_settings({key: value for key, value in script.items() if value is not None})
    output_dir = args.output_dir or flag_output_dir or yaml_output_dir or "runs/train"
    flags = merge_layer(script_settings, getattr(args, "settings", None) or {})
    # user errors (ValueError, OSError, RuntimeError) reach countdown_env.cli.main: one line, exit status 2
    run = RunConfig.load(preset, learner=args.learner, yaml=yaml_settings, sets=args.overrides, flags=flags)
    return run, output_dir
