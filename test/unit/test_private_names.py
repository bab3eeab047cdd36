"""No private name of one vm_dynamics module is used by another module, the folder's included
(``test_layout.py`` checks across folders; this checks across modules).

A name is private when it starts with one underscore.  Three ways of reaching one are found
on the source:

* ``from vm_dynamics.x.y import _name`` (also relative) in another module;
* ``y._name`` where ``y`` names another vm_dynamics module;
* ``obj._name`` on an object that is not ``self``/``cls``, where ``_name`` is defined
  (a function, class, assigned attribute or module global) by another vm_dynamics module and
  not by the module that uses it: one module reading or calling another's private state.

The third is a static approximation (the object's type is not known): a name defined in both
modules counts as local, and privates of other libraries (``cyclonedds``, numba) are not
vm_dynamics names.  :data:`KNOWN` lists the uses in modules that are being reworked in
issue 20; the test fails when a use appears that is not listed, and when a listed use is
gone (so the list only shrinks).
"""
from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

from source_tree import PKG, ROOT, is_private, module_path, vm_imports

#: Named tuples' public API is spelled with an underscore.
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}

#: Known uses of another module's private names, in files being split in issue 20 by the
#: engine/config work: ``"file: expression"`` -> why it is still there.
KNOWN = {
    # not a vm_dynamics name: numba's Dispatcher._cache (whether the kernels are cached on
    # disk), which shares its name with the rosidl message library's own _cache
    "vm_dynamics/dynamics/fast/backend.py: d._cache": "numba private API, see above",
}


def defined_names(tree: ast.AST) -> set[str]:
    """Names a module defines: functions, classes, globals, attributes it assigns on
    ``self``/``cls``, ``__slots__`` entries, parameters."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) \
                and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
            out.add(n.attr)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and is_private(n.value) \
                and n.value.isidentifier():
            out.add(n.value)                           # __slots__, setattr(obj, "_x", ...)
    return out


@functools.lru_cache(maxsize=None)
def _parsed(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), str(path))


def _package_definitions() -> dict[str, set[Path]]:
    owners: dict[str, set[Path]] = defaultdict(set)
    for p in PKG.rglob("*.py"):
        for name in defined_names(_parsed(p)):
            if is_private(name):
                owners[name].add(p)
    return owners


def private_uses(path: Path, owners: dict[str, set[Path]], text: str | None = None) -> list[str]:
    """``"file: expression"`` for every use in ``path`` of another vm_dynamics module's private
    name (the three forms of the module docstring)."""
    tree = _parsed(path) if text is None else ast.parse(text, str(path))
    rel = str(path.relative_to(ROOT))
    local = defined_names(tree)
    modules: dict[str, Path] = {}          # local name -> vm_dynamics module file it names
    found = []
    for imp in vm_imports(path, tree):
        if imp.sub is not None:
            modules[imp.local] = imp.sub
        elif is_private(imp.name) and module_path(imp.module) not in (None, path):
            found.append(f"{rel}: from {imp.module} import {imp.name}")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and is_private(node.attr)) \
                or node.attr in NAMEDTUPLE_API:
            continue
        value = node.value
        if isinstance(value, ast.Name) and value.id in modules:
            if modules[value.id] != path:
                found.append(f"{rel}: {value.id}.{node.attr}")
            continue
        if isinstance(value, ast.Name) and value.id in ("self", "cls"):
            continue
        if node.attr not in local and owners.get(node.attr, set()) - {path}:
            found.append(f"{rel}: {ast.unparse(node)}")
    return sorted(set(found))


def test_no_module_uses_another_modules_private_names():
    owners = _package_definitions()
    found = {hit for p in sorted(PKG.rglob("*.py")) for hit in private_uses(p, owners)}
    new = sorted(found - set(KNOWN))
    gone = sorted(set(KNOWN) - found)
    assert not new, "private names used across modules:\n" + "\n".join(new)
    assert not gone, ("no longer used: remove from KNOWN in test_private_names.py:\n"
                      + "\n".join(gone))


def test_the_checker_sees_each_kind_of_private_use():
    """The rule can fail: a module importing, reading through a module alias, and calling a
    private method defined elsewhere is reported three times; its own privates are not."""
    owners = _package_definitions()
    probe = PKG / "ros" / "probe_module.py"            # never written: the text is given
    text = ("from vm_dynamics.core.lie import _sinc_coeffs\n"
            "from . import messages\n"
            "messages._typestore()\n"
            "def f(t, r):\n"
            "    t._check_open()\n"
            "    r._own()\n"
            "    r._replace(a=1)\n"
            "def _own():\n"
            "    pass\n")
    hits = private_uses(probe, owners, text)
    assert hits == sorted([
        "vm_dynamics/ros/probe_module.py: from vm_dynamics.core.lie import _sinc_coeffs",
        "vm_dynamics/ros/probe_module.py: messages._typestore",
        "vm_dynamics/ros/probe_module.py: t._check_open"]), hits
