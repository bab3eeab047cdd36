"""Two-body gravity of a central body on the vehicle and every link (an orbital environment).

The central body (gravitational parameter ``μ``, m³/s²; default Earth) sits at the inertial
origin.  Each body of the model (the vehicle and every link, mass ``m``, centre of mass at
inertial ``r``, rotational inertia ``I`` about its centre of mass in inertial axes) has the
potential energy of MacCullagh's expansion to second order in ``ρ/|r|`` (``ρ`` the body's size)::

    U = −μ m/|r|  −  μ/(2|r|³) (tr I − 3 r̂ᵀ I r̂)          (U₀ + U₂)

and feels exactly ``−∇U``: the force at its centre of mass ``F = F₀ + F₂`` and the
gravity-gradient torque ``τ`` about it::

    F₀ = −μ m r/|r|³                                    (exact for a point mass at the CoM)
    F₂ = 3μ/(2|r|⁵) (5 (r̂ᵀ I r̂) r − (tr I) r − 2 I r)    (relative size (ρ/|r|)² of F₀)
    τ  = 3μ/|r|⁵ (r × I r)                               (the leading term, relative error ρ/|r|)

The torque as usually written is already the exact rotational gradient of ``U₂``; ``F₂`` is the
translational gradient of ``U₂`` that keeps the force consistent with it (omitting it would
leave a non-conservative remainder of relative size (ρ/|r|)²), so the element is conservative
and the energy balance counts ``U`` as potential energy, not as work.  The neglected terms
(third-order moments of the mass distribution) are of relative size ``ρ/|r|`` against ``U₂``.
With ``gradient=False`` the bodies are point masses at their centres of mass (``U₀``, ``F₀``,
no torque).  The model's uniform gravity must be zero (checked when the element is compiled
for a model, i.e. when a simulation starts).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import lie
from ..core.validation import as_vector
from ..dynamics.fast.kernels.algebra import cross
from ..dynamics.fast.kernels.jit import OPT, njit
from .base import ForceElement
from .points import body_point

__all__ = ["TwoBody", "TwoBodyParams", "MU_EARTH", "body_mass_properties",
           "link_mass_properties", "kept_link_mass_properties"]

#: Earth's gravitational parameter (m³/s², WGS 84 / EGM 96)
MU_EARTH = 3.986004418e14


class TwoBodyParams(NamedTuple):
    """Compiled parameters, one row per (element, body with mass): ``body`` index, ``mu``,
    ``mass``, centre of mass ``com`` (vehicle frame at the home configuration, k×3), rotational
    ``inertia`` about the centre of mass (home vehicle axes, k×3×3) and ``gradient`` (1.0 with
    the second-order terms, 0.0 for point masses)."""

    body: np.ndarray
    mu: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia: np.ndarray
    gradient: np.ndarray


def body_mass_properties(model) -> list:
    """``[(body, mass, com, I_c)]`` of the model's bodies with positive mass, at the home
    configuration in the vehicle frame: centre of mass and rotational inertia about it (from
    the spatial inertias ``[[m 1, −ĥ], [ĥ, I_o]]``, ``h = m c``, ``I_c = I_o − m(|c|² 1 − c cᵀ)``)."""
    out = []
    for k in range(model.n_full + 1):
        M = model.vehicle_inertia if k == 0 else model.body_inertia_home[k - 1]
        m = float(M[0, 0])
        if m <= 0.0:
            continue
        c = lie.unskew(M[3:, :3]) / m
        Ic = 0.5 * (M[3:, 3:] + M[3:, 3:].T) - m * (float(c @ c) * np.eye(3) - np.outer(c, c))
        out.append((k, m, c, Ic))
    return out


def link_mass_properties(model) -> list:
    """``[(frame, mass, c_f, I_f)]``: :func:`body_mass_properties` in the axes of each body's
    link frame (``frame``, its link name), the centre of mass from the frame's origin and the
    rotational inertia about it; what a force on the moving body needs at any configuration."""
    out = []
    for k, m, c, Ic in body_mass_properties(model):
        name = model.link_names[k]
        home = model.frame_home[name]
        Rh = home[:3, :3]
        out.append((name, m, Rh.T @ (c - home[:3, 3]), Rh.T @ Ic @ Rh))
    return out


def _terms(mu, m, r, Ir, trI, gradient):
    """Force, torque about the CoM and potential of one body at ``r`` (any axes; ``Ir = I r`` in
    the same axes)."""
    rr = float(r @ r)
    rn = np.sqrt(rr)
    F = -mu * m * r / (rr * rn)
    if not gradient:
        return F, np.zeros(3), -mu * m / rn
    s = float(r @ Ir) / rr
    r5 = rr * rr * rn
    F = F + 1.5 * mu / r5 * ((5.0 * s - trI) * r - 2.0 * Ir)
    tau = 3.0 * mu / r5 * np.cross(r, Ir)
    return F, tau, -mu * m / rn - 0.5 * mu / (rr * rn) * (trI - 3.0 * s)


class TwoBody(ForceElement):
    """Two-body gravity (``mu``, m³/s², > 0) of a central body at the inertial origin on every
    body of the model, with the gravity-gradient terms if ``gradient`` (module docstring)."""

    kind = "two_body"
    conservative = True
    orbital = True
    parameters = ("mu", "gradient")

    def __init__(self, mu: float = MU_EARTH, gradient: bool = True):
        try:
            mu_f = float(mu)
        except (TypeError, ValueError):
            raise ValueError(f"two_body mu: expected a number > 0 (m^3/s^2), got {mu!r}") from None
        if not (np.isfinite(mu_f) and mu_f > 0):
            raise ValueError(f"two_body mu: expected a finite number > 0 (m^3/s^2), got {mu!r}")
        if not isinstance(gradient, (bool, np.bool_)):
            raise ValueError(f"two_body gradient: expected true or false, got {gradient!r}")
        self.mu = mu_f
        self.gradient = bool(gradient)

    @classmethod
    def from_config(cls, spec: dict, where: str) -> "TwoBody":
        """``{kind: two_body, mu: 3.986004418e14, gradient: true}`` (both optional)."""
        unknown = set(spec) - {"kind", "mu", "gradient"}
        if unknown:
            raise ValueError(f"{where}: unknown keys {', '.join(sorted(map(str, unknown)))}; "
                             f"two_body has mu, gradient")
        try:
            return cls(spec.get("mu", MU_EARTH), spec.get("gradient", True))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    def key(self):
        return (self.mu, self.gradient)

    def __repr__(self):
        return f"TwoBody(mu={self.mu!r}, gradient={self.gradient})"

    def _check(self, model):
        if np.any(np.asarray(model.gravity) != 0.0):
            raise ValueError(f"two_body: the model's uniform gravity must be zero with two-body "
                             f"gravity (got {np.asarray(model.gravity).tolist()}); set "
                             f"gravity: [0, 0, 0]")

    def _bodies(self, model, g, q):
        """Per body: ``(frame, m, c_f, I_f, r_f)``: centre of mass and inertia in the axes of the
        body's link frame and the CoM's inertial position vector in those axes."""
        out = []
        for name, m, c_f, I_f, T in self._link_poses(model, g, q):
            r_f = c_f + T[:3, :3].T @ T[:3, 3]
            out.append((name, m, c_f, I_f, r_f))
        return out

    def _link_poses(self, model, g, q):
        """Per body: ``(frame, m, c_f, I_f, T)`` with ``T`` the link frame's inertial pose (the
        model's compiled frame poses; the mass properties kept per model)."""
        self._check(model)
        q = as_vector(q, model.n, "q")
        g = np.asarray(g, dtype=float)
        return [(name, m, c_f, I_f, g @ model.frame_pose(q, name))
                for name, m, c_f, I_f in kept_link_mass_properties(model)]

    def wrenches(self, model, g, V, q):
        frames = {}
        for name, m, c_f, I_f, T in self._link_poses(model, g, q):    # compiled per body
            w = np.empty(6)
            _link_wrench(self.mu, m, np.ascontiguousarray(T), c_f, I_f, self.gradient, w)
            frames[name] = frames[name] + w if name in frames else w
        return None, frames

    def vehicle_wrench(self, model, g, V, q):
        return None

    def potential_energy(self, model, g, q) -> float:
        return float(sum(_terms(self.mu, m, r_f, I_f @ r_f, float(np.trace(I_f)),
                                self.gradient)[2]
                         for _, m, _c, I_f, r_f in self._bodies(model, g, q)))

    def compiled(self, model) -> TwoBodyParams:
        self._check(model)
        props = body_mass_properties(model)
        k = len(props)
        return TwoBodyParams(np.array([p[0] for p in props], dtype=np.int64),
                             np.full(k, self.mu), np.array([p[1] for p in props]),
                             np.array([p[2] for p in props]).reshape(k, 3),
                             np.array([p[3] for p in props]).reshape(k, 3, 3),
                             np.full(k, 1.0 if self.gradient else 0.0))


