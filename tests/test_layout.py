"""The engine's layers: no module imports from a layer above its own, query-time code never
imports the training package, and no heavy library is imported at module level."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "engine"

# Lowest first. The core modules (engine/*.py) sit below every package; models (packaged
# resources and loading) below data, whose named corpora come from packaged files. `api`
# (engine/api.py, what a plugin imports) gathers names from the layers below the service's
# and sits at the top: no engine module imports it.
LAYERS = ("core", "models", "data", "units", "index", "readers", "stages", "train",
          "paradigms", "eval", "store", "service", "cli", "api")
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
    its public methods or properties, so its collaborators can change behind it."""
    from engine.service.explorer import Explorer

    public = {name for name in dir(Explorer) if not name.startswith("_")}
    reached = []
    for path in sorted((ENGINE.parent / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "explorer" and node.attr not in public):
                reached.append(f"{path.name}:{node.lineno} explorer.{node.attr}")
    assert reached == []
    assert {"save_run", "evaluation_rows", "judged_pairs", "ready"} <= public


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
