"""ROS message and service types of the transports, and strict field-value coercion.

The rosbags typestores are imported lazily: only the DDS transport, the MCAP writer
and the tests need them (rclpy nodes use rosidl classes).
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any, Mapping

import numpy as np

__all__ = ["SERVICE_DEFINITIONS", "SERVICE_TYPES", "message_typestore", "service_typestore",
           "fielddefs", "message_class", "check_service_type", "check_message",
           "coerce_scalar", "coerce_elements", "status_service", "build_message",
           "CANCEL_GOAL_DEFINITION", "LIST_PARAMETERS_DEFINITION"]

#: ``.srv`` texts of ros2/common_interfaces ``std_srvs/srv/{Trigger,SetBool}.srv`` (comments
#: dropped; identical on Humble and Jazzy).  The rosbags Jazzy store has no service types, so
#: they are registered from these texts; the RIHS01 hashes this yields are checked against
#: the independent ros2_pyterfaces values in the tests.
SERVICE_DEFINITIONS: dict[str, str] = {
    "std_srvs/srv/Trigger": "---\nbool success\nstring message\n",
    "std_srvs/srv/SetBool": "bool data\n---\nbool success\nstring message\n",
}
SERVICE_TYPES = tuple(SERVICE_DEFINITIONS)
#: ``action_msgs/srv/CancelGoal.srv`` of ros2/rcl_interfaces (Jazzy; comments dropped): the
#: cancel service of every action (rcl_action), registered with the actions' types.
CANCEL_GOAL_DEFINITION = ("action_msgs/GoalInfo goal_info\n---\n"
                          "int8 ERROR_NONE=0\nint8 ERROR_REJECTED=1\n"
                          "int8 ERROR_UNKNOWN_GOAL_ID=2\nint8 ERROR_GOAL_TERMINATED=3\n"
                          "int8 return_code\naction_msgs/GoalInfo[] goals_canceling\n")
#: ``rcl_interfaces/srv/ListParameters.srv`` (Jazzy; comments dropped): a parameter service
#: every rclcpp node serves, which the lockstep with a controller manager calls on the hardware
#: component's node (:mod:`vm_dynamics.nodes.ros2_control`).
LIST_PARAMETERS_DEFINITION = ("uint64 DEPTH_RECURSIVE=0\nstring[] prefixes\nuint64 depth\n---\n"
                              "ListParametersResult result\n")
_EMPTY_MEMBER = "structure_needs_at_least_one_member"


def message_typestore():
    """Typestore of topic messages: the one :mod:`vm_dynamics.ros.messages` builds messages with."""
    from vm_dynamics.ros import messages as ros_msgs
    return ros_msgs.TYPESTORE


def status_service(srvtype: str) -> bool:
    """True for the services whose handlers answer ``(success, message)`` (std_srvs Trigger,
    SetBool: :data:`SERVICE_TYPES`); every other registered service's handler returns its
    response's fields as a mapping (:meth:`Transport.service`)."""
    return srvtype in SERVICE_DEFINITIONS


def _interface_definitions() -> tuple[dict[str, str], dict[str, str]]:
    """``(messages, services)`` carried as the project's own copies (simulation_interfaces,
    its actions' services and messages, and action_msgs' CancelGoal)."""
    from vm_dynamics.ros import simulation_interfaces_defs as si
    msgs, srvs = dict(si.messages()), dict(SERVICE_DEFINITIONS)
    srvs.update(si.services())
    for action, text in si.actions().items():
        amsgs, asrvs = si.action_definitions(action, text)
        msgs.update(amsgs)
        srvs.update(asrvs)
    srvs["action_msgs/srv/CancelGoal"] = CANCEL_GOAL_DEFINITION
    srvs["rcl_interfaces/srv/ListParameters"] = LIST_PARAMETERS_DEFINITION
    return msgs, srvs