_PROPS: dict = {}


def kept_link_mass_properties(model) -> list:
    """:func:`link_mass_properties`, kept per model (the controllers evaluate the element at
    every stage; the capture's tidal gravity too)."""
    hit = _PROPS.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    out = link_mass_properties(model)
    if len(_PROPS) > 64:
        _PROPS.clear()
    _PROPS[id(model)] = (model, out)
    return out


# ----------------------------------------------------------------------------- compiled
@njit(**OPT)
def _link_wrench(mu, m, T, c_f, I_f, gradient, w):
    """One body of :meth:`TwoBody.wrenches`: the arithmetic of :func:`_terms` at the CoM's
    inertial position in link axes ``r = c_f + Rᵀp`` (``T`` the link frame's inertial pose),
    written as the link frame wrench ``w = [F; c_f × F + τ]``."""
    r0 = c_f[0] + T[0, 0] * T[0, 3] + T[1, 0] * T[1, 3] + T[2, 0] * T[2, 3]
    r1 = c_f[1] + T[0, 1] * T[0, 3] + T[1, 1] * T[1, 3] + T[2, 1] * T[2, 3]
    r2 = c_f[2] + T[0, 2] * T[0, 3] + T[1, 2] * T[1, 3] + T[2, 2] * T[2, 3]
    rr = r0 * r0 + r1 * r1 + r2 * r2
    rn = np.sqrt(rr)
    a = -mu * m / (rr * rn)
    f0, f1, f2 = a * r0, a * r1, a * r2
    n0, n1, n2 = 0.0, 0.0, 0.0
    if gradient:
        i0 = I_f[0, 0] * r0 + I_f[0, 1] * r1 + I_f[0, 2] * r2
        i1 = I_f[1, 0] * r0 + I_f[1, 1] * r1 + I_f[1, 2] * r2
        i2 = I_f[2, 0] * r0 + I_f[2, 1] * r1 + I_f[2, 2] * r2
        trI = I_f[0, 0] + I_f[1, 1] + I_f[2, 2]
        s = (r0 * i0 + r1 * i1 + r2 * i2) / rr
        r5 = rr * rr * rn
        b = 1.5 * mu / r5
        e = 5.0 * s - trI
        f0 += b * (e * r0 - 2.0 * i0)
        f1 += b * (e * r1 - 2.0 * i1)
        f2 += b * (e * r2 - 2.0 * i2)
        t0, t1, t2 = cross(r0, r1, r2, i0, i1, i2)
        c = 3.0 * mu / r5
        n0, n1, n2 = c * t0, c * t1, c * t2
    x0, x1, x2 = cross(c_f[0], c_f[1], c_f[2], f0, f1, f2)
    w[0], w[1], w[2] = f0, f1, f2
    w[3], w[4], w[5] = x0 + n0, x1 + n1, x2 + n2


