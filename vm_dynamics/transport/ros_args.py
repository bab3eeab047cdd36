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
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import yaml

from ..config.params import MAX_PARAMS_FILE_BYTES, ParamsLoader

__all__ = [
    "RosArgs", "Remap", "ResolvedParams", "parse_ros_args", "remove_ros_args",
    "parse_param_value", "load_params_file", "parameter_overrides_for", "node_pattern_matches",
    "flatten_params", "param_type_name", "resolve_parameters", "node_identity",
    "validate_node_name", "validate_namespace", "expand_topic_name", "remap_name",
    "domain_id_from_env", "LOG_LEVELS",
]

PARAMS_KEY = "ros__parameters"
YAML_STR_TAG = "tag:yaml.org,2002:str"
LOG_LEVELS = ("DEBUG", "INFO", "WARN", "ERROR", "FATAL", "UNSET")
_MAX_DOMAIN_ID = 232

_TRUE_WORDS = frozenset("Y y yes Yes YES true True TRUE on On ON".split())
_FALSE_WORDS = frozenset("N n no No NO false False FALSE off Off OFF".split())
_RCL_INF_NAN = frozenset(".nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF"
                         .split())
_C_SPACE = " \t\n\v\f\r"
_INT_RE = re.compile(r"[ \t\n\v\f\r]*([+-]?)(?:0[xX]([0-9a-fA-F]+)|(0[0-7]*)|([1-9][0-9]*))\Z")
_DEC_FLOAT_RE = re.compile(
    r"[ \t\n\v\f\r]*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_HEX_FLOAT_RE = re.compile(
    r"[ \t\n\v\f\r]*([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
    r"(?:[pP][+-]?[0-9]+)?)\Z")
_INF_NAN_RE = re.compile(r"[ \t\n\v\f\r]*([+-]?)(inf|infinity|nan(?:\([0-9A-Za-z_]*\))?)\Z",
                         re.IGNORECASE)
_DBL_MIN = 2.2250738585072014e-308
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

_TOKEN = r"[A-Za-z_][A-Za-z0-9_]*"
_NODE_NAME_RE = re.compile(rf"{_TOKEN}\Z")
_PARAM_NAME_RE = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*\Z")
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


@dataclass(frozen=True)
class ResolvedParams:
    """Parameters of one node after overrides (see :func:`resolve_parameters`)."""

    values: dict[str, Any]
    overridden: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    dynamic: tuple[str, ...] = field(default=())


# ---------------------------------------------------------------- scalar typing (rcl)


def _strtoll(text: str) -> int | None:
    """C ``strtoll(text, &end, 0)`` accepted completely without ERANGE, else None."""
    m = _INT_RE.match(text)
    if not m:
        return None
    sign, hexd, octd, decd = m.groups()
    if hexd is not None:
        v = int(hexd, 16)
    elif octd is not None:
        v = int(octd, 8)
    else:
        v = int(decd, 10)
    v = -v if sign == "-" else v
    if not _INT64_MIN <= v <= _INT64_MAX:
        return None  # ERANGE
    return v


def _strtod(text: str) -> float | None:
    """C ``strtod`` (glibc, "C" locale) accepted completely without ERANGE, else None."""
    m = _INF_NAN_RE.match(text)
    if m:
        v = math.nan if m.group(2).lower().startswith("nan") else math.inf
        return -v if m.group(1) == "-" else v
    m = _HEX_FLOAT_RE.match(text)
    if m:
        body = m.group(2)
        mantissa = re.split("[pP]", body)[0]
        try:
            v = float.fromhex("0x" + (body if mantissa != body else body + "p0"))
        except OverflowError:
            return None  # ERANGE
        v = -v if m.group(1) == "-" else v
    elif _DEC_FLOAT_RE.match(text):
        mantissa = re.split("[eE]", text)[0]
        v = float(text.strip(_C_SPACE))
    else:
        return None
    if math.isinf(v):
        return None  # overflow: ERANGE
    if v != 0.0 and abs(v) < _DBL_MIN:
        return None  # underflow to a subnormal: ERANGE (glibc)
    if v == 0.0 and re.search("[1-9a-fA-F]", mantissa):
        return None  # non-zero mantissa underflowed to zero: ERANGE
    return v


