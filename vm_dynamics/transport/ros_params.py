"""ROS 2 parameters of a node as rclpy declares them: defaults flattened to dotted names and
ROS types, the overrides of the parsed arguments that match the node, and the statically
typed result (:func:`resolve_parameters`); the rules are stated in
:mod:`vm_dynamics.transport.ros_args`."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from .ros_yaml import ros_kind

__all__ = ["ResolvedParams", "PARAM_NAME_RE", "node_pattern_matches", "parameter_overrides_for",
           "flatten_params", "param_type_name", "resolve_parameters"]

#: A parameter name: tokens of ``[A-Za-z0-9_]`` joined by ``.``.
PARAM_NAME_RE = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*\Z")


@dataclass(frozen=True)
class ResolvedParams:
    """Parameters of one node after overrides (see :func:`resolve_parameters`)."""

    values: dict[str, Any]
    overridden: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    dynamic: tuple[str, ...] = field(default=())


def node_pattern_matches(pattern: str, node_fqn: str) -> bool:
    """rclpy's node-name matching of override-table keys (wildcards ``/*``, ``/**``)."""
    if not pattern.startswith("/"):
        pattern = "/" + pattern
    regex = pattern.replace("/*", r"(/\w+)")
    return re.fullmatch(regex, node_fqn) is not None


def parameter_overrides_for(ros_args: Any, node_fqn: str) -> dict[str, Any]:
    """Overrides that apply to ``node_fqn`` (later matching patterns win, as in rclpy)."""
    out: dict[str, Any] = {}
    for pattern, params in ros_args.overrides:
        if node_pattern_matches(pattern, node_fqn):
            out.update(params)
    return out


def flatten_params(defaults: Mapping[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """Nested dict -> dotted names; values normalised to ROS parameter types.

    numpy scalars/arrays become Python scalars/lists; tuples become lists.  Raises
    ``ValueError`` naming the parameter for values ROS parameters cannot hold (dicts inside
    lists, mixed lists, objects).
    """
    out: dict[str, Any] = {}
    if defaults is None:
        return out
    if not isinstance(defaults, Mapping):
        raise ValueError(f"parameter defaults must be a mapping, got {type(defaults).__name__}")
    for key, value in defaults.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"parameter name must be a non-empty str, got {key!r}")
        name = f"{prefix}{key}"
        if not PARAM_NAME_RE.match(name):
            raise ValueError(f"invalid parameter name {name!r} (tokens [A-Za-z0-9_] joined by .)")
        if isinstance(value, Mapping):
            nested = flatten_params(value, name + ".")
            if not nested:
                raise ValueError(f"parameter group {name!r} is empty")
            out.update(nested)
        else:
            out[name] = _normalise_value(value, name)
    return out


def _normalise_value(value: Any, name: str) -> Any:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a hard dependency of vm_dynamics
        np = None
    if np is not None:
        if isinstance(value, np.ndarray):
            if value.ndim != 1:
                raise ValueError(f"parameter {name!r}: arrays must be 1-D, got shape "
                                 f"{value.shape}")
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        items = [_normalise_value(v, name) for v in value]
        if any(isinstance(v, (list, dict)) or v is None for v in items):
            raise ValueError(f"parameter {name!r}: lists may only hold bool/int/float/str")
        if items:
            kinds = {ros_kind(v) for v in items}
            if len(kinds) > 1:
                raise ValueError(f'parameter {name!r}: mixed list {items!r} '
                                 f'({", ".join(sorted(kinds))}); ROS 2 arrays are homogeneous')
        return items
    raise ValueError(f"parameter {name!r}: unsupported type {type(value).__name__}")


def param_type_name(value: Any) -> str:
    """ROS 2 parameter type of a normalised value (rclpy ``Parameter.Type`` names)."""
    if value is None:
        return "NOT_SET"
    if isinstance(value, list):
        if not value:
            return "EMPTY_ARRAY"
        return {"bool": "BOOL_ARRAY", "integer": "INTEGER_ARRAY", "double": "DOUBLE_ARRAY",
                "string": "STRING_ARRAY"}[ros_kind(value[0])]
    return {"bool": "BOOL", "integer": "INTEGER", "double": "DOUBLE",
            "string": "STRING"}[ros_kind(value)]


def resolve_parameters(defaults: Mapping[str, Any] | None, ros_args: Any,
                       node_fqn: str) -> ResolvedParams:
    """Declare ``defaults`` (flattened) on node ``node_fqn`` and apply the overrides.

    Mirrors rclpy ``declare_parameter(name, default)``: the override wins, its type must equal
    the default's (``dynamic_typing`` for ``None``/empty-list defaults).  ``use_sim_time``
    (bool, default False) is always declared, as every rclpy node does; a default other than
    False is rejected (rclpy would ignore it).
    """
    flat = flatten_params(defaults)
    if flat.get("use_sim_time", False) is not False:
        raise ValueError('parameter use_sim_time: every ROS 2 node declares it with default '
                         'False; set it with -p use_sim_time:=true or a params file, not with '
                         f'the default {flat["use_sim_time"]!r}')
    flat["use_sim_time"] = False
    overrides = parameter_overrides_for(ros_args, node_fqn)
    values: dict[str, Any] = {}
    used, dynamic = [], []
    for name, default in flat.items():
        dyn = default is None or default == []
        if dyn:
            dynamic.append(name)
        if name not in overrides:
            values[name] = default
            continue
        value = overrides[name]
        used.append(name)
        if not dyn and param_type_name(value) != param_type_name(default):
            raise ValueError(
                f"parameter {name!r} of node {node_fqn}: override {value!r} has type "
                f"{param_type_name(value)} but the declared default {default!r} has type "
                f"{param_type_name(default)} (ROS 2 parameters are statically typed; e.g. write "
                "2.0, not 2, for a double)")
        values[name] = value
    ignored = tuple(k for k in overrides if k not in flat)
    return ResolvedParams(values=values, overridden=tuple(used), ignored=ignored,
                          dynamic=tuple(dynamic))
