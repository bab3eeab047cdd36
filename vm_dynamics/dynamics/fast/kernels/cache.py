"""numba's disk cache of the package's kernels, kept valid across the package's files.

numba tells whether a cached kernel is current by its own source file only (the index of each
kernel stores a stamp of that one file): a kernel whose file is unchanged but which calls a
kernel of another file (compiled into it, often inlined), or reads a constant of another module
(frozen into the code at compile time), is loaded from the cache with the *old* code of that
other file after it changed — e.g. after a ``git pull`` that changed ``kinematics.py`` but not
``sim/kernels.py``.  This is numba's long-standing limitation, upstream issue numba/numba#1833
("Caching issue: functions in different modules"; documented under "Cache invalidation" in
numba's caching notes, and not fixed as of numba 0.68).

:func:`install` registers, before numba's own, cache locators that numba picks for the
functions of this package only (the same cache folders and file names as numba's: under
``NUMBA_CACHE_DIR`` if set, else next to the sources).  Their stamp is numba's stamp of the
kernel's file together with :func:`package_stamp`, a digest of the contents of every file a
kernel can be compiled from: the files that define kernels (``njit``) and, transitively, the
package's modules they import (their constants and records).  Editing, pulling or installing
any of those files therefore makes every kernel of the package compile again at its next call
(about a minute for all of them); editing another file (a node, the command line) does not.
The digest is of the files' contents and relative paths, so an installed copy of the same
sources (``colcon build``) matches the cache compiled for it.  It is computed once per process
(reading the package's sources: a few milliseconds).  Functions of other packages keep
numba's locators; ``NUMBA_CACHE_LOCATOR_CLASSES``, if set, replaces both.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import warnings

__all__ = ["PACKAGE", "ROOT", "install", "package_stamp", "stamped_files"]

#: The top-level package whose functions get the package-wide stamp.
PACKAGE = __name__.partition(".")[0]

#: The folder of this copy of the package (the files of the stamp are under it).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

#: ``from .x import a, b`` / ``from vm_dynamics.x import (a, b)`` / ``import vm_dynamics.x``, at
#: any indentation (an import inside a function only widens the set, which is safe).
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+)", re.M)


def _sources() -> dict:
    """Every ``.py`` file of the package: its path relative to :data:`ROOT` (``/``-separated)
    → its bytes."""
    out = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, ROOT).replace(os.sep, "/")] = fh.read()
    return out


def _module_file(parts: list, sources: dict) -> str | None:
    """The file of the module at ``parts`` (folders below :data:`ROOT`), or None."""
    stem = "/".join(parts)
    for rel in (f"{stem}.py", f"{stem}/__init__.py" if stem else "__init__.py"):
        if rel in sources:
            return rel
    return None


def _imports(rel: str, sources: dict) -> set:
    """The package's files that the file ``rel`` imports (relative or ``vm_dynamics.…``
    imports; a name imported from a package counts as its submodule if it is one)."""
    text = sources[rel].decode("utf-8", "replace")
    here = rel.split("/")[:-1]
    found = set()

    def add(parts, names):
        base = _module_file(parts, sources)
        for name in names:
            sub = _module_file(parts + [name], sources)
            if sub:
                found.add(sub)
            elif base:
                found.add(base)
        if base and not names:
            found.add(base)
    for dots, module, names in _FROM.findall(text):
        mod = [m for m in module.split(".") if m]
        if dots:
            up = len(dots) - 1
            if up > len(here):
                continue
            parts = here[:len(here) - up] + mod
        elif mod and mod[0] == PACKAGE:
            parts = mod[1:]
        else:
            continue
        listed = [n.split()[0] for n in names.strip("()").replace("\n", ",").split(",")
                  if n.strip() and not n.strip().startswith("#")]
        add(parts, [n for n in listed if n.isidentifier()])
    for module in _IMPORT.findall(text):
        mod = module.split(".")
        if mod[0] == PACKAGE:
            add(mod[1:], [])
    return found


@functools.lru_cache(maxsize=None)
def _stamp() -> tuple:
    sources = _sources()
    todo = sorted(rel for rel, text in sources.items() if b"njit" in text)
    files = set(todo)
    while todo:
        for dep in _imports(todo.pop(), sources):
            if dep not in files:
                files.add(dep)
                todo.append(dep)
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(sources[rel]).digest())
    return tuple(sorted(files)), h.hexdigest()


def stamped_files() -> tuple:
    """The files of :func:`package_stamp`, relative to :data:`ROOT` (``/``-separated)."""
    return _stamp()[0]


def package_stamp() -> str:
    """Digest (hex) of the relative paths and contents of the files a kernel of the package can
    be compiled from (:func:`stamped_files`); read once per process."""
    return _stamp()[1]


class _PackageStamped:
    """Mixed into each of numba's cache locators: taken for the package's functions only, with
    the package-wide stamp added to numba's stamp of the function's file."""

    stamped_package = PACKAGE

    @classmethod
    def from_function(cls, py_func, py_file):
        if (getattr(py_func, "__module__", None) or "").partition(".")[0] != PACKAGE:
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self):
        return super().get_source_stamp(), package_stamp()


def install() -> bool:
    """Put the package-stamped locators first in numba's list (once per process; True if they
    are there).  If numba's caching internals are not the expected ones, warns that the caches
    are checked against each kernel's own file only, and returns False."""
    try:
        from numba.core import caching
        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
        classes = impl._locator_classes
        if any(getattr(c, "stamped_package", None) == PACKAGE for c in classes):
            return True
        ours = [type(f"PackageStamped{c.__name__}", (_PackageStamped, c),
                     {"__module__": __name__, "__doc__": f"numba's {c.__name__} with the stamp of {PACKAGE}'s kernel "
                                 "sources (vm_dynamics.dynamics.fast.kernels.cache)."})
                for c in classes]
        classes[:0] = ours
    except (ImportError, AttributeError, TypeError) as exc:
        warnings.warn(f"{PACKAGE}: numba's cache locators not found ({exc}); a cached kernel is "
                      "checked against its own file only and may run the old code of a kernel "
                      "of another file after an update (delete the cache then)", stacklevel=2)
        return False
    return True
