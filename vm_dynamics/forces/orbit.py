"""A Keplerian reference orbit and its Hill (LVLH) frame; poses and twists relative to it.

The reference orbit (the *chief*) is a two-body orbit of the central body of
:class:`~vm_dynamics.forces.TwoBody` (gravitational parameter ``μ``, at the inertial origin),
given by its classical elements: semi-major axis ``a`` (or the radius of a circular orbit),
eccentricity ``0 ≤ e < 1``, inclination ``i``, right ascension of the ascending node ``Ω``,
argument of periapsis ``ω`` and the true anomaly ``ν₀`` at ``t = 0`` (angles in radians).  Its
state at time ``t`` is closed form: the mean anomaly ``M = M₀ + n t`` (``n = √(μ/a³)``), Kepler's
equation ``M = E − e sin E`` solved by Newton's method to round-off, then the perifocal position
``a (cos E − e, √(1−e²) sin E, 0)`` and velocity ``√(μa)/r (−sin E, √(1−e²) cos E, 0)`` rotated
by ``R₃(Ω) R₁(i) R₃(ω)``.  Nothing is integrated, so the reference has no integration error.

The LVLH frame (Hill frame) has its origin at the chief and axes ``x = r̂`` (radial, away from
the central body), ``z = ĥ = (r × v)/|r × v|`` (orbit normal), ``y = z × x`` (along-track: the
direction of motion on a circular orbit).  Its inertial pose ``T(t) = (C, r)`` with
``C = [x y z]``, and its body twist ``V_T = T⁻¹Ṫ = [Cᵀ v; 0, 0, |h|/|r|²]`` (on a Keplerian
orbit the frame turns about its z axis only, at the rate of the true anomaly).

A vehicle's inertial pose ``g`` and body twist ``V = g⁻¹ġ`` (``[v; ω]``, vehicle axes) are
expressed relative to the LVLH frame as the pose ``g_rel = T⁻¹ g`` (the vehicle in LVLH
coordinates) and the body twist of ``g_rel``, ``V_rel = g_rel⁻¹ ġ_rel = V − Ad_{g_rel⁻¹} V_T``:
the vehicle's velocity and angular velocity as seen by an observer riding with the LVLH frame,
in the vehicle's axes.  Conversely ``g = T g_rel`` and ``V = V_rel + Ad_{g_rel⁻¹} V_T``.  The
integration itself stays on SE(3) in the inertial frame; these maps only form the outputs and
the initial state.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..core import lie

__all__ = ["ReferenceOrbit", "OutputFrame", "WORLD_FRAMES", "centre_of_mass",
           "station_keeping_reference"]

#: The frames the outputs (/odom, TF, recordings, plots, the viewer) can be expressed in.
WORLD_FRAMES = ("inertial", "lvlh")


def _rot1(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rot3(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _number(value, name, lo=-math.inf, hi=math.inf, lo_open=False, hi_open=False):
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool) or not math.isfinite(x) or x < lo or x > hi \
            or (lo_open and x == lo) or (hi_open and x == hi):
        rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise ValueError(f"{name}: expected a finite number in {rng}, got {value!r}")
    return x


def _cross(a, b) -> np.ndarray:
    """``a × b`` of 3-vectors (np.cross costs ~10 µs per call; this runs per RK stage)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


