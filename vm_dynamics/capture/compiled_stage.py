"""The compiled capture stage (:func:`.stage_kernels.stage_rates`) bound to one phase of a
:class:`~.system.CaptureSimulator`: its constant arrays gathered once (on reset, grasp and
release), and its calls.

:func:`compiled_stage` returns None where the kernel does not apply: no compiled backend
(numba missing or ``VM_DYNAMICS_BACKEND`` forcing numpy), mimic joints, or a force element
other than tidal gravity; the simulator then evaluates every stage in Python.
"""
from __future__ import annotations

import numpy as np

from ..core import lie
from ..dynamics import fast
from ..dynamics.fast.backend import bind_compiled
from ..forces.two_body import kept_link_mass_properties
from .orbit import ChiefFrameGravity, TidalGravity
from .shapes import Box
from .stage_kernels import GAPS, NEAR, RATES, VELOCITIES, rkmk_step, stage_rates

__all__ = ["CompiledStage", "compiled_stage"]


def _elements_at(forces, t):
    """``(mu, r_c, v_c, gradient)`` arrays of the tidal elements at ``t`` (a family's chief
    position and velocity then, as :meth:`.orbit.ChiefFrameGravity.at` gives them)."""
    E = len(forces)
    mu, rc, vc, grad = np.empty(E), np.empty((E, 3)), np.empty((E, 3)), np.empty(E, bool)
    for i, e in enumerate(forces):
        if isinstance(e, ChiefFrameGravity):
            r, v = e.orbit.state(t)
            mu[i], rc[i], vc[i], grad[i] = e.orbit.mu, r, v, e.gradient
        else:
            mu[i], rc[i], vc[i], grad[i] = e.mu, e.rc, e.vc, e.gradient
    return mu, rc, vc, grad