def _typed_scalar(value: str, style: str | None, tag: str | None, where: str) -> Any:
    """rcl ``get_value`` + the empty-value check of ``parse_value``."""
    quoted = style in ("'", '"')
    if not quoted and value == "":
        raise ValueError(f"{where}: no value")
    if tag == YAML_STR_TAG:
        return value
    if not quoted:
        if value in _TRUE_WORDS:
            return True
        if value in _FALSE_WORDS:
            return False
        iv = _strtoll(value)
        if iv is not None:
            return iv
        if value in _RCL_INF_NAN:
            v = math.inf if "inf" in value.lower() else math.nan
            return -v if value.startswith("-") else v
        dv = _strtod(value)
        if dv is not None:
            return dv
    return value


def _ros_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "double"
    return "string"


def _event_line(ev: Any) -> int:
    return ev.start_mark.line + 1 if ev.start_mark is not None else 0


def _value_from_events(events: list, i: int, where: str) -> tuple[Any, int]:
    """Value starting at events[i] (scalar or flat sequence of scalars) -> (value, next i)."""
    ev = events[i]
    if isinstance(ev, yaml.AliasEvent):
        raise ValueError(f"{where} line {_event_line(ev)}: aliases are not supported")
    if isinstance(ev, yaml.ScalarEvent):
        return _typed_scalar(ev.value, ev.style, ev.tag, f"{where} line {_event_line(ev)}"), i + 1
    if isinstance(ev, yaml.SequenceStartEvent):
        items: list[Any] = []
        kind = None
        i += 1
        while not isinstance(events[i], yaml.SequenceEndEvent):
            e = events[i]
            line = _event_line(e)
            if isinstance(e, yaml.AliasEvent):
                raise ValueError(f"{where} line {line}: aliases are not supported")
            if not isinstance(e, yaml.ScalarEvent):
                raise ValueError(f"{where} line {line}: parameter lists may only contain "
                                 "scalars (nested lists/maps are not supported by ROS 2)")
            v = _typed_scalar(e.value, e.style, e.tag, f"{where} line {line}")
            k = _ros_kind(v)
            if kind is not None and k != kind:
                raise ValueError(f"{where} line {line}: sequence should be of same type; value "
                                 f"{e.value!r} ({k}) in a list of {kind} (ROS 2 rejects mixed "
                                 "lists, e.g. write [1.0, 2.5] not [1, 2.5])")
            kind = k
            items.append(v)
            i += 1
        if not items:
            raise ValueError(f"{where} line {_event_line(ev)}: empty list: ROS 2 cannot infer its "
                             "type (the parameter would be NOT_SET)")
        return items, i + 1
    raise ValueError(f'{where} line {_event_line(ev)}: expected a scalar or a list, got '
                     f'{type(ev).__name__.replace("Event", "")}')


def _parse_events(text: str, where: str) -> list:
    """The YAML events of ``text``, at most :data:`~vm_dynamics.config.params.MAX_PARAMS_DEPTH`
    levels deep and :data:`~vm_dynamics.config.params.MAX_PARAMS_NODES` values (rcl has
    no such bounds, but its C parser is not quadratic in the depth as PyYAML's is)."""
    try:
        return list(yaml.parse(text, Loader=ParamsLoader))
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: invalid YAML: {' '.join(str(exc).split())}") from None


def parse_param_value(text: str, where: str = "parameter value") -> Any:
    """Type a ``-p name:=VALUE`` string like ``rcl_parse_yaml_value``.

    >>> parse_param_value('0x10'), parse_param_value('yes'), parse_param_value("'1'")
    (16, True, '1')
    """
    if text == "":
        raise ValueError(f"{where}: empty value")
    events = [e for e in _parse_events(text, where)
              if not isinstance(e, (yaml.StreamStartEvent, yaml.StreamEndEvent,
                                    yaml.DocumentStartEvent, yaml.DocumentEndEvent))]
    if not events:
        raise ValueError(f"{where}: empty value")
    value, i = _value_from_events(events, 0, where)
    if i != len(events):
        raise ValueError(f"{where}: {text!r} is not a single scalar or list")
    return value


