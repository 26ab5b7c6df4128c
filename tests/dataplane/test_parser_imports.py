"""The rule parsers import one way: lexer → ruleset → compiler for nft, ipset below both iptables and IPVS mode."""
import ast
from pathlib import Path

import labsupport.dataplane

DATAPLANE = Path(labsupport.dataplane.__file__).parent


def _imports(path: Path) -> set[str]:
    """The `labsupport.dataplane` modules a file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("labsupport.dataplane."):
            found.add(node.module.rsplit(".", 1)[1])
        elif isinstance(node, ast.ImportFrom) and node.module == "labsupport.dataplane":
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.rsplit(".", 1)[1] for a in node.names if a.name.startswith("labsupport.dataplane."))
    return found


def _graph() -> dict[str, set[str]]:
    return {p.stem: _imports(p) - {p.stem} for p in DATAPLANE.glob("*.py") if p.stem != "__init__"}


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        here = todo.pop()
        if here == goal:
            return True
        if here not in seen:
            seen.add(here)
            todo.extend(graph.get(here, ()))
    return False


def test_no_import_circle_among_the_rule_parsers():
    graph = _graph()
    circles = sorted(f"{a} -> {b} -> … -> {a}" for a, targets in graph.items() for b in targets
                     if _reaches(graph, b, a))
    assert not circles, f"import circles in labsupport/dataplane: {circles}"


def test_each_parser_layer_imports_only_below_it():
    graph = _graph()
    assert "nft_ruleset" not in graph["nft_lexer"] and "nft_compiler" not in graph["nft_lexer"]
    assert "nft_compiler" not in graph["nft_ruleset"] and "nft_lexer" in graph["nft_ruleset"]
    assert {"nft_lexer", "nft_ruleset"} <= graph["nft_compiler"]
    assert graph["ipset"] <= {"netfilter"}
    assert "ipset" in graph["iptables_parse"] and "ipvs_parse" not in graph["iptables_parse"]
    assert {"ipset", "iptables_parse"} <= graph["ipvs_parse"]
