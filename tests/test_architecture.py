"""Structure rules of src/memorybank (the style guide; docs/architecture.md): small modules and
functions, no import cycles, and a public API and exception tree that match their documentation.

Each test reports every offender at once, with ``path:line``, so one run lists all the work.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import memorybank
from memorybank.errors import MemoryBankError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "memorybank"
API_DOC = ROOT / "docs" / "api.md"

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80


@dataclass(frozen=True)
class Module:
    """One module of the package: ``memorybank.stores.base``, or a package (its ``__init__``)
    under the package's own name, ``memorybank.stores``."""

    name: str
    path: Path
    is_package: bool

    @property
    def where(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    @property
    def package(self) -> str:
        """The package relative imports start from (a package's own name for its ``__init__``)."""
        return self.name if self.is_package else self.name.rpartition(".")[0]

    @property
    def ancestors(self) -> frozenset[str]:
        """The packages that contain this module (``memorybank``, ``memorybank.stores`` …)."""
        parts = self.name.split(".")
        return frozenset(".".join(parts[:i]) for i in range(1, len(parts)))


@cache
def modules() -> dict[str, Module]:
    """Every module under src/memorybank, by dotted name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        found[name] = Module(name, path, is_package)
    return found


@cache
def syntax_tree(name: str) -> ast.Module:
    module = modules()[name]
    return ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))


# -- sizes -------------------------------------------------------------------------------------


def test_no_module_over_800_lines() -> None:
    offenders = []
    for module in modules().values():
        lines = len(module.path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            offenders.append(f"{module.where}:1 has {lines} lines")
    if offenders:
        pytest.fail(
            f"modules over {MAX_MODULE_LINES} lines (split them):\n" + "\n".join(offenders),
            pytrace=False,
        )


#: What the bank may hold (issue 35): its memory operations, never every use case beside them.
MAX_BANK_PUBLIC = 15
MAX_BANK_LINES = 500


def test_the_bank_keeps_to_its_memory_operations() -> None:
    """``MemoryBank`` has at most 15 public methods and properties (every name without a
    leading underscore that is a function, property, staticmethod or classmethod of the
    class, counted from its source) and ``core/bank.py`` at most 500 lines: use cases are
    services, limits are ``bank.writes``, scopes are ``core.scopes.scope_set``."""
    module = modules()["memorybank.core.bank"]
    lines = len(module.path.read_text(encoding="utf-8").splitlines())
    bank = next(
        node
        for node in syntax_tree(module.name).body
        if isinstance(node, ast.ClassDef) and node.name == "MemoryBank"
    )
    public = sorted(
        node.name
        for node in bank.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
    )
    from memorybank.core.bank import MemoryBank

    # The class as Python sees it agrees: nothing public is added another way.
    seen = sorted(
        name
        for name, value in vars(MemoryBank).items()
        if not name.startswith("_")
        and (callable(value) or isinstance(value, property | staticmethod | classmethod))
    )
    assert seen == public, f"public names made outside a def: {sorted(set(seen) ^ set(public))}"
    assert len(public) <= MAX_BANK_PUBLIC, (
        f"MemoryBank has {len(public)} public methods and properties (at most "
        f"{MAX_BANK_PUBLIC}): {', '.join(public)}; move use cases to services/"
    )
    assert lines <= MAX_BANK_LINES, f"{module.where} has {lines} lines (at most {MAX_BANK_LINES})"


def test_no_function_over_80_lines() -> None:
    """Every function, method and nested function, from its ``def`` line (decorators not
    counted) to its last line, docstring and comments included."""
    offenders = []
    for module in modules().values():
        for node in ast.walk(syntax_tree(module.name)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    offenders.append(
                        f"{module.where}:{node.lineno} {node.name}() has {lines} lines"
                    )
    if offenders:
        pytest.fail(
            f"functions over {MAX_FUNCTION_LINES} lines (split them):\n" + "\n".join(offenders),
            pytrace=False,
        )


# -- import cycles -----------------------------------------------------------------------------
#
# The graph has one node per module of memorybank (a package is its ``__init__``) and an edge
# A → B when running A (at import, or later in a function) makes Python import B or read a name
# from B. Python's own rules decide the edges:
#
# * ``import a.b.c`` and ``from a.b.c import x`` import ``a``, ``a.b`` and ``a.b.c`` in turn,
#   each running its ``__init__``: an edge to each. Packages that contain A itself are the
#   exception when imported only on the way down: they were in ``sys.modules`` before A began
#   to run, so that import does nothing. (``memorybank.core.bank`` importing ``memorybank.model``
#   depends on ``memorybank.model``, not on ``memorybank/__init__.py``.)
# * ``from P import x`` depends on ``P.x`` when that is a module; otherwise it reads the name x
#   from P's namespace, an edge to P even when P contains A (``from memorybank import
#   Settings`` inside a submodule needs ``memorybank/__init__.py`` to have run that far).
# * ``import P`` is an edge to P, whatever P is: the name is bound to use P's contents.
# * A package importing its own submodules is an edge like any other. It closes a cycle only
#   when a submodule reads names back from that ``__init__``, which works only as long as the
#   ``__init__`` happens to define them before that import line.
#
# Imports inside functions count (they run, just later, and a cycle through them is a layering
# mistake waiting for the first eager import). Imports under ``if TYPE_CHECKING:`` do not: they
# never run, and exist only for annotations (their ``else:`` branch does run, and counts).
# ``importlib.import_module`` with a computed name cannot be read statically and is not counted.


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node`` that can run, at any depth."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for branch in child.orelse:
                yield from _runtime_imports_of(branch)
            continue
        yield from _runtime_imports_of(child)


def _runtime_imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    yield from _runtime_imports(node)


def _imported(node: ast.Import | ast.ImportFrom, module: Module) -> list[tuple[str, str | None]]:
    """(absolute module, name taken from it or None) for each thing ``node`` imports."""
    if isinstance(node, ast.Import):
        return [(alias.name, None) for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = module.package.split(".")
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, node.module] if node.module else parts)
    return [(base, alias.name) for alias in node.names]


def _targets(module: Module, imported: str, name: str | None) -> set[str]:
    """The modules of memorybank that importing ``name`` from ``imported`` depends on."""
    known = modules()
    parts = imported.split(".")
    chain = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    targets = {c for c in chain[:-1] if c not in module.ancestors}
    if name is not None and f"{imported}.{name}" in known:
        targets.add(f"{imported}.{name}")
        if imported not in module.ancestors:
            targets.add(imported)
    else:
        targets.add(imported)
    # Modules that do not exist (yet) are another test's failure, not a cycle.
    return {t for t in targets if t in known and t != module.name}


ImportsOf = Callable[[ast.AST], Iterator[ast.Import | ast.ImportFrom]]


def _edges(imports_of: ImportsOf) -> tuple[Edge, ...]:
    """The edges between modules of memorybank that ``imports_of`` finds in each module."""
    edges: dict[tuple[str, str], Edge] = {}
    for module in modules().values():
        for node in imports_of(syntax_tree(module.name)):
            for imported, name in _imported(node, module):
                if imported != "memorybank" and not imported.startswith("memorybank."):
                    continue
                for target in _targets(module, imported, name):
                    edges.setdefault((module.name, target), Edge(module.name, target, node.lineno))
    return tuple(edges.values())


@cache
def import_edges() -> tuple[Edge, ...]:
    """The edges of imports that run (at import or later): the cycle test's graph."""
    return _edges(_runtime_imports)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the components with more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components)


