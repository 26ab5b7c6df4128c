"""The package's imports follow docs/architecture.md: no import against the layer order, no circle between modules."""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "labsupport"
DOC = ROOT / "docs" / "architecture.md"


def layers() -> dict[str, int]:
    """Top-level part of the package (module or subpackage) → its layer's height, from the doc's `layers` block."""
    match = re.search(r"```layers\n(.*?)```", DOC.read_text(), re.S)
    assert match, f"{DOC} has no ```layers block"
    height = {}
    for level, line in enumerate(l for l in match.group(1).splitlines() if l.strip()):
        _, _, parts = line.partition(":")
        for part in parts.split():
            assert part not in height, f"{part} is listed twice in {DOC}"
            height[part] = level
    return height


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, pathlib.Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _under_type_checking(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports(name: str, path: pathlib.Path, known: dict[str, pathlib.Path]) -> list[tuple[str, int, bool]]:
    """(imported module of the package, line, only for type checking) for every import in one module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        for target in targets:
            if not target.startswith("labsupport"):
                continue
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target != name:
                found.append((target, node.lineno, _under_type_checking(node, parents)))
    return found


def part_of(module: str) -> str:
    """The top-level part a module belongs to: labsupport.control.kubelet → control; the package itself → lab."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "lab"


def test_every_part_of_the_package_has_a_layer():
    height = layers()
    parts = {part_of(m) for m in modules()}
    missing = sorted(parts - set(height))
    assert not missing, f"docs/architecture.md gives no layer to: {missing}"


def test_no_import_against_the_layer_order():
    height = layers()
    known = modules()
    wrong = []
    for name, path in sorted(known.items()):
        for target, line, _ in imports(name, path, known):
            here, there = part_of(name), part_of(target)
            if here in height and there in height and height[there] > height[here]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {name} ({here}) imports {target} ({there}), "
                             "a higher layer")
    assert not wrong, "imports against docs/architecture.md's layer order:\n" + "\n".join(wrong)


def test_no_import_cycle_between_modules():
    known = modules()
    graph = {name: {t for t, _, typing_only in imports(name, path, known) if not typing_only}
             for name, path in known.items()}
    cycles = strongly_connected(graph)
    assert not cycles, "import circles (module → … → itself):\n" + "\n".join(" ↔ ".join(sorted(c)) for c in cycles)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components with more than one member (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
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
                    out.append(component)
    return out


@pytest.mark.parametrize("graph,expected", [
    ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [["a", "b", "c"]]),
])
def test_the_cycle_finder_finds_circles(graph, expected):
    assert sorted(sorted(c) for c in strongly_connected(graph)) == expected


def _backend_classes():
    from labsupport.kind.client import KubeBackend
    from labsupport.kind.cluster import KindBackend
    from labsupport.netns.backend import NetnsBackend
    from labsupport.remote.client import RemoteBackend
    from labsupport.sim.backend import EmbeddedBackend
    return [EmbeddedBackend, NetnsBackend, KubeBackend, KindBackend, RemoteBackend]


@pytest.mark.parametrize("cls", _backend_classes(), ids=lambda c: c.__name__)
def test_every_backend_implements_the_protocol(cls):
    import inspect

    from labsupport.backend import Backend
    wanted = [name for name, value in vars(Backend).items() if callable(value) and not name.startswith("_")]
    assert "snapshot" in wanted and "curl" in wanted
    problems = []
    for name in wanted:
        have = getattr(cls, name, None)
        if have is None:
            problems.append(f"{name} is missing")
            continue
        want = list(inspect.signature(getattr(Backend, name)).parameters)
        got = list(inspect.signature(have).parameters)
        if [p for p in want if p not in got]:
            problems.append(f"{name}{tuple(got)} lacks parameters of {name}{tuple(want)}")
    assert isinstance(getattr(cls, "name", None), str), f"{cls.__name__} names no backend"
    assert not problems, f"{cls.__name__} does not implement labsupport.backend.Backend: " + "; ".join(problems)
