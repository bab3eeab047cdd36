"""Scenarios: a YAML file in ``config/`` plus a URDF/xacro in ``urdf/``, runnable by name.

A scenario file is also a ROS 2 parameter file: everything lives under
``/**: ros__parameters:`` so ``dynamics_node --ros-args --params-file config/<name>.yaml`` reads
the same file ``vm-sim <name>`` does.  Keys (nested maps become dotted ROS parameter names)::

    scenario: spacecraft_arm             # name
    description: "..."
    robot_description_file: spacecraft_arm.urdf.xacro   # relative to the package's urdf/
    robot_description_xacro: safe        # safe (default) | full (trusted files) | off
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.validation import MAX_MAGNITUDE, as_vector
from ..model.hydrodynamics import Hydrodynamics, load_hydrodynamics
from ..model.model import Model, load_model
from ..model.mounting import model_options
from ..model.urdf import DEFAULT_XACRO, read_urdf_source, resolve_package_path
from ..model.xacro_expansion import xacro_mode
from .params import apply_overrides, mapping, number, read_params_file, short, unflatten_reference
from .sections import (
    EffortInput,
    InitialState,
    PrescribedMotion,
    effort_input,
    initial_state,
    prescribed_motion,
)

__all__ = ["Scenario", "load_scenario", "list_scenarios", "share_dir", "InitialState", "EffortInput",
           "PrescribedMotion"]


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


@dataclass
class Scenario:
    """A loaded scenario: the model and every section parsed and checked (:mod:`.sections`).

    ``initial`` (:class:`~.sections.InitialState`), ``effort_input``
    (:class:`~.sections.EffortInput`, a callable ``(t, state) -> τ``), ``prescribed``
    (:class:`~.sections.PrescribedMotion` or None, a callable ``t -> (q, q̇, q̈)``),
    ``hydrodynamics`` (the environment), ``controller`` and ``reference`` (mappings for
    :func:`vm_dynamics.control.get_controller` and :func:`~vm_dynamics.control.reference_from_config`,
    joint waypoints already reshaped), ``params`` the whole parameter tree."""

    name: str
    description: str
    params: dict
    urdf_path: Path
    model: Model
    initial: InitialState
    dt: float
    duration: float
    integrator: str
    hydrodynamics: Hydrodynamics | None = None
    controller: dict | None = None
    reference: dict | None = None
    effort_input: EffortInput | None = None
    prescribed: PrescribedMotion | None = None
    xacro: str = DEFAULT_XACRO       # how urdf_path is expanded (robot_description_xacro)
    #: the force elements (``forces`` parameters, then the hydrodynamics' effects)
    forces: tuple = ()

    # the initial state by its short names
    g0 = property(lambda self: self.initial.g)
    V0 = property(lambda self: self.initial.V)
    q0 = property(lambda self: self.initial.q)
    qd0 = property(lambda self: self.initial.qd)

    @property
    def robot_description(self) -> str:
        """The URDF text of :attr:`model` for viewers and recordings: the file expanded as
        the scenario says (``robot_description_xacro``), with a ``vehicle`` or
        ``locked_joints`` the vehicle link and its mount spliced in and the locked joints fixed
        (:func:`~vm_dynamics.model.mounting.effective_urdf`)."""
        xml = read_urdf_source(str(self.urdf_path), xacro=self.xacro)[0]
        opts = model_options(self.params)
        if not (opts["locked_joints"] or opts["vehicle"]):
            return xml
        from ..model.mounting import effective_urdf
        return effective_urdf(xml, **opts)

    def environment_wrenches(self, t, state) -> tuple[np.ndarray, dict]:
        """The force elements' wrenches at ``state``: ``(vehicle b-vector, {frame: [f; n]})``
        (zero and empty without elements); see :func:`vm_dynamics.forces.total_wrenches`."""
        from ..forces import total_wrenches
        return total_wrenches(self.model, self.forces, state.g, state.V, state.q)

    def open_loop_torque(self, t, state) -> np.ndarray:
        """Joint efforts of the ``input`` section at ``t``."""
        return self.effort_input(t, state)

    def prescribed_motion(self):
        """``t -> (q, qd, qdd)`` of the ``prescribed`` section, or None."""
        return self.prescribed


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
    """Load a scenario by name (``config/<name>.yaml``) or path and check every value.

    ``overrides`` maps parameter names to values (:func:`apply_overrides`: ``dt``,
    ``controller.kp``, ``initial.joint_positions``, ...).  Everything that can be checked
    without running is checked here -- types, lengths, finiteness, ``dt`` against
    ``duration`` and the library's step limit (:data:`vm_dynamics.sim.simulate.MAX_STEPS`:
    ``vm-sim`` streams the recording and keeps a bounded number of samples, so memory does not
    limit it; it guards against a mistyped ``dt``), the ``input`` and ``prescribed`` sections evaluated at
    t = 0 -- so a bad value is a ``ValueError`` naming the parameter before any simulation.
    """
    from ..sim.integrators import METHODS
    from ..sim.simulate import MAX_STEPS
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
    xacro = xacro_mode(params.get("robot_description_xacro", DEFAULT_XACRO),
                       "robot_description_xacro")
    base = params.get("base_type", "SE3")
    gravity = params.get("gravity", [0.0, 0.0, -9.81])
    if not isinstance(base, str):
        raise ValueError(f"base_type: expected SE3, SE2, SO3 or fixed, got {short(base)}")
    gravity = as_vector(gravity, 3, "gravity", limit=MAX_MAGNITUDE)
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
    init = mapping(params, "initial")
    input_ = mapping(params, "input") or {}
    prescribed = mapping(params, "prescribed")
    ctrl = mapping(params, "controller")
    reference = mapping(params, "reference")
    hf = params.get("hydrodynamics_file")
    if hf is not None and not isinstance(hf, str):
        raise ValueError(f"hydrodynamics_file: expected a file name, got {short(hf)}")

    model = load_model(str(urdf_path), base=base, gravity=gravity, xacro=xacro,
                       **model_options(params))
    hydro = None
    if hf:
        hf = Path(hf)
        hydro = load_hydrodynamics(hf if hf.is_absolute() else urdf_dir / hf,
                                   gravity_magnitude=float(np.linalg.norm(model.gravity)))
        model = model.with_added_vehicle_inertia(hydro.added_mass)

    scn = Scenario(
        name=name.strip(), description=str(description), params=params,
        urdf_path=urdf_path, model=model, initial=initial_state(init, model), dt=dt,
        duration=duration, integrator=integrator,
        hydrodynamics=hydro, controller=dict(ctrl) if ctrl else None,
        reference=unflatten_reference(reference, model.n),
        effort_input=effort_input(input_, model.n), xacro=xacro,
    )
    from ..forces import as_elements, compile_forces, elements_from_config
    scn.forces = as_elements(elements_from_config(params.get("forces")), hydro)
    compile_forces(model, scn.forces)           # unknown frames or links surface now
    scn.prescribed = prescribed_motion(prescribed, scn.q0)
    if scn.prescribed is not None:      # evaluate once, so that its errors surface now
        scn.prescribed(0.0)
    return scn
