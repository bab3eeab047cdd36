"""ROS 2 names as rcl checks and expands them: node names, namespaces, topic and service
names (``rcl_validate_*``, ``rcl_expand_topic_name`` without substitutions)."""
from __future__ import annotations

import re

__all__ = ["TOKEN", "validate_node_name", "validate_namespace", "validate_topic",
           "expand_topic_name"]

#: One token of a ROS name.
TOKEN = r"[A-Za-z_][A-Za-z0-9_]*"
NODE_NAME_RE = re.compile(rf"{TOKEN}\Z")


def validate_node_name(name: str, what: str = "node name") -> str:
    """``name`` if it is a valid node name (one token), else ``ValueError`` naming ``what``."""
    if not isinstance(name, str) or not NODE_NAME_RE.match(name):
        raise ValueError(f"{what}: invalid node name {name!r} (must match "
                         "[A-Za-z_][A-Za-z0-9_]*)")
    return name


def validate_namespace(ns: str, what: str = "namespace") -> str:
    """``ns`` if it is a valid absolute namespace, else ``ValueError`` naming ``what``."""
    if not isinstance(ns, str) or not ns.startswith("/"):
        raise ValueError(f"{what}: namespace {ns!r} must be absolute (start with /)")
    if ns == "/":
        return ns
    if ns.endswith("/") or "//" in ns:
        raise ValueError(f"{what}: invalid namespace {ns!r}")
    for tok in ns[1:].split("/"):
        if not re.fullmatch(TOKEN, tok):
            raise ValueError(f"{what}: invalid namespace {ns!r} (token {tok!r})")
    return ns


def validate_topic(name: str, what: str, *, allow_relative: bool) -> None:
    """Raise ``ValueError`` naming ``what`` unless ``name`` is a valid topic/service name
    (``~``-prefixed private names and, with ``allow_relative``, relative names allowed)."""
    if not isinstance(name, str) or name == "":
        raise ValueError(f"{what}: empty topic/service name")
    body = name
    if body.startswith("~"):
        body = body[1:]
        if body and not body.startswith("/"):
            raise ValueError(f"{what}: {name!r}: ~ must be followed by / or nothing")
        body = body[1:]
        if not body:
            return
    elif body.startswith("/"):
        body = body[1:]
    elif not allow_relative:
        raise ValueError(f"{what}: {name!r} must be absolute")
    if body == "" or body.endswith("/") or "//" in body:
        raise ValueError(f"{what}: invalid topic/service name {name!r}")
    for tok in body.split("/"):
        if not re.fullmatch(TOKEN, tok):
            raise ValueError(f"{what}: invalid topic/service name {name!r} (token {tok!r} must "
                             "match [A-Za-z_][A-Za-z0-9_]*)")


def expand_topic_name(name: str, node_name: str, namespace: str) -> str:
    """``rcl_expand_topic_name`` without substitutions: ``~`` -> node FQN, relative -> ns."""
    validate_topic(name, "topic/service name", allow_relative=True)
    ns = namespace.rstrip("/")
    fqn = f"{ns}/{node_name}"
    if name == "~":
        return fqn
    if name.startswith("~/"):
        return fqn + name[1:]
    if name.startswith("/"):
        return name
    return f"{ns}/{name}"
