"""Recording outputs: ROS 2 MCAP recordings (JSON summary: :mod:`vm_dynamics.app.summary`; figures:
:mod:`vm_dynamics.analysis.plotting`; the URDF tree as transforms: :mod:`.urdf_tf`).

MCAP output
-----------
:func:`write_mcap` writes a **single** ``.mcap`` file (``trajectory.mcap`` by
convention) with the layout ``rosbag2_storage_mcap`` and ``rosbags.rosbag2.Writer``
produce: profile ``ros2``, ``ros2msg`` schemas generated from the ROS 2 Jazzy
typestore, ``cdr`` messages, chunk indexes, a Statistics record, per-channel
``offered_qos_profiles`` metadata and an embedded ``rosbag2`` metadata record
(version 9); no ``metadata.yaml`` beside it, because the MCAP file is self-describing.

The file is written in place by :class:`~vm_dynamics.ros.mcap_stream.McapStreamWriter`:
chunk by chunk (at most a second apart), each appended with a closing footer, so that
a run killed at any moment (``kill -9``) leaves ``trajectory.mcap`` readable as it is,
with every sample up to its last chunk; a full disk stops the recording with an
:class:`RecordingError` and keeps the file as it was before the failed write.

* ``ros2 bag play trajectory.mcap`` / ``ros2 bag info trajectory.mcap`` work on
  Iron, Jazzy and later (bare storage files are auto-detected, rosbag2 PR #1072);
  on Humble add ``-s mcap``.  ``ros2 bag reindex`` can recreate a metadata.yaml.
* Foxglove, ``mcap`` CLI and ``mcap_ros2`` read it directly.

Topics (all stamped with simulation time, log time = header stamp):

=================  ============================  ==========================================
``/clock``         rosgraph_msgs/msg/Clock       reliable, volatile, depth 1
``/joint_states``  sensor_msgs/msg/JointState    reliable, volatile, depth 10
``/odom``          nav_msgs/msg/Odometry         reliable, volatile, depth 10
``/tf``            tf2_msgs/msg/TFMessage        reliable, volatile, depth 100 (tf2_ros)
``/tf_static``     tf2_msgs/msg/TFMessage        reliable, transient local, depth 1
``/robot_description`` std_msgs/msg/String       reliable, transient local, depth 1
=================  ============================  ==========================================

With a ``robot_description`` (URDF) the recording is complete, like a bag of
robot_state_publisher's output: ``/robot_description`` once at the start, ``/tf_static``
with every fixed joint, and every ``/tf`` message with ``odom -> root link`` plus every
movable joint (``parent link -> child link``), so Foxglove, Lichtblick, RViz (after
``ros2 bag play``) and ``vm-view`` draw the whole robot.  Without one, ``/tf`` has the base
only and ``/tf_static`` is written only when constant ``extra_tf`` transforms are given.

:class:`McapRecorder` streams samples to disk as they come (``vm.simulate(...,
callback=recorder)``), so memory stays flat with the duration; :func:`write_mcap` records
arrays through it.
Reliable publishers match both reliable and best-effort subscribers, so replayed
state reaches robot_state_publisher (best effort) and RViz (reliable) alike.

The recorder and :func:`write_mcap` live here; the checks of their inputs (base embeddings,
sample selection, arrays, frames) in :mod:`.recording_inputs`, the QoS and rosbag2 metadata
the file carries in :mod:`.recording_meta`.

Conventions: see :mod:`vm_dynamics.ros.messages` (quaternions x, y, z, w; twist
``[v; omega]`` in the body frame ``base_link``).
"""

from __future__ import annotations

import errno
import math
import os
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import numpy as np

from . import messages as rm
from .mcap_stream import McapStreamWriter
from .recording_inputs import (
    BASE_IOTA,
    base_iota_matrix,
    checked_array,
    frame_pair,
    joint_array,
    select_samples,
)
from .recording_meta import (
    LIBRARY,
    STRING,
    TOPIC_QOS,
    bag_qos,
    qos_yaml,
    rosbag2_metadata,
)
from .urdf_tf import UrdfTree

