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

import io
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from ..core import lie
from ..model.hydrodynamics import Hydrodynamics, load_hydrodynamics
from ..model.model import Model, load_model
from ..model.mounting import model_options
from ..model.urdf import resolve_package_path

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


#: Largest parameter file read (bytes): the shipped scenarios are ~2 kB.
MAX_PARAMS_FILE_BYTES = 4 * 1024 * 1024


class _NoAliasLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that rejects aliases (``*name``), as rcl's parameter parser does.

    An alias bomb (anchors referring to anchors) would otherwise expand to gigabytes."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"aliases ('*{event.anchor}') are not supported in parameter files "
                "(ROS 2 rejects them too)", event.start_mark)
        return super().compose_node(parent, index)


def read_params_file(path) -> dict:
    """Return the ``ros__parameters`` of the ``/**`` (or first) node in a ROS 2 params file.

    YAML aliases are rejected (as by rcl) and the file may be at most
    :data:`MAX_PARAMS_FILE_BYTES` long; every problem is a ``ValueError`` naming the file."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_PARAMS_FILE_BYTES + 1)
        if len(text) > MAX_PARAMS_FILE_BYTES:
            raise ValueError(f"{path}: larger than {MAX_PARAMS_FILE_BYTES} bytes; not a "
                             f"parameter file")
        stream = io.StringIO(text)
        stream.name = str(path)                        # YAML errors quote the file
        doc = yaml.load(stream, Loader=_NoAliasLoader)   # noqa: S506 - a SafeLoader subclass
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(doc, dict) or not doc:
        raise ValueError(f"{path}: expected a ROS 2 parameter file ('/**: ros__parameters: ...')")
    node = doc.get("/**", next(iter(doc.values())))
    if not isinstance(node, dict) or "ros__parameters" not in node:
        raise ValueError(f"{path}: missing 'ros__parameters' under '/**'")
    params = node["ros__parameters"]
    if not isinstance(params, dict):
        raise ValueError(f"{path}: 'ros__parameters' must be a mapping")
    return params


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
            f = _number(self.input, "frequency", 0.5, nonnegative=True)
            ph = _vector(self.input.get("phase", [0.0] * n), n, "input.phase")
            return a * np.sin(2 * np.pi * f * t + ph)
        raise ValueError(f"input.type: unknown {_short(kind)}; use none, constant or sinusoid")

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
            w = 2 * np.pi * _number(p, "frequency", 0.5, nonnegative=True)
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
                                 f"0..{n - 1}, got {_short(jl)}")
            i, j = jl
            r = _number(p, "amplitude", 1.0)
            T = _number(p, "period", 10.0, positive=True)

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
        raise ValueError(f"prescribed.type: unknown {_short(kind)}; use sinusoid or wheel_loop")


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
                         f"{lie.MAX_MAGNITUDE:g}), got {_short(x)}")
    return a


def _short(x, limit: int = 80) -> str:
    """``repr(x)`` cut to ``limit`` characters (error messages stay one short line)."""
    r = repr(x)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def _number(params: dict, key: str, default, *, positive: bool = False,
            nonnegative: bool = False) -> float:
    """A finite real parameter; strings are read like C ``strtod`` reads them in ROS (so
    ``1e-3`` works although YAML 1.1 calls it a string).  ``ValueError`` naming ``key``."""
    v = params.get(key, default)
    x = None
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            x = None
    elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        x = float(v)
    if x is None or not np.isfinite(x):
        raise ValueError(f"{key}: expected a finite number, got {_short(v)}")
    if positive and not x > 0:
        raise ValueError(f"{key}: must be positive, got {x:g}")
    if nonnegative and not x >= 0:
        raise ValueError(f"{key}: must be >= 0, got {x:g}")
    return x


def _mapping(params: dict, key: str) -> dict | None:
    """The mapping under ``key`` (None if absent or empty); anything else is a ``ValueError``."""
    v = params.get(key)
    if v is None or v == {}:
        return None
    if not isinstance(v, dict):
        raise ValueError(f"{key}: expected a mapping of names to values, got "
                         f"{type(v).__name__} {_short(v)}")
    return v


def apply_overrides(params: dict, overrides: dict | None) -> dict:
    """A deep copy of nested ``params`` with ``overrides`` applied.

    An override's name is a ROS parameter name: a dotted name (``controller.kp``,
    ``initial.joint_positions``) sets the nested key, creating the mappings on the way; a
    plain name replaces the top-level key.  Setting a key under a value that is not a
    mapping is a ``ValueError`` naming both."""
    import copy
    out = copy.deepcopy(params)
    for name, value in (overrides or {}).items():
        parts = str(name).split(".")
        if not all(parts):
            raise ValueError(f"{name!r}: not a parameter name (empty component)")
        node = out
        for i, part in enumerate(parts[:-1]):
            nxt = node.get(part)
            if nxt is None:
                nxt = node[part] = {}
            elif not isinstance(nxt, dict):
                raise ValueError(f"{name}: {'.'.join(parts[:i + 1])} is not a mapping "
                                 f"(it is {_short(nxt)})")
            node = nxt
        node[parts[-1]] = value
    return out


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
        raise ValueError(f"scenario: expected a non-empty name, got {_short(name)}")
    description = params.get("description", "")
    urdf_dir = share_dir() / "urdf"
    rd = params.get("robot_description_file")
    if rd is None:
        raise ValueError(f"{path}: missing 'robot_description_file'")
    if not isinstance(rd, str) or not rd:
        raise ValueError(f"robot_description_file: expected a file name, got {_short(rd)}")
    urdf_path = (Path(resolve_package_path(rd)) if rd.startswith("package://")
                 else Path(rd) if Path(rd).is_absolute() else urdf_dir / rd)
    base = params.get("base_type", "SE3")
    gravity = params.get("gravity", [0.0, 0.0, -9.81])
    if not isinstance(base, str):
        raise ValueError(f"base_type: expected SE3, SE2, SO3 or fixed, got {_short(base)}")
    gravity = _vector(gravity, 3, "gravity")
    integrator = params.get("integrator", "rkmk4")
    if integrator not in METHODS:
        raise ValueError(f"integrator: unknown {_short(integrator)}; choose one of "
                         f"{', '.join(METHODS)}")
    dt = _number(params, "dt", 1e-3, positive=True)
    duration = _number(params, "duration", 10.0, positive=True)
    if dt > duration:
        raise ValueError(f"dt: the step {dt:g} s is longer than the duration {duration:g} s")
    steps = duration / dt
    if steps > MAX_STEPS:
        raise ValueError(f"dt: {duration:g} s in steps of {dt:g} s is {steps:.3g} steps; at "
                         f"most {MAX_STEPS} per run (increase dt or shorten the duration)")
    init = _mapping(params, "initial") or {}
    input_ = _mapping(params, "input") or {}
    prescribed = _mapping(params, "prescribed")
    ctrl = _mapping(params, "controller")
    reference = _mapping(params, "reference")
    hf = params.get("hydrodynamics_file")
    if hf is not None and not isinstance(hf, str):
        raise ValueError(f"hydrodynamics_file: expected a file name, got {_short(hf)}")

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
        reference=_unflatten_reference(reference, n),
        input=dict(input_), prescribed=dict(prescribed) if prescribed else None,
    )
    # evaluate the open-loop sections once, so that their errors surface now
    from ..sim.simulate import State
    state0 = State(0.0, g0, V0, q0, qd0)
    scn.open_loop_torque(0.0, state0)
    motion = scn.prescribed_motion()
    if motion is not None:
        motion(0.0)
    return scn
