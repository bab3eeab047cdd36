"""The package's source as the layout tests read it: its files, module names and paths, private
names, and the vm_dynamics imports of a module (:func:`vm_imports`), shared by
``test_layout.py`` (private names across folders) and ``test_private_names.py`` (across
modules)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "vm_dynamics"


def py_files(*dirs: Path) -> list[Path]:
    """The ``.py`` files under ``dirs`` (no virtual environment), sorted."""
    return sorted(p for d in dirs for p in d.rglob("*.py") if ".venv" not in p.parts)


def is_private(name: str) -> bool:
    """One leading underscore, not a dunder."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_name(path: Path) -> str:
    """The dotted module name of a file under :data:`ROOT`."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_path(name: str) -> Path | None:
    """File of module ``name`` (a vm_dynamics module), or None if it is not a module."""
    base = ROOT.joinpath(*name.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def absolute_module(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` in ``path`` imports from."""
    if not node.level:
        return node.module or ""
    pkg = module_name(path).split(".")
    if path.name != "__init__.py":
        pkg = pkg[:-1]
    pkg = pkg[:len(pkg) - node.level + 1]
    return ".".join(pkg + ([node.module] if node.module else []))


class VmImport(NamedTuple):
    """One vm_dynamics import: ``import module as local`` (``name`` None, ``sub`` the module's
    file) or ``from module import name as local`` (``sub`` the file of ``module.name`` when
    that is a module, else None)."""

    line: int
    module: str
    name: str | None
    local: str
    sub: Path | None


def vm_imports(path: Path, tree: ast.AST) -> Iterator[VmImport]:
    """The vm_dynamics imports of the module ``path`` parsed as ``tree`` (relative ones
    resolved; a plain ``import vm_dynamics.x`` without ``as`` binds no new name and is
    skipped)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                target = module_path(a.name) if a.name.startswith("vm_dynamics") else None
                if target is not None and a.asname:
                    yield VmImport(node.lineno, a.name, None, a.asname, target)
        elif isinstance(node, ast.ImportFrom):
            mod = absolute_module(path, node)
            if mod.startswith("vm_dynamics"):
                for a in node.names:
                    yield VmImport(node.lineno, mod, a.name, a.asname or a.name,
                                   module_path(f"{mod}.{a.name}"))