# ------------------------------------------------------------------- params files


def _join_node_ns(parts: list[str]) -> str:
    """``add_name_to_ns`` with separator ``/`` (no separator after a trailing ``/``)."""
    out = ""
    for j, p in enumerate(parts):
        if j == 0:
            out = p
        elif out.endswith("/"):
            out += p
        else:
            out += "/" + p
    return out


def _validate_pattern(name: str, where: str) -> None:
    """``_validate_name`` of rcl_yaml_param_parser (wildcard tokens allowed)."""
    if name in ("/**", "/*"):
        return
    body = name[1:] if name.startswith("/") else name
    if body == "" or "//" in name or body.endswith("/"):
        raise ValueError(f"{where}: invalid node name {name!r}")
    for tok in body.split("/"):
        if tok in ("*", "**"):
            continue
        if not re.fullmatch(_TOKEN, tok):
            raise ValueError(f"{where}: invalid node name {name!r} (token {tok!r} must match "
                             "[A-Za-z_][A-Za-z0-9_]* or be a wildcard * / **)")


def _params_mapping(events: list, i: int, prefix: str, out: dict, where: str) -> int:
    """Parse a ``ros__parameters`` mapping starting after its MappingStartEvent."""
    while not isinstance(events[i], yaml.MappingEndEvent):
        key = events[i]
        line = _event_line(key)
        if isinstance(key, yaml.AliasEvent):
            raise ValueError(f"{where} line {line}: aliases are not supported")
        if not isinstance(key, yaml.ScalarEvent):
            raise ValueError(f"{where} line {line}: parameter names must be scalars")
        if key.value == "":
            raise ValueError(f"{where} line {line}: no key")
        name = f"{prefix}{key.value}"
        i += 1
        if isinstance(events[i], yaml.MappingStartEvent):
            i = _params_mapping(events, i + 1, name + ".", out, where)
            continue
        value, i = _value_from_events(events, i, f"{where} parameter {name!r}")
        out[name] = value
    return i + 1


def _node_mapping(events: list, i: int, parts: list[str], table: dict, where: str) -> int:
    """Parse a node-name-level mapping starting after its MappingStartEvent."""
    while not isinstance(events[i], yaml.MappingEndEvent):
        key = events[i]
        line = _event_line(key)
        if isinstance(key, yaml.AliasEvent):
            raise ValueError(f"{where} line {line}: aliases are not supported")
        if not isinstance(key, yaml.ScalarEvent):
            raise ValueError(f"{where} line {line}: sequences/maps cannot be keys")
        if key.value == "":
            raise ValueError(f"{where} line {line}: no key")
        i += 1
        val = events[i]
        if key.value.startswith(PARAMS_KEY):  # rcl uses strncmp(PARAMS_KEY, ...)
            if not parts:
                raise ValueError(f"{where} line {line}: there are no node names before "
                                 f"{PARAMS_KEY}")
            node = _join_node_ns(parts)
            _validate_pattern(node, f"{where} line {line}")
            if not isinstance(val, yaml.MappingStartEvent):
                raise ValueError(f"{where} line {line}: {PARAMS_KEY} of {node!r} must be a "
                                 "mapping of parameter names to values")
            params = table.setdefault(node, {})
            i = _params_mapping(events, i + 1, "", params, where)
        elif isinstance(val, yaml.MappingStartEvent):
            i = _node_mapping(events, i + 1, parts + [key.value], table, where)
        elif isinstance(val, yaml.SequenceStartEvent):
            raise ValueError(f"{where} line {_event_line(val)}: sequences can only be parameter "
                             f"values, not node names (under {key.value!r})")
        else:
            raise ValueError(f'{where} line {_event_line(val)}: cannot have a value before '
                             f'{PARAMS_KEY} (key {key.value!r}; expected '
                             f'"<node>: {{{PARAMS_KEY}: {{...}}}}")')
    return i + 1


