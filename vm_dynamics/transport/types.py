"""ROS message and service types of the transports, and strict field-value coercion.

The rosbags typestores are imported lazily: only the DDS transport, the MCAP writer
and the tests need them (rclpy nodes use rosidl classes).
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any

import numpy as np

__all__ = ["SERVICE_DEFINITIONS", "SERVICE_TYPES", "message_typestore", "service_typestore",
           "fielddefs", "message_class", "check_service_type", "check_message",
           "coerce_scalar", "coerce_elements"]

#: ``.srv`` texts of ros2/common_interfaces ``std_srvs/srv/{Trigger,SetBool}.srv`` (comments
#: dropped; identical on Humble and Jazzy).  The rosbags Jazzy store has no service types, so
#: they are registered from these texts; the RIHS01 hashes this yields are checked against
#: the independent ros2_pyterfaces values in the tests.
SERVICE_DEFINITIONS: dict[str, str] = {
    "std_srvs/srv/Trigger": "---\nbool success\nstring message\n",
    "std_srvs/srv/SetBool": "bool data\n---\nbool success\nstring message\n",
}
SERVICE_TYPES = tuple(SERVICE_DEFINITIONS)
_EMPTY_MEMBER = "structure_needs_at_least_one_member"


def message_typestore():
    """Typestore of topic messages: the one :mod:`vm_dynamics.ros.messages` builds messages with."""
    from vm_dynamics.ros import messages as ros_msgs
    return ros_msgs.TYPESTORE


@functools.lru_cache(maxsize=None)
def service_typestore():
    """rosbags ROS 2 Jazzy typestore + ``<srv>_Request``/``<srv>_Response`` of SERVICE_TYPES.

    Empty request/response structs get rosidl's dummy ``uint8
    structure_needs_at_least_one_member`` (as ``std_msgs/msg/Empty`` has in rosbags).
    """
    from rosbags.interfaces import Nodetype
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    typs: dict[str, Any] = {}
    for srv, text in SERVICE_DEFINITIONS.items():
        pkg, _, name = srv.split("/")
        req_text, sep, resp_text = text.partition("---\n")
        if not sep:
            raise ValueError(f"{srv}: definition lacks the --- separator")
        for part, body in (("Request", req_text), ("Response", resp_text)):
            parsed = get_types_from_msg(body, f"{pkg}/msg/{name}_{part}")
            (consts, fields), = parsed.values()
            if not fields:
                fields = [(_EMPTY_MEMBER, (Nodetype.BASE, ("uint8", 0)))]
            typs[f"{srv}_{part}"] = (consts, fields)
    store.register(typs)
    return store


def fielddefs(msgtype: str) -> tuple[list, list]:
    """(constants, fields) of a message or service request/response type."""
    for store in (message_typestore(), service_typestore()):
        if msgtype in store.fielddefs:
            return store.fielddefs[msgtype]
    raise ValueError(f"unknown ROS message type {msgtype!r}")


def message_class(msgtype: str) -> type:
    for store in (message_typestore(), service_typestore()):
        if msgtype in store.types:
            return store.types[msgtype]
    raise ValueError(f"unknown ROS message type {msgtype!r}")


def check_service_type(srvtype: str) -> str:
    if srvtype not in SERVICE_DEFINITIONS:
        raise ValueError(f"unsupported service type {srvtype!r}; supported: {SERVICE_TYPES}")
    return srvtype


def check_message(msg: Any, msgtype: str, what: str) -> None:
    got = getattr(msg, "__msgtype__", None)
    if got != msgtype:
        raise TypeError(f"{what}: expected a {msgtype} message, got "
                        f"{got or type(msg).__name__}")


# ----------------------------------------------------------------- value coercion

_INT_RANGES = {
    "int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-2**15, 2**15 - 1),
    "uint16": (0, 2**16 - 1), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
    "byte": (-128, 255), "char": (0, 255),
}
_FLOAT_MAX = {"float32": 3.402823466e38, "float64": 1.7976931348623157e308}


def coerce_scalar(base: str, value: Any, where: str) -> Any:
    """Field value -> plain Python value of the ROS base type (strict).

    Reals go to ``float`` (ints accepted, bools rejected), integers must be integral and in
    range, ``char`` (uint8 in ROS 2) is an int 0..255, ``byte`` an int in -128..255 (rosbags
    stores octets as int8, rosidl as unsigned; both denote the same byte; a 1-byte ``bytes``
    is accepted too),
    ``bool`` needs a bool, ``string`` a str.  Raises ``TypeError``/``ValueError`` naming
    ``where``.
    """
    if base in _FLOAT_MAX:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where}: expected a real number for {base}, got "
                            f"{type(value).__name__}")
        v = float(value)
        if math.isfinite(v) and abs(v) > _FLOAT_MAX[base]:
            raise ValueError(f"{where}: {v!r} is out of the {base} range")
        return v
    if base in _INT_RANGES:
        if base == "byte" and isinstance(value, (bytes, bytearray)) and len(value) == 1:
            value = value[0]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{where}: expected an integer for {base}, got "
                            f"{type(value).__name__}")
        v = int(value)
        lo, hi = _INT_RANGES[base]
        if not lo <= v <= hi:
            raise ValueError(f"{where}: {v} is out of the {base} range [{lo}, {hi}]")
        return v
    if base == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{where}: expected a bool, got {type(value).__name__}")
        return bool(value)
    if base == "string":
        if not isinstance(value, str):
            raise TypeError(f"{where}: expected a str, got {type(value).__name__}")
        return value
    raise TypeError(f"{where}: unsupported ROS base type {base!r}")


def coerce_elements(base: str, values: Any, where: str) -> list:
    """A sequence/array field -> list of coerced Python scalars (fast path for ndarrays)."""
    if isinstance(values, (str, bytes)) and base != "byte" and base != "uint8":
        raise TypeError(f"{where}: expected a sequence of {base}, got {type(values).__name__}")
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"{where}: expected a 1-D array, got shape {values.shape}")
        kind = values.dtype.kind
        if base in _FLOAT_MAX and kind in "fiu":
            out = values.astype(np.float64).tolist()
            if base == "float32":
                for j, v in enumerate(out):
                    if math.isfinite(v) and abs(v) > _FLOAT_MAX[base]:
                        raise ValueError(f"{where}[{j}]: {v!r} is out of the float32 range")
            return out
        if base in _INT_RANGES and kind in "iu":
            lo, hi = _INT_RANGES[base]
            if values.size and (int(values.min()) < lo or int(values.max()) > hi):
                raise ValueError(f"{where}: values out of the {base} range [{lo}, {hi}]")
            return [int(v) for v in values.tolist()]
        if base == "bool" and kind == "b":
            return values.tolist()
        values = values.tolist()
    if isinstance(values, (bytes, bytearray)):
        values = list(values)
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{where}: expected a sequence of {base}, got "
                        f"{type(values).__name__}") from None
    return [coerce_scalar(base, v, f"{where}[{j}]") for j, v in enumerate(items)]
