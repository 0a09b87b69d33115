"""The package's layers, read from its import statements (ast): strategies (``retrieval/``) and post stages
(``post/``) sit below the router (``route/``); ``post/`` shares the search context with ``retrieval/``
through ``waypost/context.py``, not by importing it; filter extraction reads the metadata index through an
interface, not ``index/``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "waypost"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module an import statement of ``module`` names, wherever it stands (functions and
    ``TYPE_CHECKING`` blocks too); ``from a import b`` names ``a`` and ``a.b`` (b may be a module)."""
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def violations(layer: str, forbidden: str) -> list[str]:
    """``module -> imported`` for every module under ``waypost/<layer>/`` that imports ``forbidden`` or below it."""
    found = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        module = module_name(path)
        for name in sorted(imported_modules(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")):
            if name == forbidden or name.startswith(forbidden + "."):
                found.append(f"{module} -> {name}")
    return found


def test_the_scanner_finds_every_form_of_import() -> None:
    source = (
        "import waypost.retrieval.bm25\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from waypost import route\n"
        "def f():\n"
        "    from ...index.metadata import MetadataLookup\n"
    )
    found = imported_modules(source, "waypost.post.rerank.train")
    assert {"waypost.retrieval.bm25", "waypost.route", "waypost.index.metadata"} <= found
    assert imported_modules("from . import model", "waypost.filters", is_package=True) >= {"waypost.filters.model"}
    assert module_name(PACKAGE / "post" / "rerank" / "__init__.py") == "waypost.post.rerank"


def test_the_layers_exist() -> None:  # a renamed folder would make the checks below pass vacuously
    for layer in ("post", "retrieval", "filters", "route", "index"):
        assert any((PACKAGE / layer).rglob("*.py")), layer


def test_post_does_not_import_retrieval() -> None:
    assert violations("post", "waypost.retrieval") == []


@pytest.mark.parametrize("layer", ["retrieval", "post"])
def test_strategies_and_post_stages_do_not_import_the_router(layer: str) -> None:
    assert violations(layer, "waypost.route") == []


def test_filters_do_not_import_the_index() -> None:
    assert violations("filters", "waypost.index") == []


def test_only_the_store_package_knows_its_databases() -> None:
    found = []
    for layer in sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name not in ("store", "__pycache__")):
        found += [v for v in violations(layer, "waypost.store") if ".sqlite" in v.partition(" -> ")[2]]
    assert found == []
