"""``fake_arm_driver``: stands in for a real arm's driver in hardware-in-the-loop tests and demos.

    fake_arm_driver --ros-args --params-file config/satellite_wheels.yaml [-p rate:=1000.0]

Publishes ``sensor_msgs/JointState`` (positions and, unless ``publish_velocity`` is false,
velocities) on ``topic`` at ``rate`` Hz along a known path, stamped with the system clock at the
sample's time, as a driver does.  The path is ``path_file`` (``.npz`` with arrays ``t``, ``q``
and optionally ``qd`` and ``joint_names``, or ``.csv`` with a header ``t,<joint>,…``; cubic
Hermite between rows) or else the parameter file's ``prescribed`` section around
``initial.joint_positions`` (the satellite wheel loop, say).  Imperfections a real driver has,
all off by default: Gaussian position noise ``noise_std`` (rad or m; ``seed``), a delivery
``latency`` (s, the stamp stays the sample time), and drop-outs — every ``dropout_period``
seconds no sample is sent for ``dropout_duration`` seconds.  After ``duration`` seconds (0: the
path's length, or forever for a prescribed motion) it stops publishing and exits.

Samples are on an exact grid ``t_k = k / rate``: a late timer tick sends the samples it missed,
so the stamps are exact whatever the scheduling jitter (the arrival times carry the jitter).
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from ..config.params import parameter_defaults, unflatten
from ..config.sections import initial_state
from ..ros import messages as rm
from ..sim.measured import hermite
from .entry import run_node
from .joint_source import prescribed_from_params
from .parameters import DYNAMICS_PARAMETERS, ROBOT_PARAMETERS
from .robot import load_robot

__all__ = ["main", "FakeArmDriver", "NODE_NAME", "DRIVER_PARAMETERS", "load_path_file",
           "parameter_table"]

NODE_NAME = "fake_arm_driver"

DRIVER_PARAMETERS = {
    "topic": ("measured/joint_states", "JointState topic (the dynamics node's measured.topic)"),
    "rate": (1000.0, "samples per second"),
    "path_file": ("", ".npz (t, q[, qd, joint_names]) or .csv (t,<joint>,...) path; default: "
                  "the prescribed section"),
    "joint_names": ([], "names to publish, in the path's joint order; default: the model's"),
    "publish_velocity": (True, "include velocities (else the node differentiates positions)"),
    "noise_std": (0.0, "standard deviation of Gaussian position noise"),
    "seed": (0, "noise seed"),
    "latency": (0.0, "delivery delay (s); stamps stay the sample times"),
    "dropout_period": (0.0, "every this many seconds (0: never) ..."),
    "dropout_duration": (0.0, "... send nothing for this long (s)"),
    "duration": (0.0, "stop after this many seconds of path (0: the path's length, or forever)"),
    "start_delay": (0.5, "seconds before the first sample (lets subscribers match)"),
}


def parameter_table() -> dict:
    """Declared parameters: the robot's, the initial state and prescribed motion, the driver's."""
    table = dict(ROBOT_PARAMETERS)
    table.update({k: v for k, v in DYNAMICS_PARAMETERS.items()
                  if k.startswith(("initial.", "prescribed."))})
    table.update(DRIVER_PARAMETERS)
    return table


def load_path_file(path: str, n: int):
    """``(motion(t) -> (q, q̇), t_end, names or None)`` from an ``.npz`` or ``.csv`` file."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ValueError(f"path_file: file not found: {str(p)!r}")
    names = None
    if p.suffix == ".npz":
        with np.load(p, allow_pickle=False) as z:
            t, q = np.asarray(z["t"], float), np.asarray(z["q"], float)
            qd = np.asarray(z["qd"], float) if "qd" in z else None
            if "joint_names" in z:
                names = [str(x) for x in z["joint_names"]]
    elif p.suffix == ".csv":
        header = p.read_text().splitlines()[0].split(",")
        data = np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2)
        t, q, qd, names = data[:, 0], data[:, 1:], None, [h.strip() for h in header[1:]]
    else:
        raise ValueError(f"path_file: expected a .npz or .csv file, got {str(p)!r}")
    if t.ndim != 1 or len(t) < 2 or q.shape != (len(t), n) or not np.all(np.diff(t) > 0):
        raise ValueError(f"path_file: expected increasing times t (N ≥ 2) and positions q of "
                         f"shape (N, {n}); got t {t.shape}, q {q.shape}")
    if qd is None:
        qd = np.gradient(q, t, axis=0)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise ValueError("path_file: positions and velocities must be finite")

    def motion(tt):
        tt = min(max(tt, t[0]), t[-1])
        k = int(np.clip(np.searchsorted(t, tt, side="right") - 1, 0, len(t) - 2))
        return hermite(tt, t[k], q[k], qd[k], t[k + 1], q[k + 1], qd[k + 1])[:2]
    return motion, float(t[-1] - t[0]), names, float(t[0])


