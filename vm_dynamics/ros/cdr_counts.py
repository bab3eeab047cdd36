"""Counts read from a serialized (CDR) message before it is deserialised.

A node under a flood of invalid samples spends most of its time decoding messages it then
rejects.  The functions here read the few length fields a check needs straight from the CDR
bytes (plain CDR, either byte order, as :func:`vm_dynamics.ros.messages.deserialize` accepts),
so that a sample of the wrong size is rejected for the cost of a few ``struct`` reads.  They
return ``None`` when the bytes do not have the expected shape; the caller then decodes the
sample normally and the decoder names what is wrong.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = ["ArrayExtent", "float64_multi_array_extent"]

_U32 = {1: struct.Struct("<I").unpack_from, 0: struct.Struct(">I").unpack_from}
_U32X2 = {1: struct.Struct("<II").unpack_from, 0: struct.Struct(">II").unpack_from}


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
    n = len(data)
    if n < 16 or data[0] != 0 or data[1] not in (0, 1):
        return None
    u32, u32x2 = _U32[data[1]], _U32X2[data[1]]
    # offsets are absolute; CDR alignment is relative to the body, which starts at 4, so a
    # 4-aligned body offset is a 4-aligned absolute one and 8-alignment is (pos - 4) % 8
    dims = u32(data, 4)[0]
    pos = 8
    if dims > (n - pos) // 12:                   # a dim takes >= 12 bytes: not this type
        return None
    for _ in range(dims):
        if pos + 4 > n:
            return None
        label = u32(data, pos)[0]
        pos += 4 + label
        pos += -pos % 4
        if pos + 8 > n:                          # size, stride
            return None
        pos += 8
    if pos + 8 > n:
        return None
    offset, size = u32x2(data, pos)
    pos += 8
    if size:
        pos += -(pos - 4) % 8                     # float64 elements: 8-byte alignment
    if pos + 8 * size > n:
        return None
    return ArrayExtent(dims, offset, size)
