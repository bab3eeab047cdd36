"""Parameter trees: nested mappings <-> ROS 2's flat dotted parameter names.

``{'controller': {'kp': 1}}`` <-> ``{'controller.kp': 1}``.  Used by the model layer (vehicle and
locked-joint options), the configuration layer and the nodes.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["flatten", "unflatten"]


def flatten(params: Mapping | None, prefix: str = "") -> dict[str, Any]:
    """Nested mapping -> flat dotted names (``{'a': {'b': 1}}`` -> ``{'a.b': 1}``)."""
    out: dict[str, Any] = {}
    for key, value in (params or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def unflatten(params: Mapping[str, Any], prefix: str) -> dict:
    """The sub-tree of flat dotted ``params`` under ``prefix`` as a nested dict."""
    out: dict = {}
    for key, value in params.items():
        if not key.startswith(prefix + "."):
            continue
        parts = key[len(prefix) + 1:].split(".")
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"parameter {key!r} conflicts with {prefix}.{p}")
        node[parts[-1]] = value
    return out
