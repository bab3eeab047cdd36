"""A capture mission: track the moving grapple fixture, grasp, detumble.

Phases (driven by :class:`CaptureMission` around a :class:`~.system.CaptureSimulator`):

1. **Track** — the task-space controller (:class:`~vm_dynamics.control.TaskSpaceController`, in
   its free-floating or actuated-base mode) follows :class:`FixtureReference`: the fixture
   frame ``g_F = g_T Φ`` backed off along its approach axis by a standoff ``s(t)`` that shrinks
   to 0 by a minimum-jerk profile between ``approach.start`` and ``approach.arrive``::

       g_d = g_F D,   D = Trans(0, 0, −s),   ξ = D⁻¹Ḋ = [0, 0, −ṡ, 0, 0, 0]
       V_d = Ad_{D⁻¹} V_F + ξ
       V̇_d = Ad_{D⁻¹} V̇_F − ad_ξ Ad_{D⁻¹} V_F + ξ̇                           (M1)

   with the fixture's body twist ``V_F = Ad_{Φ⁻¹} V_T`` and its predicted (torque-free)
   acceleration ``V̇_F = Ad_{Φ⁻¹} V̇_T``, ``V̇_T`` from the target's Newton–Euler equations (T1)
   at its current (measured) state.
2. **Grasp** — from ``grasp.command_time`` on, the target is welded as soon as the grasp
   condition holds (:meth:`~.system.CaptureSimulator.grasp`).
3. **Detumble** — the detumble controller (default: computed torque in actuated-base mode,
   holding the base pose and the arm posture at the grasp) is reset on the *merged* model, so it
   brings the chaser with the target to rest; its base wrench is the only external wrench.
4. Optional **release** at ``grasp.release_time``.

The controllers run at ``control_rate`` (Hz, zero-order hold over the steps, as a digital
controller) or at every RK stage (``control_rate: 0``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..control import get_controller
from ..control.references import Reference, minimum_jerk
from ..core import lie
from .system import CaptureSimulator

__all__ = ["FixtureReference", "CaptureMission", "CaptureTrajectory", "run_mission",
           "controller_from_config"]


class FixtureReference:
    """End-effector reference on the target's fixture (M1); :meth:`observe` sets the target's
    current state, ``reference(t) -> (g_d, V_d, V̇_d)``."""

    def __init__(self, target, standoff: float = 0.0, start: float = 0.0, arrive: float = 0.0):
        self.target = target
        self.standoff = float(standoff)
        if not self.standoff >= 0 or not np.isfinite(self.standoff):
            raise ValueError(f"approach.standoff: expected a distance >= 0, got {standoff!r}")
        self.start, self.arrive = float(start), float(arrive)
        if self.standoff > 0 and not self.arrive > self.start:
            raise ValueError(f"approach: arrive ({arrive!r}) must be after start ({start!r})")
        self._Phi_inv = lie.Ad_inv(target.fixture)
        self._gT = None

    def observe(self, g_T, V_T) -> None:
        self._gT, self._VT = np.asarray(g_T, float), np.asarray(V_T, float)

    def standoff_at(self, t: float):
        """``(s, ṡ, s̈)`` at ``t``."""
        if self.standoff == 0.0:
            return 0.0, 0.0, 0.0
        T = self.arrive - self.start
        s, ds, dds = minimum_jerk((t - self.start) / T)
        if t <= self.start or t >= self.arrive:
            ds = dds = 0.0
        return self.standoff * (1.0 - s), -self.standoff * ds / T, -self.standoff * dds / T ** 2

    def __call__(self, t: float):
        if self._gT is None:
            raise RuntimeError("FixtureReference: observe(g_T, V_T) first")
        g_F = self._gT @ self.target.fixture
        V_F = self._Phi_inv @ self._VT
        A_F = self._Phi_inv @ self.target.acceleration(self._VT)
        s, ds, dds = self.standoff_at(t)
        D = lie.pose([0.0, 0.0, -s])
        xi = np.array([0.0, 0.0, -ds, 0.0, 0.0, 0.0])
        xid = np.array([0.0, 0.0, -dds, 0.0, 0.0, 0.0])
        AdDi = lie.Ad_inv(D)
        V_d = AdDi @ V_F + xi
        Vdot_d = AdDi @ A_F - lie.ad(xi) @ (AdDi @ V_F) + xid
        return g_F @ D, V_d, Vdot_d


@dataclass
class CaptureTrajectory:
    """Samples of a capture run (arrays over the samples ``t``)."""

    t: np.ndarray
    g: np.ndarray
    V: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    base_wrench: np.ndarray
    g_T: np.ndarray
    V_T: np.ndarray
    grasped: np.ndarray
    contact_force: np.ndarray          # (N, 3) total force on the chaser, inertial
    grasp_position_error: np.ndarray
    grasp_angle_error: np.ndarray
    momentum_chaser: np.ndarray        # (N, 6) spatial, inertial, about the origin
    momentum_target: np.ndarray
    impulse: np.ndarray                # (N, 6) of the base wrench
    kinetic_chaser: np.ndarray
    kinetic_target: np.ndarray
    elastic: np.ndarray
    work: np.ndarray
    dissipated: np.ndarray
    weld_loss: np.ndarray              # kinetic energy lost in the grasps so far
    external_impulse: np.ndarray       # (N, 6) of the force elements (orbit), spatial
    potential: np.ndarray              # the force elements' potential energy
    field_work: np.ndarray             # A: their explicit ∂U/∂t and non-conservative work
    events: list = field(default_factory=list)
    wall_time: float = 0.0

    @property
    def momentum_total(self) -> np.ndarray:
        return self.momentum_chaser + self.momentum_target

    @property
    def momentum_error(self) -> np.ndarray:
        """``h(t) − h(0) − ∫Ad_{g⁻¹}ᵀF_b dt − ∫ΣW_e dt`` (zero up to round-off), (N, 6)."""
        return (self.momentum_total - self.momentum_total[0] - self.impulse
                - self.external_impulse)

    @property
    def energy_balance(self) -> np.ndarray:
        """``T_C + T_T + U + U_e + D + weld loss − W − A`` minus its initial value (zero up
        to the integration error)."""
        e = (self.kinetic_chaser + self.kinetic_target + self.elastic + self.potential
             + self.dissipated + self.weld_loss - self.work - self.field_work)
        return e - e[0]


class CaptureMission:
    """The phase logic of the module docstring.  ``track`` and ``detumble`` are controller
    configurations ``{name: ..., <params>}`` (see :func:`vm_dynamics.control.get_controller`)."""

    def __init__(self, sim: CaptureSimulator, reference: FixtureReference, track: dict,
                 detumble: dict, command_time: float | None = None,
                 release_time: float | None = None, control_rate: float = 100.0):
        self.sim = sim
        self.reference = reference
        self.track = controller_from_config(track, "capture.track")
        self.detumble = controller_from_config(detumble, "capture.detumble")
        self.command_time = None if command_time is None else float(command_time)
        self.release_time = None if release_time is None else float(release_time)
        self.control_rate = float(control_rate)
        if not self.control_rate >= 0:
            raise ValueError(f"capture.control_rate: expected >= 0 Hz, got {control_rate!r}")
        self.events = []
        self._held = None
        self._next = -np.inf

    def start(self) -> None:
        s = self.sim.state
        self.track.reset(self.sim.model, s)
        self.reference.observe(s.g_T, s.V_T)

    def efforts(self, t, state):
        """``(tau, base_wrench)`` of the current phase at ``(t, state)``."""
        if state.grasped:
            return self.detumble.compute(t, state, Reference())
        self.reference.observe(state.g_T, state.V_T)
        tau, bw = self.track.compute(t, state, Reference(ee=self.reference))
        return tau, (None if not np.any(bw) else bw)

    def step(self):
        """One simulator step with the phase's efforts; then the grasp/release logic."""
        sim = self.sim
        if self.control_rate == 0:
            sim.step(stage_inputs=self.efforts)
            applied = self.efforts(sim.t, sim.state)
        else:
            if self._held is None or sim.t >= self._next - 1e-12:
                self._held = self.efforts(sim.t, sim.state)
                self._next = sim.t + 1.0 / self.control_rate
            applied = self._held
            sim.step(*applied)
        t = sim.t
        if (self.command_time is not None and t >= self.command_time and not sim.grasped
                and (self.release_time is None or t < self.release_time) and sim.can_grasp()):
            sim.grasp()
            self.detumble.reset(sim.model, sim.state)
            self._held = None
            self.events.append((t, "grasp", sim.grasp_error()))
        if self.release_time is not None and t >= self.release_time and sim.grasped:
            sim.release()
            self.track.reset(sim.model, sim.state)
            self._held = None
            self.events.append((t, "release", None))
        return applied