def test_strongly_connected_finds_cycles_and_only_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"], ["d", "e"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_import_rules_follow_python() -> None:
    """The edge rules above, on a made-up package laid over the real module list."""
    bank = Module("memorybank.core.bank", PACKAGE / "bank.py", False)
    tools = Module("memorybank.tools", PACKAGE / "tools" / "__init__.py", True)
    # Importing a sibling: only the sibling, never the shared parent package's __init__.
    assert _targets(bank, "memorybank.model", "Memory") == {"memorybank.model"}
    # A name read from the parent package's __init__ depends on it.
    assert _targets(bank, "memorybank", "Settings") == {"memorybank"}
    # Into another package: its __init__ runs first.
    assert _targets(bank, "memorybank.tools.base", "Tool") == {
        "memorybank.tools",
        "memorybank.tools.base",
    }
    # A package importing its own submodule, by name or relatively.
    assert _targets(tools, "memorybank.tools", "base") == {"memorybank.tools.base"}
    relative = ast.parse("from .base import Tool\nfrom . import dispatcher").body
    assert [_imported(n, tools) for n in relative if isinstance(n, ast.ImportFrom)] == [
        [("memorybank.tools.base", "Tool")],
        [("memorybank.tools", "dispatcher")],
    ]
    # Lazy imports count; TYPE_CHECKING-only ones do not, their else branch does.
    code = (
        "import typing\n"
        "if TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
        "def f():\n    import c\n"
        "if typing.TYPE_CHECKING:\n    import d\n"
    )
    names = [n.names[0].name for n in _runtime_imports(ast.parse(code))]
    assert names == ["typing", "b", "c"]


