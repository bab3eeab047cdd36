"""ROS 2 command-line arguments (``--ros-args ...``) parsed exactly as rcl/rclpy do, without ROS.

Used by the DDS transport (and by the strict rclpy stand-in of the tests) so that a node started
with ``--ros-args -p rate:=100.0 --params-file cfg.yaml -r __node:=sim -r __ns:=/robot`` behaves
the same with and without ROS installed.  The reference implementation is read from
ros2/rcl (``rcl/src/rcl/arguments.c``, ``remap.c``, ``rcl_yaml_param_parser/src/parse.c``,
``namespace.c``) and ros2/rclpy (``src/rclpy/node.cpp``
``_populate_node_parameters_from_rcl_params``, ``rclpy/node.py``
``declare_parameters``/``_apply_descriptor``, ``rclpy/parameter.py``).

Semantics reproduced
--------------------
* Only arguments between ``--ros-args`` and ``--`` (or the end) are ROS arguments; several
  ``--ros-args`` blocks are allowed.  Unknown ROS arguments raise ``ValueError`` (rclpy raises
  ``UnknownROSArgsError``).  Everything else is returned in :attr:`RosArgs.non_ros_args`.
* ``-p/--param [node:]name:=yaml`` and ``--params-file FILE`` write, in command-line order, into
  one override table ``{node-name pattern: {param: value}}`` (``-p`` without a node prefix uses
  the pattern ``/**``).  A later assignment to the same (pattern, name) replaces the earlier one.
  For a node, rclpy walks the patterns in order of first appearance and lets every matching
  pattern update the result, so a later *pattern* overrides an earlier one.  Pattern matching:
  ``/*`` -> one token, ``/**`` -> any number of tokens (``std::regex_match`` of
  ``find_and_replace(pattern, "/*", "(/\\w+)")``); a pattern without a leading ``/`` gets one.
* Values are typed like ``rcl_yaml_param_parser`` ``get_value``: an explicit ``!!str`` tag or a
  quoted scalar is a string; otherwise ``y Y yes Yes YES true True TRUE on On ON`` (and the
  ``n/no/false/off`` family) are booleans, then C ``strtoll(value, 0)`` (so ``0x10`` = 16 and
  ``010`` = 8) gives an integer, then ``strtod`` (``1e3``, ``inf``, ``.nan``, hex floats) a
  double -- a value that overflows/underflows (``ERANGE``) falls through --, else a string.
  Lists must be homogeneous (``[1, 2.5]`` is an error, as in ROS).  ``~``/``null`` are the
  *strings* ``"~"``/``"null"``; an empty value is an error.  Aliases are rejected.
* Params files: top-level keys are node names, possibly nested (``/ns: {node: {ros__parameters:
  ...}}`` is ``/ns/node``), wildcards ``/**`` and ``/*``; the ``ros__parameters`` mapping may
  nest, nested keys are joined with ``.`` (``pid: {kp: 1}`` -> ``pid.kp``).
* Declared parameters are statically typed by their default (rclpy ``declare_parameter``): an
  override of another type is an error (``-p gain:=2`` for a ``float`` default fails; write
  ``2.0``).  A ``None`` or empty-list default is declared with ``dynamic_typing=True``.
  Overrides for undeclared names are ignored (rclpy default
  ``allow_undeclared_parameters=False``) and reported in :attr:`ResolvedParams.ignored`.
* Remap rules ``[node:]from:=to``: ``__node``/``__name`` (node name), ``__ns`` (namespace) and
  topic/service names; the *first* matching rule wins (``rcl_remap_first_match``).  Wildcards
  and substitutions are not implemented in rcl either and are rejected.
* ``--log-level LEVEL`` / ``--log-level name:=LEVEL``; ``-e/--enclave``, ``--log-file-name``,
  ``--log-config-file``, ``--enable/--disable-{stdout,rosout,external-lib}-logs`` are accepted
  and recorded.
* ``ROS_DOMAIN_ID``: unset or empty -> 0, else a decimal integer in [0, 232].
* Bounds rcl does not have (PyYAML's pure-Python parser is quadratic in the nesting depth, so
  a 200 kB file of nested lists would take minutes): a params file is at most
  :data:`~vm_dynamics.config.params.MAX_PARAMS_FILE_BYTES` long, and a file or ``-p`` value
  at most :data:`~vm_dynamics.config.params.MAX_PARAMS_DEPTH` levels deep with
  :data:`~vm_dynamics.config.params.MAX_PARAMS_NODES` values.

Every error is a ``ValueError`` that quotes the offending argument / file and line.

This module parses argv (:func:`parse_ros_args`) and applies the remaps to the node's identity
and names; it re-exports the rest, split by what it holds: value typing and params files in
:mod:`.ros_yaml`, name checks in :mod:`.ros_names`, parameter resolution in :mod:`.ros_params`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .ros_names import (
    expand_topic_name,
    validate_namespace,
    validate_node_name,
    validate_topic,
)
from .ros_params import (
    PARAM_NAME_RE,
    ResolvedParams,
    flatten_params,
    node_pattern_matches,
    param_type_name,
    parameter_overrides_for,
    resolve_parameters,
)
from .ros_yaml import PARAMS_KEY, YAML_STR_TAG, load_params_file, parse_param_value

__all__ = [
    "RosArgs", "Remap", "ResolvedParams", "parse_ros_args", "remove_ros_args",
    "parse_param_value", "load_params_file", "parameter_overrides_for", "node_pattern_matches",
    "flatten_params", "param_type_name", "resolve_parameters", "node_identity",
    "validate_node_name", "validate_namespace", "expand_topic_name", "remap_name",
    "domain_id_from_env", "LOG_LEVELS", "PARAMS_KEY", "YAML_STR_TAG",
]

LOG_LEVELS = ("DEBUG", "INFO", "WARN", "ERROR", "FATAL", "UNSET")
_MAX_DOMAIN_ID = 232

_PARAM_RULE_RE = re.compile(
    r"(?:(?P<node>[A-Za-z0-9_]+):(?!=))?(?P<name>[^:]*?):=(?P<value>.*)\Z", re.DOTALL)
_REMAP_RULE_RE = re.compile(
    r"(?:(?P<node>[A-Za-z0-9_]+):(?![=/]))?(?P<match>.*?):=(?P<repl>.*)\Z", re.DOTALL)


# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Remap:
    """One ``-r [node:]match:=replacement`` rule."""

    kind: str            # 'node', 'namespace' or 'name' (topic/service)
    match: str           # '' for node/namespace rules
    replacement: str
    node: str | None     # node-name prefix, None = all nodes


@dataclass(frozen=True)
class RosArgs:
    """Result of :func:`parse_ros_args`.

    ``overrides`` is the rcl override table: an ordered tuple of ``(node_pattern, params)``
    with ``params`` an ordered tuple of ``(name, value)`` -- order of first appearance, values
    already replaced by later assignments.
    """

    overrides: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    params_files: tuple[str, ...] = ()
    remaps: tuple[Remap, ...] = ()
    log_level: str | None = None
    logger_levels: tuple[tuple[str, str], ...] = ()
    enclave: str | None = None
    log_flags: tuple[tuple[str, bool], ...] = ()
    non_ros_args: tuple[str, ...] = ()


# ----------------------------------------------------------------------- argv


def _check_param_rule(rule: str, flag: str) -> tuple[str, str, Any]:
    """``-p [node:]name:=value`` -> (node pattern, name, typed value)."""
    m = _PARAM_RULE_RE.match(rule)
    what = f"parameter override rule '{flag} {rule}'"
    if not m:
        raise ValueError(f"couldn't parse {what}: expected [node:]name:=value")
    node, name, value = m.group("node"), m.group("name"), m.group("value")
    if not PARAM_NAME_RE.match(name):
        raise ValueError(f"couldn't parse {what}: invalid parameter name {name!r}")
    if value == "":
        raise ValueError(f"couldn't parse {what}: empty value")
    return (node or "/**"), name, parse_param_value(value, what)


def _check_remap_rule(rule: str, flag: str) -> Remap:
    """``-r [node:]from:=to`` -> :class:`Remap` (names validated)."""
    what = f"remap rule '{flag} {rule}'"
    m = _REMAP_RULE_RE.match(rule)
    if not m:
        raise ValueError(f"couldn't parse {what}: expected [node:]from:=to")
    node, match, repl = m.group("node"), m.group("match"), m.group("repl")
    if "*" in match or "*" in repl:
        raise ValueError(f"couldn't parse {what}: wildcards are not implemented (as in rcl)")
    if "{" in match or "{" in repl:
        raise ValueError(f"couldn't parse {what}: substitutions are not supported")
    if match in ("__node", "__name"):
        validate_node_name(repl, what)
        return Remap("node", "", repl, node)
    if match == "__ns":
        validate_namespace(repl, what)
        return Remap("namespace", "", repl, node)
    for prefix in ("rostopic://", "rosservice://"):
        match = match[len(prefix):] if match.startswith(prefix) else match
    validate_topic(match, what, allow_relative=True)
    validate_topic(repl, what, allow_relative=True)
    return Remap("name", match, repl, node)


def _check_log_level(arg: str) -> tuple[str | None, str]:
    """``--log-level [name:=]LEVEL`` -> (logger name or None, canonical level)."""
    what = f"log level '--log-level {arg}'"
    if ":=" in arg:
        name, level = arg.split(":=", 1)
        if not name:
            raise ValueError(f"couldn't parse {what}: empty logger name")
    else:
        name, level = None, arg
    lv = level.upper()
    if lv == "WARNING":
        lv = "WARN"
    if lv not in LOG_LEVELS:
        raise ValueError(f"couldn't parse {what}: severity must be one of "
                         f"{', '.join(LOG_LEVELS)} (case-insensitive)")
    return name, lv


_FLAG_SUFFIXES = ("stdout-logs", "rosout-logs", "external-lib-logs")


@dataclass
class _Collected:
    """What the ROS arguments of one argv set, in command-line order (see :func:`parse_ros_args`)."""

    table: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    remaps: list[Remap] = field(default_factory=list)
    log_level: str | None = None
    logger_levels: dict[str, str] = field(default_factory=dict)
    enclave: str | None = None
    log_flags: dict[str, bool] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)

    def result(self, non_ros: list[str]) -> RosArgs:
        return RosArgs(
            overrides=tuple((k, tuple(v.items())) for k, v in self.table.items()),
            params_files=tuple(self.files), remaps=tuple(self.remaps), log_level=self.log_level,
            logger_levels=tuple(self.logger_levels.items()), enclave=self.enclave,
            log_flags=tuple(self.log_flags.items()), non_ros_args=tuple(non_ros))


def _take_flag(argv: list[str], i: int, out: _Collected) -> int:
    """Read the ROS argument at ``argv[i]`` (and its value) into ``out``; the next index."""
    a = argv[i]

    def value(what: str) -> str:
        if i + 1 >= len(argv):
            raise ValueError(f"couldn't parse trailing {a} flag: no {what} provided")
        return argv[i + 1]

    if a in ("-p", "--param"):
        node, name, val = _check_param_rule(value("parameter override rule"), a)
        out.table.setdefault(node, {})[name] = val
    elif a in ("-r", "--remap"):
        out.remaps.append(_check_remap_rule(value("remap rule"), a))
    elif a == "--params-file":
        path = value("file path")
        load_params_file(path, out.table)
        out.files.append(path)
    elif a == "--log-level":
        name, lv = _check_log_level(value("log level"))
        if name is None:
            out.log_level = lv
        else:
            out.logger_levels[name] = lv
    elif a in ("--log-file-name", "--log-config-file"):
        value("value")
    elif a in ("-e", "--enclave"):
        out.enclave = value("enclave path")
    elif any(a in (f"--enable-{s}", f"--disable-{s}") for s in _FLAG_SUFFIXES):
        out.log_flags[a.split("-", 3)[-1]] = a.startswith("--enable-")
        return i + 1
    else:
        out.unknown.append(a)
        return i + 1
    return i + 2


def parse_ros_args(argv: Sequence[str] | None) -> RosArgs:
    """Parse a full argv (program name and user arguments may be included).

    Raises ``ValueError`` naming the offending argument for malformed or unknown ROS arguments,
    unreadable or malformed params files.
    """
    if argv is None:
        argv = []
    if isinstance(argv, (str, bytes)) or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a sequence of str")
    argv = list(argv)
    out = _Collected()
    non_ros: list[str] = []
    in_ros = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if not in_ros or a in ("--ros-args", "--"):
            if a == "--ros-args":
                in_ros = True
            elif a == "--" and in_ros:
                in_ros = False
            else:
                non_ros.append(a)
            i += 1
            continue
        i = _take_flag(argv, i, out)
    if out.unknown:
        raise ValueError(f"found unknown ROS arguments: {out.unknown!r} (after --ros-args; use "
                         "-- to end the ROS arguments before your own)")
    return out.result(non_ros)


def remove_ros_args(argv: Sequence[str]) -> list[str]:
    """argv without the ROS arguments (like ``rclpy.utilities.remove_ros_args``)."""
    return list(parse_ros_args(argv).non_ros_args)


# ------------------------------------------------------------------ names / remaps


def node_identity(ros_args: RosArgs, node_name: str, namespace: str = "") -> tuple[str, str]:
    """(name, namespace) after ``__node``/``__ns`` remaps (first matching rule wins)."""
    validate_node_name(node_name, "node name")
    ns = namespace or "/"
    if not ns.startswith("/"):
        ns = "/" + ns
    validate_namespace(ns, "node namespace")
    name_rule = next((r for r in ros_args.remaps if r.kind == "node"
                      and r.node in (None, node_name)), None)
    ns_rule = next((r for r in ros_args.remaps if r.kind == "namespace"
                    and r.node in (None, node_name)), None)
    return (name_rule.replacement if name_rule else node_name,
            ns_rule.replacement if ns_rule else ns)


def remap_name(ros_args: RosArgs, name: str, node_name: str, namespace: str) -> str:
    """Fully qualified topic/service name after remapping (``rcl_remap_topic_name``)."""
    fq = expand_topic_name(name, node_name, namespace)
    for r in ros_args.remaps:
        if r.kind != "name" or r.node not in (None, node_name):
            continue
        if expand_topic_name(r.match, node_name, namespace) == fq:
            return expand_topic_name(r.replacement, node_name, namespace)
    return fq


# -------------------------------------------------------------------------- domain


def domain_id_from_env(env: Mapping[str, str] | None = None) -> int:
    """``ROS_DOMAIN_ID`` as rcl reads it: unset/empty -> 0; else an integer in [0, 232]."""
    env = os.environ if env is None else env
    raw = env.get("ROS_DOMAIN_ID", "")
    if raw.strip() == "":
        return 0
    if not re.fullmatch(r"\s*[0-9]+\s*", raw):
        raise ValueError(f"ROS_DOMAIN_ID={raw!r} is not a non-negative integer")
    value = int(raw)
    if value > _MAX_DOMAIN_ID:
        raise ValueError(f"ROS_DOMAIN_ID={value} is out of range [0, {_MAX_DOMAIN_ID}] "
                         "(DDS port mapping limit)")
    return value
