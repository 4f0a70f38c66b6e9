"""Run configs: the YAML presets of ``countdown train`` and their ``--set`` overrides.

A preset (``learners/pipeline/configs/*.yaml``; ``--config NAME`` finds the packaged ones) has these sections::

    model: tiny                  # "tiny" (built offline, random init), "warm-start" (the shipped SFT'd tiny model),
                                 # a checkpoint folder, or a Hub id (GPU)
    task:                        # countdown_env.task.CountdownTask fields: puzzles, rules, template, reward
      {n_numbers: 3, value_range: [1, 20], target_range: [10, 200], template: compact, format_bonus: 0.0}
    data: {train_size: 2000, eval_size: 128}   # a split built from the task now (train/eval disjoint) ...
    # ... or split files:   data: {train: path/to/train.jsonl, eval: path/to/test.jsonl}
    eval: {every: 50, samples: 4, temperature: 0.8, max_new_tokens: 128, limit: 64}   # every: 0 = off
    trainer: {learning_rate: 2e-5, max_steps: 200, ...}   # the learner's config (GRPOConfig fields + its own)
    curriculum: {n_numbers: [3, 4], difficulty: [easy, medium, hard], threshold: 0.6, patience: 2}   # optional:
      # train prompts from countdown_env.procedural.CountdownCurriculum, raised when train accuracy passes threshold
    rollouts: dataset   # or env (CountdownTokens-v0 episodes through a rollout_func; several turns with feedback
      # when task.max_turns > 1) or tools (environment_factory with the check tool); --rollouts X on the command line
    async: {max_staleness: 1}   # optional: generation overlaps the update (colocated vLLM); --async on the command line

Command-line ``--set section.key=value`` overrides any entry (values parsed as YAML). Reading a config imports
neither torch nor TRL; its checks are :mod:`learners.pipeline.runs.checks`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from countdown_env.helpers.keys import refuse_unknown

CONFIG_DIR = Path(__file__).parent.parent / "configs"


def _yaml_loader():
    """PyYAML's SafeLoader, but reading ``1e-3`` as a float (YAML 1.1 wants ``1.0e-3``; users write both) and
    refusing a key given twice in one mapping (PyYAML keeps the last one silently: two ``learning_rate`` lines, or two
    ``trainer:`` sections, trained with whichever came last)."""
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the base class says so
                    continue
                if duplicate:
                    problem = f"the key {key!r} is given twice in one mapping (which one holds would be silent)"
                    raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
            return super().construct_mapping(node, deep)

    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$|^[-+]?\d[\d_]*\.\d*$|^[-+]?\.\d+$"),
        list("-+0123456789."),
    )
    return Loader


MAX_CONFIG_VALUES = 100_000
"""Most values a config may hold once its YAML aliases are expanded (a preset has about a hundred): a
"billion laughs" file of nested aliases expands to 10^9 and ran out of memory after a minute."""

MAX_CONFIG_DEPTH = 32
"""Deepest nesting of a config's values (a preset nests 3 levels)."""


MAX_CONFIG_BYTES = 256 * 1024
"""Largest config file (or ``--set`` value) read: the largest preset is 1.5 KB. PyYAML parses about 0.3 MB/s here,
so a 200 MB file took 337 s to refuse after parsing; it is refused before it is read."""

MAX_CONFIG_KEYS = 10_000
"""Most keys and list items a config may write, counted before parsing from their indicators: a ``:``, ``?`` or
``-`` before a space or a line end, and each ``,`` (an upper bound: a flow mapping's key counts twice, and these count
inside strings and comments too). A preset writes about a hundred; a 38 MB file of 2 M keys took 278 s to refuse after
parsing. At the cap PyYAML parses in under half a second here."""

_KEY_INDICATORS = re.compile(r",|[:?-](?=[ \t\r\n]|$)", re.MULTILINE)