class ReferenceOrbit:
    """A Keplerian orbit of a central body (``mu``, m³/s²) by its elements (module docstring):
    ``semi_major_axis`` (m, > 0), ``eccentricity`` in [0, 1), ``inclination``, ``raan``,
    ``argument_of_periapsis``, ``true_anomaly`` (radians, the last at t = 0)."""

    def __init__(self, mu: float, semi_major_axis: float, eccentricity: float = 0.0,
                 inclination: float = 0.0, raan: float = 0.0, argument_of_periapsis: float = 0.0,
                 true_anomaly: float = 0.0):
        self.mu = _number(mu, "orbit mu", 0.0, lo_open=True)
        self.a = _number(semi_major_axis, "orbit semi_major_axis", 0.0, lo_open=True)
        self.e = _number(eccentricity, "orbit eccentricity", 0.0, 1.0, hi_open=True)
        self.inclination = _number(inclination, "orbit inclination")
        self.raan = _number(raan, "orbit raan")
        self.argument_of_periapsis = _number(argument_of_periapsis, "orbit argument_of_periapsis")
        self.true_anomaly = _number(true_anomaly, "orbit true_anomaly")
        self.n = math.sqrt(self.mu / self.a ** 3)
        self._Q = _rot3(self.raan) @ _rot1(self.inclination) @ _rot3(self.argument_of_periapsis)
        nu = self.true_anomaly
        E0 = 2.0 * math.atan2(math.sqrt(1.0 - self.e) * math.sin(nu / 2.0),
                              math.sqrt(1.0 + self.e) * math.cos(nu / 2.0))
        self._M0 = E0 - self.e * math.sin(E0)

    @classmethod
    def circular(cls, mu: float, radius: float, inclination: float = 0.0, raan: float = 0.0,
                 argument_of_latitude: float = 0.0) -> "ReferenceOrbit":
        """A circular orbit of ``radius`` (m); ``argument_of_latitude`` is the chief's angle from
        the ascending node at t = 0."""
        return cls(mu, radius, 0.0, inclination, raan, 0.0, argument_of_latitude)

    @property
    def period(self) -> float:
        """Orbital period, s."""
        return 2.0 * math.pi / self.n

    def __repr__(self):
        return (f"ReferenceOrbit(mu={self.mu!r}, semi_major_axis={self.a!r}, "
                f"eccentricity={self.e!r}, inclination={self.inclination!r}, "
                f"raan={self.raan!r}, argument_of_periapsis={self.argument_of_periapsis!r}, "
                f"true_anomaly={self.true_anomaly!r})")

    def __eq__(self, other):
        return isinstance(other, ReferenceOrbit) and repr(self) == repr(other)

    def _eccentric_anomaly(self, t: float) -> float:
        M = self._M0 + self.n * float(t)
        M = math.remainder(M, 2.0 * math.pi)
        e = self.e
        E = M if e < 0.8 else math.pi * math.copysign(1.0, M)
        for _ in range(50):
            dE = (E - e * math.sin(E) - M) / (1.0 - e * math.cos(E))
            E -= dE
            if abs(dE) <= 1e-15:
                break
        return E

    def state(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The chief's inertial position (m) and velocity (m/s) at time ``t`` (s); the last
        time's result is kept (the frame, its acceleration and the chief-frame gravity ask for
        the same t at every Runge–Kutta stage), copies are returned."""
        t = float(t)
        hit = getattr(self, "_last_state", None)
        if hit is not None and hit[0] == t:
            return hit[1].copy(), hit[2].copy()
        r, v = self._state(t)
        self._last_state = (t, r, v)
        return r.copy(), v.copy()

    def _state(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        E = self._eccentric_anomaly(t)
        a, e = self.a, self.e
        s = math.sqrt(1.0 - e * e)
        cE, sE = math.cos(E), math.sin(E)
        r = a * (1.0 - e * cE)
        p = np.array([a * (cE - e), a * s * sE, 0.0])
        v = math.sqrt(self.mu * a) / r * np.array([-sE, s * cE, 0.0])
        return self._Q @ p, self._Q @ v

    def frame(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The LVLH frame's inertial pose ``T`` (4×4: axes ``C = [x y z]``, origin the chief) and
        its body twist ``V_T = [Cᵀ v; 0, 0, |h|/|r|²]`` at time ``t``."""
        r, v = self.state(t)
        h = _cross(r, v)
        hn = math.sqrt(float(h @ h))
        x = r / math.sqrt(float(r @ r))
        z = h / hn
        C = np.column_stack([x, _cross(z, x), z])
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = C, r
        return T, np.r_[C.T @ v, 0.0, 0.0, hn / float(r @ r)]

    def frame_acceleration(self, t: float) -> np.ndarray:
        """``V̇_T``, the time derivative of the LVLH frame's body twist: with ``V_T = [ṙ, h/r, 0;
        0, 0, h/r²]`` (``r`` the radius, ``h`` the specific angular momentum, constant on the
        orbit) and ``r̈ = h²/r³ − μ/r²``, ``V̇_T = [r̈, −h ṙ/r², 0; 0, 0, −2 h ṙ/r³]`` (zero on
        a circular orbit)."""
        r, v = self.state(t)
        rn = math.sqrt(float(r @ r))
        hv = _cross(r, v)
        h = math.sqrt(float(hv @ hv))
        rd = float(r @ v) / rn
        return np.array([h * h / rn ** 3 - self.mu / rn ** 2, -h * rd / rn ** 2, 0.0,
                         0.0, 0.0, -2.0 * h * rd / rn ** 3])

    def pose_reference(self, traj):
        """An inertial pose trajectory ``t -> (g_d, V_d, V̇_d)`` (what the controllers track)
        of a pose trajectory ``traj`` given relative to the LVLH frame (a callable of the same
        form, 6-vector twists, or a constant 4×4 pose held in LVLH): ``g_d = T g_rel``,
        ``V_d = V_rel + Ad_{g_rel⁻¹} V_T`` and its derivative
        ``V̇_d = V̇_rel + Ad_{g_rel⁻¹} V̇_T − ad_{V_rel} Ad_{g_rel⁻¹} V_T``."""
        if not callable(traj):
            held = np.array(traj, dtype=float)
            if held.shape != (4, 4):
                raise ValueError(f"orbit reference: a pose held in LVLH must be 4x4, got "
                                 f"shape {held.shape}")
            zero = np.zeros(6)

            def traj(t):
                return held, zero, zero

        def reference(t):
            g_rel, V_rel, Vd_rel = traj(t)
            g_rel = np.asarray(g_rel, dtype=float)
            V_rel = np.asarray(V_rel, dtype=float).reshape(6)
            Vd_rel = np.asarray(Vd_rel, dtype=float).reshape(6)
            T, VT = self.frame(t)
            A = lie.Ad_inv(g_rel)
            W = A @ VT
            return (T @ g_rel, V_rel + W,
                    Vd_rel + A @ self.frame_acceleration(t) - lie.ad(V_rel) @ W)
        return reference

    def pose(self, t: float) -> np.ndarray:
        """The LVLH frame's inertial pose at time ``t`` (4×4)."""
        return self.frame(t)[0]

    def to_lvlh(self, t: float, g, V=None):
        """``(g_rel, V_rel)``: an inertial pose ``g`` and body twist ``V`` (SE(3), ``[v; ω]``)
        relative to the LVLH frame at time ``t`` (module docstring); ``V_rel`` is None without
        ``V``."""
        T, VT = self.frame(t)
        g_rel = lie.se3_inv(T) @ np.asarray(g, dtype=float)
        if V is None:
            return g_rel, None
        return g_rel, np.asarray(V, dtype=float) - lie.Ad_inv(g_rel) @ VT

    def from_lvlh(self, t: float, g_rel, V_rel):
        """``(g, V)``: the inertial pose and body twist of a pose ``g_rel`` and body twist
        ``V_rel`` given relative to the LVLH frame at time ``t``."""
        T, VT = self.frame(t)
        g_rel = np.asarray(g_rel, dtype=float)
        return T @ g_rel, np.asarray(V_rel, dtype=float) + lie.Ad_inv(g_rel) @ VT

    def trajectory_to_lvlh(self, t, g, V):
        """Arrays ``(g_rel (N,4,4), V_rel (N,6))`` of a trajectory's inertial poses and body
        twists at times ``t`` (N)."""
        g_rel = np.empty((len(t), 4, 4))
        V_rel = np.empty((len(t), 6))
        for k in range(len(t)):
            g_rel[k], V_rel[k] = self.to_lvlh(t[k], g[k], V[k])
        return g_rel, V_rel

    @classmethod
    def from_config(cls, section: dict, mu: float, where: str = "orbit") -> "ReferenceOrbit":
        """The orbit of a scenario's ``orbit`` section (``mu`` from the central body): exactly
        one of ``radius`` (circular, m), ``altitude`` (circular, m above ``body_radius``,
        default Earth's equatorial 6378137 m) or ``semi_major_axis`` (m, with ``eccentricity``
        and ``argument_of_periapsis_deg``); ``inclination_deg``, ``raan_deg`` and
        ``true_anomaly_deg`` (for a circular orbit the argument of latitude at t = 0).  Every
        error names ``where.<key>``."""
        keys = {"radius", "altitude", "body_radius", "semi_major_axis", "eccentricity",
                "inclination_deg", "raan_deg", "argument_of_periapsis_deg", "true_anomaly_deg"}
        unknown = sorted(set(section) - keys)
        if unknown:
            raise ValueError(f"{where}: unknown keys {', '.join(map(str, unknown))}; the orbit "
                             f"has {', '.join(sorted(keys))}")
        size = [k for k in ("radius", "altitude", "semi_major_axis")
                if section.get(k) not in (None, 0.0, 0)]
        if len(size) != 1:
            raise ValueError(f"{where}: give exactly one of radius, altitude or semi_major_axis "
                             f"(got {', '.join(size) or 'none'})")
        (key,) = size
        a = _number(section[key], f"{where}.{key}", 0.0, lo_open=True)
        if key == "altitude":
            a += _number(section.get("body_radius", 6378137.0), f"{where}.body_radius", 0.0,
                         lo_open=True)
        e = 0.0
        if key == "semi_major_axis":
            e = _number(section.get("eccentricity", 0.0), f"{where}.eccentricity", 0.0, 1.0,
                        hi_open=True)
        elif section.get("eccentricity") not in (None, 0.0, 0):
            raise ValueError(f"{where}.eccentricity: an elliptical orbit is given by "
                             f"semi_major_axis, not {key}")
        deg = {k: math.radians(_number(section.get(k, 0.0), f"{where}.{k}"))
               for k in ("inclination_deg", "raan_deg", "argument_of_periapsis_deg",
                         "true_anomaly_deg")}
        return cls(mu, a, e, deg["inclination_deg"], deg["raan_deg"],
                   deg["argument_of_periapsis_deg"], deg["true_anomaly_deg"])


