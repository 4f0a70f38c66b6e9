"""``countdown eval``: pass@1/pass@k with CIs of a checkpoint on a split
(:mod:`learners.pipeline.evaluation.eval_models`), or pass@1 within 1..N turns of multi-turn episodes
(:mod:`learners.pipeline.evaluation.turns`); a JSON report."""

from __future__ import annotations

import math
from pathlib import Path

from ..pipeline.evaluation.eval_models import BACKENDS, VLLM_FROM_PARAMETERS
from ..pipeline.evaluation.protocol import EVAL_TEMPERATURE
from . import add_precision_option

HELP = "pass@1/pass@k with CIs of a checkpoint on a split; JSON report"
USES_TORCH = True  # the `countdown` command adds --threads (countdown_env.helpers.threads)

TINY_DEFAULTS = {"samples": 4, "max_new_tokens": 768}
"""--samples and --max-new-tokens for the tiny models (a 512 x 4 eval of the warm start: ~30 s here)."""
LARGE_DEFAULTS = {"samples": 2, "max_new_tokens": 256}
"""... for a real pretrained model (SmolLM2-135M: 45-172 tokens/s with vLLM on one thread here, where 128 puzzles x
the tiny defaults took ~18 min). Its warm start's "direct" answers take ~120 tokens, so 256 truncates little;
2 samples still give pass@2."""
LARGE_FROM = VLLM_FROM_PARAMETERS
"""The size from which a model gets :data:`LARGE_DEFAULTS` (the size from which ``--backend auto`` takes vLLM)."""


