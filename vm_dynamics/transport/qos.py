"""Transport-neutral QoS profiles (names follow the rclcpp/rclpy presets)."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["QosSpec", "QOS_PROFILES", "qos_spec"]


class QosSpec(NamedTuple):
    """Transport-neutral QoS: KEEP_LAST history of ``depth``."""

    reliable: bool
    transient_local: bool
    depth: int


QOS_PROFILES: dict[str, QosSpec] = {
    "default": QosSpec(reliable=True, transient_local=False, depth=10),
    "sensor": QosSpec(reliable=False, transient_local=False, depth=5),
    "clock": QosSpec(reliable=False, transient_local=False, depth=1),
    "latched": QosSpec(reliable=True, transient_local=True, depth=1),
    "services": QosSpec(reliable=True, transient_local=False, depth=10),
}


def qos_spec(qos: str | QosSpec) -> QosSpec:
    """Profile name or :class:`QosSpec` -> validated :class:`QosSpec`."""
    if isinstance(qos, QosSpec):
        spec = qos
    elif isinstance(qos, str) and qos in QOS_PROFILES:
        spec = QOS_PROFILES[qos]
    else:
        raise ValueError(f"qos must be one of {sorted(QOS_PROFILES)} or a QosSpec, got {qos!r}")
    if not isinstance(spec.depth, int) or isinstance(spec.depth, bool) or spec.depth < 1:
        raise ValueError(f"qos depth must be a positive int, got {spec.depth!r}")
    return spec
