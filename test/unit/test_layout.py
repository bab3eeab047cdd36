"""The package's layout rules, checked on the source: no private name is used outside the folder
that defines it (tests included), and the package faces (``__init__.py``) are thin."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from source_tree import PKG, ROOT, is_private, module_path, py_files, vm_imports


def private_uses(path: Path) -> list[str]:
    """Private names of vm_dynamics modules that ``path`` uses from outside their folder."""
    tree = ast.parse(path.read_text(), str(path))
    here = path.parent
    aliases: dict[str, Path] = {}     # local name -> folder of the vm_dynamics module it names
    found = []
    for imp in vm_imports(path, tree):
        if imp.name is None:
            aliases[imp.local] = imp.sub.parent
            continue
        owner = imp.sub if imp.sub else module_path(imp.module)
        if owner is None:
            continue
        folder = owner.parent if imp.sub is None or imp.sub.name != "__init__.py" \
            else owner.parent.parent
        if is_private(imp.name) and folder != here:
            found.append(f"{path.relative_to(ROOT)}:{imp.line}: from {imp.module} import "
                         f"{imp.name}")
        if imp.sub is not None:
            aliases[imp.local] = imp.sub.parent
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in aliases and is_private(node.attr) \
                and aliases[node.value.id] != here:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_is_used_outside_its_folder():
    files = py_files(PKG, ROOT / "test", ROOT / "bench", ROOT / "scripts", ROOT / "launch")
    found = [hit for f in files for hit in private_uses(f)]
    assert not found, "private names used across folders:\n" + "\n".join(found)


def test_the_checker_sees_a_private_import(tmp_path, monkeypatch):
    """The rule above can fail: a test file importing a private name is reported."""
    probe = ROOT / "test" / "unit" / f"_probe_{os.getpid()}.py"
    probe.write_text("from vm_dynamics.core.lie import _sinc_coeffs as k\n"
                     "import vm_dynamics.core.lie as lie\nlie._sinc_coeffs\n")
    try:
        hits = private_uses(probe)
    finally:
        probe.unlink()
    assert len(hits) == 2, hits


@pytest.mark.parametrize("face", sorted(str(p.relative_to(ROOT)) for p in PKG.rglob("__init__.py")),
                         ids=lambda s: s)
def test_package_faces_are_thin(face):
    """A package's ``__init__.py`` re-exports; the code lives in named modules."""
    tree = ast.parse((ROOT / face).read_text())
    defs = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    allowed = {"vm_dynamics/__init__.py": {"__getattr__", "__dir__"},
               "vm_dynamics/viewer/__init__.py": {"missing_extra"}}
    assert set(defs) <= allowed.get(face, set()), (face, defs)


def test_test_file_names_are_unique_across_the_test_folders():
    """pytest imports test modules by their basename (the folders are not packages): two
    files of one name in different folders stop the collection ('import file mismatch')."""
    names = {}
    for f in sorted((ROOT / "test").rglob("test_*.py")):
        names.setdefault(f.name, []).append(str(f.relative_to(ROOT)))
    clashes = {n: fs for n, fs in names.items() if len(fs) > 1}
    assert not clashes, clashes
