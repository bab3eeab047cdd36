"""Publishing fast path: CDR of a message whose fields already have their exact wire types.

The DDS publisher's strict path (:func:`vm_dynamics.transport.dds.compiled_converter`) coerces
and checks every field into a cyclonedds ``IdlStruct`` and lets cyclonedds-python serialise
it: about 50 µs for a ``nav_msgs/Odometry`` (measured in one process, 2000 messages).  The
messages the nodes build are already in wire form (``float`` for ``float64``, ``int`` for the
integer types, 1-D ``numpy`` arrays of the field's dtype for numeric arrays, ``str`` for
strings), and rosbags' generated ``serialize_cdr`` writes the same bytes in about a fifth of
the time.  rosbags is lax where the strict path is not: it writes a ``bool`` into a
``float64``, the raw bytes of an ``int64`` array into a ``float64[]`` and ignores the bounds
of bounded strings and sequences.

:func:`exact_serializer` therefore checks first that a message *is* in exact wire form
(types, dtypes, fixed lengths, bounds, nested message types; a few µs, no copying) and only
then lets rosbags write it.  A message that is not, or that rosbags refuses (an integer out
of range, a float outside ``float32``), gets ``None``: the publisher takes the strict path,
which converts what is convertible and raises its precise error for the rest.  Both paths
give byte-identical samples (``test/process/test_transport.py`` compares them on every message
type the nodes publish and on generated messages).

The messages of a lockstep period (``JointState``, ``Odometry``, ``TFMessage``,
``WrenchStamped``, ``Clock``) are first offered to the hand-written one-pass encoders of
:mod:`~vm_dynamics.transport.fast_cdr` (same rules, same bytes); what they decline goes the
way described above.

Samples are XCDR1 little-endian with encapsulation ``00 01 00 00`` and no trailing padding,
as cyclonedds-python writes them.
"""
from __future__ import annotations

import functools
import struct
import sys
from typing import Any, Callable

import numpy as np
from rosbags.interfaces import Nodetype

from .fast_cdr import fast_encoder
from .types import fielddefs, message_typestore, service_typestore

__all__ = ["exact_serializer", "is_exact"]

_FLOATS = ("float32", "float64")
_INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "byte",
         "char")
#: ROS base type -> numpy dtype of an array field in rosbags' message classes
_DTYPES = {"bool": np.dtype(np.bool_), "char": np.dtype(np.uint8), "byte": np.dtype(np.int8),
           **{b: np.dtype(b) for b in _FLOATS + _INTS if b not in ("byte", "char")}}

Check = Callable[[Any], bool]


def _scalar_check(base: str, bound: int) -> Check:
    if base in _FLOATS:
        return lambda v: isinstance(v, float)        # float and numpy float64; not bool/int
    if base in _INTS:
        return lambda v: type(v) is int               # range: struct.pack refuses, see below
    if base == "bool":
        return lambda v: type(v) is bool
    if base == "string":
        if bound:
            return lambda v: type(v) is str and len(v) <= bound
        return lambda v: type(v) is str
    raise ValueError(f"unsupported ROS base type {base!r}")


def _array_check(node: int, elem: tuple, size: int) -> Check:
    enode, einfo = elem
    fixed = node == Nodetype.ARRAY

    def length_ok(n: int) -> bool:
        return n == size if fixed else (not size or n <= size)

    if enode == Nodetype.NAME:
        sub = _message_check(einfo)

        def items_ok(v: Any) -> bool:
            return (type(v) in (list, tuple) and length_ok(len(v))
                    and all(sub(x) for x in v))
        return items_ok
    base, bound = einfo
    if base == "string":
        one = _scalar_check(base, bound)

        def strings_ok(v: Any) -> bool:
            return type(v) in (list, tuple) and length_ok(len(v)) and all(one(x) for x in v)
        return strings_ok
    dtype = _DTYPES[base]

    def numbers_ok(v: Any) -> bool:
        return (type(v) is np.ndarray and v.dtype == dtype and v.ndim == 1
                and v.flags.c_contiguous and length_ok(v.shape[0]))
    return numbers_ok


def _field_check(desc: tuple) -> Check:
    node, info = desc
    if node == Nodetype.BASE:
        return _scalar_check(*info)
    if node == Nodetype.NAME:
        return _message_check(info)
    elem, size = info
    return _array_check(node, elem, size)


@functools.lru_cache(maxsize=None)
def _message_check(msgtype: str) -> Check:
    _, fields = fielddefs(msgtype)
    # built lazily: a message type may nest itself only through sequences, never directly
    checks: list[tuple[str, Check]] = []

    def message_ok(msg: Any) -> bool:
        if getattr(msg, "__msgtype__", None) != msgtype:
            return False
        if not checks and fields:
            checks.extend((name, _field_check(desc)) for name, desc in fields)
        try:
            return all(check(getattr(msg, name)) for name, check in checks)
        except AttributeError:
            return False
    return message_ok


def is_exact(msg: Any, msgtype: str) -> bool:
    """True if every field of ``msg`` has its exact wire type (see the module docstring)."""
    return _message_check(msgtype)(msg)


@functools.lru_cache(maxsize=None)
def exact_serializer(msgtype: str) -> Callable[[Any], bytes | None]:
    """``serialize(msg) -> bytes | None``: the XCDR1 sample of ``msg`` (with encapsulation
    header), or None if ``msg`` is not in exact wire form."""
    if sys.byteorder != "little":  # pragma: no cover - the strict path serves big-endian hosts
        return lambda msg: None
    check = _message_check(msgtype)
    store = message_typestore()
    if msgtype not in store.fielddefs:     # an action's message (service_typestore)
        store = service_typestore()

    fast = fast_encoder(msgtype)

    def serialize(msg: Any) -> bytes | None:
        if fast is not None:
            data = fast(msg)
            if data is not None:
                return data
        if not check(msg):
            return None
        try:
            raw = store.serialize_cdr(msg, msgtype)
        except (struct.error, OverflowError, ValueError, TypeError, AttributeError):
            return None                 # e.g. an int out of its type's range
        return bytes(raw)
    return serialize
