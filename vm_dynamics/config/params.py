"""Parameter files and parameter trees, shared by ``vm-sim``, the node cores and the viewer.

A scenario file is a ROS 2 parameter file (``/**: ros__parameters: ...``).  This module reads
it safely (:func:`read_params_file`: no YAML aliases; bounded size, depth and value count),
converts between nested mappings and ROS's flat dotted names (:func:`flatten`,
:func:`unflatten`), applies
``name:=value`` overrides (:func:`apply_overrides`) and checks scalar values
(:func:`number`, :func:`mapping`).  Vectors are checked by
:func:`vm_dynamics.core.validation.as_vector`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.bounded_yaml import (
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    BoundedYamlLoader,
    load_yaml_file,
)
from ..core.paramtree import flatten, unflatten

__all__ = ["MAX_PARAMS_FILE_BYTES", "MAX_PARAMS_DEPTH", "MAX_PARAMS_NODES", "ParamsLoader",
           "read_params_file", "flatten", "unflatten", "parameter_defaults", "apply_overrides",
           "unflatten_reference", "number", "mapping", "short"]


#: Largest parameter file read (bytes): the shipped scenarios are ~2 kB.
MAX_PARAMS_FILE_BYTES = 4 * 1024 * 1024
#: Deepest nesting and most values of a parameter file or value
#: (:mod:`vm_dynamics.core.bounded_yaml`: PyYAML's parser is quadratic in the depth).
MAX_PARAMS_DEPTH = MAX_YAML_DEPTH
MAX_PARAMS_NODES = MAX_YAML_NODES
#: The YAML loader of parameter files and values, with those bounds.
ParamsLoader = BoundedYamlLoader


def read_params_file(path) -> dict:
    """Return the ``ros__parameters`` of the ``/**`` (or first) node in a ROS 2 params file.

    YAML aliases are rejected (as by rcl) and the file may be at most
    :data:`MAX_PARAMS_FILE_BYTES` long, :data:`MAX_PARAMS_DEPTH` levels deep and hold
    :data:`MAX_PARAMS_NODES` values; every problem is a ``ValueError`` naming the file."""
    doc = load_yaml_file(path, MAX_PARAMS_FILE_BYTES)
    if not isinstance(doc, dict) or not doc:
        raise ValueError(f"{path}: expected a ROS 2 parameter file ('/**: ros__parameters: ...')")
    node = doc.get("/**", next(iter(doc.values())))
    if not isinstance(node, dict) or "ros__parameters" not in node:
        raise ValueError(f"{path}: missing 'ros__parameters' under '/**'")
    params = node["ros__parameters"]
    if not isinstance(params, dict):
        raise ValueError(f"{path}: 'ros__parameters' must be a mapping")
    return params


def parameter_defaults(spec: Mapping[str, tuple[Any, str]]) -> dict[str, Any]:
    """``{name: default}`` of a parameter table (flat dotted names)."""
    return {k: v[0] for k, v in spec.items()}


def apply_overrides(params: dict, overrides: dict | None) -> dict:
    """A deep copy of nested ``params`` with ``overrides`` applied.

    An override's name is a ROS parameter name: a dotted name (``controller.kp``,
    ``initial.joint_positions``) sets the nested key, creating the mappings on the way; a
    plain name replaces the top-level key.  Setting a key under a value that is not a
    mapping is a ``ValueError`` naming both."""
    import copy
    out = copy.deepcopy(params)
    for name, value in (overrides or {}).items():
        parts = str(name).split(".")
        if not all(parts):
            raise ValueError(f"{name!r}: not a parameter name (empty component)")
        node = out
        for i, part in enumerate(parts[:-1]):
            nxt = node.get(part)
            if nxt is None:
                nxt = node[part] = {}
            elif not isinstance(nxt, dict):
                raise ValueError(f"{name}: {'.'.join(parts[:i + 1])} is not a mapping "
                                 f"(it is {short(nxt)})")
            node = nxt
        node[parts[-1]] = value
    return out


def unflatten_reference(ref, n):
    """ROS parameters cannot hold nested lists: joint waypoint rows are written flat (k·n numbers
    for k times); reshape them to the k×n rows :mod:`vm_dynamics.control.references` takes."""
    if not isinstance(ref, dict):
        return ref
    ref = dict(ref)
    joint = ref.get("joint")
    if isinstance(joint, dict) and joint.get("type") == "waypoints":
        joint = dict(joint)
        k = len(joint.get("times", []))
        for key in ("positions", "velocities", "accelerations"):
            v = joint.get(key)
            if isinstance(v, list) and v and not isinstance(v[0], list):
                if len(v) != k * n:
                    raise ValueError(f"reference.joint.{key}: expected {k} rows of {n} numbers "
                                     f"({k * n} in all), got {len(v)}")
                joint[key] = [v[i * n:(i + 1) * n] for i in range(k)]
        ref["joint"] = joint
    return ref


def number(params: dict, key: str, default, *, positive: bool = False,
            nonnegative: bool = False) -> float:
    """A finite real parameter; strings are read like C ``strtod`` reads them in ROS (so
    ``1e-3`` works although YAML 1.1 calls it a string).  ``ValueError`` naming ``key``."""
    v = params.get(key, default)
    x = None
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            x = None
    elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        x = float(v)
    if x is None or not np.isfinite(x):
        raise ValueError(f"{key}: expected a finite number, got {short(v)}")
    if positive and not x > 0:
        raise ValueError(f"{key}: must be positive, got {x:g}")
    if nonnegative and not x >= 0:
        raise ValueError(f"{key}: must be >= 0, got {x:g}")
    return x


def mapping(params: dict, key: str) -> dict | None:
    """The mapping under ``key`` (None if absent or empty); anything else is a ``ValueError``."""
    v = params.get(key)
    if v is None or v == {}:
        return None
    if not isinstance(v, dict):
        raise ValueError(f"{key}: expected a mapping of names to values, got "
                         f"{type(v).__name__} {short(v)}")
    return v


def short(x, limit: int = 80) -> str:
    """``repr(x)`` cut to ``limit`` characters (error messages stay one short line)."""
    r = repr(x)
    return r if len(r) <= limit else r[:limit - 3] + "..."
