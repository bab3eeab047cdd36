"""Scenarios: a YAML file in ``config/`` plus a URDF/xacro in ``urdf/``, runnable by name.

A scenario file is also a ROS 2 parameter file: everything lives under
``/**: ros__parameters:`` so ``dynamics_node --ros-args --params-file config/<name>.yaml`` reads
the same file ``vm-sim <name>`` does.  Keys (nested maps become dotted ROS parameter names)::

    scenario: spacecraft_arm             # name
    description: "..."
    robot_description_file: spacecraft_arm.urdf.xacro   # relative to the package's urdf/
    base_type: SE3                       # SE3 | SE2 | SO3 | fixed
    gravity: [0.0, 0.0, 0.0]             # inertial frame, m/s²
    integrator: rkmk4                    # rkmk4 | lie_euler | dopri5
    dt: 0.001
    duration: 10.0
    initial: {base_position, base_orientation (x y z w), base_twist (b, body frame),
              joint_positions, joint_velocities}
    hydrodynamics_file: uvms_hydrodynamics.yaml          # optional, relative to urdf/
    input: {type: none | constant | sinusoid, ...}      # open-loop joint efforts
    prescribed: {type: wheel_loop | sinusoid, ...}      # joints follow a motion exactly
    controller: {name: computed_torque, ...gains}       # closed loop (issue 4)
    reference: {...}                                    # see vm_dynamics.control.references
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from . import lie
from .hydrodynamics import Hydrodynamics, load_hydrodynamics
from .model import Model, load_model
from .mounting import model_options
from .urdf import resolve_package_path

__all__ = ["Scenario", "load_scenario", "list_scenarios", "share_dir", "quat_xyzw_to_matrix",
           "read_params_file"]


def share_dir() -> Path:
    """Directory holding ``config/``, ``urdf/``, ``launch/``, ``rviz/``.

    Looked up in order: ``$VM_DYNAMICS_SHARE``; the source checkout this module lives in; the
    install prefix (``<prefix>/share/vm_dynamics``, where ``pip install`` and colcon put
    ``data_files``); the ament index (``get_package_share_directory``) when ROS is present.
    """
    candidates = []
    if os.environ.get("VM_DYNAMICS_SHARE"):
        candidates.append(Path(os.environ["VM_DYNAMICS_SHARE"]))
    here = Path(__file__).resolve().parent
    candidates.append(here.parent)                                    # source checkout
    if len(here.parents) > 3:                                         # <prefix>/lib/pythonX/site-packages
        candidates.append(here.parents[3] / "share" / "vm_dynamics")
    candidates.append(Path(sys.prefix) / "share" / "vm_dynamics")
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            candidates.append(Path(prefix) / "share" / "vm_dynamics")
    try:  # pragma: no cover - only with ROS
        from ament_index_python.packages import get_package_share_directory
        candidates.append(Path(get_package_share_directory("vm_dynamics")))
    except Exception:
        pass
    for c in candidates:
        if (c / "config").is_dir() and (c / "urdf").is_dir():
            return c
    raise ValueError("cannot find the vm_dynamics share directory (config/, urdf/); "
                     "set VM_DYNAMICS_SHARE")


def read_params_file(path) -> dict:
    """Return the ``ros__parameters`` of the ``/**`` (or first) node in a ROS 2 params file."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(doc, dict) or not doc:
        raise ValueError(f"{path}: expected a ROS 2 parameter file ('/**: ros__parameters: ...')")
    node = doc.get("/**", next(iter(doc.values())))
    if not isinstance(node, dict) or "ros__parameters" not in node:
        raise ValueError(f"{path}: missing 'ros__parameters' under '/**'")
    params = node["ros__parameters"]
    if not isinstance(params, dict):
        raise ValueError(f"{path}: 'ros__parameters' must be a mapping")
    return params


def quat_xyzw_to_matrix(qxyzw) -> np.ndarray:
    """Rotation matrix of a ROS quaternion ``x, y, z, w`` (normalised; zero norm rejected)."""
    x, y, z, w = np.asarray(qxyzw, dtype=float)
    n = np.sqrt(x * x + y * y + z * z + w * w)
    if not np.isfinite(n) or n < 1e-12:
        raise ValueError(f"quaternion {qxyzw!r} has zero or non-finite norm")
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@dataclass
class Scenario:
    name: str
    description: str
    params: dict
    urdf_path: Path
    model: Model
    g0: np.ndarray
    V0: np.ndarray
    q0: np.ndarray
    qd0: np.ndarray
    dt: float
    duration: float
    integrator: str
    hydrodynamics: Hydrodynamics | None = None
    controller: dict | None = None
    reference: dict | None = None
    input: dict = field(default_factory=dict)
    prescribed: dict | None = None

    # ---------------------------------------------------------------- open-loop inputs
    def external_base_wrench(self, t, state) -> np.ndarray:
        """Environment wrench on the vehicle (hydrodynamics), b-vector, body frame."""
        if self.hydrodynamics is None:
            return np.zeros(self.model.b)
        w6 = self.hydrodynamics.vehicle_wrench(state.g, self.model.group.embed(state.V),
                                               self.model.gravity)
        return self.model.group.project(w6)

    def external_frame_wrenches(self, t, state) -> dict:
        """Environment wrenches on links (arm-link buoyancy)."""
        if self.hydrodynamics is None:
            return {}
        key = (t, state.q.tobytes(), state.g.tobytes())
        cache = self.__dict__.setdefault("_link_wrench_cache", [None, None])
        if cache[0] != key:
            cache[0] = key
            cache[1] = self.hydrodynamics.link_wrenches(self.model, state.g, state.q)
        return cache[1]

    def open_loop_torque(self, t, state) -> np.ndarray:
        """Joint efforts of the ``input`` section (``none``, ``constant`` or ``sinusoid``)."""
        kind = self.input.get("type", "none")
        n = self.model.n
        if kind == "none":
            return np.zeros(n)
        if kind == "constant":
            return _vector(self.input.get("effort"), n, "input.effort")
        if kind == "sinusoid":
            a = _vector(self.input.get("amplitude"), n, "input.amplitude")
            f = float(self.input.get("frequency", 0.5))
            ph = _vector(self.input.get("phase", [0.0] * n), n, "input.phase")
            return a * np.sin(2 * np.pi * f * t + ph)
        raise ValueError(f"input.type: unknown {kind!r}; use none, constant or sinusoid")

    def prescribed_motion(self):
        """``t -> (q, qd, qdd)`` for the ``prescribed`` section, or None."""
        if not self.prescribed:
            return None
        p = self.prescribed
        kind = p.get("type")
        n = self.model.n
        q0 = self.q0.copy()
        if kind == "sinusoid":
            a = _vector(p.get("amplitude"), n, "prescribed.amplitude")
            w = 2 * np.pi * float(p.get("frequency", 0.5))
            ph = _vector(p.get("phase", [0.0] * n), n, "prescribed.phase")

            def motion(t):
                s = np.sin(w * t + ph) - np.sin(ph)
                return q0 + a * s, a * w * np.cos(w * t + ph), -a * w * w * np.sin(w * t + ph)
            return motion
        if kind == "wheel_loop":
            # A closed loop in the plane of two joint angles (paper 002's rotor path): a circle
            # of radius `amplitude` swept with a smooth (minimum-jerk) phase every `period`.
            i, j = (int(k) for k in p.get("joints", [0, 1]))
            r = float(p.get("amplitude", 1.0))
            T = float(p.get("period", 10.0))

            def motion(t):
                k, tau = divmod(t, T)
                s = tau / T
                phi = 2 * np.pi * (10 * s**3 - 15 * s**4 + 6 * s**5)
                dphi = 2 * np.pi * (30 * s**2 - 60 * s**3 + 30 * s**4) / T
                ddphi = 2 * np.pi * (60 * s - 180 * s**2 + 120 * s**3) / T**2
                q, qd, qdd = q0.copy(), np.zeros(n), np.zeros(n)
                q[i] += r * (1 - np.cos(phi))
                q[j] += r * np.sin(phi)
                qd[i] = r * np.sin(phi) * dphi
                qd[j] = r * np.cos(phi) * dphi
                qdd[i] = r * (np.cos(phi) * dphi**2 + np.sin(phi) * ddphi)
                qdd[j] = r * (-np.sin(phi) * dphi**2 + np.cos(phi) * ddphi)
                return q, qd, qdd
            return motion
        raise ValueError(f"prescribed.type: unknown {kind!r}; use sinusoid or wheel_loop")


def _vector(x, n, name) -> np.ndarray:
    if x is None:
        raise ValueError(f"{name}: missing")
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected {n} finite numbers, got {x!r}")
    return a


def _unflatten_reference(ref, n):
    """ROS parameters cannot hold nested lists: joint waypoint rows are written flat (k·n numbers
    for k times); reshape them to the k×n rows :mod:`vm_dynamics.control.references` takes."""
    if not isinstance(ref, dict):
        return ref
    ref = dict(ref)
    joint = ref.get("joint")
    if isinstance(joint, dict) and joint.get("type") == "waypoints":
        joint = dict(joint)
        k = len(joint.get("times", []))
        for key in ("positions", "velocities", "accelerations"):
            v = joint.get(key)
            if isinstance(v, list) and v and not isinstance(v[0], list):
                if len(v) != k * n:
                    raise ValueError(f"reference.joint.{key}: expected {k} rows of {n} numbers "
                                     f"({k * n} in all), got {len(v)}")
                joint[key] = [v[i * n:(i + 1) * n] for i in range(k)]
        ref["joint"] = joint
    return ref


def list_scenarios() -> list[tuple[str, str]]:
    """``[(name, description)]`` of the scenarios shipped in ``config/``."""
    out = []
    for path in sorted((share_dir() / "config").glob("*.yaml")):
        try:
            p = read_params_file(path)
        except ValueError:
            continue
        if "scenario" in p and "robot_description_file" in p:
            out.append((p["scenario"], str(p.get("description", ""))))
    return out


def scenario_path(name_or_path) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml"):
        if not p.is_file():
            raise ValueError(f"scenario file not found: {str(p)!r}")
        return p
    path = share_dir() / "config" / f"{name_or_path}.yaml"
    if not path.is_file():
        names = ", ".join(n for n, _ in list_scenarios())
        raise ValueError(f"unknown scenario {name_or_path!r}; available: {names}")
    return path


def load_scenario(name_or_path, overrides: dict | None = None) -> Scenario:
    """Load a scenario by name (``config/<name>.yaml``) or path; ``overrides`` replace top-level keys."""
    path = scenario_path(name_or_path)
    params = dict(read_params_file(path))
    params.update(overrides or {})
    name = str(params.get("scenario", path.stem))
    urdf_dir = share_dir() / "urdf"
    try:
        rd = params["robot_description_file"]
    except KeyError:
        raise ValueError(f"{path}: missing 'robot_description_file'") from None
    urdf_path = (Path(resolve_package_path(rd)) if str(rd).startswith("package://")
                 else Path(rd) if Path(rd).is_absolute() else urdf_dir / rd)
    base = params.get("base_type", "SE3")
    gravity = params.get("gravity", [0.0, 0.0, -9.81])
    model = load_model(str(urdf_path), base=base, gravity=gravity, **model_options(params))

    hydro = None
    if params.get("hydrodynamics_file"):
        hf = Path(params["hydrodynamics_file"])
        hydro = load_hydrodynamics(hf if hf.is_absolute() else urdf_dir / hf,
                                   gravity_magnitude=float(np.linalg.norm(model.gravity)))
        model = model.with_added_vehicle_inertia(hydro.added_mass)

    init = params.get("initial", {}) or {}
    b, n = model.b, model.n
    R = quat_xyzw_to_matrix(init.get("base_orientation", [0, 0, 0, 1]))
    g0 = lie.make_pose(R, _vector(init.get("base_position", [0, 0, 0]), 3, "initial.base_position"))
    V0 = _vector(init.get("base_twist", [0.0] * b), b, "initial.base_twist") if b else np.zeros(0)
    q0 = _vector(init.get("joint_positions", [0.0] * n), n, "initial.joint_positions")
    qd0 = _vector(init.get("joint_velocities", [0.0] * n), n, "initial.joint_velocities")
    dt = float(params.get("dt", 1e-3))
    duration = float(params.get("duration", 10.0))
    if not dt > 0:
        raise ValueError(f"dt must be positive, got {dt}")
    if not duration > 0:
        raise ValueError(f"duration must be positive, got {duration}")
    ctrl = params.get("controller")
    return Scenario(
        name=name, description=str(params.get("description", "")), params=params,
        urdf_path=urdf_path, model=model, g0=g0, V0=V0, q0=q0, qd0=qd0, dt=dt,
        duration=duration, integrator=str(params.get("integrator", "rkmk4")),
        hydrodynamics=hydro, controller=dict(ctrl) if ctrl else None,
        reference=_unflatten_reference(params.get("reference"), n),
        input=dict(params.get("input") or {}),
        prescribed=params.get("prescribed"),
    )
