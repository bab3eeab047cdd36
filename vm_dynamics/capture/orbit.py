"""Capture in orbit: the chief frame and the force elements acting on chaser *and* target.

**Why a chief frame.**  The capture state holds spatial momenta about the origin of the
integration frame (:mod:`.system`).  In an Earth-centred inertial frame at orbital speed these
are huge (``|p × m v| ≈ 5·10¹⁰ m`` kg m²/s for a 400 km orbit) while the motion that matters
(tumble, approach, contact) is worth a few units: the velocities recovered from them would lose
about ten digits.  Capture therefore integrates in the **chief frame**: origin on a reference
Keplerian orbit (the chief, :class:`~vm_dynamics.forces.orbit.ReferenceOrbit`), axes parallel
to the inertial ones (not rotating).  The chief is in free fall, so Newton–Euler holds in this
frame with every mass feeling, besides the two-body gravity at its true (inertial) position
``r_c(t) + ρ``, the uniform fictitious field ``−a_c(t) = μ r_c/|r_c|³``.  No Coriolis or
centrifugal terms (the axes do not rotate), momenta and velocities are relative and small.

**The element** (:class:`TidalGravity`, the field frozen at one chief position ``r_c``; the
time-dependent family is :class:`ChiefFrameGravity`): for each body of a model (mass ``m``,
centre of mass at ``ρ`` in the chief frame, inertia ``I`` about it) the force at the centre of
mass, the gravity-gradient torque and the potential ::

    F₀ = −μ m [(r_c+ρ)/s³ − r_c/r³] = −μ m [ρ/s³ + r_c (s⁻³ − r⁻³)]     (s = |r_c+ρ|, r = |r_c|)
    U₀ = −μ m [1/s − 1/r + r_c·ρ/r³]                                  (O(ρ²): the tidal potential)
    F₂, τ, U₂ of MacCullagh's second-order term at x = r_c + ρ        (as forces.two_body)

``s⁻³ − r⁻³ = r⁻³ expm1(−³⁄₂ log1p d)`` and ``U₀ = −(μm/r)[(1+d)^{−½} − 1 + d/2 − |ρ|²/(2r²)]``
with ``d = (2 r_c·ρ + |ρ|²)/r²`` are evaluated without cancellation (a series in ``d`` for the
second), so the tidal terms (``n²ρ``, 10⁻⁶ of the gravity) keep their digits.  The element is
conservative at fixed ``r_c``; as the chief moves the potential changes explicitly, at the rate
``∂U/∂t = Σ_bodies (−F₀ − m H ρ − F₂)·ṙ_c`` (``H ρ = μ[ρ/r³ − 3 (r_c·ρ) r_c/r⁵]``, the Hessian
of ``−μ/|x|`` at ``r_c``): :meth:`TidalGravity.potential_rate`, integrated into the
energy balance by the simulator.  Two-body gravity with the gradient terms in the inertial
frame (``forces.TwoBody``) is this element's ``r_c → 0`` limit written without the subtraction.

**Chaser and target, once.**  Any :class:`~vm_dynamics.forces.base.ForceElement` evaluates on a
:class:`~vm_dynamics.Model`; the target is given one, :func:`target_model` (a one-link model of
its mass properties, base SE3), so an element is written once and acts on both bodies
(:func:`element_wrenches`).
"""
from __future__ import annotations

import math

import numpy as np

from ..core import lie
from ..forces.base import ForceElement
from ..forces.orbit import ReferenceOrbit
from ..forces.two_body import kept_link_mass_properties
from ..model.model import load_model
from .orbit_kernels import SERIES, tidal_body

__all__ = ["TidalGravity", "ChiefFrameGravity", "target_model", "element_wrenches",
           "frozen_elements", "tidal_terms", "from_lvlh", "orbit_forces"]

def _inv_sqrt_remainder(d: float) -> float:
    """``(1+d)^(−1/2) − 1 + d/2`` without cancellation."""
    if abs(d) < 1e-3:
        acc = 0.0
        for c in reversed(SERIES):
            acc = acc * d + c
        return acc * d * d
    return math.expm1(-0.5 * math.log1p(d)) + 0.5 * d


