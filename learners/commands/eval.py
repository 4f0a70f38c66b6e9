"""``countdown eval``: pass@1/pass@k with CIs of a checkpoint on a split
(:mod:`learners.pipeline.evaluation.eval_models`), or pass@1 within 1..N turns of multi-turn episodes
(:mod:`learners.pipeline.evaluation.turns`); a JSON report."""

from __future__ import annotations

import math
from pathlib import Path

from ..pipeline.evaluation.eval_models import BACKENDS

HELP = "pass@1/pass@k with CIs of a checkpoint on a split; JSON report"
USES_TORCH = True  # the `countdown` command adds --threads (countdown_env.threads)


def add_arguments(parser) -> None:
    """``countdown eval`` options."""
    parser.add_argument("--model", required=True, help="checkpoint folder, or 'warm-start' (the shipped tiny model)")
    parser.add_argument("--split", required=True, help="jsonl split (numbers/target rows) or save_to_disk folder")
    parser.add_argument("--samples", type=int, default=4, help="completions per puzzle (n of pass@k)")
    parser.add_argument("--k", type=int, action="append", help="extra k for pass@k (default: 1 and --samples)")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature (0: greedy, --samples 1)")
    parser.add_argument("--max-new-tokens", type=int, default=768, help="completion budget; longer counts as wrong")
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
    likewise ``runs/eval/NAME/name`` for an installed pretrained model (its cache folder stays as installed)."""
    from ..pipeline.models import WARM_START
    from ..pipeline.models.pretrained import MODELS

    return Path(f"runs/eval/{model}" if model == WARM_START or model in MODELS else model) / name


def run(args) -> int:
    # user errors (ValueError, OSError, RuntimeError) reach countdown_env.cli.main: one line, exit status 2
    if args.samples < 1:
        raise ValueError(f"--samples must be >= 1, got {args.samples}")
    if not 0 <= args.temperature < math.inf:
        raise ValueError(f"--temperature must be >= 0 and finite (0: greedy), got {args.temperature}")
    if args.max_new_tokens < 1:
        raise ValueError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
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
    ks = sorted({1, args.samples, *(args.k or [])})
    if any(k > args.samples for k in ks):
        raise ValueError(f"every --k must be <= --samples ({args.samples})")
    turns = getattr(args, "max_turns", 1) != 1
    name = "eval_turns_report.json" if turns else "eval_report.json"
    out = Path(args.out) if args.out else default_report_path(args.model, name)
    from countdown_env.atomic import output_claim

    from ..pipeline.evaluation.report import check_report_path
    from ..pipeline.models import check_model, resolve_model

    check_model(resolve_model(args.model))  # a missing model is named first (its folder is the default --out's)
    if not Path(args.split).exists():
        raise FileNotFoundError(f"no split at {args.split}")
    check_report_path(out, resolve_model(args.model), args.split)  # before any model is loaded
    with output_claim(out):  # a second eval into the same report is refused at once, not lost
        return _run_turns(args, out) if turns else _run_single(args, ks, out)


def _run_single(args, ks: list[int], out: Path) -> int:
    from ..pipeline.evaluation.eval_models import evaluate_model_dir
    from ..pipeline.evaluation.report import format_markdown, format_report, template_line, write_report

    report = evaluate_model_dir(
        args.model,
        args.split,
        **_shared_settings(args),
        ks=ks,
        keep_completions=args.examples,
        progress=False if args.no_progress else None,
    )
    write_report(report, out)
    print(template_line(report))
    print(format_markdown(report) if args.markdown else format_report(report))
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