def cycle_reports(edges: tuple[Edge, ...]) -> list[str]:
    """One report per cycle of ``edges``' graph, each edge of it with ``path:line``."""
    graph: dict[str, set[str]] = {name: set() for name in modules()}
    for edge in edges:
        graph[edge.source].add(edge.target)
    reports = []
    for component in strongly_connected(graph):
        members = set(component)
        lines = [f"cycle among {', '.join(component)}:"]
        for edge in sorted(edges, key=lambda e: (e.source, e.target)):
            if edge.source in members and edge.target in members:
                where = f"{modules()[edge.source].where}:{edge.line}"
                lines.append(f"  {edge.source} → {edge.target}  ({where})")
        reports.append("\n".join(lines))
    return reports


def test_no_import_cycles() -> None:
    reports = cycle_reports(import_edges())
    if reports:
        pytest.fail("import cycles (break one edge of each):\n" + "\n".join(reports), pytrace=False)


def test_no_cycles_inside_a_layer_even_through_annotations() -> None:
    """Inside one layer an import made only for annotations (under ``TYPE_CHECKING``) counts
    too: ``core.bank`` → ``core.writes`` → (for a type) ``core.bank`` is a cycle of meaning,
    two modules that each need the other, even though Python never runs the second import.
    (Across layers the direction test already forbids an upward import of any kind.)"""
    inside = tuple(e for e in every_import_edge() if layer_of(e.source) == layer_of(e.target))
    reports = cycle_reports(inside)
    if reports:
        pytest.fail(
            "cycles inside a layer, TYPE_CHECKING imports counted (break one edge of each):\n"
            + "\n".join(reports),
            pytrace=False,
        )


# -- public API --------------------------------------------------------------------------------


