"""Chaser + target in one Runge–Kutta–Munthe-Kaas step: :class:`CaptureSystem`, :class:`CaptureSimulator`.

**State.**  Free phase: the poses ``(g, g_T) ∈ SE(3) × SE(3)`` (held as the block-diagonal 8×8
matrix ``diag(g, g_T)``, a matrix Lie group whose exp and dexp are the blocks' SE(3) ones,
:class:`ProductGroup`) and the vector ``y = [μ; q; q̇; μ_T; I; W; D; X]``: the spatial momenta of
the chaser ``μ = Ad_{g⁻¹}ᵀ P`` (P the locked momentum (77)) and of the target
``μ_T = Ad_{g_T⁻¹}ᵀ 𝕄_T V_T`` (inertial frame, about its origin), the joints, the spatial
impulse ``I = ∫Ad_{g⁻¹}ᵀF_b dt`` of the base wrench, and three energy accounts: the work of the
inputs ``W = ∫(τ·q̇ + F_b·V) dt``, the contact dissipation ``D = ∫P_d dt`` ((C3) of
:mod:`.contact`) and the work of a measured (HIL) wrench ``X = ∫F·(V_C − V_T) dt``.
Grasped phase: ``g`` and ``[μ; q; q̇; I; W; D; X]`` of the merged model
(:meth:`~vm_dynamics.Model.with_attached_body`); the target's pose and twist follow from the weld
(G1) of :mod:`.grasp`.

**Equations** (docs/capture.md): the momenta obey ``μ̇ = Ad_{g⁻¹}ᵀ F_b + Σ W_c + W_m`` and
``μ̇_T = −Σ W_c − W_m`` with the contact wrenches ``W_c = [f; p × f]`` and a measured wrench
``W_m``, all in the inertial frame; the velocities are recovered at every stage from
``V = M₀⁻¹(Ad_gᵀ μ − M₀𝔪 q̇)`` (LP-3) and ``V_T = 𝕄_T⁻¹ Ad_{g_T}ᵀ μ_T``; ``q̈`` is the model's
forward dynamics with the contact forces as frame wrenches.  Each RK stage's slopes of μ and
μ_T sum to the external wrench, so contact, grasp and release leave the total momentum exact to
round-off.  The poses use the body velocities ``(V, V_T)`` in the RKMK scheme of
:func:`vm_dynamics.sim.integrators.rkmk_step` (``Θ̇ = dexp⁻¹_{−Θ} V`` per block).

**Force elements** (``CaptureSystem.forces``, docs/capture.md "In orbit"): each
:class:`~vm_dynamics.forces.base.ForceElement` (or a time-dependent family with ``at(t)``, as
:class:`~.orbit.ChiefFrameGravity`) acts on the chaser and on the target (evaluated on the
target's one-link model, :func:`~.orbit.target_model`); their spatial wrenches enter ``μ̇`` and
``μ̇_T`` (while grasped the target's is applied at the grasp frame of the merged model) and
accumulate in the external impulse ``E = ∫Σ W_e dt``; the conservative ones' potentials are
counted in the energy, and the explicit rate ``∂U/∂t`` of a time-dependent potential plus the
power of non-conservative elements in the account ``A``.  In orbit the integration frame is the
chief frame of :mod:`.orbit` (momenta relative to a free-falling origin, no loss of digits).

The chaser must be free-flying (base SE3) without uniform gravity in its model (the momentum
formulation needs both; external fields are force elements).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..core import lie
from ..core.groups import SE3
from ..core.validation import as_pose, as_positive, as_vector
from ..sim.integrators import TABLEAUX, group_dexp_inv_body, group_exp
from .body import TargetBody
from .compiled_stage import compiled_stage
from .contact import (
    ChaserPrimitive,
    ContactModel,
    contact_force,
    contact_geometry,
    contact_manifold,
)
from .grasp import GraspSpec, grasp_error, grasp_velocity
from .kinematics import frame_twist
from .orbit import element_wrenches, frozen_elements, target_model
from .stepping import StepStats, advance

# accounts at the end of y: base-wrench impulse (6), elements' impulse (6), W, D, X, A
_NACC = 16
_IMP, _EXT, _SCAL = slice(-16, -10), slice(-10, -4), slice(-4, None)

__all__ = ["CaptureSystem", "CaptureSimulator", "CaptureState", "ProductGroup",
           "MeasuredWrench"]


class ProductGroup:
    """SE(3) × SE(3) as block-diagonal 8×8 matrices (algebra ``R¹²``: the two twists)."""

    dim = 12

    @staticmethod
    def exp(Theta):
        G = np.zeros((8, 8))
        G[:4, :4] = group_exp(SE3, Theta[:6])
        G[4:, 4:] = group_exp(SE3, Theta[6:])
        return G

    @staticmethod
    def dexp_inv_body(Theta):
        D = np.zeros((12, 12))
        D[:6, :6] = lie.dexp_inv_body(Theta[:6])
        D[6:, 6:] = lie.dexp_inv_body(Theta[6:])
        return D

    @staticmethod
    def dexp_inv_body_apply(Theta, V):
        """``dexp_inv_body(Θ) @ V`` block by block, matrix-free (the compiled SE(3) kernel)."""
        return np.concatenate([group_dexp_inv_body(SE3, Theta[:6], V[:6]),
                               group_dexp_inv_body(SE3, Theta[6:], V[6:])])


@dataclass(frozen=True)
class MeasuredWrench:
    """A wrench ``[f; n]`` (N, N·m) measured at the chaser frame ``frame`` (in that frame's axes):
    the target's push on the chaser there.  It replaces the computed contact; the target gets
    the opposite wrench (HIL: a force/torque sensor between a real arm and a mock-up)."""

    frame: str
    wrench: np.ndarray


@dataclass
class CaptureState:
    """Chaser ``(g, V, q, qd)``, target ``(g_T, V_T)``, ``grasped``, the time, the energy
    accounts ``work`` (inputs), ``dissipated`` (contact), ``exchanged`` (measured wrench), J,
    and ``impulse``: ``∫Ad_{g⁻¹}ᵀF_b dt``, the spatial impulse of the base wrench;
    ``external_impulse`` that of the force elements on both bodies (total momentum = initial +
    impulse + external_impulse) and ``field_work`` the account ``A`` (module docstring)."""

    t: float
    g: np.ndarray
    V: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    g_T: np.ndarray
    V_T: np.ndarray
    grasped: bool = False
    work: float = 0.0
    dissipated: float = 0.0
    exchanged: float = 0.0
    impulse: np.ndarray = field(default_factory=lambda: np.zeros(6))
    external_impulse: np.ndarray = field(default_factory=lambda: np.zeros(6))
    field_work: float = 0.0


@dataclass(eq=False)
class CaptureSystem:
    """The chaser ``model`` (base SE3, no gravity), the ``target``, the chaser's contact
    ``primitives``, the ``contact`` law, the ``grasp`` spec (None: no grasping) and the
    ``forces`` acting on both bodies (force elements, or families with ``at(t)``)."""

    model: object
    target: TargetBody
    primitives: list = field(default_factory=list)
    contact: ContactModel | None = None
    grasp: GraspSpec | None = None
    forces: tuple = ()

    def __post_init__(self):
        m = self.model
        if m.base_type != "SE3":
            raise ValueError(f"capture: the chaser must be free-flying (base SE3), got "
                             f"{m.base_type}")
        if np.any(m.gravity != 0):
            raise ValueError(f"capture: the chaser model has gravity {m.gravity.tolist()}; "
                             f"set gravity 0 (external fields are force elements: forces=...)")
        if not isinstance(self.target, TargetBody):
            raise ValueError("capture: target must be a TargetBody")
        self.primitives = list(self.primitives)
        names = set()
        for p in self.primitives:
            if not isinstance(p, ChaserPrimitive):
                raise ValueError(f"capture: primitive {p!r} is not a ChaserPrimitive")
            if p.frame not in m.frame_body:
                raise ValueError(f"contact primitive {p.name!r}: unknown chaser frame {p.frame!r}; "
                                 f"frames are {', '.join(m.frame_names)}")
            if p.name in names:
                raise ValueError(f"contact primitive {p.name!r}: duplicate name")
            names.add(p.name)
        if self.primitives and self.contact is None:
            raise ValueError("capture: primitives given without a contact model")
        if self.grasp is not None and self.grasp.frame not in m.frame_body:
            raise ValueError(f"grasp.frame: unknown chaser frame {self.grasp.frame!r}; frames are "
                             f"{', '.join(m.frame_names)}")
        from ..forces.base import ForceElement
        if isinstance(self.forces, ForceElement) or not isinstance(self.forces, (list, tuple)):
            raise ValueError(f"capture forces: expected a list of force elements, got "
                             f"{type(self.forces).__name__}")
        self.forces = tuple(self.forces)
        for i, e in enumerate(self.forces):
            if not (isinstance(e, ForceElement) or callable(getattr(e, "at", None))):
                raise ValueError(f"capture forces[{i}]: expected a force element "
                                 f"(vm_dynamics.forces) or a family with at(t), got "
                                 f"{type(e).__name__}")
        self.target_model = target_model(self.target) if self.forces else None

    def merged_model(self, X: np.ndarray):
        """The chaser with the target welded to the grasp frame at ``X`` (B's pose in E)."""
        return self.model.with_attached_body(self.grasp.frame, self.target.spatial_inertia, X)


def _point_velocity(g_frame, V_body, p):
    """Inertial velocity of the material point at ``p`` of a body whose frame is at ``g_frame``
    with body twist ``V_body``."""
    R, o = g_frame[:3, :3], g_frame[:3, 3]
    return R @ (V_body[:3] + np.cross(V_body[3:], R.T @ (p - o)))


class CaptureSimulator:
    """Steps a :class:`CaptureSystem` (module docstring).

    ``dt`` the step (s; contact onsets, grasp and release happen between steps), ``method``
    ``"rkmk4"`` or ``"lie_euler"`` (``substeps`` equal RK steps per :meth:`step`) or
    ``"dopri5"`` (error-controlled internal steps to ``rtol``/``atol`` that end at every
    ``dt``, :mod:`.stepping`; counts in :attr:`stats`)."""

    def __init__(self, system: CaptureSystem, dt: float, method: str = "rkmk4",
                 substeps: int = 1, rtol: float = 1e-9, atol: float = 1e-12):
        if method not in TABLEAUX:
            raise ValueError(f"method={method!r}: capture takes {', '.join(TABLEAUX)}")
        self.rtol, self.atol = as_positive(rtol, "rtol"), as_positive(atol, "atol")
        self.stats = StepStats()
        self._h = None
        self.system = system
        self.dt = as_positive(dt, "dt")
        self.tab = TABLEAUX[method]
        self.method = method
        if not isinstance(substeps, int) or substeps < 1:
            raise ValueError(f"substeps: expected a positive integer, got {substeps!r}")
        self.substeps = substeps
        self._v0 = {}
        self._G = None
        self._X = None          # the target's pose in the grasp frame while grasped
        self._merged = None
        self.weld_loss = 0.0    # kinetic energy lost in the plastic welds (grasps) so far, J
        self._stage = None      # the compiled stage of the phase (.compiled_stage), or None

    # ------------------------------------------------------------------ state
    @property
    def model(self):
        """The chaser model in use: the merged one while grasped."""
        return self._merged if self._merged is not None else self.system.model

    @property
    def grasped(self) -> bool:
        return self._merged is not None

    @property
    def weld(self) -> np.ndarray | None:
        """While grasped: the target's pose in the grasp frame (4×4), else None."""
        return None if self._X is None else self._X.copy()

    def reset(self, g, V, q, qd, g_T, V_T, t: float = 0.0) -> "CaptureSimulator":
        """Start free (not grasped) at the chaser state ``(g, V, q, qd)`` and the target's
        ``(g_T, V_T)``."""
        m, n = self.system.model, self.system.model.nq
        g, g_T = as_pose(g, "g"), as_pose(g_T, "g_T")
        V, V_T = as_vector(V, 6, "V"), as_vector(V_T, 6, "V_T")
        q, qd = as_vector(q, n, "q"), as_vector(qd, n, "qd")
        self._merged, self._X, self._v0 = None, None, {}
        self.weld_loss = 0.0
        self._h = None
        self.t = float(t)
        self._G = np.zeros((8, 8))
        self._G[:4, :4], self._G[4:, 4:] = g, g_T
        mu = lie.Ad_inv(g).T @ m.locked_momentum(V, q, qd)
        self._y = np.concatenate([mu, q, qd, self.system.target.momentum(g_T, V_T), np.zeros(_NACC)])
        self._stage = compiled_stage(self.system, m)
        self._contacts = self._contacts_now()
        self._note_onsets(None)
        return self

    def _require(self):
        if self._G is None:
            raise RuntimeError("CaptureSimulator: call reset(...) first")

    def _split(self, G, y):
        """``(g, V, q, qd, g_T, V_T, mu, mu_T)`` of a (stage) state."""
        m, n = self.model, self.model.nq
        g = G[:4, :4]
        mu, q, qd = y[:6], y[6:6 + n], y[6 + n:6 + 2 * n]
        M = m.mass_matrix(q)
        R, p, f = g[:3, :3], g[:3, 3], mu[:3]     # P = Ad_gᵀ μ = [Rᵀf; Rᵀ(n − p × f)]
        P = np.concatenate([R.T @ f, R.T @ (mu[3:] - np.array(
            [p[1] * f[2] - p[2] * f[1], p[2] * f[0] - p[0] * f[2], p[0] * f[1] - p[1] * f[0]]))])
        V = np.linalg.solve(M[:6, :6], P - M[:6, 6:] @ qd)
        if self.grasped:
            gE = g @ m.frame_pose(q, self.system.grasp.frame)
            g_T = gE @ self._X
            V_T = self._Xinv_Ad @ frame_twist(m, q, self.system.grasp.frame, V, qd)    # (G1)
            return g, V, q, qd, g_T, V_T, mu, None
        g_T = G[4:, 4:]
        mu_T = y[6 + 2 * n:12 + 2 * n]
        return g, V, q, qd, g_T, self.system.target.velocity_from_momentum(g_T, mu_T), mu, mu_T

    @property
    def state(self) -> CaptureState:
        self._require()
        G, y, n = self._G, self._y, self.model.nq
        fast = self._stage.velocities(G, y) if self._stage is not None else None
        if fast is not None:
            g, q, qd, (V, V_T, g_T) = G[:4, :4], y[6:6 + n], y[6 + n:6 + 2 * n], fast
        else:
            g, V, q, qd, g_T, V_T, _, _ = self._split(G, y)
        W, D, X, A = self._y[_SCAL]
        return CaptureState(self.t, g.copy(), V, q.copy(), qd.copy(), g_T.copy(), V_T,
                            self.grasped, float(W), float(D), float(X), self._y[_IMP].copy(),
                            self._y[_EXT].copy(), float(A))

    @property
    def contacts(self) -> list:
        """The :class:`~vm_dynamics.capture.contact.ContactForce` of every touching primitive at
        the current state (empty while grasped)."""
        self._require()
        return list(self._contacts)

    # ------------------------------------------------------------------ contact
    def _contact_list(self, g, q, V, qd, g_T, V_T, stage_v0=True) -> list:
        sysm, m = self.system, self.model
        out = []
        if self.grasped or not sysm.primitives:
            return out
        tgt = sysm.target
        g_shape = tgt.shape_world_pose(g_T)
        r_T = tgt.shape.bounding_radius()
        for p in sysm.primitives:
            g_f = g @ m.frame_pose(q, p.frame)
            g_p = g_f @ p.pose
            if (np.linalg.norm(g_p[:3, 3] - g_shape[:3, 3])
                    > p.shape.bounding_radius() + r_T + 1e-9):
                continue
            manifold = contact_manifold(p, g_p, tgt.shape, g_shape)
            if not manifold:
                continue
            V_f = frame_twist(m, q, p.frame, V, qd)
            for geom in manifold:
                v_rel = (_point_velocity(g_f, V_f, geom.point)
                         - _point_velocity(g_T, V_T, geom.point))
                v0 = self._v0.get(p.name)
                if v0 is None:
                    v0 = -float(geom.normal @ v_rel)
                cf = contact_force(sysm.contact, p.name, geom, v_rel, v0)
                out.append((cf, p.frame, g_f))
        return out

    def _contacts_now(self) -> list:
        """The contacts at the current state (none if every primitive is apart)."""
        apart = self._stage.apart(self._G, self._y) if self._stage is not None else None
        return [] if apart is not None and apart.all() else self._evaluate(self.t, self._G,
                                                                           self._y, None)[2]

    def _note_onsets(self, before):
        """Record the impact speed ``v₀`` of contacts that began in the last step (the
        penetration rate at the step's start, when the pair was still apart)."""
        touching = {cf.primitive: cf for cf in self._contacts}
        for name in list(self._v0):
            if name not in touching:
                del self._v0[name]
        for name, cf in touching.items():
            if name not in self._v0:
                self._v0[name] = (before.get(name, cf.delta_dot) if before else cf.delta_dot)

    def _approach_rates(self) -> dict:
        """Penetration rates ``−n·v_rel`` of every primitive near the target (also apart)."""
        if self.grasped or not self.system.primitives:
            return {}
        apart = self._stage.apart(self._G, self._y, True) if self._stage is not None else None
        if apart is not None and apart.all():     # none within 5 % of its radius: no rates
            return {}
        g, V, q, qd, g_T, V_T, _, _ = self._split(self._G, self._y)
        sysm, m = self.system, self.model
        g_shape = sysm.target.shape_world_pose(g_T)
        out = {}
        for p in sysm.primitives:
            g_f = g @ m.frame_pose(q, p.frame)
            geom = contact_geometry(p, g_f @ p.pose, sysm.target.shape, g_shape)
            if geom.delta < -0.05 * p.shape.bounding_radius():
                continue
            V_f = frame_twist(m, q, p.frame, V, qd)
            v_rel = (_point_velocity(g_f, V_f, geom.point)
                     - _point_velocity(g_T, V_T, geom.point))
            out[p.name] = -float(geom.normal @ v_rel)
        return out

    # ------------------------------------------------------------------ the right-hand side
    def _evaluate(self, t, G, y, inputs):
        """``(body velocities, ẏ, contacts)`` at a (stage) state; ``inputs`` ``(tau, base_wrench,
        measured)`` or None."""
        m, n = self.model, self.model.nq
        g, V, q, qd, g_T, V_T, _, _ = self._split(G, y)
        tau, bw, meas = inputs if inputs is not None else (None, None, None)
        tau = np.zeros(n) if tau is None else tau
        contacts = [] if meas is not None else self._contact_list(g, q, V, qd, g_T, V_T)
        fw = {}
        Wc = np.zeros(6)
        P_d = 0.0
        for cf, frame, g_f in contacts:
            Ws = cf.spatial_wrench
            Wc += Ws
            fw[frame] = fw.get(frame, 0.0) + lie.Ad(g_f).T @ Ws
            P_d += cf.power
        P_x = 0.0
        if meas is not None:
            g_s = g @ m.frame_pose(q, meas.frame)
            Wm = lie.Ad_inv(g_s).T @ meas.wrench
            Wc += Wm
            fw[meas.frame] = fw.get(meas.frame, 0.0) + meas.wrench
            V_s = lie.Ad(g_s) @ frame_twist(m, q, meas.frame, V, qd)
            P_x = float(Wm @ (V_s - lie.Ad(g_T) @ V_T))
        ext_C = ext_T = np.zeros(6)
        P_a = 0.0
        bw_all = bw
        if self.system.forces:
            ext_C, ext_T, bw_e, fw_T, P_a = self._fields(t, fw, g, V, q, qd, g_T, V_T)
            bw_all = bw_e if bw is None else bw + bw_e
            if self.grasped:
                frame = self.system.grasp.frame
                fw[frame] = fw.get(frame, 0.0) + self._Xinv_Ad.T @ fw_T
        _, qdd = m.forward_dynamics(g, V, q, qd, tau, bw_all, fw or None)
        mu_dot = Wc + ext_C
        P_in = float(tau @ qd)
        impulse_rate = np.zeros(6)
        if bw is not None:
            impulse_rate = lie.Ad_inv(g).T @ bw
            mu_dot += impulse_rate
            P_in += float(bw @ V)
        if self.grasped:
            mu_dot += ext_T
        parts = [mu_dot, qd, qdd]
        if self.grasped:
            vel = V
        else:
            parts.append(ext_T - Wc)
            vel = np.concatenate([V, V_T])
        parts += [impulse_rate, ext_C + ext_T, [P_in, P_d, P_x, P_a]]
        return vel, np.concatenate(parts), [c[0] for c in contacts]

    def _fields(self, t, fw, g, V, q, qd, g_T, V_T):
        """The force elements at time ``t``: they add their chaser frame wrenches to ``fw`` and
        return ``(spatial wrench on the chaser, on the target, chaser vehicle wrench, target
        body wrench, A-rate)``."""
        sysm = self.system
        elements = frozen_elements(sysm.forces, t)
        bw_e, fw_e, ext_C, P_C = element_wrenches(elements, sysm.model, g, V, q, qd)
        for name, w in fw_e.items():
            fw[name] = fw.get(name, 0.0) + w
        mT = sysm.target_model
        bw_T, fw_T, ext_T, P_T = element_wrenches(elements, mT, g_T, V_T, np.zeros(0))
        for name, w in fw_T.items():
            bw_T = bw_T + lie.Ad_inv(mT.frame_home[name]).T @ w
        return ext_C, ext_T, bw_e, bw_T, P_C + P_T


    # ------------------------------------------------------------------ stepping
    def _inputs(self, fn, tau, base_wrench, measured, t, G, y):
        n = self.model.nq
        if fn is not None:
            g, V, q, qd, g_T, V_T, _, _ = self._split(G, y)
            W, D, X, A = y[_SCAL]
            out = fn(t, CaptureState(t, g, V, q, qd, g_T, V_T, self.grasped, W, D, X,
                                     y[_IMP], y[_EXT], A))
            if not isinstance(out, tuple) or len(out) != 2:
                raise ValueError(f"stage_inputs: expected (tau, base_wrench), got {out!r:.80}")
            tau, base_wrench = out
        tau = None if tau is None else as_vector(tau, n, "tau")
        bw = None if base_wrench is None else as_vector(base_wrench, 6, "base_wrench")
        return tau, bw, measured

    def step(self, tau=None, base_wrench=None, *, stage_inputs: Callable | None = None,
             measured_wrench: MeasuredWrench | None = None) -> CaptureState:
        """Advance by ``dt``: joint efforts ``tau`` and the body wrench ``base_wrench`` held, or
        ``stage_inputs(t, CaptureState) -> (tau, base_wrench)`` at every RK stage;
        ``measured_wrench`` replaces the computed contact (HIL) when given."""
        self._require()
        if measured_wrench is not None:
            if not isinstance(measured_wrench, MeasuredWrench):
                raise ValueError("measured_wrench: expected a MeasuredWrench(frame, wrench)")
            if measured_wrench.frame not in self.model.frame_body:
                raise ValueError(f"measured_wrench.frame: unknown chaser frame "
                                 f"{measured_wrench.frame!r}")
            measured_wrench = replace(measured_wrench, wrench=as_vector(
                measured_wrench.wrench, 6, "measured_wrench.wrench"))
        group = self.system.model.group if self.grasped else ProductGroup
        before = self._approach_rates()
        held = (None if stage_inputs is not None or measured_wrench is not None
                or self._stage is None else self._inputs(None, tau, base_wrench, None, 0, 0, 0))

        def rhs(t, G, y):
            if held is not None:            # the compiled stage, unless a contact may act
                out = self._stage.rates(t, G, y, held[0], held[1])
                if out is not None:
                    return out[0], out[1], ()
                return self._evaluate(t, G, y, held)
            inp = self._inputs(stage_inputs, tau, base_wrench, measured_wrench, t, G, y)
            return self._evaluate(t, G, y, inp)

        done = None if held is None else self._stage.advance(self.t, self._G, self._y, self.dt,
                                                             self.substeps, self.tab, *held[:2])
        if done is not None:        # the whole step compiled
            self._G, self._y = done
        else:
            self._G, self._y, self._h = advance(rhs, group, self.tab, self.t, self._G, self._y,
                                                self.dt, self.substeps, self._h, self.rtol,
                                                self.atol, self.stats)
        self.t += self.dt
        if measured_wrench is None:
            self._contacts = self._contacts_now()
        else:       # the measured wrench stands for the contact: no model contact, no U
            self._contacts = []
        self._note_onsets(before)
        return self.state

    # ------------------------------------------------------------------ grasp / release
    def grasp_error(self) -> tuple[float, float]:
        """``(position, angle)`` of the fixture relative to the grasp frame (m, rad)."""
        self._require()
        s = self.state
        gE = s.g @ self.model.frame_pose(s.q, self.system.grasp.frame)
        return grasp_error(gE, self.system.target.fixture_pose(s.g_T))

    def can_grasp(self) -> bool:
        """The grasp condition (tolerances of :class:`~.grasp.GraspSpec`), free phase only."""
        if self.system.grasp is None or self.grasped:
            return False
        dp, da = self.grasp_error()
        return dp <= self.system.grasp.position_tol and da <= self.system.grasp.angle_tol

    def grasp(self, force: bool = False) -> bool:
        """Weld the target to the grasp frame if the grasp condition holds (or ``force``):
        the merged model, velocities from (G2), momentum unchanged.  Returns whether it did."""
        self._require()
        if self.system.grasp is None:
            raise ValueError("grasp: the system has no grasp spec (grasp frame)")
        if self.grasped or not (force or self.can_grasp()):
            return False
        s = self.state
        T_before = (self.system.model.kinetic_energy(s.V, s.q, s.qd)
                    + self.system.target.kinetic_energy(s.V_T)
                    + sum(cf.elastic_energy for cf in self._contacts))
        frame = self.system.grasp.frame
        gE = s.g @ self.system.model.frame_pose(s.q, frame)
        X = lie.se3_inv(gE) @ s.g_T
        Vp, qdp = grasp_velocity(self.system.model, self.system.target.spatial_inertia, s.q, s.V,
                                 s.qd, s.V_T, frame, X)
        merged = self.system.merged_model(X)
        mu = lie.Ad_inv(s.g).T @ merged.locked_momentum(Vp, s.q, qdp)
        self._merged, self._X, self._Xinv_Ad = merged, X, lie.Ad_inv(X)
        self._stage = compiled_stage(self.system, merged, X)
        self._G = s.g.copy()
        self._y = np.concatenate([mu, s.q, qdp, self._y[-_NACC:]])
        self._contacts, self._v0 = [], {}
        self.weld_loss += T_before - merged.kinetic_energy(Vp, s.q, qdp)
        return True

    def release(self) -> bool:
        """Undo the weld (G3): the chaser keeps its velocities, the target leaves with the twist
        of its attachment; the elastic energy of a contact the weld held compressed is returned
        from ``weld_loss``.  Returns whether it was grasped."""
        self._require()
        if not self.grasped:
            return False
        s = self.state
        self._merged, self._X = None, None
        m = self.system.model
        self._G = np.zeros((8, 8))
        self._G[:4, :4], self._G[4:, 4:] = s.g, s.g_T
        mu = lie.Ad_inv(s.g).T @ m.locked_momentum(s.V, s.q, s.qd)
        self._y = np.concatenate([mu, s.q, s.qd, self.system.target.momentum(s.g_T, s.V_T),
                                  self._y[-_NACC:]])
        self._stage = compiled_stage(self.system, m)
        self._contacts = self._contacts_now()
        self._note_onsets(None)
        # a contact the weld held compressed springs back: its elastic energy leaves the weld
        self.weld_loss -= sum(cf.elastic_energy for cf in self._contacts)
        return True

    # ------------------------------------------------------------------ accounts
    def momentum(self) -> dict:
        """Spatial momenta ``[linear; angular]`` (inertial frame, about its origin) of the chaser
        (its momentum map, :meth:`~vm_dynamics.Model.momentum`, on the original model), the target
        and their sum."""
        s = self.state
        h_C = self.system.model.momentum(s.g, s.V, s.q, s.qd)
        h_T = self.system.target.momentum(s.g_T, s.V_T)
        return {"chaser": h_C, "target": h_T, "total": h_C + h_T}

    def energy(self) -> dict:
        """Kinetic energies, the elastic energy of the contacts, the force elements'
        ``potential``, the accounts, the energy lost in the welds (``weld_loss``: (G2) is a
        plastic impact, and the elastic energy of a contact at the moment of the weld is locked
        in it) and ``balance = T_C + T_T + U + U_e − W − X − A + D + weld_loss`` (constant: the
        energy balance)."""
        s = self.state
        T_C = self.system.model.kinetic_energy(s.V, s.q, s.qd)
        T_T = self.system.target.kinetic_energy(s.V_T)
        U = sum(cf.elastic_energy for cf in self._contacts)
        V_f = self.potential_energy()
        return {"chaser": T_C, "target": T_T, "elastic": U, "potential": V_f, "work": s.work,
                "dissipated": s.dissipated, "exchanged": s.exchanged, "weld_loss": self.weld_loss,
                "field_work": s.field_work,
                "balance": (T_C + T_T + U + V_f - s.work - s.exchanged - s.field_work
                            + s.dissipated + self.weld_loss)}

    def potential_energy(self) -> float:
        """The conservative force elements' potential energy of chaser and target (0 without
        elements) at the current time and state."""
        sysm = self.system
        if not sysm.forces:
            return 0.0
        s = self.state
        U = 0.0
        for e, _family in frozen_elements(sysm.forces, s.t):
            if e.conservative:
                U += (e.potential_energy(sysm.model, s.g, s.q)
                      + e.potential_energy(sysm.target_model, s.g_T, np.zeros(0)))
        return U
