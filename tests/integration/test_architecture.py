"""The import graph of the project's packages: no cycles anywhere, and each layer imports only the layers below it
(docs/architecture.md draws them). Every ``import`` statement counts, at module level or inside a function (a lazy
import still ties two files together), and so does ``importlib.import_module("...")``/``__import__("...")`` of a
literal name; imports under ``if TYPE_CHECKING:`` do not. A string that names a project module (``"pkg.mod"`` or
``"pkg.mod:attr"``, docstrings aside) is a dependency too: a module may name only modules it may import. The
entry-point groups of ``pyproject.toml`` are the only seams where a lower layer runs code of a higher one; each is
declared below with the module that reads it and the modules it may point at. Built from the source with ``ast`` and
``tomllib``, nothing is imported."""

from __future__ import annotations

import ast
import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("countdown_env", "learners", "verifiers_ext")

ALGORITHMS = tuple(
    sorted(
        f"learners.{path.parent.name}" for path in (ROOT / "learners").glob("*/spec.py") if path.parent.name != "core"
    )
)
"""The algorithm packages: the folders of ``learners`` with a ``spec.py`` (each registers it, see ``SEAMS``);
``learners/core/spec.py`` defines what a spec holds."""
LAYERS: dict[str, tuple[str, ...]] = {
    "countdown_env": ("countdown_env",),
    "verifiers_ext": ("verifiers_ext", "countdown_env"),
    "learners.core": ("learners.core", "countdown_env"),
    "learners.sampling": ("learners.sampling", "learners.core", "countdown_env"),
    **{a: (a, "learners.core", "learners.sampling", "countdown_env") for a in ALGORITHMS},
    "learners.pipeline": ("learners", "countdown_env", "verifiers_ext"),
    "learners.commands": ("learners", "countdown_env"),
    "learners": ("learners", "countdown_env"),
}
"""A module of the key (the longest matching prefix) may import only modules under these prefixes."""

DECLARED = {
    ("learners.contrastive", "learners.grpo"),
    ("learners.oracle_shaped", "learners.grpo"),
    ("learners.oracle_shaped", "learners.contrastive"),
}
"""Dependencies between algorithm packages, each explained in docs/architecture.md: contrastive shaping is a layer
on a GRPO-family learner's loss (``base_learner``), so its trainer subclasses ``learners.grpo.GRPOPresetTrainer``;
oracle
shaping is the contrastive shaping with another potential, so it reuses its paragraphs and shaping terms on the same
base loss."""

SEAMS: dict[str, tuple[str, str]] = {
    "countdown.commands": ("countdown_env.cli", r"learners\.commands\.\w+"),
    "countdown.learners": ("learners.core.registry", r"learners\.\w+\.spec:SPEC"),
}
"""Entry-point group -> (the one module that reads it, the pattern every entry's value matches)."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_call_target(node: ast.Call, name: str, package: str) -> str | None:
    """The module an ``importlib.import_module("...")`` / ``import_module`` / ``__import__("...")`` call names by a
    literal (a relative name resolved against ``__name__`` or ``__package__``); ``None`` for any other call."""
    func = node.func
    is_import = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__")
    )
    if not is_import or not node.args:
        return None
    target = node.args[0]
    if not (isinstance(target, ast.Constant) and isinstance(target.value, str)):
        return None
    if not target.value.startswith("."):
        return target.value
    anchors = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "package")]
    anchor = anchors[0] if anchors else None
    if not isinstance(anchor, ast.Name) or anchor.id not in ("__name__", "__package__"):
        return None
    parts = (name if anchor.id == "__name__" else package).split(".")
    level = len(target.value) - len(target.value.lstrip("."))
    stem = target.value[level:]
    return ".".join(parts[: len(parts) - (level - 1)] + ([stem] if stem else []))


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` (at ``path``) imports, by statement or by a literal ``import_module`` name."""
    is_package = path.name == "__init__.py"
    base = name.split(".") if is_package else name.split(".")[:-1]
    targets: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                targets.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                source = ".".join(anchor + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                targets.add(sub if sub in known else source)
        elif isinstance(node, ast.Call):
            target = _import_call_target(node, name, ".".join(base))
            if target:
                targets.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    out = set()
    for target in targets:
        while target and target not in known:  # `import a.b.c` of a non-module attribute path: its module
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def _docstrings(tree: ast.AST) -> set[int]:
    bodies = (n.body for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)))
    return {id(b[0].value) for b in bodies if b and isinstance(b[0], ast.Expr) and isinstance(b[0].value, ast.Constant)}


