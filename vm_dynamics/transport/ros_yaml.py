"""Parameter values and params files typed as rcl reads them (``rcl_yaml_param_parser``):
:func:`parse_param_value` for ``-p name:=VALUE`` and :func:`load_params_file` for
``--params-file``; the rules are stated in :mod:`vm_dynamics.transport.ros_args`."""
from __future__ import annotations

import math
import re
from typing import Any

import yaml

from ..config.params import MAX_PARAMS_FILE_BYTES, ParamsLoader
from .ros_names import TOKEN

__all__ = ["PARAMS_KEY", "YAML_STR_TAG", "parse_param_value", "load_params_file", "ros_kind"]

PARAMS_KEY = "ros__parameters"
YAML_STR_TAG = "tag:yaml.org,2002:str"

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


def ros_kind(v: Any) -> str:
    """ROS 2 parameter kind of a typed scalar: ``bool``, ``integer``, ``double`` or ``string``."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "double"
    return "string"


def _event_line(ev: Any) -> int:
    return ev.start_mark.line + 1 if ev.start_mark is not None else 0


def _line(ev: Any, where: str) -> int:
    """The line of event ``ev``; a ``ValueError`` if it is an alias (rcl rejects them)."""
    line = _event_line(ev)
    if isinstance(ev, yaml.AliasEvent):
        raise ValueError(f"{where} line {line}: aliases are not supported")
    return line


def _key(ev: Any, where: str, not_scalar: str) -> tuple[str, int]:
    """``(name, line)`` of a mapping key event: a non-empty scalar, else a ``ValueError``
    (``not_scalar`` says what is wrong with a sequence or mapping there)."""
    line = _line(ev, where)
    if not isinstance(ev, yaml.ScalarEvent):
        raise ValueError(f"{where} line {line}: {not_scalar}")
    if ev.value == "":
        raise ValueError(f"{where} line {line}: no key")
    return ev.value, line


def _value_from_events(events: list, i: int, where: str) -> tuple[Any, int]:
    """Value starting at events[i] (scalar or flat sequence of scalars) -> (value, next i)."""
    ev = events[i]
    _line(ev, where)
    if isinstance(ev, yaml.ScalarEvent):
        return _typed_scalar(ev.value, ev.style, ev.tag, f"{where} line {_event_line(ev)}"), i + 1
    if isinstance(ev, yaml.SequenceStartEvent):
        items: list[Any] = []
        kind = None
        i += 1
        while not isinstance(events[i], yaml.SequenceEndEvent):
            e = events[i]
            line = _line(e, where)
            if not isinstance(e, yaml.ScalarEvent):
                raise ValueError(f"{where} line {line}: parameter lists may only contain "
                                 "scalars (nested lists/maps are not supported by ROS 2)")
            v = _typed_scalar(e.value, e.style, e.tag, f"{where} line {line}")
            k = ros_kind(v)
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
        if not re.fullmatch(TOKEN, tok):
            raise ValueError(f"{where}: invalid node name {name!r} (token {tok!r} must match "
                             "[A-Za-z_][A-Za-z0-9_]* or be a wildcard * / **)")


def _params_mapping(events: list, i: int, prefix: str, out: dict, where: str) -> int:
    """Parse a ``ros__parameters`` mapping starting after its MappingStartEvent."""
    while not isinstance(events[i], yaml.MappingEndEvent):
        key, _ = _key(events[i], where, "parameter names must be scalars")
        name = f"{prefix}{key}"
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
        key, line = _key(events[i], where, "sequences/maps cannot be keys")
        i += 1
        val = events[i]
        if key.startswith(PARAMS_KEY):  # rcl uses strncmp(PARAMS_KEY, ...)
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
            i = _node_mapping(events, i + 1, parts + [key], table, where)
        elif isinstance(val, yaml.SequenceStartEvent):
            raise ValueError(f"{where} line {_event_line(val)}: sequences can only be parameter "
                             f"values, not node names (under {key!r})")
        else:
            raise ValueError(f'{where} line {_event_line(val)}: cannot have a value before '
                             f'{PARAMS_KEY} (key {key!r}; expected '
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
