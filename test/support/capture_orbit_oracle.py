"""An independent oracle for capture in orbit (test/oracle/test_capture_orbit.py,
test_capture_dopri5.py): the target's motion relative to a Keplerian chief by scipy's DOP853.

The chief is integrated in Earth-centred inertial coordinates (``r̈_c = −μ r_c/|r_c|³``, its
initial state from the orbital elements by hand); the target's centre of mass relative to it
feels two-body gravity at ``r_c + ρ`` minus the chief's, by the exact difference
``s⁻³ − r⁻³ = (r − s)(r² + rs + s²)/(r³s³)``, ``r − s = −(2 r_c·ρ + |ρ|²)/(r + s)``, plus the
second-order MacCullagh force; the attitude is a unit quaternion (x, y, z, w) with Euler's
equations and the gravity-gradient torque ``3μ/|x|⁵ x × I x``.
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from vm_dynamics.core.rotations import matrix_from_quat

MU = 3.986004418e14

def quat_mul(a, b):
    """Hamilton product of quaternions in x, y, z, w order."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - av @ bv]])


def tidal_force(mu, m, rc, rho, I_w):
    """Force at the CoM and torque about it (inertial axes) on a body of mass ``m`` and inertia
    ``I_w`` (about its CoM, inertial axes) at ``rho`` from a chief at ``rc``: two-body gravity
    minus the chief's (the field seen from the free-falling chief) with the MacCullagh terms."""
    x = rc + rho
    r, s = np.linalg.norm(rc), np.linalg.norm(x)
    r_minus_s = -(2.0 * rc @ rho + rho @ rho) / (r + s)
    diff = r_minus_s * (r * r + r * s + s * s) / (r ** 3 * s ** 3)        # 1/s³ − 1/r³
    F = -mu * m * (rho / s ** 3 + rc * diff)
    Ix = I_w @ x
    F = F + 1.5 * mu / s ** 5 * ((5.0 * (x @ Ix) / (s * s) - np.trace(I_w)) * x - 2.0 * Ix)
    return F, 3.0 * mu / s ** 5 * np.cross(x, Ix)


def chief_state(orbit):
    """Initial ECI position and velocity of the chief, from the orbit's elements by hand."""
    a, e, i = orbit.a, orbit.e, orbit.inclination
    p = a * (1 - e * e)
    nu = orbit.true_anomaly
    r = p / (1 + e * np.cos(nu))
    pf = np.array([r * np.cos(nu), r * np.sin(nu), 0.0])
    vf = np.sqrt(MU / p) * np.array([-np.sin(nu), e + np.cos(nu), 0.0])
    c, s = np.cos(i), np.sin(i)
    R1 = np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    assert orbit.raan == 0 and orbit.argument_of_periapsis == 0
    return R1 @ pf, R1 @ vf


def target_oracle(orbit, m, I_c, rho0, v0, q0, w0, T):
    """(rho, rho_dot, R, omega) at T by DOP853 (module docstring)."""
    rc0, vc0 = chief_state(orbit)

    def rhs(t, y):
        rc, vc, rho, v, q, w = y[:3], y[3:6], y[6:9], y[9:12], y[12:16], y[16:]
        R = matrix_from_quat(q / np.linalg.norm(q))
        F, tau = tidal_force(MU, m, rc, rho, R @ I_c @ R.T)
        return np.concatenate([vc, -MU * rc / np.linalg.norm(rc) ** 3, v, F / m,
                               0.5 * quat_mul(q, np.append(w, 0.0)),
                               np.linalg.solve(I_c, R.T @ tau - np.cross(w, I_c @ w))])
    sol = solve_ivp(rhs, (0.0, T), np.concatenate([rc0, vc0, rho0, v0, q0, w0]),
                    method="DOP853", rtol=1e-13, atol=1e-15)
    y = sol.y[:, -1]
    return y[6:9], y[9:12], matrix_from_quat(y[12:16] / np.linalg.norm(y[12:16])), y[16:]