#: The message type of a recorded target's shape (``/target/marker``).
MARKER = rm.MARKER

__all__ = [
    "BASE_IOTA", "TOPIC_QOS", "RecordingInfo", "RecordingError", "base_iota_matrix",
    "select_samples", "McapRecorder", "write_mcap",
]


# ------------------------------------------------------------------------ results


class RecordingInfo(NamedTuple):
    """What :func:`write_mcap` wrote (after a failed write: what the file keeps, and the
    error)."""

    path: Path
    indices: np.ndarray           # simulation samples that were recorded
    message_counts: dict[str, int]
    start_ns: int
    end_ns: int
    error: str | None = None


class RecordingError(OSError):
    """Writing the recording failed (a full disk, a file size limit, an I/O error).  The file
    keeps the samples written before, readable: ``kept_samples`` of them, the last at
    ``kept_until`` s (None if none)."""

    def __init__(self, path: Path, cause: OSError, kept_samples: int, kept_until):
        super().__init__(cause.errno or errno.EIO, cause.strerror or str(cause), str(path))
        self.kept_samples = kept_samples
        self.kept_until = kept_until

    def __str__(self) -> str:
        kept = (f"it keeps {self.kept_samples} samples up to t = {self.kept_until:.6g} s, "
                f"readable" if self.kept_samples else "it keeps no sample")
        return f"cannot write {self.filename}: {self.strerror}; {kept}"


def _output_path(path: str | os.PathLike, overwrite: bool) -> Path:
    """``path`` as a Path, checked before anything is read or written: an ``.mcap`` name, and
    either new or (with ``overwrite``) an existing file or link."""
    path = Path(path)
    if path.suffix != ".mcap":
        raise ValueError(f"output path must end with .mcap, got {path.name!r}")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists (pass overwrite=True to replace it)")
    if path.exists() and not path.is_file() and not path.is_symlink():
        raise ValueError(f"output path {str(path)!r} exists and is not a file")
    return path


def _transform_stamped(stamp: Any, parent: str, child: str, p: tuple, q: tuple) -> Any:
    """geometry_msgs/TransformStamped from a translation and a unit quaternion (x, y, z, w)
    computed by :meth:`UrdfTree.moving_transforms_pq` (no checks: the fast path)."""
    T = rm.TYPESTORE.types
    return T["geometry_msgs/msg/TransformStamped"](
        header=T["std_msgs/msg/Header"](stamp=stamp, frame_id=parent), child_frame_id=child,
        transform=T["geometry_msgs/msg/Transform"](
            translation=T["geometry_msgs/msg/Vector3"](x=p[0], y=p[1], z=p[2]),
            rotation=T["geometry_msgs/msg/Quaternion"](x=q[0], y=q[1], z=q[2], w=q[3])))