@njit(**OPT)
def _position(P, i, g, Rw, Pw):
    """Row ``i``'s centre of mass ``c`` (vehicle axes, from the vehicle origin), its inertial
    position vector ``r`` in vehicle axes (``c + R_gᵀ p_g``), ``I r`` (vehicle axes) and ``tr I``:
    ``(c0, c1, c2, r0, r1, r2, i0, i1, i2, trI)``."""
    k = P.body[i]
    R = Rw[k]
    c0, c1, c2 = body_point(Rw, Pw, k, P.com[i])
    r0 = c0 + g[0, 0] * g[0, 3] + g[1, 0] * g[1, 3] + g[2, 0] * g[2, 3]
    r1 = c1 + g[0, 1] * g[0, 3] + g[1, 1] * g[1, 3] + g[2, 1] * g[2, 3]
    r2 = c2 + g[0, 2] * g[0, 3] + g[1, 2] * g[1, 3] + g[2, 2] * g[2, 3]
    Ic = P.inertia[i]
    u0 = R[0, 0] * r0 + R[1, 0] * r1 + R[2, 0] * r2          # Rᵀ r (home axes)
    u1 = R[0, 1] * r0 + R[1, 1] * r1 + R[2, 1] * r2
    u2 = R[0, 2] * r0 + R[1, 2] * r1 + R[2, 2] * r2
    w0 = Ic[0, 0] * u0 + Ic[0, 1] * u1 + Ic[0, 2] * u2
    w1 = Ic[1, 0] * u0 + Ic[1, 1] * u1 + Ic[1, 2] * u2
    w2 = Ic[2, 0] * u0 + Ic[2, 1] * u1 + Ic[2, 2] * u2
    i0 = R[0, 0] * w0 + R[0, 1] * w1 + R[0, 2] * w2          # R I_c Rᵀ r
    i1 = R[1, 0] * w0 + R[1, 1] * w1 + R[1, 2] * w2
    i2 = R[2, 0] * w0 + R[2, 1] * w1 + R[2, 2] * w2
    return c0, c1, c2, r0, r1, r2, i0, i1, i2, Ic[0, 0] + Ic[1, 1] + Ic[2, 2]


