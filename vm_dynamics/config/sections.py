"""Typed sections of a scenario, each parsed and checked once, at load time.

A scenario file (a ROS 2 parameter file, see :mod:`vm_dynamics.config.scenario`) has sections
that ``vm-sim``, both node cores and the viewer read the same way.  Each section here is a
frozen dataclass with its defaults and validators declared together (``*_PARAMETERS``:
``name: (default, description)``, also the node parameter tables), built by one parser:

* :class:`InitialState` — ``initial``: vehicle pose and twist, joint positions and velocities;
* :class:`EffortInput` — ``input``: open-loop joint efforts (none, constant, sinusoid), a
  callable ``(t, state) -> τ`` whose arrays are checked when the scenario loads, not at every
  Runge–Kutta stage;
* :class:`PrescribedMotion` — ``prescribed``: a joint motion ``t -> (q, q̇, q̈)`` (sinusoid, or the
  wheel loop of paper 002's geometric-phase study);
* :func:`resolve_controller_params` — ``controller``: the plug-in's parameters when a command
  line (``vm-sim --controller``, the node's ``controller`` parameter) selects another one.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..core import lie
from ..core.state import State
from ..core.validation import MAX_MAGNITUDE, as_vector
from .params import number, short

__all__ = ["INITIAL_PARAMETERS", "InitialState", "initial_state", "EffortInput",
           "effort_input", "PrescribedMotion", "prescribed_motion", "resolve_controller_params"]

#: The ``initial`` section: ``name: (default, description)``; an empty list means zero.
INITIAL_PARAMETERS = {
    "base_position": ([0.0, 0.0, 0.0], "initial vehicle position in odom, m"),
    "base_orientation": ([0.0, 0.0, 0.0, 1.0], "initial vehicle orientation, quaternion x y z w"),
    "base_twist": ([], "initial body twist [v; w] restricted to the subgroup (b numbers); "
                       "default zero"),
    "joint_positions": ([], "initial joint positions, URDF order; default zero"),
    "joint_velocities": ([], "initial joint velocities, URDF order; default zero"),
}


def _vec(x, n, name, default=None):
    return as_vector(x, n, name, default=default, limit=MAX_MAGNITUDE)


@dataclass(frozen=True)
class InitialState:
    """The state a run starts from: pose ``g`` (4×4), body twist ``V`` (b), ``q``, ``q̇`` (n)."""

    g: np.ndarray
    V: np.ndarray
    q: np.ndarray
    qd: np.ndarray

    def state(self, t: float = 0.0) -> State:
        return State(t, self.g, self.V, self.q, self.qd)


def initial_state(section: Mapping | None, model) -> InitialState:
    """Parse the ``initial`` section (nested, keys of :data:`INITIAL_PARAMETERS`) for ``model``.

    Missing keys take their defaults; unknown keys, wrong lengths, non-numbers, NaN/Inf and a
    quaternion that is not unit are a ``ValueError`` naming ``initial.<key>``."""
    section = dict(section or {})
    unknown = sorted(set(section) - set(INITIAL_PARAMETERS))
    if unknown:
        raise ValueError(f"initial.{unknown[0]}: unknown; the initial state has "
                         f"{', '.join(INITIAL_PARAMETERS)}")
    v = {k: section.get(k, default) for k, (default, _) in INITIAL_PARAMETERS.items()}
    b, n = model.b, model.n
    R = lie.quaternion_to_matrix(_vec(v["base_orientation"], 4, "initial.base_orientation",
                                      [0.0, 0.0, 0.0, 1.0]), "initial.base_orientation")
    g = lie.make_pose(R, _vec(v["base_position"], 3, "initial.base_position", [0.0] * 3))
    return InitialState(
        g=g,
        V=_vec(v["base_twist"], b, "initial.base_twist", [0.0] * b) if b else np.zeros(0),
        q=_vec(v["joint_positions"], n, "initial.joint_positions", [0.0] * n),
        qd=_vec(v["joint_velocities"], n, "initial.joint_velocities", [0.0] * n))


@dataclass(frozen=True)
class EffortInput:
    """Open-loop joint efforts of the ``input`` section: ``τ(t) = effort`` (constant) or
    ``amplitude · sin(2π·frequency·t + phase)`` (sinusoid); ``kind == "none"`` gives zeros.
    Call it as ``input(t, state)`` (the input-callable signature of :func:`vm_dynamics.simulate`)."""

    kind: str
    n: int
    effort: np.ndarray = field(default=None)
    amplitude: np.ndarray = field(default=None)
    frequency: float = 0.0
    phase: np.ndarray = field(default=None)

    @property
    def active(self) -> bool:
        return self.kind != "none"

    def __call__(self, t, state=None) -> np.ndarray:
        if self.kind == "constant":
            return self.effort.copy()
        if self.kind == "sinusoid":
            return self.amplitude * np.sin(2 * np.pi * self.frequency * t + self.phase)
        return np.zeros(self.n)


def effort_input(section: Mapping | None, n: int) -> EffortInput:
    """Parse the ``input`` section (``type: none | constant | sinusoid``) for n joints."""
    s = dict(section or {})
    kind = s.get("type", "none")
    if kind == "none":
        return EffortInput("none", n)
    if kind == "constant":
        return EffortInput("constant", n, effort=_vec(s.get("effort"), n, "input.effort"))
    if kind == "sinusoid":
        return EffortInput("sinusoid", n,
                           amplitude=_vec(s.get("amplitude"), n, "input.amplitude"),
                           frequency=number(s, "frequency", 0.5, nonnegative=True),
                           phase=_vec(s.get("phase", [0.0] * n), n, "input.phase"))
    raise ValueError(f"input.type: unknown {short(kind)}; use none, constant or sinusoid")


@dataclass(frozen=True)
class PrescribedMotion:
    """A joint motion the joints follow exactly (``prescribed`` section): ``motion(t) ->
    (q, q̇, q̈)``.  ``kind`` is ``sinusoid`` or ``wheel_loop``; ``period`` the loop period."""

    kind: str
    motion: Callable
    period: float | None = None

    def __call__(self, t):
        return self.motion(t)


def prescribed_motion(section: Mapping | None, q0: np.ndarray) -> PrescribedMotion | None:
    """Parse the ``prescribed`` section around the initial joint positions ``q0``."""
    if not section:
        return None
    p = dict(section)
    kind = p.get("type")
    n = len(q0)
    q0 = np.array(q0, dtype=float)
    if kind == "sinusoid":
        a = _vec(p.get("amplitude"), n, "prescribed.amplitude")
        w = 2 * np.pi * number(p, "frequency", 0.5, nonnegative=True)
        ph = _vec(p.get("phase", [0.0] * n), n, "prescribed.phase")

        def sinusoid(t):
            s = np.sin(w * t + ph) - np.sin(ph)
            return q0 + a * s, a * w * np.cos(w * t + ph), -a * w * w * np.sin(w * t + ph)
        return PrescribedMotion("sinusoid", sinusoid)
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

        def wheel_loop(t):
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
        return PrescribedMotion("wheel_loop", wheel_loop, period=T)
    raise ValueError(f"prescribed.type: unknown {short(kind)}; use sinusoid or wheel_loop")


def resolve_controller_params(section: Mapping | None, name: str, explicit=()) -> tuple:
    """Parameters for controller ``name`` given the scenario's ``controller`` section.

    Precedence: the controller's defaults < the section < ``explicit`` (names set on the
    command line).  When ``name`` is the section's controller, or the section names none, the
    whole section applies (so an unknown key is the plug-in's error).  When it is another one,
    the section's values for parameters that ``name`` also has are kept, the others are
    dropped; ``explicit`` names are always kept, so an unknown one is an error.  Returns
    ``(params, kept, dropped)``; vm-sim and the controller node use it alike."""
    from ..control import get_controller
    section = dict(section or {})
    section_name = section.pop("name", None)
    if section_name in (None, "", name):
        return section, sorted(section), []
    known = type(get_controller(name)).PARAMS
    kept = {k: v for k, v in section.items() if k in known or k in explicit}
    dropped = sorted(k for k in section if k not in kept)
    return kept, sorted(kept), dropped