class McapRecorder:
    """Streams a simulation into a ROS 2 MCAP recording, one sample at a time.

    Messages go to ``path`` as they are added, in chunks at most ``flush_interval`` seconds
    (wall clock) apart, so memory stays flat however long the run and the file is a readable
    MCAP at every moment (a killed process leaves every sample up to its last chunk; see
    :mod:`~vm_dynamics.ros.mcap_stream`); :meth:`close` adds the summary (indexes, statistics,
    the rosbag2 metadata).  ``recorder(state)`` records a
    :class:`vm_dynamics.sim.simulate.State`, so a recorder can be passed as
    ``vm.simulate(..., callback=recorder)``; :meth:`add` also takes joint efforts.  Used as a
    context manager it is closed on leaving the block, also on Ctrl-C (the samples so far are
    kept), and removed on any other exception.

    A failed write (disk full) raises :class:`RecordingError` from :meth:`add` (or
    :meth:`close`); the file keeps what was written before, and :meth:`close` then finishes it
    as far as the disk allows and reports the error in :attr:`RecordingInfo.error`.

    Args:
        path: output ``.mcap`` file (parent directories are created).
        joint_names: names of the columns of ``q`` (URDF joint names).
        robot_description: URDF XML or a URDF/xacro file.  Then the recording holds
            ``/robot_description`` (std_msgs/String, transient local, like
            robot_state_publisher's), ``/tf_static`` with every fixed joint and, in every
            ``/tf`` message, every movable joint: a viewer sees the whole robot.  The base
            frame must be the URDF's root link and ``joint_names`` its movable joints.
        frame_ids: ``(odom_frame, base_frame)``; default ``odom`` and the URDF root link (or
            ``base_link`` without a robot description).
        base_iota: maps V (b) to the 6-twist ``[v; omega]``; see :func:`base_iota_matrix`.
        static_tf: extra constant ``(parent, child, 4x4)`` transforms for ``/tf_static``.
        rate_hz: record at most this many samples per simulated second (the first sample at
            or after each grid time, as :func:`select_samples`); None records every sample.
        time_offset_s: added to every stamp.
        overwrite: replace an existing file (otherwise FileExistsError); a symbolic link at
            ``path`` is replaced, never written through.
        flush_interval: most wall-clock seconds between chunks written to disk.
        target_marker: a capture target's shape (visualization_msgs/Marker in the target's
            frame), written once on ``/target/marker`` (transient local) with the first
            sample; its pose comes with the samples (``extra_tf``).  Viewers draw it.
    """

    def __init__(self, path: str | os.PathLike, joint_names: Sequence[str], *,
                 robot_description: str | os.PathLike | None = None,
                 frame_ids: Any = None, base_iota: Any = None,
                 static_tf: Sequence[tuple[str, str, Any]] | None = None,
                 rate_hz: float | None = None, time_offset_s: float = 0.0,
                 overwrite: bool = True, flush_interval: float = 1.0,
                 target_marker: Any = None):
        path = _output_path(path, overwrite)
        if rate_hz is not None and not (isinstance(rate_hz, (int, float, np.number))
                                        and math.isfinite(rate_hz) and rate_hz > 0):
            raise ValueError(f"rate_hz must be a finite positive number, got {rate_hz!r}")
        self.names = [str(s) for s in joint_names]
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"joint_names has duplicates: {self.names}")
        self.tree = None if robot_description is None else UrdfTree(robot_description)
        if frame_ids is None:
            frame_ids = ("odom", self.tree.root if self.tree else "base_link")
        self.odom, self.base = frame_pair(frame_ids)
        self._static = self._static_transforms(static_tf)
        self._base_iota = base_iota
        self._iota = None
        self.rate_hz = rate_hz
        self.offset_ns = rm.stamp_to_ns(time_offset_s)
        self.path = path
        self.counts = {topic: 0 for topic in ("/clock", "/joint_states", "/odom", "/tf")}
        from array import array
        self._indices = array("q")
        self._k = -1                 # index of the last sample offered
        self._t_last = None          # time of the last sample offered
        self._t_first = None
        self._slot = None
        self.start_ns = self.end_ns = None
        self._conns: dict[str, int] = {}
        self._closed = False
        self._info: RecordingInfo | None = None
        self._error: RecordingError | None = None
        self._on_disk = (0, None)        # samples in the file's finished chunks, the last's t
        self._t_recorded = None
        if target_marker is not None and \
                getattr(target_marker, "__msgtype__", None) != MARKER:
            raise ValueError(f"target_marker: expected a {MARKER}, got "
                             f"{type(target_marker).__name__}")
        self._marker = target_marker
        self._open(flush_interval)

    def _static_transforms(self, static_tf: Any) -> list[tuple[str, str, np.ndarray]]:
        """The ``/tf_static`` transforms: the robot description's fixed joints (after checking
        that it matches the base frame and ``joint_names``) and the extra ``static_tf``."""
        statics: list[tuple[str, str, np.ndarray]] = []
        if self.tree is not None:
            if self.base != self.tree.root:
                raise ValueError(f"frame_ids: base frame {self.base!r} is not the root link "
                                 f"{self.tree.root!r} of the robot description")
            missing = [j for j in self.tree.position_joints if j not in self.names]
            unknown = [j for j in self.names if j not in self.tree.position_joints]
            if missing or unknown:
                raise ValueError(f"joint_names do not match the robot description: "
                                 f"missing {missing}, not movable joints of the URDF {unknown}")
            statics += self.tree.static_transforms()
        for k, item in enumerate(static_tf or ()):
            try:
                parent, child, G = item
            except (TypeError, ValueError) as exc:
                raise ValueError(f"static_tf[{k}] must be (parent, child, 4x4)") from exc
            statics.append((parent, child, rm.check_rigid_transform(
                np.asarray(G, dtype=float), name=f"static_tf[{k}] {parent}->{child}")))
        return statics

    def _open(self, flush_interval: float) -> None:
        """Create the file with its schemas and channels (one per topic, with its QoS)."""
        path = self.path
        topics = list(self.counts)
        if self._static:
            topics.append("/tf_static")
        if self.tree is not None:
            topics.append("/robot_description")
        if self._marker is not None:
            topics.append("/target/marker")
        self._topics = []
        for topic in topics:
            if topic == "/robot_description":
                msgtype, depth, latched = STRING, 1, True
            elif topic == "/target/marker":
                msgtype, depth, latched = MARKER, 1, True
            else:
                msgtype, depth, latched = TOPIC_QOS[topic]
            self._topics.append((topic, msgtype, [bag_qos(depth, latched)]))
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._writer = McapStreamWriter(path, profile="ros2", library=LIBRARY,
                                            flush_interval=flush_interval)
            schemas: dict[str, int] = {}
            for topic, msgtype, qos in self._topics:
                if msgtype not in schemas:
                    msgdef, _ = rm.TYPESTORE.generate_msgdef(msgtype, ros_version=2)
                    encoding = ("ros2idl" if msgdef.startswith("=" * 80 + "\nIDL: ")
                                else "ros2msg")
                    schemas[msgtype] = self._writer.add_schema(msgtype, encoding,
                                                               msgdef.encode())
                self._conns[topic] = self._writer.add_channel(
                    schemas[msgtype], topic, "cdr", {"offered_qos_profiles": qos_yaml(qos)})
        except OSError as exc:
            self._closed = True
            _unlink(path)
            raise RecordingError(path, exc, 0, None) from None

    # ------------------------------------------------------------------ writing
    def _put(self, topic: str, ns: int, msg: Any) -> None:
        self._writer.write(self._conns[topic], ns, rm.serialize(msg))
        self.counts[topic] = self.counts.get(topic, 0) + 1

    def _failed(self, exc: OSError) -> RecordingError:
        """The error of a failed write; the recorder takes no more samples."""
        if self._error is None:
            self._error = RecordingError(self.path, exc, *self._on_disk)
        return self._error

    @property
    def error(self) -> RecordingError | None:
        """The failed write's error, or None."""
        return self._error

    @property
    def samples_on_disk(self) -> tuple[int, float | None]:
        """``(samples, t of the last)`` in the file's finished chunks: what a reader of the
        file sees now (and what a killed run keeps)."""
        return self._on_disk

    def __call__(self, state: Any) -> bool:
        """Record a :class:`~vm_dynamics.sim.simulate.State` (``vm.simulate`` callback); returns
        False (never asks the run to stop)."""
        self.add(state.t, state.g, state.V, state.q, state.qd)
        return False

    def add(self, t: float, g: Any, V: Any, q: Any, qd: Any, effort: Any = None,
            extra_tf: Sequence[tuple[str, str, Any]] = ()) -> bool:
        """Offer one sample: time [s], base pose (4x4), body velocity (b), joint positions and
        velocities (n), optional efforts (n) and extra ``(parent, child, 4x4)`` for ``/tf``.
        Returns True if it was recorded (False if ``rate_hz`` skips it)."""
        if self._closed:
            raise ValueError("recorder is closed")
        if self._error is not None:
            raise self._error
        t = float(t)
        k = self._k + 1
        if not math.isfinite(t):
            raise ValueError(f"t contains NaN/Inf at sample {k}")
        if self._t_last is not None and not t > self._t_last:
            raise ValueError(f"t must be strictly increasing (t[{k}] = {t!r} <= "
                             f"t[{k - 1}] = {self._t_last!r})")
        n = len(self.names)
        g = rm.check_rigid_transform(checked_array(g, (4, 4), f"g at sample {k}"), name="g")
        V = np.atleast_1d(checked_array(np.zeros(0) if V is None else V, (None,), f"V at sample {k}"))
        if self._iota is None:
            self._iota = base_iota_matrix(self._base_iota, V.shape[0])
        elif V.shape[0] != self._iota.shape[1]:
            raise ValueError(f"V at sample {k} has {V.shape[0]} entries, earlier samples "
                             f"{self._iota.shape[1]}")
        q = checked_array(np.zeros(0) if q is None and n == 0 else q, (n,), f"q at sample {k}")
        qd = checked_array(np.zeros(0) if qd is None and n == 0 else qd, (n,), f"qd at sample {k}")
        eff = None if effort is None else checked_array(effort, (n,), f"effort at sample {k}")
        self._k, self._t_last = k, t
        if self._t_first is None:
            self._t_first = t
        if self.rate_hz is not None:
            slot = math.floor((t - self._t_first) * self.rate_hz + 1e-9)
            if slot == self._slot:
                return False
            self._slot = slot
        ns = rm.stamp_to_ns(t) + self.offset_ns
        stamp = rm.ns_to_time_msg(ns)
        tf = rm.tf_msg(stamp, [(self.odom, self.base, g)] + list(extra_tf))
        if self.tree is not None:
            tf.transforms[1:1] = [_transform_stamped(stamp, *item) for item in
                                  self.tree.moving_transforms_pq(dict(zip(self.names, q)))]
        try:
            if self.start_ns is None:
                if self.tree is not None:
                    self._put("/robot_description", ns,
                              rm.TYPESTORE.types[STRING](data=self.tree.xml))
                if self._static:
                    self._put("/tf_static", ns, rm.tf_msg(stamp, self._static))
                if self._marker is not None:
                    self._put("/target/marker", ns, self._marker)
            self._put("/clock", ns, rm.clock_msg(stamp))
            self._put("/joint_states", ns, rm.joint_state_msg(stamp, self.names, q, qd, eff))
            self._put("/odom", ns, rm.odometry_msg(stamp, g, self._iota @ V, self.odom,
                                                  self.base))
            self._put("/tf", ns, tf)
            if self.start_ns is None:
                self.start_ns = ns
            self._indices.append(k)
            self.end_ns, self._t_recorded = ns, t
            if self._writer.maybe_flush():
                self._on_disk = (len(self._indices), t)
        except OSError as exc:
            raise self._failed(exc) from None
        return True

    def flush(self) -> None:
        """Write the samples recorded so far to the file now (one chunk; the recorder does so
        by itself every ``flush_interval`` seconds)."""
        if self._closed:
            raise ValueError("recorder is closed")
        if self._error is not None:
            raise self._error
        try:
            self._writer.flush()
        except OSError as exc:
            raise self._failed(exc) from None
        self._on_disk = (len(self._indices), self._t_recorded)

    # ------------------------------------------------------------------ closing
    def close(self) -> RecordingInfo:
        """Finish the file (the last chunk, the summary, the rosbag2 metadata); returns what
        was written.  A recorder that got no sample raises ValueError (an empty recording is
        not written).  After a failed write (raised by :meth:`add`) it finishes what the file
        keeps as far as the disk allows and reports the error in the returned info's
        ``error``; a first failure here raises :class:`RecordingError` (the file stays
        readable, with the samples of its finished chunks)."""
        if self._closed:
            if self._info is None:
                raise ValueError("recorder was aborted")
            return self._info
        if self.start_ns is None:
            self.abort()
            raise ValueError("no sample was recorded; nothing to write")
        self._closed = True
        w = self._writer
        reported = self._error is not None          # add() has raised it already
        try:
            if self._error is None:
                w.flush()
                self._on_disk = (len(self._indices), self._t_recorded)
                w.add_metadata("rosbag2", {"serialized_metadata": rosbag2_metadata(
                    self.path.name, self.start_ns, self.end_ns, self.counts, self._topics)})
            w.close()
        except OSError as exc:
            self._failed(exc)
            try:
                w.close()
            except OSError:
                pass
            if self._on_disk[0] == 0:
                _unlink(self.path)
            self._info = self._kept_info()
            if reported:
                return self._info
            raise self._error from None
        self._info = self._kept_info()
        return self._info

    def _kept_info(self) -> RecordingInfo:
        """What the file holds: every sample, or after a failed write those on disk."""
        idx = np.frombuffer(self._indices, dtype=np.int64).astype(int)
        if self._error is None:
            return RecordingInfo(self.path, idx, dict(self.counts), self.start_ns, self.end_ns)
        kept, t = self._on_disk
        on_disk = self._writer.messages_on_disk
        counts = {topic: on_disk.get(cid, 0) for topic, cid in self._conns.items()}
        end = None if t is None else rm.stamp_to_ns(t) + self.offset_ns
        return RecordingInfo(self.path, idx[:kept], counts, self.start_ns if kept else None,
                             end, str(self._error))

    def abort(self) -> None:
        """Discard the recording (the file at ``path`` is removed)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.close()
        except OSError:
            pass
        finally:
            _unlink(self.path)

    def __enter__(self) -> 'McapRecorder':
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None or issubclass(exc_type, KeyboardInterrupt):
            if self.start_ns is not None:
                self.close()
                return
        self.abort()


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _checked_trajectory(t: Any, g: Any, V: Any, q: Any, qd: Any, joint_names: Sequence[str],
                        effort: Any, base_iota: Any) -> tuple:
    """The arrays of :func:`write_mcap` checked (shapes, finite, t strictly increasing, rigid
    poses): ``(t, g, V, q, qd, effort or None, names)``."""
    t = checked_array(t, (None,), "t")
    N = t.shape[0]
    if N == 0:
        raise ValueError("t is empty; nothing to record")
    if N > 1 and np.any(np.diff(t) <= 0):
        k = int(np.flatnonzero(np.diff(t) <= 0)[0])
        raise ValueError(f"t must be strictly increasing (t[{k + 1}] = {t[k + 1]!r} <= "
                         f"t[{k}] = {t[k]!r})")
    g = rm.check_rigid_transform(checked_array(g, (N, 4, 4), "g"), name="g")
    V = np.zeros((N, 0)) if V is None else np.asarray(V, dtype=float)
    if V.ndim == 1 and V.shape[0] == N:
        V = V[:, None]  # b == 1 (e.g. a single-axis base with a 6x1 base_iota)
    V = checked_array(V, (N, None), "V")
    base_iota_matrix(base_iota, V.shape[1])
    names = [str(s) for s in joint_names]
    n = len(names)
    q = joint_array(q, N, n, "q")
    qd = joint_array(qd, N, n, "qd")
    eff = None if effort is None else joint_array(effort, N, n, "effort")
    return t, g, V, q, qd, eff, names


def _split_extra_tf(extra_tf: Any, N: int) -> tuple[list, list]:
    """``extra_tf`` of :func:`write_mcap` checked and split into constant ``(parent, child,
    4x4)`` transforms (for ``/tf_static``) and per-sample ones (``(N, 4, 4)``, for ``/tf``)."""
    dyn_tf: list[tuple[str, str, np.ndarray]] = []
    static_tf: list[tuple[str, str, np.ndarray]] = []
    for k, item in enumerate(extra_tf or ()):
        try:
            parent, child, G = item
        except (TypeError, ValueError) as exc:
            raise ValueError(f"extra_tf[{k}] must be (parent, child, G)") from exc
        G = np.asarray(G, dtype=float)
        if G.shape == (4, 4):
            static_tf.append((parent, child, rm.check_rigid_transform(
                G, name=f"extra_tf[{k}] {parent}->{child}")))
        elif G.shape == (N, 4, 4):
            dyn_tf.append((parent, child, rm.check_rigid_transform(
                G, name=f"extra_tf[{k}] {parent}->{child}")))
        else:
            raise ValueError(f"extra_tf[{k}] ({parent}->{child}) must have shape (4, 4) or "
                             f"({N}, 4, 4), got {G.shape}")
    return static_tf, dyn_tf


def write_mcap(path: str | os.PathLike, t: Any, g: Any, V: Any, q: Any, qd: Any,
               joint_names: Sequence[str], effort: Any = None,
               frame_ids: Any = None,
               extra_tf: Sequence[tuple[str, str, Any]] | None = None,
               base_iota: Any = None, decimate: int | None = None,
               rate_hz: float | None = None, time_offset_s: float = 0.0,
               overwrite: bool = True,
               robot_description: str | os.PathLike | None = None,
               target_marker: Any = None) -> RecordingInfo:
    """Write a simulated trajectory as a ROS 2 MCAP recording (single file at ``path``).

    Args:
        path: output file, e.g. ``<out_dir>/trajectory.mcap`` (parent dirs are created).
        t: (N,) strictly increasing simulation time [s].
        g: (N, 4, 4) base pose (``base_link`` in ``odom``).
        V: (N, b) base velocity in the body frame; mapped to the 6-twist ``[v; omega]``
            by ``base_iota`` (6 x b array, a VehicleGroup, or 'SE3' | 'SE2' | 'SO3' |
            'fixed'; default for b == 6 is identity and for b == 0 zero).
        q, qd: (N, n) joint positions [rad or m] and velocities.
        joint_names: n names (URDF joint names, for robot_state_publisher).
        effort: optional (N, n) joint efforts [N m or N].
        frame_ids: ``(odom_frame, base_frame)`` (or a mapping with keys 'odom', 'base');
            default ``odom`` and the URDF root link (``base_link`` without a description).
        extra_tf: extra ``(parent, child, G)`` transforms; ``G`` of shape (N, 4, 4) is
            added to every ``/tf`` message, ``G`` of shape (4, 4) is written once on
            ``/tf_static`` (transient local).
        decimate / rate_hz: record every k-th sample / at most ``rate_hz`` samples per
            second (see :func:`select_samples`).
        time_offset_s: added to every stamp (e.g. 1.0 to avoid a zero sim time,
            which ROS treats as "unset").
        overwrite: replace an existing file (otherwise FileExistsError).
        robot_description: URDF XML or URDF/xacro file: adds ``/robot_description`` and the
            TF of every link (see :class:`McapRecorder`).
        target_marker: a capture target's shape (visualization_msgs/Marker in its frame, whose
            pose ``extra_tf`` gives), written once on ``/target/marker`` (:class:`McapRecorder`).

    Returns:
        :class:`RecordingInfo` with the recorded sample indices and per-topic counts.
    """
    path = _output_path(path, overwrite)
    t, g, V, q, qd, eff, names = _checked_trajectory(t, g, V, q, qd, joint_names, effort,
                                                     base_iota)
    if frame_ids is not None:
        frame_pair(frame_ids)
    static_tf, dyn_tf = _split_extra_tf(extra_tf, t.shape[0])

    idx = select_samples(t, decimate=decimate, rate_hz=rate_hz)
    offset_ns = rm.stamp_to_ns(time_offset_s)
    rm.ns_to_time_msg(rm.stamp_to_ns(float(t[idx[0]])) + offset_ns)
    rm.ns_to_time_msg(rm.stamp_to_ns(float(t[idx[-1]])) + offset_ns)  # range check up front

    rec = McapRecorder(path, names, robot_description=robot_description, frame_ids=frame_ids,
                       base_iota=base_iota, static_tf=static_tf, time_offset_s=time_offset_s,
                       overwrite=overwrite, target_marker=target_marker)
    try:
        for i in idx:
            rec.add(t[i], g[i], V[i], q[i], qd[i], None if eff is None else eff[i],
                    [(p, c, G[i]) for p, c, G in dyn_tf])
    except BaseException:
        rec.abort()
        raise
    info = rec.close()
    return info._replace(indices=idx)