class OutputFrame:
    """How a run's outputs express the vehicle: ``world_frame`` ``"lvlh"`` (poses and twists
    relative to the LVLH frame of ``orbit``, :meth:`ReferenceOrbit.to_lvlh`; the TF root and
    ``/odom``'s frame are ``lvlh``) or ``"inertial"`` (unchanged, in the frame named
    ``inertial_name``; with an orbit the LVLH frame is a TF child of it).  The integration is
    untouched: this maps each output sample."""

    def __init__(self, orbit: ReferenceOrbit | None, world_frame: str = "inertial",
                 inertial_name: str = "odom"):
        if world_frame not in WORLD_FRAMES:
            raise ValueError(f"world_frame: unknown {world_frame!r}; choose one of "
                             f"{', '.join(WORLD_FRAMES)}")
        if world_frame == "lvlh" and orbit is None:
            raise ValueError("world_frame: lvlh needs a reference orbit")
        self.orbit, self.world_frame = orbit, world_frame
        self.frame_id = "lvlh" if world_frame == "lvlh" else inertial_name

    @property
    def relative(self) -> bool:
        """True if the outputs are relative to the LVLH frame."""
        return self.world_frame == "lvlh"

    def sample(self, t: float, g, V):
        """``(g_out, V_out, extra_tf)``: the pose and body twist in the output frame and the
        ``(parent, child, 4×4)`` transforms to add to TF (the LVLH frame in an inertial
        output)."""
        if self.orbit is None:
            return g, V, ()
        if self.relative:
            g_rel, V_rel = self.orbit.to_lvlh(t, g, V)
            return g_rel, V_rel, ()
        return g, V, ((self.frame_id, "lvlh", self.orbit.pose(t)),)

    def state(self, state):
        """A :class:`~vm_dynamics.core.state.State` in the output frame."""
        if not self.relative:
            return state
        g, V, _ = self.sample(state.t, state.g, state.V)
        return state._replace(g=g, V=V)


