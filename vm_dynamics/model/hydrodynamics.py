"""Underwater vehicle hydrodynamics (Fossen's model, paper 004 §3.3) entering the LP equations.

How each term enters (documented in the README, "UVMS"):

* **Added mass** ``M_A`` (6×6, symmetric positive definite, body frame, ``[linear; angular]``)
  is added to the vehicle's spatial inertia 𝔐₀. For a body in an ideal fluid the kinetic energy is
  ``½ Vᵀ(M_RB + M_A)V`` (Kirchhoff), and the Euler–Poincaré/LP equations of that kinetic energy
  produce Fossen's ``C_A(ν)ν = [ω×a; ω×b + v×a]`` (a, b = linear/angular parts of ``M_A ν``)
  exactly as the ``ad*`` term of (LP-1) — so no separate Coriolis term is needed. Gravity acts
  on the rigid-body masses only (the URDF masses), not on the added mass.
* **Damping** ``D(ν)ν = (D_lin + D_quad |ν|) ν`` (diagonal, relative to the water) and
  **buoyancy** ``B`` at the centre of buoyancy ``r_B`` are a *vehicle wrench* ``f₀`` (94).
* **Arm-link buoyancy** (volume and centre of buoyancy per link) enters as *frame wrenches*
  ``J_𝔢ᵀ f_𝔢`` at each link (90)–(91). Arm-link drag is not modelled.

All wrenches are ``[f; n]`` in body frames, consistent with the rest of vm_dynamics.  In a
simulation the damping and buoyancy act as force elements
(:func:`vm_dynamics.forces.hydrodynamics_elements`); this module holds the parameters, the
file reader and the formulas.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.bounded_yaml import load_yaml_file
from ..core.validation import as_vector

__all__ = ["Hydrodynamics", "load_hydrodynamics", "MAX_HYDRODYNAMICS_FILE_BYTES"]

#: Largest hydrodynamics file read (bytes; the shipped one is ~2 kB); the YAML is bounded in
#: depth and size as parameter files are (:mod:`vm_dynamics.core.bounded_yaml`).
MAX_HYDRODYNAMICS_FILE_BYTES = 1024 * 1024


def _mat6(x, name):
    a = np.asarray(x, dtype=float)
    if a.shape == (36,):
        a = a.reshape(6, 6)
    if a.shape != (6, 6) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected a finite 6x6 matrix (or 36 numbers)")
    return a


@dataclass
class Hydrodynamics:
    """Fossen-type hydrodynamic/hydrostatic parameters of a vehicle (and its arm links)."""

    added_mass: np.ndarray
    linear_damping: np.ndarray
    quadratic_damping: np.ndarray
    buoyancy_force: float
    center_of_buoyancy: np.ndarray
    link_buoyancy: dict = field(default_factory=dict)   # link -> (force N, cob in link frame)
    current: np.ndarray = field(default_factory=lambda: np.zeros(3))  # water velocity, inertial

    def __post_init__(self):
        self.added_mass = _mat6(self.added_mass, "added_mass")
        if not np.allclose(self.added_mass, self.added_mass.T, atol=1e-9 * np.abs(self.added_mass).max()):
            raise ValueError("added_mass: must be symmetric")
        if np.linalg.eigvalsh(self.added_mass)[0] < 0:
            raise ValueError("added_mass: must be positive semi-definite")
        self.linear_damping = as_vector(self.linear_damping, 6, "linear_damping")
        self.quadratic_damping = as_vector(self.quadratic_damping, 6, "quadratic_damping")
        if np.any(self.linear_damping < 0) or np.any(self.quadratic_damping < 0):
            raise ValueError("damping coefficients must be non-negative (dissipative)")
        self.center_of_buoyancy = as_vector(self.center_of_buoyancy, 3, "center_of_buoyancy")
        self.current = as_vector(self.current, 3, "current")

    def vehicle_wrench(self, g: np.ndarray, V6: np.ndarray, gravity: np.ndarray) -> np.ndarray:
        """Damping + buoyancy wrench on the vehicle, body frame ``[f; n]``.

        ``V6`` is the vehicle's body twist ``[v; ω]``; buoyancy acts against ``gravity``.
        """
        R = g[:3, :3]
        nu = V6.copy()
        nu[:3] -= R.T @ self.current
        damping = -(self.linear_damping + self.quadratic_damping * np.abs(nu)) * nu
        up = _up(gravity)
        fb = self.buoyancy_force * (R.T @ up)
        return damping + np.concatenate([fb, np.cross(self.center_of_buoyancy, fb)])

    def link_wrenches(self, model, g: np.ndarray, q: np.ndarray) -> dict:
        """Buoyancy of the arm links as frame wrenches ``{link: [f; n]}`` (link frame axes)."""
        out = {}
        if not self.link_buoyancy:
            return out
        up = _up(model.gravity)
        for link, (force, cob) in self.link_buoyancy.items():
            Rl = g[:3, :3] @ model.frame_pose(q, link)[:3, :3]     # O(n) kinematics
            f = force * (Rl.T @ up)
            out[link] = np.concatenate([f, np.cross(cob, f)])
        return out


def _up(gravity):
    n = np.linalg.norm(gravity)
    return -np.asarray(gravity) / n if n > 0 else np.zeros(3)


def load_hydrodynamics(path_or_dict, gravity_magnitude: float | None = None) -> Hydrodynamics:
    """Read the hydrodynamics YAML (see ``urdf/uvms_hydrodynamics.yaml``) or an equivalent dict."""
    if isinstance(path_or_dict, dict):
        d = path_or_dict
        where = "hydrodynamics"
    else:
        where = str(path_or_dict)
        try:
            d = load_yaml_file(path_or_dict, MAX_HYDRODYNAMICS_FILE_BYTES)
        except ValueError as exc:
            raise ValueError(f"hydrodynamics file: {exc}") from None
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a mapping of hydrodynamic parameters")
    try:
        rho = float(d.get("water_density", 1025.0))
        gmag = float(gravity_magnitude if gravity_magnitude is not None else d.get("gravity", 9.81))
        links = {}
        for link, spec in (d.get("arm_links") or {}).items():
            links[link] = (rho * gmag * float(spec["volume"]),
                           as_vector(spec.get("center_of_buoyancy", [0, 0, 0]), 3,
                                f"arm_links.{link}.center_of_buoyancy"))
        return Hydrodynamics(
            added_mass=d["added_mass"],
            linear_damping=d.get("linear_damping", np.zeros(6)),
            quadratic_damping=d.get("quadratic_damping", np.zeros(6)),
            buoyancy_force=float(d.get("buoyancy_force", rho * gmag * float(d.get("displaced_volume", 0.0)))),
            center_of_buoyancy=d.get("center_of_buoyancy", [0, 0, 0]),
            link_buoyancy=links,
            current=d.get("current", [0, 0, 0]),
        )
    except KeyError as exc:
        raise ValueError(f"{where}: missing key {exc}") from None
