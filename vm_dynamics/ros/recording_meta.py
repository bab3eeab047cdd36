"""What a ROS 2 MCAP recording says about itself, as rosbag2 writes it: the QoS offered per
topic (:data:`TOPIC_QOS`, each channel's ``offered_qos_profiles``) and the embedded
``rosbag2`` metadata record (version 9, :func:`rosbag2_metadata`) that ``ros2 bag info`` and
``ros2 bag play`` read."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from . import messages as rm

__all__ = ["TOPIC_QOS", "STRING", "LIBRARY", "bag_qos", "qos_yaml", "rosbag2_metadata"]

STRING = "std_msgs/msg/String"
#: The MCAP header's ``library`` field.
LIBRARY = "vm_dynamics (rosbag2 layout)"


def bag_qos(depth: int, transient_local: bool = False) -> Any:
    """rosbags ``Qos`` of a recorded publisher: reliable, KEEP_LAST ``depth``, volatile or
    transient local, other durations unspecified."""
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )
    zero = QosTime(0, 0)  # unspecified = DDS default (infinite)
    return Qos(QosHistory.KEEP_LAST, depth, QosReliability.RELIABLE,
               QosDurability.TRANSIENT_LOCAL if transient_local else QosDurability.VOLATILE,
               zero, zero, QosLiveliness.AUTOMATIC, zero, False)


#: (message type, depth, transient_local) per topic.
TOPIC_QOS: dict[str, tuple[str, int, bool]] = {
    "/clock": (rm.CLOCK, 1, False),
    "/joint_states": (rm.JOINT_STATE, 10, False),
    "/odom": (rm.ODOMETRY, 10, False),
    "/tf": (rm.TF_MESSAGE, 100, False),
    "/tf_static": (rm.TF_MESSAGE, 1, True),
}


def _yaml(data: Any) -> str:
    """Block-style YAML for rosbag2 metadata (PyYAML, a rosdep key; the same document as
    rosbags' ruamel writer gives)."""
    import yaml
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=False)


def qos_yaml(qos: list) -> str:
    """A channel's ``offered_qos_profiles`` metadata (rosbag2 metadata version 9)."""
    from rosbags.rosbag2.metadata import dump_qos_v9
    return _yaml(dump_qos_v9(qos)).strip()


def rosbag2_metadata(file_name: str, start_ns: int, end_ns: int, counts: Mapping[str, int],
                     topics: Sequence[tuple[str, str, list]]) -> str:
    """rosbag2's ``serialized_metadata`` (what ``ros2 bag info``/``play`` read from the
    file), as rosbags.rosbag2.Writer writes it (version 9), for ``topics`` of
    ``(topic, msgtype, qos)`` with ``counts`` messages each."""
    from rosbags.rosbag2.metadata import dump_qos_v9
    duration = max(0, end_ns - start_ns)
    count = sum(counts.values())
    info = {
        "version": 9, "storage_identifier": "mcap",
        "relative_file_paths": [file_name],
        "duration": {"nanoseconds": duration},
        "starting_time": {"nanoseconds_since_epoch": start_ns},
        "message_count": count,
        "topics_with_message_count": [
            {"topic_metadata": {"name": topic, "type": msgtype,
                                "serialization_format": "cdr",
                                "offered_qos_profiles": dump_qos_v9(qos),
                                "type_description_hash": rm.TYPESTORE.hash_rihs01(msgtype)},
             "message_count": counts.get(topic, 0)}
            for topic, msgtype, qos in topics],
        "compression_format": "", "compression_mode": "",
        "files": [{"path": file_name,
                   "starting_time": {"nanoseconds_since_epoch": start_ns},
                   "duration": {"nanoseconds": duration}, "message_count": count}],
        "custom_data": None, "ros_distro": "rosbags",
    }
    return _yaml(info).strip()