@functools.lru_cache(maxsize=None)
def service_typestore():
    """rosbags ROS 2 Jazzy typestore + ``<srv>_Request``/``<srv>_Response`` of SERVICE_TYPES,
    and the simulation_interfaces messages, services and action types
    (:mod:`vm_dynamics.ros.simulation_interfaces_defs`).

    Empty request/response structs get rosidl's dummy ``uint8
    structure_needs_at_least_one_member`` (as ``std_msgs/msg/Empty`` has in rosbags).
    """
    from rosbags.interfaces import Nodetype
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    typs: dict[str, Any] = {}
    msgs, srvs = _interface_definitions()
    for msgtype, text in msgs.items():
        # parsed as pkg/msg/..., so that the package's relative type names resolve (an
        # action's messages are pkg/action/...)
        pkg, _, name = msgtype.split("/")
        (consts, fields), = get_types_from_msg(text, f"{pkg}/msg/{name}").values()
        typs[msgtype] = (consts, fields or [(_EMPTY_MEMBER, (Nodetype.BASE, ("uint8", 0)))])
    for srv, text in srvs.items():
        pkg, _, name = srv.split("/")
        req_text, sep, resp_text = _partition_service(text)
        if not sep:
            raise ValueError(f"{srv}: definition lacks the --- separator")
        for part, body in (("Request", req_text), ("Response", resp_text)):
            # parsed as pkg/msg/..., so that the package's relative type names resolve
            parsed = get_types_from_msg(body, f"{pkg}/msg/{name}_{part}")
            (consts, fields), = parsed.values()
            if not fields:
                fields = [(_EMPTY_MEMBER, (Nodetype.BASE, ("uint8", 0)))]
            typs[f"{srv}_{part}"] = (consts, fields)
    store.register(typs)
    return store


def _partition_service(text: str) -> tuple[str, str, str]:
    """``(request, separator, response)`` of a ``.srv`` text; the separator is a line that is
    exactly ``---``."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == "---":
            return "".join(lines[:i]), "---\n", "".join(lines[i + 1:])
    return text, "", ""


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
    """``srvtype`` if the transports can serve it: :data:`SERVICE_TYPES` or a service of
    the carried interface definitions (:func:`service_typestore`)."""
    if srvtype in SERVICE_DEFINITIONS:
        return srvtype
    if srvtype not in _interface_definitions()[1]:
        raise ValueError(f"unsupported service type {srvtype!r}; supported: {SERVICE_TYPES} "
                         f"and the simulation_interfaces services, rcl_interfaces/srv/ListParameters")
    return srvtype


def build_message(msgtype: str, values: Mapping[str, Any] | None = None) -> Any:
    """A rosbags message of ``msgtype`` (a topic or service type) from a mapping of field
    values; absent fields take their zero value (0, False, "", empty sequence, zero array,
    nested zero message), nested messages may be given as mappings.  An unknown field name
    raises ``ValueError`` naming it."""
    from rosbags.interfaces import Nodetype

    _, fields = fielddefs(msgtype)
    values = dict(values or {})
    names = {name for name, _ in fields}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"{msgtype}: no field(s) {', '.join(unknown)}")
    kw = {}
    for name, (node, info) in fields:
        given = name in values
        v = values.get(name)
        if node == Nodetype.BASE:
            kw[name] = v if given else _ZERO.get(info[0], 0)
        elif node == Nodetype.NAME:
            kw[name] = build_message(info, v) if not given or isinstance(v, Mapping) else v
        else:
            (enode, einfo), size = info
            if given:
                if enode == Nodetype.NAME:
                    v = [build_message(einfo, x) if isinstance(x, Mapping) else x for x in v]
                kw[name] = v
            elif node == Nodetype.ARRAY:
                kw[name] = ([build_message(einfo) for _ in range(size)]
                            if enode == Nodetype.NAME else
                            np.zeros(size, dtype=_NUMPY.get(einfo[0], object)))
            else:
                kw[name] = []
    return message_class(msgtype)(**kw)


_ZERO = {"bool": False, "string": "", "float32": 0.0, "float64": 0.0}
_NUMPY = {"bool": np.bool_, "byte": np.uint8, "char": np.uint8, "int8": np.int8,
          "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
          "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
          "float32": np.float32, "float64": np.float64}


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
