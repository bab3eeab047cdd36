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

from ..core import lie
from .params import (apply_overrides, mapping, number, read_params_file, short,
                     unflatten_reference)
from ..model.hydrodynamics import Hydrodynamics, load_hydrodynamics
from ..model.model import Model, load_model
from ..model.mounting import model_options
from ..model.urdf import resolve_package_path

__all__ = ["Scenario", "load_scenario", "list_scenarios", "share_dir", "quat_xyzw_to_matrix"]


def share_dir() -> Path:
    """Directory holding ``config/``, ``urdf/``, ``launch/``, ``rviz/``.

    Looked up in order: ``$VM_DYNAMICS_SHARE``; the source checkout this module lives in; the
    install prefix (``<prefix>/share/vm_dynamics``, where ``pip install`` and colcon put
    ``data_files``); the ament index (``get_package_share_directory``) when ROS is present.
    """
    candidates = []
    if os.environ.get("VM_DYNAMICS_SHARE"):
        candidates.append(Path(os.environ["VM_DYNAMICS_SHARE"]))
    package = Path(__file__).resolve().parents[1]                     # .../vm_dynamics
    candidates.append(package.parent)                                 # source checkout
    if len(package.parents) > 3:                                      # <prefix>/lib/pythonX/site-packages
        candidates.append(package.parents[3] / "share" / "vm_dynamics")
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


def quat_xyzw_to_matrix(qxyzw, name: str = "quaternion") -> np.ndarray:
    """Rotation matrix of a ROS quaternion ``x, y, z, w`` (normalised; a zero, non-finite or
    wrongly sized quaternion raises ``ValueError`` naming ``name``)."""
    return lie.quaternion_to_matrix(qxyzw, name)


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
            f = number(self.input, "frequency", 0.5, nonnegative=True)
            ph = _vector(self.input.get("phase", [0.0] * n), n, "input.phase")
            return a * np.sin(2 * np.pi * f * t + ph)
        raise ValueError(f"input.type: unknown {short(kind)}; use none, constant or sinusoid")

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
            w = 2 * np.pi * number(p, "frequency", 0.5, nonnegative=True)
            ph = _vector(p.get("phase", [0.0] * n), n, "prescribed.phase")

            def motion(t):
                s = np.sin(w * t + ph) - np.sin(ph)
                return q0 + a * s, a * w * np.cos(w * t + ph), -a * w * w * np.sin(w * t + ph)
            return motion
        if kind == "wheel_loop":
            # A closed loop in the plane of two joint angles (paper 002's rotor path): a circle
            # of radius `amplitude` swept with a smooth (minimum-jerk) phase every `period`.
            jl = p.get("joints", [0, 1])
            if (not isinstance(jl, (list, tuple)) or len(jl) != 2
                    or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < n
                               for k in jl) or jl[0] == jl[1]):
                raise ValueError(f"prescribed.joints: expected two different joint indices in "
                                 f"0..{n - 1}, got {short(jl)}")
            i, j = jl
            r = number(p, "amplitude", 1.0)
            T = number(p, "period", 10.0, positive=True)

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
        raise ValueError(f"prescribed.type: unknown {short(kind)}; use sinusoid or wheel_loop")


def _vector(x, n, name) -> np.ndarray:
    """``x`` as ``n`` finite real numbers of magnitude <= ``lie.MAX_MAGNITUDE``, else a
    ``ValueError`` naming ``name``."""
    if x is None:
        raise ValueError(f"{name}: missing")
    try:
        raw = np.asarray(x)
        a = raw.astype(float).reshape(-1) if raw.dtype.kind in "fiu" else None
    except (TypeError, ValueError, OverflowError):
        a = None
    if a is None or a.shape != (n,) or not np.all(np.abs(a) <= lie.MAX_MAGNITUDE):
        raise ValueError(f"{name}: expected {n} finite numbers (|x| <= "
                         f"{lie.MAX_MAGNITUDE:g}), got {short(x)}")
    return a


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


#: Most integration steps (``duration / dt``) one scenario run may take: ``vm-sim`` keeps the
#: whole trajectory in memory (about 2 kB per step with its copies: 1.2 GB for 600 s at
#: dt = 1 ms), so 2·10⁶ steps stay within a few GB.
MAX_STEPS = 2_000_000


