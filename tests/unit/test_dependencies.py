"""Every library memc's own code imports is one pyproject.toml declares: an import that works
only because another package happens to pull its distribution in breaks when that package
changes its requirements."""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]


def test_every_imported_library_is_declared() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    requirements = [*project["project"]["dependencies"], *(r for extra in project["project"]["optional-dependencies"].values() for r in extra)]
    declared = {canonicalize_name(Requirement(r).name) for r in requirements}
    ours = [*project["tool"]["importlinter"]["root_packages"], "benchmarks"]
    local = {*ours, "tests", "conftest", "__future__"}  # conftest: the tests' own module, which benchmarks reuse
    distributions = importlib.metadata.packages_distributions()
    undeclared: dict[str, list[str]] = {}
    for package in ours:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in local:
                        continue
                    if not {canonicalize_name(d) for d in distributions.get(top, [])} & declared:
                        undeclared.setdefault(top, []).append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