@njit(**OPT)
def two_body_wrenches(P, g, Rw, Pw, out):
    """Add every body's two-body force and gradient torque to ``out[body]`` (vehicle frame, about
    its origin)."""
    for i in range(P.body.shape[0]):
        c0, c1, c2, r0, r1, r2, i0, i1, i2, trI = _position(P, i, g, Rw, Pw)
        mu = P.mu[i]
        rr = r0 * r0 + r1 * r1 + r2 * r2
        rn = np.sqrt(rr)
        a = -mu * P.mass[i] / (rr * rn)
        f0, f1, f2 = a * r0, a * r1, a * r2
        n0, n1, n2 = 0.0, 0.0, 0.0
        if P.gradient[i] != 0.0:
            r5 = rr * rr * rn
            s = (r0 * i0 + r1 * i1 + r2 * i2) / rr
            b = 1.5 * mu / r5
            e = 5.0 * s - trI
            f0 += b * (e * r0 - 2.0 * i0)
            f1 += b * (e * r1 - 2.0 * i1)
            f2 += b * (e * r2 - 2.0 * i2)
            t0, t1, t2 = cross(r0, r1, r2, i0, i1, i2)
            n0, n1, n2 = 2.0 * b * t0, 2.0 * b * t1, 2.0 * b * t2
        x0, x1, x2 = cross(c0, c1, c2, f0, f1, f2)
        k = P.body[i]
        out[k, 0] += f0
        out[k, 1] += f1
        out[k, 2] += f2
        out[k, 3] += x0 + n0
        out[k, 4] += x1 + n1
        out[k, 5] += x2 + n2


@njit(**OPT)
def two_body_potential(P, g, Rw, Pw):
    """``Σ −μ m/|r| − μ/(2|r|³)(tr I − 3 r̂ᵀ I r̂)`` over the bodies."""
    U = 0.0
    for i in range(P.body.shape[0]):
        c0, c1, c2, r0, r1, r2, i0, i1, i2, trI = _position(P, i, g, Rw, Pw)
        mu = P.mu[i]
        rr = r0 * r0 + r1 * r1 + r2 * r2
        rn = np.sqrt(rr)
        U -= mu * P.mass[i] / rn
        if P.gradient[i] != 0.0:
            U -= 0.5 * mu / (rr * rn) * (trI - 3.0 * (r0 * i0 + r1 * i1 + r2 * i2) / rr)
    return U
