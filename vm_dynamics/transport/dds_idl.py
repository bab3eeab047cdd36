"""ROS 2 types on Cyclone DDS as rmw_cyclonedds names and lays them out: DDS type and topic
names, and ``IdlStruct`` classes **generated at run time from the rosbags typestore's field
definitions** (the parsed ``.msg`` files of common_interfaces) with strict converters from
messages to them (:func:`compiled_converter`, :func:`to_idl`).

* topic ``/a/b`` -> DDS topic ``rt/a/b``; service ``/s`` -> ``rq/sRequest`` + ``rr/sReply``;
* type ``pkg/msg/T`` -> DDS type name ``pkg::msg::dds_::T_`` (``pkg::srv::dds_::S_Request_``);
* service samples start with rmw_cyclonedds' ``cdds_request_header_t`` (``uint64 guid;
  int64 seq``, :data:`REQUEST_FIELDS`).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from cyclonedds.idl import make_idl_struct
from cyclonedds.idl import types as idl_types
from rosbags.interfaces import Nodetype

from .types import check_message, coerce_elements, coerce_scalar, fielddefs

__all__ = ["dds_type_name", "dds_topic_name", "idl_struct", "compiled_converter", "to_idl",
           "REQUEST_FIELDS"]

#: Fields of rmw_cyclonedds' ``cdds_request_header_t`` that start a service sample.
REQUEST_FIELDS = ("rmw_request_guid", "rmw_request_seq")
_OCTET_LIKE = ("byte", "uint8", "char")

_BASE_IDL = {
    "bool": bool, "byte": idl_types.byte, "char": idl_types.uint8,
    "int8": idl_types.int8, "uint8": idl_types.uint8, "int16": idl_types.int16,
    "uint16": idl_types.uint16, "int32": idl_types.int32, "uint32": idl_types.uint32,
    "int64": idl_types.int64, "uint64": idl_types.uint64,
    "float32": idl_types.float32, "float64": idl_types.float64, "string": str,
}


def dds_type_name(msgtype: str) -> str:
    """``pkg/msg/Type`` -> ``pkg::msg::dds_::Type_`` (rmw_cyclonedds MessageTypeSupport)."""
    parts = msgtype.split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"invalid ROS type name {msgtype!r} (expected pkg/msg/Type)")
    pkg, sub, name = parts
    return f"{pkg}::{sub}::dds_::{name}_"


def dds_topic_name(fq_name: str, role: str = "topic") -> str:
    """Fully qualified ROS name -> DDS topic (``rt``/``rq``..``Request``/``rr``..``Reply``)."""
    if not fq_name.startswith("/"):
        raise ValueError(f"name must be fully qualified, got {fq_name!r}")
    if role == "topic":
        return "rt" + fq_name
    if role == "request":
        return "rq" + fq_name + "Request"
    if role == "reply":
        return "rr" + fq_name + "Reply"
    raise ValueError(f"role must be topic, request or reply, got {role!r}")



def _field_idl_type(desc: tuple) -> Any:
    node, info = desc
    if node == Nodetype.BASE:
        base, bound = info
        if base == "string" and bound:
            return idl_types.bounded_str[bound]
        if base not in _BASE_IDL:
            raise ValueError(f"unsupported ROS base type {base!r}")
        return _BASE_IDL[base]
    if node == Nodetype.NAME:
        return idl_struct(info)
    if node in (Nodetype.ARRAY, Nodetype.SEQUENCE):
        elem, size = info
        et = _field_idl_type(elem)
        if node == Nodetype.ARRAY:
            return idl_types.array[et, size]
        return idl_types.sequence[et, size] if size else idl_types.sequence[et]
    raise ValueError(f"unsupported field node type {node!r}")


@functools.lru_cache(maxsize=None)
def idl_struct(msgtype: str, request_header: bool = False) -> type:
    """Cyclone ``IdlStruct`` class for a ROS type, generated from the rosbags field defs.

    With ``request_header`` the struct starts with rmw_cyclonedds' ``cdds_request_header_t``
    (``uint64 guid; int64 seq``) -- the layout of service request/reply samples.
    """
    _, fields = fielddefs(msgtype)
    annotations: dict[str, Any] = {}
    if request_header:
        annotations[REQUEST_FIELDS[0]] = idl_types.uint64
        annotations[REQUEST_FIELDS[1]] = idl_types.int64
    for name, desc in fields:
        if name in annotations:
            raise ValueError(f"{msgtype}: field {name!r} clashes with the request header")
        annotations[name] = _field_idl_type(desc)
    cls_name = msgtype.replace("/", "__") + ("__wrapped" if request_header else "")
    return make_idl_struct(cls_name, dds_type_name(msgtype), annotations)


def _field_converter(desc: tuple, where: str) -> Callable[[Any], Any]:
    node, info = desc
    if node == Nodetype.BASE:
        base, bound = info

        def conv_base(v: Any, base: str = base, bound: int = bound) -> Any:
            out = coerce_scalar(base, v, where)
            if base == "string" and bound and len(out) > bound:
                raise ValueError(f"{where}: string longer than its bound {bound}")
            return out & 0xFF if base == "byte" else out  # IDL octet is unsigned
        return conv_base
    if node == Nodetype.NAME:
        return _nested_converter(info, where)
    elem, size = info
    enode, einfo = elem
    if enode == Nodetype.NAME:
        sub = _nested_converter(einfo, where + "[]")

        def conv_items(v: Any) -> list:
            items = list(v)
            _check_len(len(items), node, size, where)
            return [sub(x) for x in items]
        return conv_items
    ebase, ebound = einfo

    def conv_elems(v: Any, ebase: str = ebase, ebound: int = ebound) -> list:
        items = coerce_elements(ebase, v, where)
        _check_len(len(items), node, size, where)
        if ebase == "string" and ebound and any(len(s) > ebound for s in items):
            raise ValueError(f"{where}: string longer than its bound {ebound}")
        if ebase == "byte":
            items = [x & 0xFF for x in items]
        if node == Nodetype.ARRAY and ebase in _OCTET_LIKE:
            return bytes(items)  # cyclonedds encodes uint8/octet arrays from bytes
        return items
    return conv_elems


def _check_len(n: int, node: int, size: int, where: str) -> None:
    if node == Nodetype.ARRAY and n != size:
        raise ValueError(f"{where}: fixed array needs exactly {size} elements, got {n}")
    if node == Nodetype.SEQUENCE and size and n > size:
        raise ValueError(f"{where}: bounded sequence holds at most {size} elements, got {n}")


def _nested_converter(msgtype: str, where: str) -> Callable[[Any], Any]:
    conv = compiled_converter(msgtype)

    def conv_nested(v: Any) -> Any:
        check_message(v, msgtype, where)
        return conv(v, where)
    return conv_nested


@functools.lru_cache(maxsize=None)
def compiled_converter(msgtype: str, request_header: bool = False) -> Callable:
    """``convert(msg, where="", header=None)``: a message -> its ``IdlStruct`` instance, every
    field coerced strictly (a bad field is named in the error); with ``request_header`` the
    ``(guid, seq)`` of a service sample is given as ``header``."""
    cls = idl_struct(msgtype, request_header)
    _, fields = fielddefs(msgtype)
    short = msgtype.rsplit("/", 1)[-1]
    convs = [(name, _field_converter(desc, f"{short}.{name}")) for name, desc in fields]

    def convert(msg: Any, where: str = "", header: tuple[int, int] | None = None) -> Any:
        kw = {}
        if request_header:
            kw[REQUEST_FIELDS[0]], kw[REQUEST_FIELDS[1]] = header
        for name, conv in convs:
            try:
                value = getattr(msg, name)
            except AttributeError:
                raise TypeError(f"{where or msgtype}: message has no field {name!r}") from None
            kw[name] = conv(value)
        return cls(**kw)
    return convert


def to_idl(msg: Any, msgtype: str) -> Any:
    """rosbags message -> ``IdlStruct`` instance (strict field coercion)."""
    check_message(msg, msgtype, "to_idl")
    return compiled_converter(msgtype)(msg, msgtype)
