"""The engine's layers: no module imports from a layer above its own, query-time code never
imports the training package, and no heavy library is imported at module level. And a
codebase learnt in an hour: no import cycle among the engine's modules nor the app's
(imports inside functions count). Size limits sit on functions, where ruff checks them
(docs/codebase.md says why), not on modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parent.parent / "engine"

# Lowest first. The core modules (engine/*.py) sit below every package; models (packaged
# resources and loading) below data, whose named corpora come from packaged files. `api`
# (engine/api.py, what a plugin imports) gathers names from the layers below the service's
# and sits at the top: no engine module imports it.
LAYERS = ("core", "models", "data", "units", "index", "readers", "stages", "train",
          "paradigms", "eval", "tune", "store", "judging", "service", "cli", "api")
TOP_MODULES = ("api",)  # modules of engine/ itself that are a layer of their own
QUERY_TIME = ("models", "index", "readers", "stages", "paradigms", "eval")
# the service answers questions and, when asked (Retrain, a first start with no classifier),
# runs training jobs: it may import training, but only inside the function that trains
HEAVY = ("torch", "transformers", "sentence_transformers", "faiss", "bm25s", "duckdb",
         "gradio")


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in LAYERS or len(parts) == 2 and parts[1] in TOP_MODULES:
        return parts[1]
    return "core"


def _modules():
    for path in sorted(ENGINE.rglob("*.py")):
        rel = path.relative_to(ENGINE.parent).with_suffix("")
        name = ".".join(p for p in rel.parts if p != "__init__")
        if name in ("engine", "engine.__main__"):  # the package's facade and entry point
            continue
        yield name, ast.parse(path.read_text(encoding="utf-8"))


def _imports(tree: ast.Module):
    """(module imported, at module level?) for every import in the file."""
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, id(node) in top
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in top


def test_no_module_imports_from_a_higher_layer():
    wrong = []
    for name, tree in _modules():
        mine = LAYERS.index(_layer(name))
        for imported, _ in _imports(tree):
            if imported.startswith("engine.") and LAYERS.index(_layer(imported)) > mine:
                wrong.append(f"{name} imports {imported}")
    assert wrong == []


# the process-wide lookups of loaded indexes and models: the service's store
# (engine/service/store.py) calls them; stages, paradigms and the reader are handed what they
# use (engine.paradigms.resources) and never look anything up
LOOKUPS = {"process_store", "make_paradigm", "shared_generator", "shared_fid_reader",
           "shared_classifier", "shared_query_classifier", "stand_in_classifier",
           "load_bi_encoder", "encode", "load_cross_encoder", "model_location"}
HANDED = ("engine.stages.", "engine.paradigms.")


def test_stages_paradigms_and_the_reader_import_no_process_wide_lookup():
    wrong = []
    for name, tree in _modules():
        if not name.startswith(HANDED) and name != "engine.readers.reader":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                found = {a.name for a in node.names} & LOOKUPS
                if found or node.module.startswith("engine.service"):
                    wrong.append(f"{name} imports {sorted(found) or node.module}")
            elif isinstance(node, ast.Import):
                wrong += [f"{name} imports {a.name}" for a in node.names
                          if a.name.startswith("engine.service")]
    assert wrong == []


def test_what_a_plugin_imports_reaches_no_process_wide_lookup():
    """engine/api.py gathers stages, specs and resource declarations, never the service's
    store or another lookup: a plugin declares what it reads and is handed it loaded."""
    tree = ast.parse((ENGINE / "api.py").read_text(encoding="utf-8"))
    names = {alias.asname or alias.name for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) for alias in node.names}
    modules = [module for module, _ in _imports(tree)]
    assert modules and all(m.startswith("engine.") for m in modules if m != "__future__")
    assert [m for m in modules if _layer(m) in ("train", "eval", "store", "service", "cli")
            ] == [] and names & LOOKUPS == set()


def test_query_time_code_never_imports_training():
    wrong = [f"{name} imports {imported}" for name, tree in _modules()
             if _layer(name) in QUERY_TIME
             for imported, _ in _imports(tree) if imported.startswith("engine.train")]
    assert wrong == []


def test_the_service_imports_training_only_where_it_trains():
    wrong = [f"{name} imports {imported} at module level" for name, tree in _modules()
             if _layer(name) == "service"
             for imported, top in _imports(tree) if top and imported.startswith("engine.train")]
    assert wrong == []


def test_heavy_libraries_are_imported_where_they_are_used():
    wrong = [f"{name} imports {imported} at module level" for name, tree in _modules()
             for imported, top in _imports(tree)
             if top and imported.split(".")[0] in HEAVY]
    assert wrong == []


def test_the_app_talks_to_the_engine_through_explorer_methods_only():
    """No `explorer.store.save(...)`: every attribute the app reads off an Explorer is one of
    its public methods or properties, and every one it reads off a collaborator the Explorer
    exposes (`explorer.evaluations.evaluate`) one of that collaborator's, so what is behind
    them can change."""
    from engine.service.annotation import Annotation
    from engine.service.catalog import Catalog
    from engine.service.diagnosis import Diagnoses
    from engine.service.evaluations import Evaluations
    from engine.service.explorer import Explorer
    from engine.service.judging import Judging
    from engine.service.nuggets import Nuggets
    from engine.service.presets import Presets
    from engine.service.runs import Runs
    from engine.service.tuning import Tuning

    def public(cls) -> set[str]:
        return {name for name in dir(cls) if not name.startswith("_")}

    exposed = {"catalog": Catalog, "runs": Runs, "diagnoses": Diagnoses,
               "evaluations": Evaluations, "annotation": Annotation, "judging": Judging,
               "nuggets": Nuggets, "presets": Presets, "tuning": Tuning}
    reached = []
    for path in sorted((ENGINE.parent / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            if isinstance(node.value, ast.Name) and node.value.id == "explorer":
                if node.attr not in public(Explorer):
                    reached.append(f"{path.name}:{node.lineno} explorer.{node.attr}")
            elif (isinstance(node.value, ast.Attribute) and node.value.attr in exposed
                  and isinstance(node.value.value, ast.Name)
                  and node.value.value.id == "explorer"
                  and node.attr not in public(exposed[node.value.attr])):
                reached.append(f"{path.name}:{node.lineno} explorer.{node.value.attr}"
                               f".{node.attr}")
    assert reached == []
    assert public(Explorer) == {"audit_log", "door", *exposed}  # no pass-through
    assert {"run", "save_run"} <= public(Runs)
    assert {"evaluate", "evaluation_rows"} <= public(Evaluations)


def test_the_codebase_page_names_every_module():
    """The Layout section of docs/codebase.md names each module of engine/ and app/ (as
    `name`), so a module added without a word there fails here."""
    import re

    page = (ENGINE.parent / "docs" / "codebase.md").read_text(encoding="utf-8")
    start = page.index("## Layout")
    layout = page[start:page.index("\n## ", start + 1)]
    named = {name.removesuffix(".py") for name in re.findall(r"`([\w.]+)`", layout)}
    modules = [path for package in ("engine", "app")
               for path in sorted((ENGINE.parent / package).rglob("*.py"))
               if path.name not in ("__init__.py", "__main__.py")]
    assert len(modules) > 100
    assert [str(p.relative_to(ENGINE.parent)) for p in modules if p.stem not in named] == []


# --- no circles -----------------------------------------------------------------------------

def _parsed(package: str) -> dict[str, ast.Module]:
    """Every module of `package` ("engine" or "app") by dotted name, parsed."""
    root = ENGINE.parent
    return {".".join(p for p in path.relative_to(root).with_suffix("").parts
                     if p != "__init__"): ast.parse(path.read_text(encoding="utf-8"))
            for path in sorted((root / package).rglob("*.py"))}


def _import_graph(modules: dict[str, ast.Module], package: str) -> dict[str, set[str]]:
    """{module: the modules of `package` it imports}. Every import counts: at module level,
    inside a function, under TYPE_CHECKING. `from a import b` is an edge to module a.b if
    there is one, else to a (or the nearest module above it); the package itself is none."""
    def module_of(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, tree in modules.items():
        targets = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets += [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                            else node.module for a in node.names]
            elif isinstance(node, ast.Import):
                targets += [a.name for a in node.names]
        graph[name] = {module_of(t) for t in targets
                       if t.startswith(f"{package}.")} - {name, package, ""}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    """One cycle ("a -> b -> a") for each group of modules that import each other, round
    and round (each strongly connected group of more than one module, Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = {stack.pop()}
            while v not in group:
                group.add(stack.pop())
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_round(graph, group) for group in groups]


