"""Scenarios: a YAML file in ``config/`` plus a URDF/xacro in ``urdf/``, runnable by name.

A scenario file is also a ROS 2 parameter file: everything lives under
``/**: ros__parameters:`` so ``dynamics_node --ros-args --params-file config/<name>.yaml`` reads
the same file ``vm-sim <name>`` does.  Keys (nested maps become dotted ROS parameter names)::

    scenario: spacecraft_arm             # name
    description: "..."
    robot_description_file: spacecraft_arm.urdf.xacro   # next to this file, else urdf/
    robot_description_xacro: safe        # safe (default) | full (trusted files) | off
    base_type: SE3                       # SE3 | SE2 | SO3 | fixed
    gravity: [0.0, 0.0, 0.0]             # inertial frame, m/s²
    integrator: rkmk4                    # rkmk4 | lie_euler | dopri5
    dt: 0.001
    duration: 10.0
    initial: {base_position, base_orientation (x y z w), base_twist (b, body frame),
              joint_positions, joint_velocities}
    hydrodynamics_file: uvms_hydrodynamics.yaml          # optional, looked up the same way
    forces: {tether: {kind: spring, frame: ee_link, point: [0.0, 0.0, 0.0],
             anchor: [1.0, 0.0, 0.0], stiffness: 50.0}}  # force elements, by name
    input: {type: none | constant | sinusoid, ...}      # open-loop joint efforts
    prescribed: {type: wheel_loop | sinusoid, ...}      # joints follow a motion exactly
    controller: {name: computed_torque, ...gains}       # closed loop (issue 4)
    reference: {...}                                    # see vm_dynamics.control.references

Every name, with its default and check, is in the scenario model
(:mod:`vm_dynamics.config.spec`), which vm-sim, both nodes and the launch files share.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..core.divergence import ENERGY_BALANCE_THRESHOLD
from ..model.hydrodynamics import Hydrodynamics
from ..model.model import Model, load_model
from ..model.mounting import model_options
from ..model.urdf import DEFAULT_XACRO, read_urdf_source, resolve_package_path
from .params import (
    apply_overrides,
    flatten,
    mapping,
    read_params_file,
    short,
    unflatten_reference,
)
from .sections import (
    EffortInput,
    InitialState,
    PrescribedMotion,
    effort_input,
    initial_state,
    prescribed_motion,
)
from .spec import (
    SCENARIO_FILE_PARAMETERS,
    checked_values,
    unknown_parameter_text,
    unknown_parameters,
)

__all__ = ["Scenario", "load_scenario", "list_scenarios", "share_dir", "scenario_path",
           "scenario_section", "find_file", "check_parameter_names", "InitialState", "EffortInput",
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
    divergence_threshold: float = ENERGY_BALANCE_THRESHOLD   # see core.divergence
    #: the force elements (``forces`` and ``two_body`` parameters, then the hydrodynamics'
    #: effects; a uniform_gravity element is in the model's gravity):
    #: :func:`vm_dynamics.config.forces.model_forces`, as the nodes read them
    forces: tuple = ()
    #: the reference orbit (``orbit`` section, :class:`~vm_dynamics.forces.orbit.ReferenceOrbit`)
    orbit: object = None
    #: the frame of the outputs: ``inertial`` or ``lvlh`` (the reference orbit's Hill frame)
    world_frame: str = "inertial"
    #: in orbit, the frame of the vehicle's pose reference: ``lvlh`` (station keeping) or
    #: ``inertial``
    orbit_reference_frame: str = "inertial"

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
    """The file of a scenario name (``config/<name>.yaml`` in :func:`share_dir`) or path
    (``.yaml``/``.yml``); ``ValueError`` naming it, with the available names, if there is
    none.  The launch files look scenarios up with it too."""
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


def scenario_section(name_or_path, section: str) -> tuple[Path, dict] | None:
    """``(file, section)`` of a scenario whose parameters have the mapping ``section`` (a
    ``capture`` or ``constraints`` section: a scenario with its own runner), else None -- also
    for a name that is no readable scenario (the ordinary path then reports that)."""
    try:
        path = scenario_path(name_or_path)
        value = read_params_file(path).get(section)
    except ValueError:
        return None
    return (path, value) if isinstance(value, dict) else None


def find_file(value: str, name: str, folders=()) -> Path:
    """The file a parameter names: a ``package://`` URI; an absolute path; a relative path
    looked up in ``folders`` (the folder of the parameter file that names it) and then in the
    package's ``urdf/``.  ``ValueError`` naming the parameter and every place looked in."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name}: expected a file name or package:// URI, got {short(value)}")
    if value.startswith("package://"):
        return Path(resolve_package_path(value))
    p = Path(value).expanduser()
    candidates = [p] if p.is_absolute() else [Path(f) / p for f in folders] + [
        share_dir() / "urdf" / p]
    for c in candidates:
        if c.is_file():
            return c
    raise ValueError(f"{name}: file not found: {' nor '.join(repr(str(c)) for c in candidates)}")


def check_parameter_names(params: dict, where: str = "") -> None:
    """``ValueError`` listing the valid names if the (nested) ``params`` hold a name that is
    in no table of the scenario model (:func:`~vm_dynamics.config.spec.unknown_parameters`)."""
    unknown = unknown_parameters(flatten(params))
    if unknown:
        raise ValueError(f"{where}{unknown_parameter_text(unknown)}")


