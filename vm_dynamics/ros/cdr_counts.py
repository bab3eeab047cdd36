"""Counts read from a serialized (CDR) message before it is deserialised.

A node under a flood of invalid samples spends most of its time decoding messages it then
rejects.  One scanner here, :class:`CdrScanner`, reads length fields straight from plain CDR
(XCDR1, the ROS 2 wire format, either byte order, as
:func:`vm_dynamics.ros.messages.deserialize` accepts) and skips everything else without
building an object.  It serves two checks:

* :func:`float64_multi_array_extent`: the shape fields of a ``Float64MultiArray`` (the
  dynamics node's screen of effort commands), for the cost of a few ``struct`` reads.  It
  needs no message library (the type's fields are described here) and returns ``None`` when
  the bytes do not have that shape: the caller then decodes the sample and the decoder names
  what is wrong.
* :func:`check_counts`: the element counts of chosen top-level sequences of any message type
  against limits (the controller's count limits), walking the field descriptions of the
  rosbags type store (``fielddefs``), passed in by :mod:`vm_dynamics.ros.messages`.
"""
from __future__ import annotations

import numbers
import struct
from typing import Any, Mapping, NamedTuple

from .msgtypes import FLOAT64_MULTI_ARRAY

__all__ = ["ArrayExtent", "float64_multi_array_extent", "CdrScanner", "CdrUnsupported",
           "SequenceCountError", "check_cdr_header", "count_limits", "check_counts"]

# rosbags.interfaces.Nodetype values (BASE, NAME, ARRAY, SEQUENCE), without importing rosbags
NODE_BASE, NODE_NAME, NODE_ARRAY, NODE_SEQUENCE = 1, 2, 3, 4

CDR_SIZES = {"bool": 1, "byte": 1, "char": 1, "int8": 1, "uint8": 1, "int16": 2,
             "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "float32": 4,
             "float64": 8}

_U32 = {1: struct.Struct("<I").unpack_from, 0: struct.Struct(">I").unpack_from}

#: Field descriptions (rosbags ``fielddefs`` layout) of ``std_msgs/msg/Float64MultiArray``.
FLOAT64_MULTI_ARRAY_FIELDS = {
    FLOAT64_MULTI_ARRAY: ([], [
        ("layout", (NODE_NAME, "std_msgs/msg/MultiArrayLayout")),
        ("data", (NODE_SEQUENCE, ((NODE_BASE, ("float64", 0)), 0)))]),
    "std_msgs/msg/MultiArrayLayout": ([], [
        ("dim", (NODE_SEQUENCE, ((NODE_NAME, "std_msgs/msg/MultiArrayDimension"), 0))),
        ("data_offset", (NODE_BASE, ("uint32", 0)))]),
    "std_msgs/msg/MultiArrayDimension": ([], [
        ("label", (NODE_BASE, ("string", 0))),
        ("size", (NODE_BASE, ("uint32", 0))),
        ("stride", (NODE_BASE, ("uint32", 0)))]),
}
_DIM = (NODE_NAME, "std_msgs/msg/MultiArrayDimension")


class CdrUnsupported(Exception):
    """A construct the scanner does not walk (``wstring``): it leaves the sample to the
    decoder."""


class SequenceCountError(ValueError):
    """A serialized message's sequence holds more elements than allowed
    (:func:`check_counts`)."""


def check_cdr_header(data: bytes, msgtype: str) -> None:
    """Raise ``ValueError`` unless ``data`` starts with a plain CDR encapsulation header."""
    if len(data) < 4:
        raise ValueError(f"{msgtype}: CDR data too short ({len(data)} bytes)")
    if data[0] != 0 or data[1] not in (0, 1):
        raise ValueError(f"{msgtype}: unsupported CDR encapsulation header "
                         f"{bytes(data[:4]).hex()} (expected plain CDR, 0000 or 0001)")