def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def tidal_terms(mu, m, rc, rho, I, gradient):
    """Force at the centre of mass, torque about it, potential and ``∂U/∂r_c`` of one body
    (mass ``m``, inertia ``I`` about its CoM) whose CoM is at ``rho`` from a chief at ``rc``
    (all vectors and ``I`` in the same axes; module docstring)."""
    r2 = float(rc @ rc)
    r = math.sqrt(r2)
    rc_rho, rho2 = float(rc @ rho), float(rho @ rho)
    d = (2.0 * rc_rho + rho2) / r2
    r3 = r2 * r
    e3 = math.expm1(-1.5 * math.log1p(d))          # (r/s)^3 - 1
    F = (-mu * m / r3) * (rho * (1.0 + e3) + rc * e3)
    U = -mu * m / r * (_inv_sqrt_remainder(d) - 0.5 * rho2 / r2)
    dU = -F - (m * mu / r3) * (rho - (3.0 * rc_rho / r2) * rc)
    tau = np.zeros(3)
    if gradient:
        x = rc + rho
        xx = float(x @ x)
        xn = math.sqrt(xx)
        Ix = I @ x
        trI = I[0, 0] + I[1, 1] + I[2, 2]
        sx = float(x @ Ix) / xx
        x5 = xx * xx * xn
        F2 = (1.5 * mu / x5) * ((5.0 * sx - trI) * x - 2.0 * Ix)
        tau = (3.0 * mu / x5) * _cross(x, Ix)
        U += -0.5 * mu / (xx * xn) * (trI - 3.0 * sx)
        F = F + F2
        dU = dU - F2
    return F, tau, U, dU


class TidalGravity(ForceElement):
    """Two-body gravity (``mu``, m³/s²) seen from a free-falling origin at ``chief_position``
    (m, from the central body, inertial axes) on every body of a model, with the
    gravity-gradient terms if ``gradient`` (module docstring); ``chief_velocity`` (m/s) gives
    the explicit rate of the potential as the chief moves (:meth:`potential_rate`).  Capture
    only (no compiled form)."""

    kind = "tidal_gravity"
    conservative = True

    def __init__(self, mu: float, chief_position, gradient: bool = True, chief_velocity=None):
        self.mu = float(mu)
        if not (math.isfinite(self.mu) and self.mu > 0):
            raise ValueError(f"tidal_gravity mu: expected a finite number > 0, got {mu!r}")
        self.rc = np.array(chief_position, dtype=float).reshape(3)
        if not (np.all(np.isfinite(self.rc)) and float(self.rc @ self.rc) > 0):
            raise ValueError(f"tidal_gravity chief_position: expected a finite non-zero "
                             f"3-vector, got {chief_position!r}")
        self.gradient = bool(gradient)
        self.vc = np.zeros(3) if chief_velocity is None else \
            np.array(chief_velocity, dtype=float).reshape(3)

    def key(self):
        return (self.mu, tuple(self.rc), self.gradient, tuple(self.vc))

    def evaluate(self, model, g, q):
        """One pass over the bodies at ``(g, q)``: ``({frame: [f; n]}, spatial wrench about the
        integration frame's origin, ∂U/∂t, U)``."""
        q = np.asarray(q, dtype=float)
        g = np.ascontiguousarray(g, dtype=float)
        frames = {}
        spatial = np.zeros(6)
        dU = np.zeros(3)
        U = 0.0
        for name, m, c_f, I_f in kept_link_mass_properties(model):     # per body: the compiled terms
            w = np.empty(6)
            U += tidal_body(self.mu, m, self.rc, g @ model.frame_pose(q, name), c_f, I_f,
                             self.gradient, w, spatial, dU)
            frames[name] = frames[name] + w if name in frames else w
        return frames, spatial, float(dU @ self.vc), U

    def wrenches(self, model, g, V, q):
        return None, self.evaluate(model, g, q)[0]

    def vehicle_wrench(self, model, g, V, q):
        return None

    def potential_energy(self, model, g, q) -> float:
        return self.evaluate(model, g, q)[3]

    def potential_rate(self, model, g, q) -> float:
        """``∂U/∂t = ∂U/∂r_c · ṙ_c`` at fixed ``(g, q)``."""
        return self.evaluate(model, g, q)[2]

    def compiled(self, model):
        raise ValueError("tidal_gravity: a capture element (vm_dynamics.capture.orbit); the "
                         "engine takes two_body")


class ChiefFrameGravity:
    """The chief frame of ``orbit`` (a :class:`~vm_dynamics.forces.orbit.ReferenceOrbit`) and
    its gravity: at time ``t`` the :class:`TidalGravity` of the chief's position
    (:meth:`at`, which carries the chief's velocity for the explicit rate of the potential)."""

    def __init__(self, orbit: ReferenceOrbit, gradient: bool = True):
        if not isinstance(orbit, ReferenceOrbit):
            raise ValueError(f"orbit: expected a ReferenceOrbit, got {type(orbit).__name__}")
        self.orbit = orbit
        self.gradient = bool(gradient)

    def __repr__(self):
        return f"ChiefFrameGravity({self.orbit!r}, gradient={self.gradient})"

    def at(self, t: float) -> TidalGravity:
        """The field at time ``t`` (the chief's position and velocity then)."""
        r, v = self.orbit.state(t)
        return TidalGravity(self.orbit.mu, r, self.gradient, v)


def frozen_elements(forces, t: float) -> list:
    """``[(element at t, family or None)]``: time-dependent families (with ``at(t)``) frozen."""
    return [(e.at(t), e) if hasattr(e, "at") else (e, None) for e in forces]