def documented_public_names() -> list[str]:
    """The names listed under ``## Public names`` in docs/api.md, one ``- `name` …`` a line."""
    text = API_DOC.read_text(encoding="utf-8")
    section = re.search(r"^## Public names\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert section is not None, "docs/api.md has no '## Public names' section"
    return re.findall(r"^- `([^`]+)`", section.group(1), re.MULTILINE)


def test_all_is_exactly_what_the_docs_list() -> None:
    documented = documented_public_names()
    exported = list(memorybank.__all__)
    assert len(set(documented)) == len(documented), "docs/api.md lists a name twice"
    assert len(set(exported)) == len(exported), "memorybank.__all__ has a name twice"
    missing = sorted(set(exported) - set(documented))
    extra = sorted(set(documented) - set(exported))
    assert not missing and not extra, (
        f"memorybank.__all__ and docs/api.md '## Public names' differ: "
        f"exported but not documented {missing}, documented but not exported {extra}"
    )
    absent = [name for name in exported if not hasattr(memorybank, name)]
    assert not absent, f"memorybank.__all__ names what memorybank does not define: {absent}"


# -- exception tree ----------------------------------------------------------------------------

_TREE_LINE = re.compile(r"^(?P<rails>(?:[│ ]   )*)[├└]── (?P<name>\w+)")


def documented_exception_tree(doc: str) -> dict[str, str | None]:
    """Each class of the tree drawn in ``doc``, with its parent (None for the root)."""
    lines = doc.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == MemoryBankError.__name__]
    assert len(starts) == 1, "errors.py's docstring should draw the tree from one root line"
    indent = lines[starts[0]].index(MemoryBankError.__name__)
    parents: dict[str, str | None] = {MemoryBankError.__name__: None}
    path = [MemoryBankError.__name__]
    for line in lines[starts[0] + 1 :]:
        if not line.strip():
            break
        match = _TREE_LINE.match(line[indent:])
        assert match is not None, f"unreadable line in the exception tree: {line!r}"
        depth = len(match["rails"]) // 4 + 1
        assert depth <= len(path), f"the tree skips a level at {line!r}"
        del path[depth:]
        assert match["name"] not in parents, f"{match['name']} is in the tree twice"
        parents[match["name"]] = path[-1]
        path.append(match["name"])
    return parents


def real_exception_tree() -> dict[str, str | None]:
    """Every MemoryBankError subclass defined in memorybank (each module imported), and every
    exception class of errors.py, with its parent among them."""
    for name in modules():
        if not name.endswith(".__main__"):  # run as a program, never imported
            importlib.import_module(name)
    found: list[type[BaseException]] = []
    pending: list[type[BaseException]] = [MemoryBankError]
    while pending:
        cls = pending.pop()
        # Tests may subclass MemoryBankError too; only memorybank's own classes are documented.
        if cls.__module__.split(".")[0] == "memorybank" and cls not in found:
            found.append(cls)
        pending += cls.__subclasses__()
    errors = importlib.import_module("memorybank.errors")
    found += [
        value
        for value in vars(errors).values()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
        and value not in found
    ]
    names = [cls.__name__ for cls in found]
    duplicates = sorted(
        f"{cls.__module__}.{cls.__qualname__}" for cls in found if names.count(cls.__name__) > 1
    )
    assert not duplicates, f"exception classes share a name, so the tree is ambiguous: {duplicates}"
    tree: dict[str, str | None] = {}
    for cls in found:
        bases = [b.__name__ for b in cls.__bases__ if b in found]
        assert len(bases) <= 1, f"{cls.__name__} has several parents in the tree: {bases}"
        tree[cls.__name__] = bases[0] if bases else None
    return tree


def test_exception_tree_reader() -> None:
    doc = """Errors.

        MemoryBankError
        ├── A          text
        │   └── B
        │       └── C  more text
        └── D

    After the tree.
    """
    assert documented_exception_tree(doc) == {
        "MemoryBankError": None,
        "A": "MemoryBankError",
        "B": "A",
        "C": "B",
        "D": "MemoryBankError",
    }


def test_exception_tree_in_errors_docstring_matches_the_classes() -> None:
    documented = documented_exception_tree(
        importlib.import_module("memorybank.errors").__doc__ or ""
    )
    real = real_exception_tree()
    undocumented = sorted(set(real) - set(documented))
    gone = sorted(set(documented) - set(real))
    misplaced = sorted(
        f"{name}: documented under {documented[name]}, really under {real[name]}"
        for name in set(real) & set(documented)
        if real[name] != documented[name]
    )
    assert not (undocumented or gone or misplaced), (
        "the exception tree in src/memorybank/errors.py's docstring is out of date:\n"
        f"  missing from the tree: {undocumented}\n"
        f"  in the tree but not defined: {gone}\n"
        f"  wrong parent: {misplaced}"
    )