def _check_size(text: str) -> None:
    """Refuse ``text`` beyond :data:`MAX_CONFIG_BYTES` or :data:`MAX_CONFIG_KEYS` before any parsing (a character
    is at least a byte: a text within the cap in bytes is within it in characters)."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ValueError(f"the YAML is larger than MAX_CONFIG_BYTES ({MAX_CONFIG_BYTES} bytes): refused unparsed")
    keys = sum(1 for _ in _KEY_INDICATORS.finditer(text))
    if keys > MAX_CONFIG_KEYS:
        raise ValueError(
            f"the YAML writes more than MAX_CONFIG_KEYS ({MAX_CONFIG_KEYS}) keys and list items (it has {keys} of "
            "their indicators ':', ',', '-'): refused unparsed"
        )


def parse_yaml(text: str):
    """YAML (a config file or a ``--set`` value) as Python values, bounded: refused in one line before parsing when
    it is larger than :data:`MAX_CONFIG_BYTES` or writes more than :data:`MAX_CONFIG_KEYS` keys and list items, and
    after parsing when its aliases expand beyond :data:`MAX_CONFIG_VALUES` values or it nests deeper than
    :data:`MAX_CONFIG_DEPTH` levels."""
    import yaml

    _check_size(text)
    try:
        value = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise ValueError(f"the YAML nests more than {MAX_CONFIG_DEPTH} levels deep") from None
    _check_bounded(value)
    return value


def _check_bounded(value) -> None:
    """Walk ``value`` as its users will (each alias expanded), counting: stop at the first bound exceeded."""
    stack, seen = [(value, 0)], 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_CONFIG_VALUES:
            raise ValueError(
                f"the YAML holds more than {MAX_CONFIG_VALUES} values once its aliases (*name) are expanded: "
                "refused (an alias bomb?)"
            )
        if depth > MAX_CONFIG_DEPTH:
            raise ValueError(f"the YAML nests more than {MAX_CONFIG_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for pair in item.items() for child in pair)
        elif isinstance(item, (list, tuple, set)):
            stack.extend((child, depth + 1) for child in item)


def find_config(name_or_path: str | Path) -> Path:
    """A YAML path as given, or a packaged preset by name (``cpu-tiny`` -> ``learners/configs/cpu-tiny.yaml``)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    for candidate in (CONFIG_DIR / path.name, CONFIG_DIR / f"{path.name}.yaml"):
        if candidate.is_file():
            return candidate
    choices = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))
    raise FileNotFoundError(f"no config {str(name_or_path)!r}; give a YAML path or one of {choices}")


SECTIONS = ("model", "precision", "tiny", "task", "data", "eval", "trainer", "curriculum", "rollouts", "lora", "async")
MOVED_SECTIONS = {"template": "task.template", "reward": "task (format_bonus, use_all_numbers, ...)"}


def load_config(name_or_path: str | Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """Read a preset and apply ``section.key=value`` overrides; unknown sections are refused (with a "did you
    mean"), a YAML syntax error is one line naming the file and line."""
    path = find_config(name_or_path)
    config = _parse_yaml_file(path)
    if not isinstance(config, dict):
        raise ValueError(f"{path}: the YAML must be a mapping of sections")
    config = merge_layer(config, parse_sets(overrides or []))
    check_sections(config)
    return config


def check_sections(config: dict[str, Any]) -> None:
    """Every section of ``config`` is one of :data:`SECTIONS` (one line, with a "did you mean", or naming where a
    moved one went)."""
    for section in config:
        if section in MOVED_SECTIONS:
            raise ValueError(f"the {section!r} section moved into the task: use {MOVED_SECTIONS[section]}")
    refuse_unknown("config section", set(config), SECTIONS)


def _parse_yaml_file(path: Path):
    import yaml

    try:
        config = parse_yaml(_read_bounded(path).lstrip("\ufeff"))
        if config is None:
            raise ValueError("the file holds no settings (empty, or comments only): give a preset or a YAML with some")
        return config
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"{where}: YAML syntax error: {problem}") from None
    except ValueError as exc:  # beyond parse_yaml's bounds
        raise ValueError(f"{path}: {exc}") from None