class CompiledStage:
    """The kernel's arguments for the chaser ``model`` in use (the merged one while grasped,
    with the target's pose ``X`` in the grasp frame) of ``system``."""

    def __init__(self, system, model, fm, X=None):
        self.forces = system.forces
        self.grasped = X is not None
        self.n = model.nq
        tgt = system.target
        eye = np.eye(4)
        gframe = system.grasp.frame if system.grasp is not None else None
        if gframe is not None:
            grasp_body, grasp_home = int(model.frame_body[gframe]), model.frame_home[gframe]
            grasp_fb, grasp_T = fm.frames[gframe]
        else:
            grasp_body, grasp_home, grasp_fb, grasp_T = 0, eye, 0, np.eye(6)
        Xg = eye if X is None else np.ascontiguousarray(X, dtype=float)
        prims = system.primitives
        prim_body = np.array([model.frame_body[p.frame] for p in prims], dtype=np.int64)
        prim_home = np.array([model.frame_home[p.frame] @ p.pose for p in prims]).reshape(-1, 4, 4)
        prim_radius = np.array([p.shape.bounding_radius() for p in prims], dtype=float)
        self.prim_slack = 0.05 * prim_radius
        links = kept_link_mass_properties(system.model) if self.forces else []
        L = len(links)
        src = system.model         # the links' poses as the Python path takes them
        link_body = np.array([src.frame_body[k[0]] for k in links], dtype=np.int64)
        link_home = np.array([src.frame_home[k[0]] for k in links]).reshape(L, 4, 4)
        link_m = np.array([k[1] for k in links], dtype=float)
        link_c = np.array([k[2] for k in links], dtype=float).reshape(L, 3)
        link_I = np.array([k[3] for k in links], dtype=float).reshape(L, 3, 3)
        link_fb = np.array([fm.frames[k[0]][0] for k in links], dtype=np.int64)
        link_T = np.array([fm.frames[k[0]][1] for k in links], dtype=float).reshape(L, 6, 6)
        if self.forces:
            mT = system.target_model
            (name, t_m, t_c, t_I), = kept_link_mass_properties(mT)
            t_home = mT.frame_pose(np.zeros(0), name)
            t_AdT = lie.Ad_inv(mT.frame_home[name]).T
        else:
            t_m, t_c, t_I, t_home, t_AdT = 0.0, np.zeros(3), np.zeros((3, 3)), eye, np.eye(6)
        c = np.ascontiguousarray
        self.C = fm.kernel_constants
        self.parent = np.asarray(model.parent_joint, dtype=np.int64)
        self.args = (c(tgt.spatial_inertia_inv), int(grasp_body), c(grasp_home), Xg,
                     c(lie.Ad_inv(Xg)), prim_body, c(prim_home), prim_radius,
                     c(tgt.shape_pose), float(tgt.shape.bounding_radius()),
                     c(np.asarray(tgt.shape.half, dtype=float)) if isinstance(tgt.shape, Box)
                     else np.zeros(3))
        self.tail = (link_body, c(link_home), link_m, c(link_c), c(link_I), link_fb, c(link_T),
                     float(t_m), c(np.asarray(t_c, float)), c(np.asarray(t_I, float)), c(t_home),
                     c(t_AdT), int(grasp_fb), c(grasp_T))
        self._none = _elements_at((), 0.0)
        self._zero_tau = np.zeros(self.n)
        self._zero_bw = np.zeros(6)
        self._gaps = np.empty(len(prims))
        self._stepper, self._A, self._B = None, None, None
        # the entry point of the kernel for these argument types (no per-call dispatch)
        self._kernel = stage_rates
        self._call(0.0, np.eye(8) if X is None else np.eye(4),
                   np.zeros(6 + 2 * self.n + (0 if self.grasped else 6) + 16), None, None,
                   VELOCITIES)

    def _call(self, t, G, y, tau, bw, mode):
        n = self.n
        vel = np.empty(12)
        ydot = np.empty(y.size)
        g_T = np.empty((4, 4))
        els = _elements_at(self.forces, t) if mode == RATES and self.forces else self._none
        args = (self.C, self.parent, G, y, self.grasped, self._zero_tau if tau is None else tau,
                self._zero_bw if bw is None else bw, bw is not None, *self.args, *els,
                *self.tail, mode, vel, g_T, self._gaps, ydot)
        if self._kernel is stage_rates:
            self._kernel = bind_compiled(stage_rates, args)
        st = self._kernel(*args)
        if n and not np.isfinite(vel).all():
            st = 99
        return st, vel, g_T, ydot

    def rates(self, t, G, y, tau, bw):
        """``(body velocities, ẏ)`` at the stage, or None where Python must evaluate it (a
        contact may act, or the forward dynamics failed: Python names the error)."""
        st, vel, _, ydot = self._call(t, G, y, tau, bw, RATES)
        return None if st else (vel[:6] if self.grasped else vel, ydot)

    def advance(self, t, G, y, T, substeps, tab, tau, bw):
        """``(G, y)`` at ``t + T`` by ``substeps`` equal steps of the fixed tableau ``tab``
        (:meth:`step`), or None (an adaptive tableau, or a step Python must take)."""
        if tab.adaptive:
            return None
        h = T / substeps
        for j in range(substeps):
            out = self.step(t + j * h, G, y, h, tab, tau, bw)
            if out is None:
                return None
            G, y = out
        return G, y

    def step(self, t, G, y, h, tab, tau, bw):
        """``(G, y)`` after one RKMK step of size ``h`` of the fixed tableau ``tab`` from
        ``(t, G, y)`` (one compiled call), or None where Python must take it (a stage with a
        possible contact, a failed forward dynamics, a state out of range)."""
        s = tab.stages
        E = len(self.forces)
        mu, rc, vc = np.empty((s, E)), np.empty((s, E, 3)), np.empty((s, E, 3))
        grad = self._none[3]
        for i in range(s):
            mu[i], rc[i], vc[i], grad = _elements_at(self.forces, t + tab.c[i] * h)
        G_out, y_out = np.empty_like(G), np.empty_like(y)
        if self._stepper is None or self._stepper[0] is not tab:
            self._A = np.ascontiguousarray(tab.a, dtype=float)
            self._B = np.ascontiguousarray(tab.b, dtype=float)
        args = (self.C, self.parent, self.grasped, self._zero_tau if tau is None else tau,
                self._zero_bw if bw is None else bw, bw is not None, *self.args, mu, rc, vc,
                grad, *self.tail, self._A, self._B, float(h), G, y, G_out, y_out)
        if self._stepper is None or self._stepper[0] is not tab:
            self._stepper = (tab, bind_compiled(rkmk_step, args))
        st = self._stepper[1](*args)
        return None if st else (G_out, y_out)

    def velocities(self, G, y):
        """``(V, V_T, g_T)`` at the state, or None if not finite."""
        st, vel, g_T, _ = self._call(0.0, G, y, None, None, VELOCITIES)
        if st:
            return None
        return vel[:6], vel[6:], g_T

    def apart(self, G, y, slack: bool = False):
        """A boolean per primitive: its bounding sphere apart from the target's by more than
        :data:`~.stage_kernels.NEAR` (plus 5 % of its radius with ``slack``, the margin of the
        approach rates), so that it has no contact (no approach rate); None: evaluate all.
        Grasped: none (no contact while grasped)."""
        if self.grasped:
            return np.ones(0, dtype=bool)
        st, *_ = self._call(0.0, G, y, None, None, GAPS)
        if st > 1:
            return None
        return self._gaps > NEAR + (self.prim_slack if slack else 0.0)


def compiled_stage(system, model, X=None):
    """The :class:`CompiledStage` of ``model`` (None where it does not apply)."""
    if not all(isinstance(e, (TidalGravity, ChiefFrameGravity)) for e in system.forces):
        return None
    if fast.resolve_backend("auto") != "numba":
        return None
    fm = fast.fast_model(model, "numba")
    if fm.coupled or fm.b != 6:
        return None
    if system.forces and len(kept_link_mass_properties(system.target_model)) != 1:
        return None
    return CompiledStage(system, model, fm, X)