class FakeArmDriver:
    """Publishes the path's joint states on an exact sample grid (module docstring)."""

    def __init__(self, transport, params, wall=time.time):
        self.t, self.wall = transport, wall
        p = params
        robot = load_robot(p)
        m = robot.model
        self.rate = float(p["rate"])
        if not 0 < self.rate <= 10000:
            raise ValueError(f"rate: expected 0 < rate <= 10000 Hz, got {p['rate']!r}")
        names = list(m.joint_names)
        if p["path_file"]:
            motion, length, file_names, t0 = load_path_file(p["path_file"], m.n)
            self.motion = lambda tt: motion(tt + t0)
            names = file_names or names
        else:
            q0 = initial_state(unflatten(p, "initial"), m).q
            presc = prescribed_from_params(p, q0, "no path: set path_file or a prescribed "
                                           "section (prescribed.type ...)")
            self.motion = lambda tt: presc(tt)[:2]
            length = 0.0
        self.names = list(p["joint_names"] or names)
        if len(self.names) != m.n:
            raise ValueError(f"joint_names: expected {m.n} names, got {self.names}")
        self.duration = float(p["duration"]) or length
        self.velocity = bool(p["publish_velocity"])
        self.noise = float(p["noise_std"])
        self.rng = np.random.default_rng(int(p["seed"]))
        self.latency = float(p["latency"])
        self.drop_period, self.drop_len = float(p["dropout_period"]), float(p["dropout_duration"])
        for key in ("noise_std", "latency", "dropout_period", "dropout_duration", "duration",
                    "start_delay"):
            if not (np.isfinite(float(p[key])) and float(p[key]) >= 0):
                raise ValueError(f"{key}: expected a finite number >= 0, got {p[key]!r}")
        self.pub = transport.publisher(p["topic"], rm.JOINT_STATE, "default")
        self.start = self.wall() + float(p["start_delay"])
        self.k = 0
        self.sent = self.dropped = 0
        self.done = False
        transport.timer(min(1.0 / self.rate, 0.002), self.tick)

    def _dropped(self, tk: float) -> bool:
        """Whether the sample at ``tk`` falls in a drop-out ``[m·period, m·period + duration)``,
        m ≥ 1.  The phase is taken with a 1 ns tolerance: ``2.03 % 1.0`` is 0.0299999…, and a
        plain ``<`` would drop a fourth sample of a 0.03 s drop-out at 100 Hz (a 0.05 s gap)."""
        if self.drop_period <= 0 or tk < self.drop_period - 1e-9:
            return False
        phase = tk - self.drop_period * math.floor(tk / self.drop_period + 1e-9)
        return phase < self.drop_len - 1e-9

    def tick(self) -> None:
        if self.done:
            return
        now = self.wall() - self.start - self.latency
        while self.k / self.rate <= now:
            tk = self.k / self.rate
            self.k += 1
            if self.duration and tk > self.duration + 1e-9:
                self.done = True
                self.t.logger.info(f"path done after {tk:.3f} s: {self.sent} samples sent, "
                                   f"{self.dropped} dropped on purpose")
                self.t.shutdown()
                return
            if self._dropped(tk):
                self.dropped += 1
                continue
            q, qd = self.motion(tk)
            if self.noise:
                q = q + self.rng.normal(0.0, self.noise, q.shape)
            self.pub.publish(rm.joint_state_msg(self.start + tk, self.names, q,
                                                qd if self.velocity else None))
            self.sent += 1


def main(argv=None) -> int:
    argv = list(sys.argv if argv is None else argv)

    def start(transport):
        drv = FakeArmDriver(transport, transport.params)
        transport.logger.info(
            f"publishing {drv.names} on {transport.params['topic']} at {drv.rate:g} Hz"
            + (f", noise {drv.noise:g}" if drv.noise else "")
            + (f", latency {drv.latency:g} s" if drv.latency else "")
            + (f", drop-outs {drv.drop_len:g} s every {drv.drop_period:g} s"
               if drv.drop_period else ""))

    return run_node(NODE_NAME, lambda: parameter_defaults(parameter_table()), argv, start)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