def station_keeping_reference(orbit: ReferenceOrbit, reference, t: float, g):
    """``reference`` (a :class:`~vm_dynamics.control.references.Reference`) with its vehicle
    pose reference taken relative to the LVLH frame of ``orbit`` (``orbit.reference_frame:
    lvlh``) and mapped to the inertial pose trajectory the controllers track
    (:meth:`ReferenceOrbit.pose_reference`): ``reference.base`` as a trajectory in LVLH or,
    without one, the inertial pose ``g`` at time ``t`` held where it is in LVLH.  One function
    for vm-sim and the controller node, so that both track the same reference; its time is
    the orbit's (the simulation's) time."""
    base = reference.base if reference.base is not None else orbit.to_lvlh(t, g)[0]
    return replace(reference, base=orbit.pose_reference(base))


def centre_of_mass(model, g, q) -> np.ndarray:
    """The model's centre of mass (vehicle and every link with mass) in the frame of the pose
    ``g`` (inertial, or LVLH for a pose relative to it) at joint positions ``q``."""
    from ..dynamics import lp
    from .two_body import body_mass_properties
    kin = lp.kinematics(model, np.asarray(q, dtype=float))
    total, s = 0.0, np.zeros(3)
    for k, m, c, _ in body_mass_properties(model):
        name = model.link_names[k]
        home = model.frame_home[name]
        c_f = home[:3, :3].T @ (c - home[:3, 3])
        T = np.asarray(g, dtype=float) @ lp.frame_pose_vehicle(model, kin, name)
        s += m * (T[:3, :3] @ c_f + T[:3, 3])
        total += m
    return s / total