def controller_from_config(cfg, what: str):
    """The controller of a configuration ``{name: <controller>, <parameters>}`` (``what``: its
    key, named in the error); the track and detumble laws of a capture."""
    if not isinstance(cfg, dict) or "name" not in cfg:
        raise ValueError(f"{what}: expected {{name: <controller>, <parameters>}}")
    params = {k: v for k, v in cfg.items() if k != "name"}
    return get_controller(str(cfg["name"]), params)


def run_mission(mission: CaptureMission, duration: float, sample_every: int = 1,
                progress=None) -> CaptureTrajectory:
    """Run ``mission`` for ``duration`` seconds, sampling every ``sample_every`` steps."""
    import time
    sim = mission.sim
    steps = int(round(duration / sim.dt))
    mission.start()
    rows = []
    start = time.perf_counter()
    n = sim.model.nq

    def sample(applied):
        s = sim.state
        mom = sim.momentum()
        en = sim.energy()
        gE = s.g @ sim.model.frame_pose(s.q, sim.system.grasp.frame)
        dp, da = (np.nan, np.nan) if s.grasped else _errors(gE, sim.system.target, s.g_T)
        f = sum((c.force for c in sim.contacts), np.zeros(3))
        tau, bw = applied if applied is not None else (None, None)
        rows.append((s.t, s.g, s.V, s.q, s.qd, np.zeros(n) if tau is None else tau,
                     np.zeros(6) if bw is None else bw, s.g_T, s.V_T, s.grasped, f, dp, da,
                     mom["chaser"], mom["target"], s.impulse, en["chaser"], en["target"],
                     en["elastic"], s.work, s.dissipated, en["weld_loss"], s.external_impulse,
                     en["potential"], s.field_work))

    sample(None)
    for k in range(1, steps + 1):
        applied = mission.step()
        if k % sample_every == 0 or k == steps:
            sample(applied)
        if progress is not None:
            progress(k, steps)
    cols = list(zip(*rows))
    arr = [np.array(c) for c in cols]
    return CaptureTrajectory(*arr, events=list(mission.events),
                             wall_time=time.perf_counter() - start)


def _errors(gE, target, g_T):
    from .grasp import grasp_error
    return grasp_error(gE, target.fixture_pose(g_T))
