"""An eval report on disk and on screen: the JSON file, the terminal lines, a README-ready Markdown table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_report(report: dict[str, Any], path: str | Path) -> Path:
    from countdown_env.helpers.atomic import write_text

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, json.dumps(report, indent=2) + "\n")


REPORT_KEYS = ({"samples", "overall"}, {"samples", "turns"}, {"eval_set", "pass@1"})
"""Keys of a single-turn eval report, a multi-turn one and a warm start's report (``countdown warm-start``): a JSON
object with one of these sets is one of ours."""


def is_eval_report(path: str | Path) -> bool:
    """Whether ``path`` is a JSON eval report (:data:`REPORT_KEYS`), the only file ``countdown eval`` replaces."""
    path = Path(path)
    if path.suffix != ".json" or not path.is_file() or path.stat().st_size > 64 << 20:
        return False
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(report, dict) and any(keys <= set(report) for keys in REPORT_KEYS)


def shipped_folder(path: str | Path) -> Path | None:
    """The installed package folder (``learners``, ``countdown_env``, ``verifiers_ext``) that ``path`` lies in, or
    ``None``: their files (shipped warm starts and their reports, presets) are never an output."""
    import countdown_env
    import learners
    import verifiers_ext

    resolved = Path(path).resolve()
    for package in (learners, countdown_env, verifiers_ext):
        folder = Path(package.__file__).resolve().parent
        if resolved == folder or folder in resolved.parents:
            return folder
    return None


def check_report_path(out: str | Path, model_dir: str | Path, split: str | Path) -> Path:
    """Refuse, in one line and before any work, a report path that is the split or inside a split folder, one of
    the model's files (weights, config, tokenizer: every file of its folder but earlier reports), a file shipped in
    the package (:func:`shipped_folder`), a folder, or an existing file that is not an eval report
    (:func:`countdown_env.helpers.atomic.check_output`); returns it."""
    from countdown_env.helpers.atomic import OutputError, check_output

    out, folder = Path(out), Path(model_dir)
    shipped = shipped_folder(out)
    if shipped is not None:
        raise OutputError(f"--out {out} lies in the package's own folder {shipped} (shipped files, e.g. a calibration "
                          "report); give a path of your own, e.g. runs/eval/eval_report.json")  # fmt: skip
    model_files = [p for p in folder.iterdir() if p.is_file() and not is_eval_report(p)] if folder.is_dir() else []
    check_output(out, [split, *model_files], overwrite=True, what="--out")
    if out.is_dir():
        raise OutputError(f"--out {out} is a folder; give the report's file name (e.g. {out / 'eval_report.json'})")
    if out.exists() and not is_eval_report(out):
        raise OutputError(f"--out {out} exists and is not an eval report; refusing to replace it (give a new path)")
    return out


def _groups(report: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(kind, name, stats)`` rows: each number count, each difficulty, then all puzzles (empty groups skipped)."""
    rows = [("n_numbers", name, stats) for name, stats in report["by_n_numbers"].items()]
    rows += [("difficulty", name, stats) for name, stats in (report.get("by_difficulty") or {}).items()]
    rows.append(("all", "all", report["overall"]))
    return [(kind, name, stats) for kind, name, stats in rows if stats.get("n_puzzles")]


def _pass_keys(stats: dict[str, Any]) -> list[str]:
    return [key for key in stats if key.startswith("pass@") and not key.endswith("ci95")]


def format_report(report: dict[str, Any]) -> str:
    """A few human-readable lines: pass@k with CIs per n_numbers, per difficulty (when the rows carry one) and
    overall."""
    lines = []
    for kind, name, stats in _groups(report):
        label = "all" if kind == "all" else f"{kind}={name}"
        parts = [f"{label:<18} puzzles={stats['n_puzzles']:>4}"]
        for key in _pass_keys(stats):
            low, high = stats[f"{key}_ci95"]
            parts.append(f"{key}={stats[key]:.3f} [{low:.3f}, {high:.3f}]")
        parts.append(f"format={stats['format_rate']:.2f} trunc={stats['truncation_rate']:.2f}")
        lines.append("  ".join(parts))
    return "\n".join(lines)


def speed_line(report: dict[str, Any]) -> str:
    """One line: the backend's generation time and tokens/s (the report's ``generation_seconds`` and
    ``generated_tokens_per_second``), so a user reads the speed without opening the JSON."""
    from countdown_env.helpers.progress import duration

    seconds, rate = report.get("generation_seconds"), report.get("generated_tokens_per_second")
    if not seconds or rate is None:
        return f"generation ({report.get('backend', '?')}): no tokens generated"
    return (f"generation ({report.get('backend', '?')}): {round(rate * seconds)} tokens in {duration(seconds)}, "
            f"{rate:.1f} tokens/s")


def format_markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table (one row per number count, difficulty and overall), with a line stating the
    model, split, sampling and prompt template: ready to paste into a README."""
    groups = _groups(report)
    keys = _pass_keys(report["overall"])
    head = ["group", "puzzles", *[f"{k} (95 % CI)" for k in keys], "format", "truncated", "mean tokens"]
    lines = [
        f"`{report.get('model', '?')}` on `{report.get('split', '?')}`: {report['samples']} samples per puzzle at "
        f"T={report['temperature']}, up to {report['max_new_tokens']} new tokens, prompt template "
        f"`{report.get('template')}` ({report.get('template_source', 'as given')}).",
        "",
        "| " + " | ".join(head) + " |",
        "| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |",
    ]
    for kind, name, stats in groups:
        label = "**all**" if kind == "all" else (f"{name} numbers" if kind == "n_numbers" else name)
        cells = [label, str(stats["n_puzzles"])]
        for key in keys:
            if key in stats:
                low, high = stats[f"{key}_ci95"]
                cells.append(f"{stats[key]:.3f} [{low:.3f}, {high:.3f}]")
            else:
                cells.append("")
        cells += [f"{stats['format_rate']:.2f}", f"{stats['truncation_rate']:.2f}",
                  f"{stats['mean_completion_tokens']:.1f}"]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def template_line(report: dict[str, Any]) -> str:
    """One line: the prompt template used, its source, and what happened to the split's own prompts."""
    line = f"prompt template: {report.get('template')} (from {report.get('template_source', 'the task given')})"
    prompts = report.get("split_prompts")
    if prompts == "different":
        line += "; the split's prompt column differs and was not used (prompts rendered from the task)"
    elif prompts == "same":
        line += "; the split's prompt column agrees"
    return line
