"""The layout rules the guide sets, held by reading the source: checks/ is pure policy (it imports no I/O,
reads no clock or environment, and never imports app/), and neither package has an import cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("checks", "app")

# What checks/ may import besides itself: the standard library's pure parts and the parsing libraries.
PURE_STDLIB = {
    "__future__", "ast", "bisect", "collections", "dataclasses", "datetime", "difflib", "enum", "fnmatch",
    "functools", "hashlib", "itertools", "json", "math", "operator", "posixpath", "re", "shlex", "sys",
    "traceback", "types", "typing", "urllib",
    "threading",  # a tree-sitter parser per thread (checks/facts/bash/tree.py): a thread-local, no I/O
}
PARSERS = {"yaml", "tree_sitter", "tree_sitter_bash", "markdown_it"}
CLOCK_CALLS = {"now", "today", "utcnow", "time", "monotonic", "perf_counter", "getenv"}


def _modules(package: str) -> dict[str, ast.Module]:
    trees = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        trees[name] = ast.parse(path.read_text(), str(path))
    return trees


def _imports(name: str, tree: ast.Module, is_package: bool) -> set[str]:
    """Every module `name` imports, anywhere in it, resolved to absolute names."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


ALL = {name: tree for package in PACKAGES for name, tree in _modules(package).items()}
PACKAGE_NAMES = {name for package in PACKAGES for name, _ in _modules(package).items()
                 if (ROOT / Path(*name.split(".")) / "__init__.py").exists()}
GRAPH = {name: {m for m in _imports(name, tree, name in PACKAGE_NAMES) if m in ALL and m != name}
         for name, tree in ALL.items()}


@pytest.mark.parametrize("name", sorted(n for n in ALL if n.split(".")[0] == "checks"))
def test_checks_import_nothing_but_pure_modules(name: str) -> None:
    outside = {m.split(".")[0] for m in _imports(name, ALL[name], name in PACKAGE_NAMES)} - {"checks"}
    assert outside <= PURE_STDLIB | PARSERS, f"{name} imports {sorted(outside - PURE_STDLIB - PARSERS)}"


@pytest.mark.parametrize("name", sorted(n for n in ALL if n.split(".")[0] == "checks"))
def test_checks_read_no_clock_and_no_environment(name: str) -> None:
    calls = {node.func.attr for node in ast.walk(ALL[name])
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    names = {node.attr for node in ast.walk(ALL[name]) if isinstance(node, ast.Attribute)}
    assert not calls & CLOCK_CALLS, f"{name} calls {sorted(calls & CLOCK_CALLS)}"
    assert "environ" not in names, f"{name} reads os.environ"


def test_no_import_cycle_in_checks_or_app() -> None:
    """A depth-first walk of the import graph; a back edge is a cycle, printed as the modules on it."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for imported in sorted(GRAPH[module]):
            if state.get(imported) == 1:
                cycles.append(path[path.index(imported):] + [imported])
            elif imported not in state:
                visit(imported)
        path.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_walk_sees_both_packages_and_their_imports() -> None:
    """The rules above are only as good as the walk: it must find the modules and resolve relative imports."""
    assert {"checks.engine", "checks.facts.bash.script", "app.github.gather", "app.web.server"} <= set(ALL)
    assert "checks.registry" in GRAPH["checks.engine"]
    assert "app.judge" in GRAPH["app.github.gather"]


def _rule_modules() -> set[str]:
    from checks.registry import RULES

    return {rule.module.__name__ for rule in RULES if rule.module is not None}


def test_a_rule_imports_facts_never_another_rule() -> None:
    """Rules are found by the one registry; a rule (or a fact) that imports a rule ties two rules' decisions
    together, so a fact a second rule needs lives in a facts module of its own."""
    rules = _rule_modules()
    assert {"checks.rules.check03_recipe_link", "checks.rules.check11_golden_al", "checks.lint.car_v2"} <= rules
    allowed = {"checks.registry"}  # the one registry
    offenders = {name: sorted(GRAPH[name] & (rules - {name})) for name in GRAPH
                 if name.startswith("checks") and name not in allowed and GRAPH[name] & (rules - {name})}
    assert not offenders, f"modules importing a rule: {offenders}"


def test_rules_live_in_rules_and_facts_in_facts() -> None:
    """The folders say what a module is: every check and extra row is a module of checks.rules, every lint rule
    one of checks.lint, and checks.rules holds nothing else; a fact (checks.facts) never imports a rule."""
    from checks.registry import RULES

    homes = {(rule.kind, rule.module.__name__.rpartition(".")[0]) for rule in RULES if rule.module is not None}
    assert homes == {("check", "checks.rules"), ("extra", "checks.rules"), ("lint", "checks.lint")}
    assert {n for n in ALL if n.startswith("checks.rules.")} == {
        rule.module.__name__ for rule in RULES if rule.module is not None and rule.kind != "lint"}
    offenders = {n: sorted(m for m in GRAPH[n] if m.startswith("checks.rules")) for n in GRAPH
                 if n.startswith("checks.facts") and any(m.startswith("checks.rules") for m in GRAPH[n])}
    assert not offenders, f"facts importing a rule: {offenders}"