# -- layers ------------------------------------------------------------------------------------
#
# docs/architecture.md draws the layers; here they are as data, and each is a folder of the
# package (the top-level modules are the edge: settings, factory, client …). A module may import
# its own layer and those below it, never one above: TYPE_CHECKING imports count here too, since
# a module that annotates with a bank from above is a module that works through it. The first
# prefix that matches a module's name decides its layer.

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("model", ("memorybank.model", "memorybank.errors")),
    ("rules", ("memorybank.rules",)),
    ("providers", ("memorybank.providers",)),
    ("stores", ("memorybank.stores",)),
    ("core", ("memorybank.core",)),
    ("services", ("memorybank.services",)),
    (
        "adapters",
        (
            "memorybank.server",
            "memorybank.cli",
            "memorybank.tools",
            "memorybank.mcp",
            "memorybank.settings",
            "memorybank.factory",
            "memorybank.migrate",
            "memorybank.client",
            "memorybank.compat",
            "memorybank",
        ),
    ),
    # Adapters to agent frameworks: above everything, so they may use any layer (services,
    # core, tools …) and nothing imports them (importing memorybank never loads a framework).
    ("integrations", ("memorybank.integrations",)),
)


def layer_of(name: str) -> int:
    for rank, (_, prefixes) in enumerate(LAYERS):
        # The package itself is the edge; a top-level module must be listed by its own name.
        if any(name == p or (p != "memorybank" and name.startswith(p + ".")) for p in prefixes):
            return rank
    raise AssertionError(f"{name} is in no layer: add it to LAYERS and to docs/architecture.md")


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def _every_import(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, TYPE_CHECKING ones included."""
    for child in ast.walk(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child


@cache
def every_import_edge() -> tuple[Edge, ...]:
    """Like :func:`import_edges`, with the imports made only for annotations."""
    return _edges(_every_import)


def test_type_checking_imports_are_edges_for_direction() -> None:
    code = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n"
    assert [n.names[0].name for n in _every_import(ast.parse(code))] == ["TYPE_CHECKING", "a"]


def test_layers_are_folders() -> None:
    """Every module of a layer below the edge lives in that layer's folder."""
    for name in modules():
        layer = LAYERS[layer_of(name)][0]
        if layer in ("core", "services", "rules", "providers", "stores", "integrations"):
            assert name.split(".")[1] == layer, f"{name} is in layer {layer} outside its folder"


def test_dependencies_point_down() -> None:
    upward = [
        f"  {e.source} ({LAYERS[layer_of(e.source)][0]}) → {e.target} "
        f"({LAYERS[layer_of(e.target)][0]})  ({modules()[e.source].where}:{e.line})"
        for e in sorted(every_import_edge(), key=lambda e: (e.source, e.target))
        if layer_of(e.target) > layer_of(e.source)
    ]
    if upward:
        pytest.fail("imports pointing up a layer:\n" + "\n".join(upward), pytrace=False)


# -- tests mirror the package --------------------------------------------------------------------

#: Test folders that are not a part of the package: suites that cut across every layer.
CROSS_CUTTING = {"bench", "reliability", "security"}
#: Tests of the package as a whole, at the top of tests/.
WHOLE_PACKAGE = {
    "test_architecture.py",
    "test_light_imports.py",
    "test_packaging.py",
    "test_readme.py",
}


def test_tests_mirror_the_package() -> None:
    """A test lives in the folder of the part it tests (tests/rules/ for rules/, tests/client/
    for client.py …), or in a cross-cutting suite; only whole-package tests sit at the top."""
    tests = ROOT / "tests"
    parts = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_")}
    parts |= {p.stem for p in PACKAGE.glob("*.py") if not p.name.startswith("_")}
    stray = sorted(p.name for p in tests.glob("test_*.py") if p.name not in WHOLE_PACKAGE)
    unknown = sorted(
        d.name
        for d in tests.iterdir()
        if d.is_dir() and any(d.glob("test_*.py")) and d.name not in parts | CROSS_CUTTING
    )
    assert not stray, f"tests at the top of tests/ that belong in a part's folder: {stray}"
    assert not unknown, f"test folders that are no part of src/memorybank: {unknown}"
