"""``package://`` URIs → files: the one resolver used by the URDF loader, the nodes, the
browser viewer and the videos, so that a robot the loader finds is also a robot that is drawn.

A ``package://PKG/rest`` URI names ``rest`` inside the ROS package ``PKG``.  Its folder is
looked up, in this order, in:

* ``share/PKG`` under each prefix of ``AMENT_PREFIX_PATH`` and ``CMAKE_PREFIX_PATH`` (ROS 2
  install trees, colcon workspaces);
* ``PKG`` under each folder of ``ROS_PACKAGE_PATH``;
* ``share/PKG`` under the Python environment (``sys.prefix``) and under pip's
  ``cmeel.prefix`` folders on ``sys.path`` (where the ``example-robot-data`` wheel installs).

The first folder that holds the file wins.  ``file://`` URIs and plain paths (relative ones
against ``base_dir``) are accepted by :func:`resolve_resource` too, as URDF ``<mesh
filename>`` attributes may use any of them.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["package_roots", "resolve_package_path", "resolve_resource", "SEARCHED"]

#: What :func:`package_roots` searches, for error messages.
SEARCHED = "AMENT_PREFIX_PATH, CMAKE_PREFIX_PATH, ROS_PACKAGE_PATH and the Python environment"


def _split(var: str) -> list[str]:
    return [d for d in os.environ.get(var, "").split(os.pathsep) if d]


def package_roots(pkg: str) -> list[str]:
    """Candidate folders of package ``pkg``, in search order (they need not exist)."""
    roots = []
    for var in ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH"):
        roots += [os.path.join(d, "share", pkg) for d in _split(var)]
    roots += [os.path.join(d, pkg) for d in _split("ROS_PACKAGE_PATH")]
    roots.append(os.path.join(sys.prefix, "share", pkg))
    roots += [os.path.join(d, "cmeel.prefix", "share", pkg) for d in sys.path if d]
    return roots


def _split_uri(uri: str) -> tuple[str, str]:
    pkg, _, rel = uri[len("package://"):].partition("/")
    if not pkg or not rel or ".." in rel.split("/"):
        raise ValueError(f"{uri!r}: expected package://PACKAGE/relative/path")
    return pkg, rel


def resolve_package_path(uri: str) -> str:
    """Path of the file a ``package://PKG/rest`` URI names (other strings are returned as
    they are).  Raises ``ValueError`` naming the URI if the package or file is not found, or
    if the URI is malformed or climbs out of its package (``..``)."""
    if not uri.startswith("package://"):
        return uri
    pkg, rel = _split_uri(uri)
    for root in package_roots(pkg):
        cand = os.path.join(root, rel)
        if os.path.isfile(cand):
            return cand
    raise ValueError(f"{uri!r}: package '{pkg}' or its file '{rel}' not found (searched "
                     f"{SEARCHED})")


def resolve_resource(filename: str, base_dir: str | os.PathLike | None = None) -> str | None:
    """An existing file for a URDF resource name (``package://``, ``file://``, absolute, or
    relative to ``base_dir``), or None if there is none."""
    if filename.startswith("package://"):
        try:
            return resolve_package_path(filename)
        except ValueError:
            return None
    if filename.startswith("file://"):
        p = Path(filename[len("file://"):])
    else:
        p = Path(filename)
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
    return str(p) if p.is_file() else None