def load_params_file(path: str, table: dict | None = None) -> dict[str, dict[str, Any]]:
    """Read a ROS 2 params file into an override table ``{node_pattern: {param: value}}``.

    ``table`` (an existing table) is updated in place and returned, as rcl does with
    consecutive ``--params-file`` arguments.
    """
    table = {} if table is None else table
    where = f"params file {path!r}"
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_PARAMS_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"{where}: cannot open: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not UTF-8 text ({exc.reason})") from None
    if len(text) > MAX_PARAMS_FILE_BYTES:
        raise ValueError(f"{where}: larger than {MAX_PARAMS_FILE_BYTES} bytes, the limit of a "
                         f"parameter file")
    events = _parse_events(text, where)
    i = 0
    while i < len(events):
        ev = events[i]
        if isinstance(ev, yaml.MappingStartEvent):
            i = _node_mapping(events, i + 1, [], table, where)
        elif isinstance(ev, (yaml.StreamStartEvent, yaml.StreamEndEvent,
                             yaml.DocumentStartEvent, yaml.DocumentEndEvent)):
            i += 1
        elif isinstance(ev, yaml.ScalarEvent) and ev.value == "" and ev.style is None:
            i += 1  # empty document
        else:
            raise ValueError(f"{where} line {_event_line(ev)}: the top level must be a mapping "
                             "of node names")
    return table


# ----------------------------------------------------------------------- argv


def _check_param_rule(rule: str, flag: str) -> tuple[str, str, Any]:
    m = _PARAM_RULE_RE.match(rule)
    what = f"parameter override rule '{flag} {rule}'"
    if not m:
        raise ValueError(f"couldn't parse {what}: expected [node:]name:=value")
    node, name, value = m.group("node"), m.group("name"), m.group("value")
    if not _PARAM_NAME_RE.match(name):
        raise ValueError(f"couldn't parse {what}: invalid parameter name {name!r}")
    if value == "":
        raise ValueError(f"couldn't parse {what}: empty value")
    return (node or "/**"), name, parse_param_value(value, what)


def _check_remap_rule(rule: str, flag: str) -> Remap:
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
    _validate_topic(match, what, allow_relative=True)
    _validate_topic(repl, what, allow_relative=True)
    return Remap("name", match, repl, node)


def _check_log_level(arg: str) -> tuple[str | None, str]:
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
    table: dict[str, dict[str, Any]] = {}
    files: list[str] = []
    remaps: list[Remap] = []
    log_level = None
    logger_levels: dict[str, str] = {}
    enclave = None
    log_flags: dict[str, bool] = {}
    non_ros: list[str] = []
    unknown: list[str] = []
    in_ros = False
    i = 0
    n = len(argv)

    def need_value(flag: str, what: str) -> str:
        if i + 1 >= n:
            raise ValueError(f"couldn't parse trailing {flag} flag: no {what} provided")
        return argv[i + 1]

    while i < n:
        a = argv[i]
        if not in_ros:
            if a == "--ros-args":
                in_ros = True
            else:
                non_ros.append(a)
            i += 1
            continue
        if a == "--ros-args":
            i += 1
            continue
        if a == "--":
            in_ros = False
            i += 1
            continue
        if a in ("-p", "--param"):
            node, name, value = _check_param_rule(need_value(a, "parameter override rule"), a)
            table.setdefault(node, {})[name] = value
            i += 2
        elif a in ("-r", "--remap"):
            remaps.append(_check_remap_rule(need_value(a, "remap rule"), a))
            i += 2
        elif a == "--params-file":
            path = need_value(a, "file path")
            load_params_file(path, table)
            files.append(path)
            i += 2
        elif a == "--log-level":
            name, lv = _check_log_level(need_value(a, "log level"))
            if name is None:
                log_level = lv
            else:
                logger_levels[name] = lv
            i += 2
        elif a in ("--log-file-name", "--log-config-file"):
            need_value(a, "value")
            i += 2
        elif a in ("-e", "--enclave"):
            enclave = need_value(a, "enclave path")
            i += 2
        elif any(a in (f"--enable-{s}", f"--disable-{s}") for s in _FLAG_SUFFIXES):
            log_flags[a.split("-", 3)[-1]] = a.startswith("--enable-")
            i += 1
        else:
            unknown.append(a)
            i += 1
    if unknown:
        raise ValueError(f"found unknown ROS arguments: {unknown!r} (after --ros-args; use -- "
                         "to end the ROS arguments before your own)")
    return RosArgs(
        overrides=tuple((k, tuple(v.items())) for k, v in table.items()),
        params_files=tuple(files), remaps=tuple(remaps), log_level=log_level,
        logger_levels=tuple(logger_levels.items()), enclave=enclave,
        log_flags=tuple(log_flags.items()), non_ros_args=tuple(non_ros))


