"""The import graph of the project's packages: no cycles anywhere, and each layer imports only the layers below it
(docs/architecture.md draws them). Every ``import`` statement counts, at module level or inside a function (a lazy
import still ties two files together); imports under ``if TYPE_CHECKING:`` do not. Built from the source with
``ast``, nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("countdown_env", "learners", "verifiers_ext")

ALGORITHMS = ("learners.grpo", "learners.contrastive", "learners.ps_ppo", "learners.s_grpo", "learners.t_spmo")
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

DECLARED = {("learners.contrastive", "learners.grpo")}
"""Dependencies between algorithm packages, each explained in docs/architecture.md: contrastive shaping is a layer
on a GRPO-family learner's loss (``base_learner``), so its trainer subclasses ``learners.grpo.GRPOLearner``."""


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


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` (at ``path``) imports."""
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
    assert "learners.pipeline.run_driver" in edges["learners.commands.train"]  # inside run(): a lazy import


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_each_layer_imports_only_the_layers_below():
    wrong = []
    for module, targets in graph().items():
        layer = layer_of(module)
        for target in targets:
            allowed = any(target == p or target.startswith(p + ".") for p in LAYERS[layer])
            if not allowed and (layer, layer_of(target)) not in DECLARED:
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports across layers: " + ", ".join(sorted(wrong))
