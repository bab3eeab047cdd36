"""A plain Cyclone DDS participant for the node benchmarks (``bench/nodes.py``,
``bench/flood.py``): readers and writers on ROS 2 topics, named and typed as rmw_cyclonedds
does, with the benchmark's own QoS, and the one measurement both take from ``/joint_states``.

It reads raw samples in batches and decodes only what it needs (the header stamp at a fixed
offset, the DDS source timestamp), so on a 2-core machine it takes next to no CPU from the
processes it measures.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: samples taken from a reader per call
BATCH = 4096


def dds_env(domain: int, tree: Path | None = None) -> dict:
    """Environment of a node process on DDS domain ``domain``, loopback only; with ``tree``,
    that tree's vm_dynamics first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env.update(CYCLONEDDS_URI=(REPO / "test" / "cyclonedds-loopback.xml").as_uri(),
               ROS_DOMAIN_ID=str(domain), VM_DYNAMICS_TRANSPORT="dds", PYTHONUNBUFFERED="1")
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH")) if p)
    return env


def best_effort(depth: int):
    """Best-effort KEEP_LAST ``depth`` QoS (a deep queue read in batches)."""
    from cyclonedds.core import Policy, Qos
    return Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(depth))


def reliable(depth: int):
    """Reliable KEEP_LAST ``depth`` QoS (100 ms blocking, as rmw_cyclonedds)."""
    from cyclonedds.core import Policy, Qos
    return Qos(Policy.Reliability.Reliable(max_blocking_time=100_000_000),
               Policy.History.KeepLast(depth))


class DdsProbe:
    """A participant on the domain of ``env`` (``ROS_DOMAIN_ID``, discovery as the nodes'),
    its readers and writers on ROS 2 topics, and raw sample access."""

    def __init__(self, env: dict):
        from cyclonedds.domain import Domain, DomainParticipant

        from vm_dynamics.transport.dds import discovery_config, take_raw
        domain = int(env["ROS_DOMAIN_ID"])
        self._domain = Domain(domain, discovery_config(env))
        self._dp = DomainParticipant(domain)
        self.take = take_raw

    def _topic(self, name: str, msgtype: str):
        from cyclonedds.topic import Topic

        from vm_dynamics.transport.dds import dds_topic_name, idl_struct
        return Topic(self._dp, dds_topic_name(name), idl_struct(msgtype, False))

    def reader(self, name: str, msgtype: str, qos):
        """A reader of the ROS topic ``name`` (type ``pkg/msg/Type``) with ``qos``."""
        from cyclonedds.sub import DataReader
        return DataReader(self._dp, self._topic(name, msgtype), qos=qos)

    def writer(self, name: str, msgtype: str, qos):
        """A writer of the ROS topic ``name`` (type ``pkg/msg/Type``) with ``qos``."""
        from cyclonedds.pub import DataWriter
        return DataWriter(self._dp, self._topic(name, msgtype), qos=qos)

    def read_stamps(self, reader, out: list) -> None:
        """Append ``(source wall time s, header stamp s)`` of every stamped sample queued in
        ``reader`` to ``out``: the writer's CLOCK_REALTIME when it wrote the sample, and the
        simulated time in its ``std_msgs/Header`` (the first field, little-endian CDR)."""
        while True:
            batch = self.take(reader, BATCH)
            for data, info in batch:
                if info.valid_data:
                    sec, nanosec = struct.unpack_from("<iI", data, 4)   # header.stamp
                    out.append((info.source_timestamp * 1e-9, sec + 1e-9 * nanosec))
            if len(batch) < BATCH:
                return

    def close(self) -> None:
        self._dp = self._domain = None