def _read_bounded(path: Path) -> str:
    """The text of a config file, refused unread when it is larger than :data:`MAX_CONFIG_BYTES` (and never read
    beyond that many bytes, should it grow meanwhile)."""
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(
            f"the file has {path.stat().st_size} bytes, more than MAX_CONFIG_BYTES ({MAX_CONFIG_BYTES}): refused unread"
        )
    with open(path, "rb") as fh:
        data = fh.read(MAX_CONFIG_BYTES + 1)
    return data.decode("utf-8")  # beyond the cap: parse_yaml's size check names it


RESOLVED_CONFIG = "resolved_config.json"
"""Written into every run folder: the learner and the config as trained (preset, YAML and ``--set`` applied)."""



def parse_sets(sets: Sequence[str]) -> dict[str, Any]:
    """``["trainer.max_steps=5", "model=out/sft"]`` as one layer of settings nested as the YAML
    (``{"trainer": {"max_steps": 5}, "model": "out/sft"}``; values parsed as YAML, :func:`parse_override_value`)."""
    layer: dict[str, Any] = {}
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep or not key or "" in key.split("."):
            raise ValueError(f"--set {item!r} is not of the form section.key=value")
        value = parse_override_value(key, raw)
        try:
            layer = merge_layer(layer, nested(key, value))
        except ValueError as exc:
            raise ValueError(f"--set {item!r}: {exc}") from None
    return layer


def nested(key: str, value: Any) -> dict[str, Any]:
    """``nested("a.b", 1) == {"a": {"b": 1}}``."""
    *parents, leaf = key.split(".")
    layer: dict[str, Any] = {leaf: value}
    for part in reversed(parents):
        layer = {part: layer}
    return layer


DATA_FORMS = (("train", "eval"), ("train_size", "eval_size"))
"""The two forms of the ``data`` section, split files or sizes of a split built now: they exclude each other."""


def merge_layer(below: Mapping[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    """``layer`` over ``below`` (neither changed): a mapping merges into the mapping below key by key, at every
    depth (``--set trainer.seed=1`` keeps the rest of the trainer section; an empty mapping keeps or creates its
    section, so ``--async`` turns on ``async:`` without replacing it); any other value replaces. The ``data`` section's
    two forms exclude each other: a layer that gives split files drops the sizes below it, and one that gives sizes
    drops the files. One line when a layer writes keys into a value that is not a section."""
    merged = copy.deepcopy(dict(below))
    _merge_into(merged, copy.deepcopy(layer), "")
    return merged


def _merge_into(target: dict[str, Any], layer: Mapping[str, Any], where: str) -> None:
    """:func:`merge_layer` in place, on copies it owns."""
    for key, value in layer.items():
        path = f"{where}{key}"
        old = target.get(key)
        if not isinstance(value, Mapping):
            target[key] = value
            continue
        if old is not None and not isinstance(old, Mapping):
            raise ValueError(f"{path!r} is not a section (it holds {old!r})")
        section = target[key] = old if isinstance(old, dict) else dict(old or {})  # target's own copy already
        if path == "data":
            for form, other in (DATA_FORMS, DATA_FORMS[::-1]):
                if set(value) & set(form):
                    for name in other:
                        section.pop(name, None)
        _merge_into(section, value, f"{path}.")


def parse_override_value(key: str, raw: str):
    """A ``--set key=value`` value parsed as YAML (:func:`parse_yaml`); a syntax error or a value beyond its bounds is
    one line naming the key."""
    import yaml

    try:
        return parse_yaml(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"--set {key}={raw}: not a YAML value ({problem})") from None
    except ValueError as exc:  # beyond parse_yaml's bounds
        raise ValueError(f"--set {key}: {exc}") from None
