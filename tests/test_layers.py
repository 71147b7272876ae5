"""The house's layers, read from its source with ``ast`` (nothing imported): the plugin
(``pytest_kerasperf``, the core) and the lab (``kerasperf_lab``: history and publishing).

- No import cycle among their modules, counting every import: those a module
  runs when it loads, those inside functions (lazy), and those under
  ``if TYPE_CHECKING:`` (a type is a dependency too); and none in the graph of
  what runs when a module loads.
- No module over ``MAX_LINES`` lines.
- Lower rooms never import upward, lazily, for types or not: the core never
  imports the lab (the lab registers its commands through entry points);
  ``measure/`` never imports the metrics, the handle, the gate, the plugin or
  the A/B engine (the metrics call it, and the record parts both use are in
  ``parts/``); ``parts/`` imports only the vocabulary; the A/B engine
  (``ab/``) and the lab never import the gate or the plugin, and inside each
  no module imports from a layer above its own (``LAYERS``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

PACKAGE = "pytest_kerasperf"
LAB = "kerasperf_lab"
REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / PACKAGE
ROOTS = (ROOT, REPO / LAB)
MAX_LINES = 400

#: Layers of a package, top to bottom (its ``__init__.py`` says what each holds): a module
#: imports from its own layer or those below, never from one above.
LAYERS = {
    f"{LAB}.history": (
        ("sweep", "bisect", "bisect_latency", "ab", "prs"),  # the commands
        ("render", "charts", "prs_render"),  # rendering
        ("steps", "cache", "prs_table"),  # a sweep's rows and measurements, a PR's rows
        ("changepoints", "pulls"),  # pure and light
    ),
    f"{PACKAGE}.ab": (
        ("abplan", "interleave", "processes", "runner", "outputs", "probe"),  # measuring
        ("stats", "text", "commits", "result"),  # pure and light
    ),
}
#: room (a package or a module, dotted, without ``pytest_kerasperf.``) -> what it never imports
FORBIDDEN = {
    "": (LAB,),  # the whole core: the lab is above it
    "measure": ("metrics", "handle", "gate", "plugin", "ab"),
    "ab": ("gate", "plugin"),
}
#: the lab's rooms -> what of the core they never import
LAB_FORBIDDEN = {"history": ("gate", "plugin"), "publish": ("gate", "plugin")}
#: room -> the only modules of ours it may import (besides its own)
ONLY = {"parts": ("codec", "budget")}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for root in ROOTS for path in sorted(root.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(body: list[ast.stmt], *, lazy: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports of ``body`` outside ``if TYPE_CHECKING:`` blocks: those run when the module
    loads, and with ``lazy`` those inside functions too."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports(node.orelse, lazy=lazy)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if lazy:
                yield from _imports(node.body, lazy=lazy)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, field, ()):
                    if isinstance(child, ast.ExceptHandler | ast.match_case):
                        yield from _imports(child.body, lazy=lazy)
                    elif isinstance(child, ast.stmt):
                        yield from _imports([child], lazy=lazy)


def targets(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, known: set[str]
) -> set[str]:
    """Our modules that ``node`` (in ``importer``) imports by name."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    base = node.module or ""
    if node.level:
        parts = importer.split(".")
        anchor = parts if is_package else parts[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([base] if base else [])])
    found = set()
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        if submodule in known:
            found.add(submodule)
        elif base in known:
            found.add(base)
    return found


def import_graph(imports: Literal["load", "lazy", "all"] = "load") -> dict[str, set[str]]:
    """Module -> the modules of ours it imports: when it loads (``load``), also inside
    functions (``lazy``), or anywhere, ``if TYPE_CHECKING:`` blocks included (``all``)."""
    paths = modules()
    known = set(paths)
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        if imports == "all":
            nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
        else:
            nodes = list(_imports(tree.body, lazy=imports == "lazy"))
        is_package = path.name == "__init__.py"
        graph[name] = {
            target
            for node in nodes
            for target in targets(node, name, is_package, known)
            if target != name
        }
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (``[a, b, ..., a]``), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _core(name: str) -> str:
    """A room's dotted name: ``""`` is the whole core, a top-level package is itself."""
    if name in ("", PACKAGE):
        return PACKAGE
    return name if name == LAB else f"{PACKAGE}.{name}"


def test_the_graph_sees_imports() -> None:
    graph = import_graph()
    assert "pytest_kerasperf.record" in graph["pytest_kerasperf.baseline"]
    assert "pytest_kerasperf.measure.calls" in graph["pytest_kerasperf.measure"]
    # the lab's history/__init__ imports its commands inside functions; render its steps'
    # types only.
    history, render = "kerasperf_lab.history", "kerasperf_lab.history.render"
    assert "kerasperf_lab.history.ab" not in graph[history]
    assert "kerasperf_lab.history.ab" in import_graph("lazy")[history]
    assert "kerasperf_lab.history.steps" not in import_graph("lazy")[render]
    assert "kerasperf_lab.history.steps" in import_graph("all")[render]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("imports", ["load", "all"])
def test_no_import_cycle(imports: Literal["load", "all"]) -> None:
    cycle = find_cycle(import_graph(imports))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_no_import_cycle_in_a_layered_package_even_through_lazy_imports(package: str) -> None:
    graph = {
        module: {t for t in imported if _within(t, package)}
        for module, imported in import_graph("lazy").items()
        if _within(module, package)
    }
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_modules_are_small() -> None:
    sizes = {
        path.relative_to(REPO).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for root in ROOTS
        for path in sorted(root.rglob("*.py"))
    }
    large = {path: lines for path, lines in sizes.items() if lines > MAX_LINES}
    assert not large, f"over {MAX_LINES} lines: {large}"


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_layers_never_import_upward(package: str) -> None:
    prefix = f"{package}."
    layer = {
        f"{prefix}{name}": depth for depth, names in enumerate(LAYERS[package]) for name in names
    }
    graph = import_graph("all")
    unlisted = sorted(m for m in graph if m.startswith(prefix) and m not in layer)
    assert not unlisted, f"put these in LAYERS[{package!r}]: {unlisted}"
    upward = sorted(
        f"{module} imports {target}"
        for module, depth in layer.items()
        for target in graph[module]
        if target in layer and layer[target] < depth
    )
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize(
    ("room", "above"),
    [(_core(room), names) for room, names in FORBIDDEN.items()]
    + [(f"{LAB}.{room}", names) for room, names in LAB_FORBIDDEN.items()],
)
def test_lower_rooms_never_import_upward(room: str, above: tuple[str, ...]) -> None:
    graph = import_graph("all")
    upper = tuple(_core(name) for name in above)
    wrong = sorted(
        f"{module} imports {target}"
        for module, imported in graph.items()
        if _within(module, room)
        for target in imported
        if any(_within(target, name) for name in upper)
    )
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("room", sorted(ONLY))
def test_rooms_import_only_what_is_below_them(room: str) -> None:
    prefix = _core(room)
    allowed = {_core(name) for name in ONLY[room]}
    wrong = sorted(
        f"{module} imports {target}"
        for module, imported in import_graph("all").items()
        if _within(module, prefix)
        for target in imported
        if target not in allowed and not _within(target, prefix)
    )
    assert not wrong, "\n".join(wrong)