def load_scenario(name_or_path, overrides: dict | None = None) -> Scenario:
    """Load a scenario by name (``config/<name>.yaml``) or path and check every value.

    ``overrides`` maps parameter names to values (:func:`apply_overrides`: ``dt``,
    ``controller.kp``, ``initial.joint_positions``, ...).  Everything that can be checked
    without running is checked here -- every name against the scenario model
    (:mod:`vm_dynamics.config.spec`: a misspelled one is an error listing the valid names),
    types, lengths, finiteness, ``dt`` against ``duration`` and the library's step limit
    (:data:`vm_dynamics.sim.simulate.MAX_STEPS`: ``vm-sim`` streams the recording and keeps a
    bounded number of samples, so memory does not limit it; it guards against a mistyped
    ``dt``), the ``input`` and ``prescribed`` sections evaluated at t = 0 -- so a bad value is
    a ``ValueError`` naming the parameter before any simulation.  Relative file names
    (``robot_description_file``, ``hydrodynamics_file``) are looked up next to the scenario
    file first (:func:`find_file`).
    """
    path = scenario_path(name_or_path)
    params = apply_overrides(read_params_file(path), overrides)
    name = params.get("scenario", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"scenario: expected a non-empty name, got {short(name)}")
    if params.get("robot_description_file") is None:
        raise ValueError(f"{path}: missing 'robot_description_file'")
    if "constraints" in params:
        raise ValueError(f"{path.name} is a kinematically constrained scenario (its "
                         f"'constraints' section): vm-sim and diff_drive_node run it; in Python "
                         f"vm_dynamics.constraints.scenario.constrained_scenario(params, urdf)")
    if "capture" in params:
        raise ValueError(f"{path.name} is a capture scenario (its 'capture' section: a chaser "
                         f"and a target): vm-sim runs it; in Python "
                         f"vm_dynamics.capture.scenario.capture_scenario(params, urdf)")
    top = _top_level_values(params)
    sections = {key: mapping(params, key) for key in
                ("initial", "input", "prescribed", "controller", "reference")}
    check_parameter_names(params)
    folders = [path.resolve().parent]
    urdf_path = find_file(params["robot_description_file"], "robot_description_file", folders)
    model = load_model(str(urdf_path), base=top["base_type"], gravity=top["gravity"],
                       xacro=top["robot_description_xacro"], **model_options(params))
    from .forces import model_forces
    model, forces, hydro = model_forces(model, params, folders)

    ctrl = sections["controller"]
    scn = Scenario(
        name=name.strip(), description=str(params.get("description", "")), params=params,
        urdf_path=urdf_path, model=model, initial=initial_state(sections["initial"], model),
        dt=top["dt"], duration=top["duration"], integrator=top["integrator"],
        hydrodynamics=hydro, controller=dict(ctrl) if ctrl else None,
        reference=unflatten_reference(sections["reference"], model.n),
        effort_input=effort_input(sections["input"] or {}, model.n),
        xacro=top["robot_description_xacro"],
        divergence_threshold=top["divergence_threshold"], forces=forces,
    )
    _reference_orbit(scn, mapping(params, "orbit"), params.get("world_frame", "inertial"))
    scn.prescribed = prescribed_motion(sections["prescribed"], scn.q0)
    if scn.prescribed is not None:      # evaluate once, so that its errors surface now
        scn.prescribed(0.0)
    return scn


#: The top-level values vm-sim reads, checked by the scenario model's table.
def _reference_orbit(scn: Scenario, section: dict | None, world_frame) -> None:
    """Set ``scn.orbit``, ``scn.world_frame`` and ``scn.orbit_reference_frame`` from the
    ``orbit`` section (:func:`~.orbit_setup.orbit_setup`) and express an initial base pose and
    twist given relative to the LVLH frame (``orbit.initial_frame: lvlh``) inertially."""
    from .orbit_setup import orbit_setup
    setup = orbit_setup(scn.forces, section, world_frame,
                        scn.model.base_type)
    scn.orbit, scn.world_frame = setup.orbit, setup.world_frame
    scn.orbit_reference_frame = setup.reference_frame
    g, V = setup.initial_pose(scn.initial.g, scn.initial.V)
    scn.initial = replace(scn.initial, g=g, V=V)


_TOP_LEVEL = ("robot_description_xacro", "base_type", "gravity", "integrator", "dt", "duration",
              "hydrodynamics_file", "divergence_threshold")


def _top_level_values(params: dict) -> dict:
    """The values of :data:`_TOP_LEVEL` (defaults from the table) checked, and ``dt`` against
    ``duration`` and :data:`~vm_dynamics.sim.simulate.MAX_STEPS`."""
    from ..sim.simulate import MAX_STEPS
    values = {k: params.get(k, SCENARIO_FILE_PARAMETERS[k].default) for k in _TOP_LEVEL}
    top = checked_values(values, SCENARIO_FILE_PARAMETERS)
    dt, duration = top["dt"], top["duration"]
    if dt > duration:
        raise ValueError(f"dt: the step {dt:g} s is longer than the duration {duration:g} s")
    steps = duration / dt
    if steps > MAX_STEPS:
        raise ValueError(f"dt: {duration:g} s in steps of {dt:g} s is {steps:.3g} steps; at "
                         f"most {MAX_STEPS} per run (increase dt or shorten the duration)")
    return top