def add_arguments(parser) -> None:
    """``countdown eval`` options."""
    parser.add_argument("--model", required=True, help="checkpoint folder, or 'warm-start' (the shipped tiny model)")
    parser.add_argument("--split", required=True, help="jsonl split (numbers/target rows) or save_to_disk folder")
    parser.add_argument(
        "--samples",
        type=int,
        help=f"completions per puzzle (n of pass@k); default {TINY_DEFAULTS['samples']} for the tiny models, "
        f"{LARGE_DEFAULTS['samples']} for a model of {LARGE_FROM // 10**6} M parameters or more (smollm2-135m)",
    )
    parser.add_argument("--k", type=int, action="append", help="extra k for pass@k (default: 1 and --samples)")
    parser.add_argument(
        "--temperature", type=float, default=EVAL_TEMPERATURE, help="sampling temperature (0: greedy, --samples 1)"
    )
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        help=f"completion budget, longer counts as wrong; default {TINY_DEFAULTS['max_new_tokens']} for the tiny "
        f"models, {LARGE_DEFAULTS['max_new_tokens']} from {LARGE_FROM // 10**6} M parameters on",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling and bootstrap seed")
    parser.add_argument("--limit", type=int, help="evaluate only the first N puzzles")
    parser.add_argument(
        "--template",
        choices=("default", "tinyzero", "compact"),
        help="prompt template (default: the task recorded with the model, else the split's, else 'default')",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="generation engine: transformers, or vLLM (CPU or GPU build); auto: vLLM from 40 M parameters on "
        "(a real model such as smollm2-135m), transformers below",
    )
    add_precision_option(parser, "the weights' precision while sampling (the report states it)")
    parser.add_argument("--batch-size", type=int, default=64, help="rows per HF generate call (hf backend)")
    parser.add_argument(
        "--out", help="JSON report path (default: MODEL/eval_report.json; runs/eval/warm-start/ for warm-start)"
    )
    parser.add_argument("--examples", type=int, default=0, help="keep this many completions per puzzle in the JSON")
    parser.add_argument(
        "--markdown", action="store_true", help="print the results as a Markdown table (README-ready) on stdout"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (shown when stderr is a terminal)")
    parser.add_argument(
        "--max-turns",
        type=int,
        default=1,
        help="N > 1: multi-turn episodes (wrong answers get the verifier's feedback); prints pass@1 within 1..N turns",
    )
    parser.add_argument("--feedback", choices=("default", "compact"), help="feedback template for --max-turns")


def default_report_path(model: str, name: str) -> Path:
    """``MODEL/name``; for ``warm-start`` (the shipped folder, never written to) ``runs/eval/warm-start/name``, and
    likewise ``runs/eval/NAME/name`` for an installed pretrained model or a shipped adapter (their cache folders stay
    as built)."""
    from ..pipeline.models import WARM_START
    from ..pipeline.models.adapters import ADAPTERS
    from ..pipeline.models.pretrained import MODELS

    named = model == WARM_START or model in MODELS or model in ADAPTERS
    return Path(f"runs/eval/{model}" if named else model) / name


def sized_defaults(args, model_dir) -> str | None:
    """Fill the ``--samples`` / ``--max-new-tokens`` the user left out with the defaults of the model's size
    (:data:`TINY_DEFAULTS`, :data:`LARGE_DEFAULTS`); returns a line naming what was filled, ``None`` when nothing
    was."""
    from ..pipeline.models.parameters import parameter_count

    missing = [name for name in TINY_DEFAULTS if getattr(args, name) is None]
    if not missing:
        return None
    count = parameter_count(model_dir)
    large = count is not None and count >= LARGE_FROM
    defaults = LARGE_DEFAULTS if large else TINY_DEFAULTS
    for name in missing:
        setattr(args, name, defaults[name])
    if not large:
        return None
    chosen = " ".join(f"--{name.replace('_', '-')} {defaults[name]}" for name in missing)
    return f"a {count / 1e6:.1f} M-parameter model: {chosen} (the defaults of models from {LARGE_FROM // 10**6} M on)"


def run(args) -> int:
    # user errors (ValueError, OSError, RuntimeError) reach countdown_env.cli.main: one line, exit status 2
    for name in TINY_DEFAULTS:
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not 0 <= args.temperature < math.inf:
        raise ValueError(f"--temperature must be >= 0 and finite (0: greedy), got {args.temperature}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0 (numpy and vLLM seeds), got {args.seed}")
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1 (omit it for every puzzle), got {args.limit}")
    if args.examples < 0:
        raise ValueError(f"--examples must be >= 0, got {args.examples}")
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.backend == "vllm":
        from ..core.vllm_sync import check_kv_cache_space

        check_kv_cache_space()  # before the engine start, not "Engine core initialization failed" after it
    if getattr(args, "max_turns", 1) < 1:
        raise ValueError(f"--max-turns must be >= 1, got {args.max_turns}")
    turns = getattr(args, "max_turns", 1) != 1
    name = "eval_turns_report.json" if turns else "eval_report.json"
    out = Path(args.out) if args.out else default_report_path(args.model, name)
    from countdown_env.helpers.atomic import output_claim

    from ..pipeline.evaluation.report import check_report_path
    from ..pipeline.models import check_model, resolve_model

    check_model(resolve_model(args.model))  # a missing model is named first (its folder is the default --out's)
    sized = sized_defaults(args, resolve_model(args.model))
    ks = sorted({1, args.samples, *(args.k or [])})
    if any(k > args.samples for k in ks):
        raise ValueError(f"every --k must be <= --samples ({args.samples})")
    if sized:
        print(sized)
    if not Path(args.split).exists():
        raise FileNotFoundError(f"no split at {args.split}")
    check_report_path(out, resolve_model(args.model), args.split)  # before any model is loaded
    if turns and args.precision != "auto":
        raise ValueError("--precision applies to the single-turn eval; --max-turns samples in its auto precision")
    with output_claim(out):  # a second eval into the same report is refused at once, not lost
        return _run_turns(args, out) if turns else _run_single(args, ks, out)


def _run_single(args, ks: list[int], out: Path) -> int:
    from ..pipeline.evaluation.eval_models import evaluate_model_dir
    from ..pipeline.evaluation.report import format_markdown, format_report, speed_line, template_line, write_report

    report = evaluate_model_dir(
        args.model,
        args.split,
        **_shared_settings(args),
        ks=ks,
        keep_completions=args.examples,
        progress=False if args.no_progress else None,
        precision=args.precision,
    )
    write_report(report, out)
    print(template_line(report))
    print(format_markdown(report) if args.markdown else format_report(report))
    print(speed_line(report))
    print(f"report: {out}")
    return 0


def _shared_settings(args) -> dict:
    """The options both evals take: backend, sizes, template and sampling."""
    names = ("backend", "limit", "batch_size", "template", "samples", "temperature", "max_new_tokens", "seed")
    return {name: getattr(args, name) for name in names}


def _run_turns(args, out: Path) -> int:
    """``--max-turns N``: the multi-turn eval (:mod:`learners.pipeline.evaluation.turns`)."""
    from ..pipeline.evaluation.report import write_report
    from ..pipeline.evaluation.turns import evaluate_turns_model_dir, format_turns

    report = evaluate_turns_model_dir(
        args.model, args.split, **_shared_settings(args), max_turns=args.max_turns, feedback=args.feedback
    )
    write_report(report, out)
    print(format_turns(report))
    print(f"report: {out}")
    return 0