def named(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules other than ``name`` that a string of its code names: ``"pkg.mod"`` or ``"pkg.mod:attr"``
    (a registry entry, a command table), docstrings aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            target = node.value.partition(":")[0]
            if target in known and target != name:
                out.add(target)
    return out


def entry_points() -> dict[str, dict[str, str]]:
    """``pyproject.toml``'s entry-point groups: group -> {name: "module" or "module:attr"}."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project.get("entry-points", {})


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer_of(module: str) -> str:
    return max((key for key in LAYERS if module == key or module.startswith(key + ".")), key=len)


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_relative_and_lazy_imports():
    edges = graph()
    assert "learners.core.trainer" in edges["learners.grpo.trainer"]  # `from ..core.trainer import ...`
    assert "learners.pipeline.runs.driver" in edges["learners.commands.train"]  # inside run(): a lazy import


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def may_import(module: str, target: str) -> bool:
    layer = layer_of(module)
    return any(target == p or target.startswith(p + ".") for p in LAYERS[layer]) or (
        (layer, layer_of(target)) in DECLARED
    )


def test_each_layer_imports_only_the_layers_below():
    wrong = [f"{module} -> {target}" for module, targets in graph().items() for target in targets
             if not may_import(module, target)]  # fmt: skip
    assert not wrong, "imports across layers: " + ", ".join(sorted(wrong))


def test_the_graph_sees_import_module_calls_and_module_names_in_strings(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import importlib\n"
        "def f():\n"
        "    importlib.import_module('learners.grpo.spec')\n"
        "    __import__('learners.pipeline')\n"
        "    importlib.import_module('.spec', __package__)\n"
        "TABLE = {'x': ('learners.ps_ppo', 'C'), 'y': 'learners.t_spmo.spec:SPEC', 'z': 'learners.core.nope'}\n",
        encoding="utf-8",
    )
    known = modules()
    assert imported("learners.core.m", source, known) == {
        "learners.grpo.spec",
        "learners.pipeline",
        "learners.core.spec",
    }
    expected = {"learners.ps_ppo", "learners.t_spmo.spec", "learners.grpo.spec", "learners.pipeline"}
    assert named("learners.core.m", source, known) == expected  # '.spec' is relative: not a name on its own


def test_each_layer_names_in_strings_only_the_modules_it_may_import():
    known = modules()
    wrong = [f"{module} -> {target!r}" for module, path in known.items() for target in named(module, path, known)
             if not may_import(module, target)]  # fmt: skip
    assert not wrong, "modules named by a string across layers: " + ", ".join(sorted(wrong))


def test_no_module_of_learners_core_names_an_algorithm_package_in_any_form():
    """Not by import, string, path or relative name, in code, docstrings or comments: the registry collects the
    algorithms by listing the folders, so a new one touches nothing here."""
    names = "|".join(a.rpartition(".")[2] for a in ALGORITHMS)
    pattern = re.compile(rf"learners[./]({names})\b|\.\.({names})\b|\b({names})/")
    found = []
    for path in sorted((ROOT / "learners" / "core").rglob("*")):
        if path.suffix in (".py", ".json", ".md", ".txt"):
            lines = enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            found += [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for n, line in lines if pattern.search(line)]
    assert ALGORITHMS and not found, "learners/core names an algorithm package:\n" + "\n".join(found)


def test_entry_points_are_declared_seams_into_layers_above_their_reader():
    """Each group has one reader (the only module that spells the group's name), every entry names an existing
    module (and attribute) matching the group's pattern, in a layer that may import the reader's: a plug-in depends on
    the layer that loads it, never the reverse. The project's algorithm folders are found by the registry, not
    declared (``countdown.learners`` is for other distributions)."""
    groups = entry_points()
    assert set(groups) <= set(SEAMS), f"undeclared entry-point groups: {set(groups) - set(SEAMS)}"
    known = modules()
    for group, entries in groups.items():
        reader, pattern = SEAMS[group]
        spelled = {m for m, path in known.items() if re.search(rf"[\"']{re.escape(group)}[\"']", path.read_text())}
        assert spelled == {reader}, f"{group} is read by {sorted(spelled)}, declared {reader}"
        for name, value in entries.items():
            module, _, attr = value.partition(":")
            assert re.fullmatch(pattern, value), f"{group}: {name} = {value!r} does not match {pattern}"
            assert module in known, f"{group}: {name} = {value!r} names no module"
            if attr:
                tree = ast.parse(known[module].read_text(encoding="utf-8"))
                assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                            if isinstance(t, ast.Name)}  # fmt: skip
                assert attr in assigned, f"{group}: {name} = {value!r}: {module} assigns no {attr}"
            assert may_import(module, reader), f"{group}: {value!r} may not import its reader {reader}"
    assert "countdown.learners" not in groups, "the project's learners are found by folder: declare none"
    from learners.core.registry import project_algorithms

    found = {value.partition(":")[0].rpartition(".")[0] for _, value in project_algorithms()}
    assert found == set(ALGORITHMS), f"spec.py folders and the registry differ: {found ^ set(ALGORITHMS)}"
    project_scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    for script, value in project_scripts.items():
        assert value.partition(":")[0] in known, f"script {script} = {value!r} names no module"


def test_every_file_over_450_lines_says_why_and_none_is_in_the_pipeline():
    """docs/architecture.md lists each product file over 450 lines with the reason it stays whole (its line count
    kept within 10 % of the file's); ``learners/pipeline`` (orchestration, not an algorithm) has none."""
    table = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = {m[1]: int(m[2]) for m in re.finditer(r"^\| `([^`]+\.py)` \| (\d+) \|", table, re.MULTILINE)}
    for package in ("countdown_env", "learners", "verifiers_ext"):
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            name = path.relative_to(ROOT).as_posix()
            if lines > 450:
                assert not name.startswith("learners/pipeline/"), f"{name}: {lines} lines, split it"
                assert name in listed, f"{name}: {lines} lines and not in docs/architecture.md's table"
                assert abs(listed[name] - lines) <= 0.1 * lines, f"{name}: {lines} lines, the table says {listed[name]}"