def target_model(target):
    """A one-link model (base SE3, no gravity) with the target's mass, CoM and inertia; its
    vehicle frame is the target's body frame B, so force elements evaluate on it as on any
    model."""
    m, c, I = float(target.mass), [float(x) for x in target.com], target.inertia
    i = {k: float(I[a, b]) for k, (a, b) in dict(ixx=(0, 0), iyy=(1, 1), izz=(2, 2), ixy=(0, 1),
                                                 ixz=(0, 2), iyz=(1, 2)).items()}
    xml = (f'<robot name="{target.name}"><link name="{target.name}"><inertial>'
           f'<mass value="{m!r}"/><origin xyz="{c[0]!r} {c[1]!r} {c[2]!r}"/><inertia '
           + " ".join(f'{k}="{v!r}"' for k, v in i.items()) + "/></inertial></link></robot>")
    return load_model(xml, base="SE3", gravity=(0.0, 0.0, 0.0))


def element_wrenches(elements, model, g, V, q, qd=None):
    """The wrenches of ``elements`` (``[(element, family or None)]``, :func:`frozen_elements`)
    on ``model`` at ``(g, V, q, q̇)`` (``qd`` None: a model without joints): ``(vehicle
    b-vector, {frame: w}, spatial wrench about the integration frame's origin, A-rate)`` with
    the A-rate the power of the non-conservative elements plus the families' ``∂U/∂t``."""
    from .kinematics import frame_twist
    qd = np.zeros(0) if qd is None else qd
    bw = np.zeros(6)
    frames = {}
    spatial = np.zeros(6)
    P = 0.0
    q = np.asarray(q, dtype=float)
    for e, family in elements:
        if isinstance(e, TidalGravity):         # one pass: wrenches, spatial sum and ∂U/∂t
            wf, sp, rate, _ = e.evaluate(model, g, q)
            for name, w in wf.items():
                frames[name] = frames.get(name, 0.0) + w
            spatial += sp
            P += rate
            continue
        w0, wf = e.wrenches(model, g, V, q)
        if w0 is not None:
            bw = bw + w0
            spatial += lie.Ad_inv(g).T @ w0
            if not e.conservative:
                P += float(w0 @ V)
        for name, w in wf.items():
            frames[name] = frames.get(name, 0.0) + w
            spatial += lie.Ad_inv(g @ model.frame_pose(q, name)).T @ w
            if not e.conservative:
                P += float(w @ frame_twist(model, q, name, V, qd))
        if family is not None:
            P += e.potential_rate(model, g, q)
    return bw, frames, spatial, P


def from_lvlh(orbit: ReferenceOrbit, t: float, g_rel, V_rel):
    """``(g, V)`` in the chief frame of a pose and body twist given relative to the LVLH frame
    of ``orbit`` at ``t``: the LVLH frame sits at the chief's origin with axes ``C`` and turns
    at ``ω = [0, 0, |h|/r²]`` (its own axes), so ``g = (C, 0) g_rel`` and
    ``V = V_rel + Ad_{g_rel⁻¹} [0; ω]`` (docs/orbit.md with the chief's own velocity removed)."""
    T, VT = orbit.frame(t)
    P = np.eye(4)
    P[:3, :3] = T[:3, :3]
    g_rel = np.asarray(g_rel, dtype=float)
    return P @ g_rel, np.asarray(V_rel, dtype=float) + lie.Ad_inv(g_rel) @ np.r_[0.0, 0.0, 0.0,
                                                                                  VT[3:]]


def orbit_forces(two_body, orbit, where: str = "") -> tuple:
    """``(forces, orbit, initial_frame)`` of a capture scenario's ``two_body`` and ``orbit``
    sections (both None: free space).  ``orbit`` as :meth:`ReferenceOrbit.from_config` plus
    ``initial_frame: lvlh | chief`` (default lvlh: the initial poses and twists are relative
    to LVLH at t = 0; chief: to the chief frame)."""
    from ..forces.two_body import TwoBody
    if orbit is None:
        if two_body is not None:
            raise ValueError(f"{where}two_body: a capture in orbit needs an orbit section (the "
                             f"chief frame it integrates in)")
        return (), None, None
    if not isinstance(orbit, dict):
        raise ValueError(f"{where}orbit: expected a mapping (altitude, inclination_deg, ...)")
    spec = {"kind": "two_body", **(two_body or {})}
    tb = TwoBody.from_config(spec, f"{where}two_body")
    section = dict(orbit)
    frame = section.pop("initial_frame", "lvlh")
    if frame not in ("lvlh", "chief"):
        raise ValueError(f"{where}orbit.initial_frame: expected lvlh or chief, got {frame!r}")
    ref = ReferenceOrbit.from_config(section, tb.mu, f"{where}orbit")
    return (ChiefFrameGravity(ref, tb.gradient),), ref, frame