def remove_ros_args(argv: Sequence[str]) -> list[str]:
    """argv without the ROS arguments (like ``rclpy.utilities.remove_ros_args``)."""
    return list(parse_ros_args(argv).non_ros_args)


# ------------------------------------------------------------------ names / remaps


def validate_node_name(name: str, what: str = "node name") -> str:
    if not isinstance(name, str) or not _NODE_NAME_RE.match(name):
        raise ValueError(f"{what}: invalid node name {name!r} (must match "
                         "[A-Za-z_][A-Za-z0-9_]*)")
    return name


def validate_namespace(ns: str, what: str = "namespace") -> str:
    if not isinstance(ns, str) or not ns.startswith("/"):
        raise ValueError(f"{what}: namespace {ns!r} must be absolute (start with /)")
    if ns == "/":
        return ns
    if ns.endswith("/") or "//" in ns:
        raise ValueError(f"{what}: invalid namespace {ns!r}")
    for tok in ns[1:].split("/"):
        if not re.fullmatch(_TOKEN, tok):
            raise ValueError(f"{what}: invalid namespace {ns!r} (token {tok!r})")
    return ns


def _validate_topic(name: str, what: str, *, allow_relative: bool) -> None:
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
        if not re.fullmatch(_TOKEN, tok):
            raise ValueError(f"{what}: invalid topic/service name {name!r} (token {tok!r} must "
                             "match [A-Za-z_][A-Za-z0-9_]*)")


def expand_topic_name(name: str, node_name: str, namespace: str) -> str:
    """``rcl_expand_topic_name`` without substitutions: ``~`` -> node FQN, relative -> ns."""
    _validate_topic(name, "topic/service name", allow_relative=True)
    ns = namespace.rstrip("/")
    fqn = f"{ns}/{node_name}"
    if name == "~":
        return fqn
    if name.startswith("~/"):
        return fqn + name[1:]
    if name.startswith("/"):
        return name
    return f"{ns}/{name}"


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


# --------------------------------------------------------------------- parameters


def node_pattern_matches(pattern: str, node_fqn: str) -> bool:
    """rclpy's node-name matching of override-table keys (wildcards ``/*``, ``/**``)."""
    if not pattern.startswith("/"):
        pattern = "/" + pattern
    regex = pattern.replace("/*", r"(/\w+)")
    return re.fullmatch(regex, node_fqn) is not None


def parameter_overrides_for(ros_args: RosArgs, node_fqn: str) -> dict[str, Any]:
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
        if not _PARAM_NAME_RE.match(name):
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
            kinds = {_ros_kind(v) for v in items}
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
                "string": "STRING_ARRAY"}[_ros_kind(value[0])]
    return {"bool": "BOOL", "integer": "INTEGER", "double": "DOUBLE",
            "string": "STRING"}[_ros_kind(value)]


def resolve_parameters(defaults: Mapping[str, Any] | None, ros_args: RosArgs,
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