def _round(graph: dict[str, set[str]], group: set[str]) -> str:
    """The shortest way from the group's first module back to it, through the group."""
    start = min(group)
    ways, queue = {start: [start]}, [start]
    for v in queue:  # breadth first: the queue grows while it is read
        for w in sorted(graph[v] & group):
            if w == start:
                return " -> ".join([*ways[v], start])
            if w not in ways:
                ways[w] = [*ways[v], w]
                queue.append(w)
    raise AssertionError(f"{sorted(group)} holds no cycle")


def test_a_cycle_is_found_through_an_import_inside_a_function():
    modules = {name: ast.parse(source) for name, source in {
        "engine.a": "from engine.b import f\n",
        "engine.b": "def f():\n    from engine.c import g\n    return g()\n",
        "engine.c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                    "    from engine import a\n",
        "engine.d": "import engine.a\nfrom engine import b\n"}.items()}
    graph = _import_graph(modules, "engine")
    assert graph == {"engine.a": {"engine.b"}, "engine.b": {"engine.c"},
                     "engine.c": {"engine.a"}, "engine.d": {"engine.a", "engine.b"}}
    assert _cycles(graph) == ["engine.a -> engine.b -> engine.c -> engine.a"]


@pytest.mark.parametrize("package", ["engine", "app"])
def test_no_import_cycle_among_the_modules_of(package):
    """A module imports only what sits below it: what two modules both need is in a
    module below them both, never reached by an import inside a function."""
    modules = _parsed(package)
    assert len(modules) > 20
    assert _cycles(_import_graph(modules, package)) == []
