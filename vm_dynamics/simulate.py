"""Time simulation of a vehicle-manipulator system: :func:`simulate` and :class:`Trajectory`.

The pose is integrated on the group by RKMK methods (:mod:`vm_dynamics.integrators`); the
dynamics are the corrected Lagrange–Poincaré equations of paper 000 (seeds-LP.md §3.5):

    (LP-1)  Ṗ = ad*_𝒱 P + F_η,                     F_η = f₀ + J_{𝔢,0}ᵀ f_𝔢 − f_u
    (LP-2)  M̂ q̈ + Ĉ q̇ + N̂ + ∂u/∂q = F_𝔪 − 𝒜ᵀ F_η
    (LP-3)  𝒱 = M₀⁻¹ P − 𝒜 q̇
    (LP-4)  g⁻¹ ġ = (ι₀ 𝒱)^

**Which variable carries the vehicle's motion** (``formulation=``).  The vector part of the state
is ``(m, q, q̇)`` where ``m`` is one of

* ``"auto"`` (default): ``"body_momentum"`` when gravity acts along a translation of the
  vehicle (free fall: μ grows like m·g·t and its transport by the pose error costs accuracy in
  𝒱 — at dt = 5 ms over 1 s, 𝒱 errors of 3e-6 with μ against 2e-9 with P), otherwise
  ``"spatial_momentum"``.
* ``"spatial_momentum"``: ``μ = Ad*_{h⁻¹} P`` with ``h = g_ref⁻¹ g ∈ H`` and
  ``g_ref = g0`` — the vehicle-algebra momentum transported to a fixed (inertial) frame, the
  momentum map of the H-symmetry (seeds-LP §3.9).  From (LP-1) and ``ḣ = h 𝒱``,
  ``μ̇ = Ad*_{h⁻¹} F_η``: without vehicle/end-effector wrenches and gravity ``μ̇ = 0``, so the
  integrator conserves the total momentum **exactly** (to round-off) for every method and step
  size; the stages recover ``P = Ad*_h μ`` and ``𝒱`` by (LP-3).  This is the discrete analogue
  of the reconstruction at conserved momentum of paper 002 §6 (eq. (6.5)).
* ``"body_momentum"``: ``P`` itself, integrated by (LP-1).  The inertial momentum is then only
  conserved to the method's truncation error (O(h⁴) for ``rkmk4``).
* ``"velocity"``: ``𝒱`` integrated with ``𝒱̇`` from the forward dynamics; same accuracy as
  ``body_momentum``, but works with *any* ``dynamics`` function without touching the LP terms.

Energy is conserved to the truncation error in all three (RKMK methods are not symplectic).
With the default LP path the LP quantities (``lp.lp_terms``) are computed exactly once per stage.

**Prescribed joint motion.**  With ``prescribed(t) -> (q, q̇, q̈)`` the joints follow that motion
exactly; only ``(g, m)`` is integrated, and since (LP-1) with (LP-3) does not contain ``q̈`` the
base equation needs only ``M₀``, ``𝒜`` and ``F_η`` at ``q(t)`` (no derivatives, no q̈).  The joint
efforts that realise the motion are recorded: by (LP-2) ``q̈`` is affine in ``τ`` with slope
``M̂⁻¹``, so ``τ = M̂ (q̈_prescribed − q̈(τ = 0))``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import lie, lp
from .integrators import METHODS, IntegrationStats, integrate
from .model import _as_pose, _as_vector

__all__ = ["simulate", "Trajectory", "State", "FORMULATIONS"]

FORMULATIONS = ("auto", "spatial_momentum", "body_momentum", "velocity")


class State(NamedTuple):
    """Immutable snapshot passed to input callables and to ``callback`` (arrays are read-only)."""

    t: float
    g: np.ndarray
    V: np.ndarray
    q: np.ndarray
    qd: np.ndarray


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


def _make_state(t, g, V, q, qd) -> State:
    return State(t, _ro(g), _ro(V), _ro(q), _ro(qd))


@dataclass
class Trajectory:
    """Samples of a simulation on the grid ``t = k·dt`` (the last sample at ``t_final``).

    ``tau`` and ``base_wrench`` are the joint efforts and the vehicle wrench applied at the samples
    (for prescribed motion: the efforts that realise it).  ``steps`` counts integrator steps,
    ``evaluations`` right-hand-side evaluations, ``rejected_steps`` rejected adaptive steps.
    ``interrupted`` is True if a KeyboardInterrupt cut the run short, ``stopped`` if the callback
    asked to stop; the arrays then hold only the samples that were completed.
    """

    t: np.ndarray
    g: np.ndarray
    V: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    base_wrench: np.ndarray
    method: str
    formulation: str = "spatial_momentum"
    steps: int = 0
    evaluations: int = 0
    rejected_steps: int = 0
    wall_time: float = 0.0
    interrupted: bool = False
    stopped: bool = False
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.t)

    def __getitem__(self, index) -> "Trajectory":
        """Sub-trajectory of the samples selected by a slice or an index array
        (``traj[::10]``); the run statistics are kept."""
        if isinstance(index, (int, np.integer)):
            raise TypeError("Trajectory[...] selects samples by slice or index array; "
                            "use traj.state(k) for one sample")
        arrays = {k: getattr(self, k)[index] for k in
                  ("t", "g", "V", "q", "qd", "tau", "base_wrench")}
        return Trajectory(**arrays, method=self.method, formulation=self.formulation,
                          steps=self.steps, evaluations=self.evaluations,
                          rejected_steps=self.rejected_steps, wall_time=self.wall_time,
                          interrupted=self.interrupted, stopped=self.stopped, meta=dict(self.meta))

    def state(self, k: int) -> State:
        """The sample ``k`` as a :class:`State`."""
        return State(float(self.t[k]), self.g[k], self.V[k], self.q[k], self.qd[k])

    def energy(self, model) -> np.ndarray:
        """Total energy (kinetic + gravitational) at every sample, (N+1,)."""
        return np.array([model.energy(self.g[k], self.V[k], self.q[k], self.qd[k])
                         for k in range(len(self.t))])

    def momentum(self, model) -> np.ndarray:
        """Total spatial momentum ``[linear; angular]`` (inertial frame, about its origin),
        (N+1, 6)."""
        return np.array([model.momentum(self.g[k], self.V[k], self.q[k], self.qd[k])
                         for k in range(len(self.t))]).reshape(len(self.t), 6)


# ---------------------------------------------------------------------------------- inputs
def _input_fn(value, size: int, name: str):
    """An array (validated once) or a callable ``(t, state) -> array`` (validated per call)."""
    if value is None:
        return None
    if callable(value):
        def fn(t, state, _f=value):
            out = _f(t, state)
            try:
                a = np.asarray(out, dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"{name}: callable returned a non-numeric value {out!r} "
                                 f"at t={t:.9g}") from None
            if a.ndim == 0 and size == 1:
                a = a.reshape(1)
            if a.shape != (size,):
                raise ValueError(f"{name}: callable returned shape {a.shape} at t={t:.9g}; "
                                 f"expected ({size},)")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: callable returned NaN or Inf at t={t:.9g}: {a}")
            return a
        return fn
    a = _as_vector(value, size, name).copy()
    a.flags.writeable = False
    return lambda t, state: a


def _frame_inputs(model, frame_wrenches):
    if frame_wrenches is None:
        return None
    if not isinstance(frame_wrenches, dict):
        raise ValueError("frame_wrenches: expected a dict {frame name: 6-vector or callable}")
    out = []
    for name, w in frame_wrenches.items():
        if name not in model.frame_body:
            raise ValueError(f"frame_wrenches: unknown frame {name!r}; frames are "
                             f"{', '.join(model.frame_names)}")
        out.append((name, _input_fn(w, 6, f"frame_wrenches[{name!r}]")))
    return out or None


def _prescribed_fn(prescribed, n: int):
    if prescribed is None:
        return None
    if not callable(prescribed):
        raise ValueError("prescribed: expected a callable t -> (q, qd, qdd)")

    def fn(t):
        out = prescribed(t)
        try:
            q, qd, qdd = out
        except (TypeError, ValueError):
            raise ValueError(f"prescribed: must return (q, qd, qdd); got {out!r} at t={t:.9g}") \
                from None
        res = []
        for nm, a in (("q", q), ("qd", qd), ("qdd", qdd)):
            try:
                a = np.asarray(a, dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"prescribed: {nm} is not numeric at t={t:.9g}") from None
            if a.ndim == 0 and n == 1:
                a = a.reshape(1)
            if a.shape != (n,):
                raise ValueError(f"prescribed: {nm} has shape {a.shape} at t={t:.9g}; "
                                 f"expected ({n},)")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"prescribed: {nm} contains NaN or Inf at t={t:.9g}")
            res.append(a)
        return res
    return fn


def _time_grid(t_final, dt) -> np.ndarray:
    for nm, v in (("t_final", t_final), ("dt", dt)):
        if not isinstance(v, (int, float, np.floating, np.integer)) or not np.isfinite(v) or v <= 0:
            raise ValueError(f"{nm}: expected a positive finite number, got {v!r}")
    t_final, dt = float(t_final), float(dt)
    N = max(1, int(np.ceil(t_final / dt - 1e-9)))
    t = np.arange(N + 1) * dt
    t[-1] = t_final
    return t


# ---------------------------------------------------------------------------------- dynamics
class _System:
    """Right-hand side of (LP-1)–(LP-4) in the chosen formulation (see module docstring)."""

    def __init__(self, model, formulation, dynamics, tau_fn, bw_fn, fw_fns, presc_fn, g_ref,
                 fast_model=None):
        self.model = model
        self.fast = fast_model
        self.group = model.group
        self.b, self.n = model.b, model.n
        self.form = formulation
        self.dynamics = dynamics
        self.tau_fn, self.bw_fn, self.fw_fns, self.presc = tau_fn, bw_fn, fw_fns, presc_fn
        self.g_ref_inv = lie.se3_inv(g_ref)
        self.zeros_tau = np.zeros(self.n)
        self.has_gravity = bool(np.any(model.gravity))
        self.zeros_tau.flags.writeable = False

    # -- momentum transport between the body and the reference frame (H-invariant parts)
    def P_from_mu(self, g, mu):
        h = self.g_ref_inv @ g
        return self.group.project(lie.Ad(h).T @ self.group.embed(mu))

    def mu_from_P(self, g, P):
        h = self.g_ref_inv @ g
        return self.group.project(lie.Ad_inv(h).T @ self.group.embed(P))

    def split(self, t, y):
        b, n = self.b, self.n
        if self.presc is not None:
            q, qd, qdd = self.presc(t)
            return y, q, qd, qdd
        return y[:b], y[b:b + n], y[b + n:], None

    def velocity(self, g, m, qd, terms):
        """𝒱 and P from the state variable m (LP-3)."""
        if self.form == "velocity":
            return m, None
        P = m if self.form == "body_momentum" else self.P_from_mu(g, m)
        if not self.b:
            return np.zeros(0), P
        return np.linalg.solve(terms.M0, P) - terms.A @ qd, P

    def inputs(self, t, state):
        tau = self.tau_fn(t, state) if self.tau_fn is not None else self.zeros_tau
        bw = self.bw_fn(t, state) if self.bw_fn is not None else None
        fw = ({name: fn(t, state) for name, fn in self.fw_fns}
              if self.fw_fns is not None else None)
        return tau, bw, fw

    def F_eta(self, kin, g, bw, fw):
        """F_η = f₀ + J_{𝔢,0}ᵀ f_𝔢 − f_u (LP-1)."""
        F = np.zeros(self.b)
        if self.has_gravity:
            F -= lp.gravity_forces(self.model, kin, g)[0]
        if fw:
            F += lp.external_forces(self.model, kin, fw)[0]
        return F if bw is None else F + bw

    def mdot_from_F(self, g, V, P, F):
        if self.form == "spatial_momentum":
            return self.mu_from_P(g, F) if self.b else np.zeros(0)   # μ̇ = Ad*_{h⁻¹} F_η
        return self.group.ad(V).T @ P + F                             # Ṗ (LP-1)

    def _fast_call(self, t, g, y):
        """The same right-hand side with the O(n) recursive path (vm_dynamics.fast): M₀ and 𝒜
        from the CRBA blocks for (LP-3), (V̇, q̈) from the ABA, and F_η = f₀ − (static base
        load of gravity and frame wrenches, by one RNEA call) for (LP-1)."""
        m, q, qd, _ = self.split(t, y)
        fm = self.fast
        blocks = fm.lp_blocks(q) if self.form != "velocity" else None
        V, P = self.velocity(g, m, qd, blocks)
        state = _make_state(t, g, V, q, qd)
        tau, bw, fw = self.inputs(t, state)
        Vdot, qdd = fm.forward_dynamics(g, V, q, qd, tau, bw, fw)
        if self.form == "velocity":
            mdot = Vdot
        else:
            F = np.zeros(self.b) if bw is None else np.asarray(bw, dtype=float)
            if self.has_gravity or fw:
                zb, zn = np.zeros(self.b), np.zeros(self.n)
                F = F - fm.inverse_dynamics(g, zb, q, zn, zb, zn, fw)[0]
            mdot = self.mdot_from_F(g, V, P, F)
        return V, np.concatenate([mdot, qd, qdd]), (V, tau, bw, q, qd)

    def __call__(self, t, g, y):
        if self.fast is not None and self.presc is None:
            return self._fast_call(t, g, y)
        m, q, qd, qdd_p = self.split(t, y)
        model = self.model
        lp_path = self.dynamics is None
        if qdd_p is not None:
            terms = lp.lp_terms(model, q, derivatives=False)
        elif lp_path:
            terms = lp.lp_terms(model, q, derivatives=True)
        elif self.form != "velocity":
            terms = lp.lp_terms(model, q, derivatives=False)
        else:
            terms = None
        V, P = self.velocity(g, m, qd, terms)
        state = _make_state(t, g, V, q, qd)
        tau, bw, fw = self.inputs(t, state)
        if qdd_p is not None:                                    # prescribed joints: (g, m) only
            mdot = self.mdot_from_F(g, V, P, self.F_eta(terms.kin, g, bw, fw))
            return V, mdot, (V, tau, bw, q, qd)
        if lp_path:
            Vdot, qdd, Pdot = lp.forward_dynamics(model, g, V, q, qd, tau, bw, fw, terms=terms)
            if self.form == "velocity":
                mdot = Vdot
            elif self.form == "body_momentum":
                mdot = Pdot
            else:
                mdot = self.mdot_from_F(g, V, P, Pdot - self.group.ad(V).T @ P)
        else:
            Vdot, qdd = self.dynamics(g, V, q, qd, tau, bw, fw)
            Vdot, qdd = np.asarray(Vdot, dtype=float), np.asarray(qdd, dtype=float)
            mdot = (Vdot if self.form == "velocity"
                    else self.mdot_from_F(g, V, P, self.F_eta(terms.kin, g, bw, fw)))
        return V, np.concatenate([mdot, qd, qdd]), (V, tau, bw, q, qd)

    def at_sample(self, t, g, y):
        """(𝒱, τ, f₀, q, q̇) at an interpolated sample (no dynamics evaluation)."""
        m, q, qd, _ = self.split(t, y)
        terms = (lp.lp_terms(self.model, q, derivatives=False)
                 if self.form != "velocity" else None)
        V, _ = self.velocity(g, m, qd, terms)
        tau, bw, _ = self.inputs(t, _make_state(t, g, V, q, qd))
        return V, tau, bw, q, qd

    def prescribed_effort(self, t, g, V, q, qd, qdd_p):
        """τ realising q̈_prescribed: τ = M̂ (q̈_p − q̈(τ=0)) by linearity of (LP-2) in τ."""
        model = self.model
        state = _make_state(t, g, V, q, qd)
        _, bw, fw = self.inputs(t, state)
        terms = lp.lp_terms(model, q, derivatives=True)
        if self.dynamics is None:
            _, qdd0, _ = lp.forward_dynamics(model, g, V, q, qd, self.zeros_tau, bw, fw,
                                             terms=terms)
        else:
            _, qdd0 = self.dynamics(g, V, q, qd, self.zeros_tau, bw, fw)
        return terms.Mhat @ (qdd_p - np.asarray(qdd0, dtype=float))


# ---------------------------------------------------------------------------------- simulate
def simulate(model, g0, V0, q0, qd0, t_final, dt, tau=None, base_wrench=None, method="rkmk4",
             prescribed=None, frame_wrenches=None, rtol=1e-9, atol=1e-12, callback=None,
             progress=False, *, formulation="auto", dynamics="auto",
             substeps=1) -> Trajectory:
    """Simulate the vehicle-manipulator from ``(g0, V0, q0, qd0)`` for ``t_final`` seconds.

    Parameters
    ----------
    g0, V0, q0, qd0 : initial pose (4×4), body velocity (b), joint positions and velocities (n).
        With ``prescribed`` motion ``q0``/``qd0`` may be ``None`` (taken from ``prescribed(0)``);
        if given they must agree with it.
    t_final, dt : output samples at ``t = k·dt`` (the last one at ``t_final``).
    tau, base_wrench : joint efforts (n) and vehicle wrench (b, ``[f; n]`` in the vehicle frame):
        an array, or a callable ``(t, state) -> array`` with ``state`` a :class:`State`.
    frame_wrenches : ``{frame: wrench or callable}``, wrenches at frame origins in frame axes.
    method : ``"rkmk4"`` (default, fixed step ``dt/substeps``), ``"lie_euler"`` (order 1) or
        ``"dopri5"`` (adaptive Dormand–Prince 5(4) in the Lie algebra with ``rtol``/``atol``,
        sampled on the grid by dense output).
    prescribed : callable ``t -> (q, qd, qdd)``: joints follow it exactly, the vehicle follows
        the coupled dynamics; ``traj.tau`` holds the efforts that realise the motion.
    callback : ``callback(state)`` at every sample; returning ``True`` stops the run.
    progress : show a tqdm progress bar.
    formulation : ``"auto"`` | ``"spatial_momentum"`` | ``"body_momentum"`` | ``"velocity"``
        (module docstring).
    dynamics : ``"auto"`` (default: ``"fast"`` when numba is installed, else ``"lp"``),
        ``"fast"`` (the O(n) recursive path of :mod:`vm_dynamics.fast`, which solves the same
        equations and agrees with the LP reference to 1e-10), ``"lp"`` (the closed-form LP
        reference with one ``lp_terms`` per stage), or a forward-dynamics function with the
        signature of :meth:`Model.forward_dynamics`.

    A KeyboardInterrupt returns the samples computed so far with ``traj.interrupted = True``.
    """
    n, b = model.n, model.b
    g0 = _as_pose(g0, "g0")
    V0 = _as_vector(V0, b, "V0")
    if method not in METHODS:
        raise ValueError(f"method={method!r}: unknown; choose one of {', '.join(METHODS)}")
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation={formulation!r}: unknown; choose one of "
                         f"{', '.join(FORMULATIONS)}")
    for nm, v in (("rtol", rtol), ("atol", atol)):
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"{nm}: expected a positive number, got {v!r}")
    if not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise ValueError(f"substeps: expected a positive integer, got {substeps!r}")
    fast_model = None
    if dynamics == "auto":
        from . import fast
        dynamics = "fast" if fast.numba_available() else "lp"
    if dynamics == "fast":
        from . import fast
        fast_model = fast.fast_model(model)
        dynamics = None
    elif dynamics == "lp" or dynamics is None:
        dynamics = None
    elif not callable(dynamics):
        raise ValueError(f"dynamics={dynamics!r}: expected 'auto', 'fast', 'lp' or a callable "
                         f"like Model.forward_dynamics")
    if callback is not None and not callable(callback):
        raise ValueError("callback: expected a callable state -> bool")
    if formulation == "auto":
        # μ grows secularly (≈ m·g·t) only when gravity acts along a translation of the vehicle
        lin = [a for a in model.group.axes if a < 3]
        along = g0[:3, :3][:, lin].T @ model.gravity if lin else np.zeros(0)
        falls = bool(np.any(np.abs(along) > 1e-12 * max(1.0, np.linalg.norm(model.gravity))))
        formulation = "body_momentum" if falls else "spatial_momentum"
    t_grid = _time_grid(t_final, dt)
    presc = _prescribed_fn(prescribed, n)
    if presc is not None:
        if tau is not None:
            raise ValueError("tau: cannot be given together with prescribed joint motion "
                             "(the efforts are computed and returned in traj.tau)")
        if formulation == "velocity":
            raise ValueError("formulation='velocity' cannot be used with prescribed motion; "
                             "the base is integrated through its momentum (LP-1)")
        pq, pqd, _ = presc(0.0)
        for nm, given, val in (("q0", q0, pq), ("qd0", qd0, pqd)):
            if given is not None:
                given = _as_vector(given, n, nm)
                scale = 1.0 + np.max(np.abs(val), initial=0.0)
                if np.max(np.abs(given - val), initial=0.0) > 1e-9 * scale:
                    raise ValueError(f"{nm}: does not match prescribed(0) (max difference "
                                     f"{np.max(np.abs(given - val)):.3g})")
        q0, qd0 = pq, pqd
    else:
        q0, qd0 = _as_vector(q0, n, "q0"), _as_vector(qd0, n, "qd0")

    system = _System(model, formulation, dynamics, _input_fn(tau, n, "tau"),
                     _input_fn(base_wrench, b, "base_wrench"), _frame_inputs(model, frame_wrenches),
                     presc, g0, fast_model)
    if formulation == "velocity":
        m0 = V0.copy()
    else:
        t0 = lp.lp_terms(model, q0, derivatives=False)
        P0 = t0.M0 @ V0 + t0.M0m @ qd0                                  # (77)
        m0 = P0 if formulation == "body_momentum" else system.mu_from_P(g0, P0)
    y0 = m0 if presc is not None else np.concatenate([m0, q0, qd0])

    N = len(t_grid) - 1
    rec = dict(t=np.empty(N + 1), g=np.empty((N + 1, 4, 4)), V=np.empty((N + 1, b)),
               q=np.empty((N + 1, n)), qd=np.empty((N + 1, n)), tau=np.empty((N + 1, n)),
               base_wrench=np.empty((N + 1, b)))
    count = [0]
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=N, desc=f"simulate[{method}]", unit="sample")

    def on_sample(k, t, g, y, aux):
        V, tau_k, bw_k, q, qd = aux if aux is not None else system.at_sample(t, g, y)
        if presc is not None:
            tau_k = system.prescribed_effort(t, g, V, q, qd, presc(t)[2])
        rec["t"][k] = t
        rec["g"][k] = g
        rec["V"][k] = V
        rec["q"][k] = q
        rec["qd"][k] = qd
        rec["tau"][k] = tau_k
        rec["base_wrench"][k] = 0.0 if bw_k is None else bw_k
        count[0] = k + 1
        if bar is not None and k:
            bar.update(1)
        if callback is not None and callback(_make_state(t, rec["g"][k], rec["V"][k],
                                                         rec["q"][k], rec["qd"][k])):
            return True
        return False

    stats = IntegrationStats()
    interrupted = False
    start = time.perf_counter()
    try:
        integrate(system, model.group, method, t_grid, g0, y0, on_sample, substeps=substeps,
                  rtol=rtol, atol=atol, stats=stats)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - start
    K = count[0]
    return Trajectory(**{k: v[:K].copy() if K <= N else v for k, v in rec.items()},
                      method=method, formulation=formulation, steps=stats.steps,
                      evaluations=stats.evals, rejected_steps=stats.rejected, wall_time=wall,
                      interrupted=interrupted, stopped=(not interrupted and K < N + 1),
                      meta=dict(dt=float(dt), t_final=float(t_grid[-1]), rtol=rtol, atol=atol,
                                substeps=substeps, prescribed=presc is not None))