class CdrScanner:
    """Walks plain CDR without building any object: reads the element counts of sequences and
    skips their contents, in time linear in the bytes walked.  Alignment is relative to the end
    of the 4-byte encapsulation header (whose second byte gives the byte order).  ``fielddefs``
    describes the structs walked (rosbags' layout: ``{msgtype: (consts, [(name, desc)])}``).
    Truncated data raises ``ValueError``."""

    __slots__ = ("data", "msgtype", "fielddefs", "u32", "size", "pos")

    def __init__(self, data: Any, msgtype: str, fielddefs: Mapping[str, Any]) -> None:
        self.data = data
        self.msgtype = msgtype
        self.fielddefs = fielddefs
        self.u32 = _U32[data[1]]
        self.size = len(data)
        self.pos = 4

    def need(self, n: int) -> None:
        """Raise ``ValueError`` unless ``n`` more bytes follow the read position."""
        if self.pos + n > self.size:
            raise self.truncated(n)

    def truncated(self, n: int) -> ValueError:
        """The error for data that ends ``n`` bytes too early at the read position."""
        return ValueError(f"{self.msgtype}: malformed CDR data (truncated at byte {self.pos}, "
                          f"{n} more needed)")

    def align(self, n: int) -> None:
        """Move the read position to the next multiple of ``n`` (relative to the body)."""
        off = (self.pos - 4) % n
        if off:
            self.pos += n - off

    def count(self) -> int:
        """Read a 4-byte unsigned integer (a sequence or string length, or a ``uint32``)."""
        pos = self.pos
        pos += -pos % 4                   # the body starts at 4: absolute 4-alignment
        self.pos = pos
        if pos + 4 > self.size:
            raise self.truncated(4)
        self.pos = pos + 4
        return self.u32(self.data, pos)[0]

    def skip_base(self, base: str, n: int) -> None:
        """Skip ``n`` elements of the primitive type ``base``."""
        if base == "string":
            for _ in range(n):
                length = self.count()
                if self.pos + length > self.size:
                    raise self.truncated(length)
                self.pos += length
            return
        size = CDR_SIZES.get(base)
        if size is None:
            raise CdrUnsupported(base)
        if n:
            pos = self.pos
            self.pos = pos = pos + -(pos - 4) % size           # align (relative to the body)
            if pos + size * n > self.size:
                raise self.truncated(size * n)
            self.pos = pos + size * n

    def skip_struct(self, msgtype: str) -> None:
        """Skip one struct of type ``msgtype``."""
        for _, desc in self.fielddefs[msgtype][1]:
            if desc[0] == NODE_BASE:                       # the common case, one call fewer
                self.skip_base(desc[1][0], 1)
            else:
                self.skip_field(desc)

    def skip_elements(self, elem: tuple, n: int) -> None:
        """Skip ``n`` elements described by ``elem`` (a field description)."""
        enode, einfo = elem
        if enode == NODE_BASE:
            self.skip_base(einfo[0], n)
            return
        if n > self.size - self.pos:   # every element takes at least one byte
            raise ValueError(f"{self.msgtype}: malformed CDR data (a sequence of {n} "
                             f"elements in {self.size - self.pos} bytes)")
        for _ in range(n):
            self.skip_struct(einfo)

    def skip_field(self, desc: tuple) -> None:
        """Skip one field described by ``desc``."""
        node, info = desc
        if node == NODE_BASE:
            self.skip_base(info[0], 1)
        elif node == NODE_NAME:
            self.skip_struct(info)
        elif node == NODE_ARRAY:
            self.skip_elements(info[0], info[1])
        elif node == NODE_SEQUENCE:
            self.skip_elements(info[0], self.count())
        else:
            raise CdrUnsupported(str(node))


class ArrayExtent(NamedTuple):
    """Shape fields of a ``std_msgs/msg/Float64MultiArray``: ``layout.dim`` entries,
    ``layout.data_offset`` and the length of ``data``."""

    dims: int
    data_offset: int
    size: int


def float64_multi_array_extent(data: bytes | bytearray | memoryview) -> ArrayExtent | None:
    """:class:`ArrayExtent` of a serialized ``Float64MultiArray``, or ``None`` if ``data``
    is not plain CDR of that type (truncated, another header): decode it to learn why.

    Cost: independent of the length of ``data``; linear in the number of ``layout.dim``
    entries, which are skipped (their labels are not decoded).
    """
    if len(data) < 16 or data[0] != 0 or data[1] not in (0, 1):
        return None
    scan = CdrScanner(data, FLOAT64_MULTI_ARRAY, FLOAT64_MULTI_ARRAY_FIELDS)
    try:
        dims = scan.count()
        if dims:
            scan.skip_elements(_DIM, dims)
        offset = scan.count()
        size = scan.count()
        scan.skip_base("float64", size)
    except ValueError:
        return None
    return ArrayExtent(dims, offset, size)


def count_limits(msgtype: str, limits: Mapping[str, Any],
                 fielddefs: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    """Validate count ``limits`` for ``msgtype`` (top-level sequence fields, integer limits
    >= 0, each an int or ``(int, name)``); returns them as ``{field: (limit, name)}``."""
    if msgtype not in fielddefs:
        raise ValueError(f"unknown message type {msgtype!r}")
    fields = dict(fielddefs[msgtype][1])
    out = {}
    for field, value in limits.items():
        limit, label = value if isinstance(value, tuple) else (value, "")
        if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 0:
            raise ValueError(f"count limit of {msgtype}.{field}: expected an integer >= 0, "
                             f"got {limit!r}")
        if field not in fields or fields[field][0] != NODE_SEQUENCE:
            raise ValueError(f"count limit: {field!r} is not a sequence field of {msgtype}")
        out[field] = (int(limit), str(label))
    return out


def _too_many(msgtype: str, name: str, n: int, limit: int, label: str) -> SequenceCountError:
    short = msgtype.rsplit("/", 1)[-1]
    more = (f"{label}={limit}" if label.isidentifier() else
            f"{label} ({limit})" if label else f"the limit of {limit}")
    return SequenceCountError(f"{short}.{name} has {n} entries, more than {more} (read from "
                              f"the serialized sample, which was not decoded)")


def check_counts(data: bytes, msgtype: str, limits: Mapping[str, Any],
                 fielddefs: Mapping[str, Any]) -> None:
    """Raise :class:`SequenceCountError` if a top-level sequence of serialized ``msgtype``
    holds more elements than ``limits`` allows (see :func:`count_limits`).  The fields up to
    the last limited one are walked (counts read, contents skipped); a field behind a
    construct the scanner does not walk is not checked (left to the decoder)."""
    check_cdr_header(data, msgtype)
    todo = count_limits(msgtype, limits, fielddefs)
    if not todo:
        return
    scan = CdrScanner(data, msgtype, fielddefs)
    try:
        for name, desc in fielddefs[msgtype][1]:
            if name not in todo:
                scan.skip_field(desc)
                continue
            n = scan.count()
            limit, label = todo.pop(name)
            if n > limit:
                raise _too_many(msgtype, name, n, limit, label)
            if not todo:
                return
            scan.skip_elements(desc[1][0], n)
    except CdrUnsupported:
        return