def load_scenario(name_or_path, overrides: dict | None = None) -> Scenario:
    """Load a scenario by name (``config/<name>.yaml``) or path and check every value.

    ``overrides`` maps parameter names to values (:func:`apply_overrides`: ``dt``,
    ``controller.kp``, ``initial.joint_positions``, ...).  Everything that can be checked
    without running is checked here -- types, lengths, finiteness, ``dt`` against
    ``duration`` and :data:`MAX_STEPS`, the ``input`` and ``prescribed`` sections evaluated at
    t = 0 -- so a bad value is a ``ValueError`` naming the parameter before any simulation.
    """
    from ..sim.integrators import METHODS
    path = scenario_path(name_or_path)
    params = apply_overrides(read_params_file(path), overrides)
    name = params.get("scenario", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"scenario: expected a non-empty name, got {short(name)}")
    description = params.get("description", "")
    urdf_dir = share_dir() / "urdf"
    rd = params.get("robot_description_file")
    if rd is None:
        raise ValueError(f"{path}: missing 'robot_description_file'")
    if not isinstance(rd, str) or not rd:
        raise ValueError(f"robot_description_file: expected a file name, got {short(rd)}")
    urdf_path = (Path(resolve_package_path(rd)) if rd.startswith("package://")
                 else Path(rd) if Path(rd).is_absolute() else urdf_dir / rd)
    base = params.get("base_type", "SE3")
    gravity = params.get("gravity", [0.0, 0.0, -9.81])
    if not isinstance(base, str):
        raise ValueError(f"base_type: expected SE3, SE2, SO3 or fixed, got {short(base)}")
    gravity = _vector(gravity, 3, "gravity")
    integrator = params.get("integrator", "rkmk4")
    if integrator not in METHODS:
        raise ValueError(f"integrator: unknown {short(integrator)}; choose one of "
                         f"{', '.join(METHODS)}")
    dt = number(params, "dt", 1e-3, positive=True)
    duration = number(params, "duration", 10.0, positive=True)
    if dt > duration:
        raise ValueError(f"dt: the step {dt:g} s is longer than the duration {duration:g} s")
    steps = duration / dt
    if steps > MAX_STEPS:
        raise ValueError(f"dt: {duration:g} s in steps of {dt:g} s is {steps:.3g} steps; at "
                         f"most {MAX_STEPS} per run (increase dt or shorten the duration)")
    init = mapping(params, "initial") or {}
    input_ = mapping(params, "input") or {}
    prescribed = mapping(params, "prescribed")
    ctrl = mapping(params, "controller")
    reference = mapping(params, "reference")
    hf = params.get("hydrodynamics_file")
    if hf is not None and not isinstance(hf, str):
        raise ValueError(f"hydrodynamics_file: expected a file name, got {short(hf)}")

    model = load_model(str(urdf_path), base=base, gravity=gravity, **model_options(params))
    hydro = None
    if hf:
        hf = Path(hf)
        hydro = load_hydrodynamics(hf if hf.is_absolute() else urdf_dir / hf,
                                   gravity_magnitude=float(np.linalg.norm(model.gravity)))
        model = model.with_added_vehicle_inertia(hydro.added_mass)

    b, n = model.b, model.n
    R = quat_xyzw_to_matrix(init.get("base_orientation", [0, 0, 0, 1]),
                            "initial.base_orientation")
    g0 = lie.make_pose(R, _vector(init.get("base_position", [0, 0, 0]), 3, "initial.base_position"))
    V0 = _vector(init.get("base_twist", [0.0] * b), b, "initial.base_twist") if b else np.zeros(0)
    q0 = _vector(init.get("joint_positions", [0.0] * n), n, "initial.joint_positions")
    qd0 = _vector(init.get("joint_velocities", [0.0] * n), n, "initial.joint_velocities")
    unknown = sorted(set(init) - {"base_position", "base_orientation", "base_twist",
                                  "joint_positions", "joint_velocities"})
    if unknown:
        raise ValueError(f"initial.{unknown[0]}: unknown; the initial state has base_position, "
                         f"base_orientation, base_twist, joint_positions, joint_velocities")
    scn = Scenario(
        name=name.strip(), description=str(description), params=params,
        urdf_path=urdf_path, model=model, g0=g0, V0=V0, q0=q0, qd0=qd0, dt=dt,
        duration=duration, integrator=integrator,
        hydrodynamics=hydro, controller=dict(ctrl) if ctrl else None,
        reference=unflatten_reference(reference, n),
        input=dict(input_), prescribed=dict(prescribed) if prescribed else None,
    )
    # evaluate the open-loop sections once, so that their errors surface now
    from ..core.state import State
    state0 = State(0.0, g0, V0, q0, qd0)
    scn.open_loop_torque(0.0, state0)
    motion = scn.prescribed_motion()
    if motion is not None:
        motion(0.0)
    return scn
