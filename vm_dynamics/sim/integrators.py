"""Runge–Kutta–Munthe-Kaas (RKMK) integrators on ``H × Rᵐ`` for vehicle-manipulator systems.

The state is a vehicle pose ``g`` (4×4, moving in a coset ``ḡ₀H`` of a displacement subgroup
``H ⊂ SE(3)``, see :mod:`vm_dynamics.core.groups`) and a vector ``y ∈ Rᵐ`` (momentum, joint positions
and velocities).  The ODE is

    g⁻¹ ġ = (ι₀ 𝒱(t, g, y))^        (LP-4, paper 000; body velocity)
    ẏ     = f(t, g, y)

and a right-hand side ``rhs(t, g, y) -> (𝒱, ẏ, aux)`` returns both (``aux`` is passed through to
the caller untouched, e.g. the inputs applied at that stage).

**RKMK** (Munthe-Kaas 1998; Iserles et al., Acta Numerica 2000, §5): within one step the pose is
written ``g = g_k exp(Θ)`` with ``Θ ∈ 𝔥 ≅ R^b``.  For a *body* velocity ``g⁻¹ġ = 𝒱`` the
coordinate ``Θ`` obeys the vector-space ODE

    Θ̇ = dexp⁻¹_{−Θ} 𝒱 = 𝒱 + ½ ad_Θ 𝒱 + (1/12) ad_Θ² 𝒱 + …

— note the argument ``−Θ`` (plus sign on the ½ term; :func:`vm_dynamics.core.lie.dexp_inv_body`,
docs/corrections.md "Time integration"); paper 002 (Müller 2023) §5(f)(ii) prints ``dexp⁻¹_X``
without the minus sign.  Any
classical Runge–Kutta method applied to ``(Θ, y)`` from ``Θ(0) = 0``, followed by
``g_{k+1} = g_k exp(Θ_{k+1})``, is an RKMK method of the same order; ``g`` never leaves the
group (no Euler angles, no quaternion normalisation).  ``dexp⁻¹`` is the closed form of
:func:`vm_dynamics.core.lie.dexp_inv`, restricted to 𝔥 by :meth:`VehicleGroup.dexp_inv`.

Methods (:data:`TABLEAUX`):

* ``lie_euler`` — order 1, ``g_{k+1} = g_k exp(h 𝒱_k)``;
* ``rkmk4`` — the classical 4-stage RK4 tableau, order 4, fixed step;
* ``dopri5`` — Dormand–Prince 5(4) (Dormand & Prince 1980) with the FSAL property, embedded
  4th-order error estimate (on ``Θ`` and ``y`` together) and Shampine's (1986) 4th-order dense
  output, used *in the algebra*: ``g(t_k + θh) = g_k exp(Θ(θ))``.  That is a continuous RKMK
  method of order 4 because the dense output of the underlying RK method is applied to the
  ``Θ``-ODE, which is an ordinary ODE in ``R^b``.

After every step the rotation block of ``g`` is re-projected onto SO(3) by one Newton–Schulz
step ``R ← ½ R (3I − RᵀR)``; this changes ``R`` only at round-off level (it removes the
``O(N ε)`` drift of ``RᵀR − I`` accumulated by ``N`` matrix products) and is not part of the
method's truncation error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..core.validation import MAX_MAGNITUDE
from ..dynamics.fast.kernels.algebra import dexp_inv_apply, se3_exp, within

__all__ = ["Tableau", "TABLEAUX", "METHODS", "rkmk_step", "dense_eval", "reorthonormalize",
           "integrate", "IntegrationStats", "group_exp", "group_dexp_inv_body"]


@dataclass(frozen=True)
class Tableau:
    """Butcher tableau ``(a, b, c)``; ``e = b − b̂`` (embedded error weights) and ``P`` (dense
    output: the weight of stage i at ``θ`` is ``Σ_j P[i, j] θ^{j+1}``) for adaptive methods."""

    name: str
    order: int
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    e: np.ndarray | None = None
    P: np.ndarray | None = None
    fsal: bool = False

    @property
    def stages(self) -> int:
        return len(self.b)

    @property
    def adaptive(self) -> bool:
        return self.e is not None


LIE_EULER = Tableau("lie_euler", 1, np.zeros((1, 1)), np.array([1.0]), np.array([0.0]))

RKMK4 = Tableau("rkmk4", 4,
                np.array([[0.0, 0.0, 0.0, 0.0],
                          [0.5, 0.0, 0.0, 0.0],
                          [0.0, 0.5, 0.0, 0.0],
                          [0.0, 0.0, 1.0, 0.0]]),
                np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
                np.array([0.0, 0.5, 0.5, 1.0]))

# Dormand–Prince 5(4): J. Comput. Appl. Math. 6 (1980) 19–26; dense output (Shampine 1986) in the
# polynomial form used by Hairer–Nørsett–Wanner and scipy's RK45.
_DP_A = np.array([
    [0, 0, 0, 0, 0, 0, 0],
    [1 / 5, 0, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]])
_DP_B = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
_DP_BHAT = np.array([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100,
                     1 / 40])
_DP_P = np.array([
    [1, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432],
    [0, 0, 0, 0],
    [0, 131558114200 / 32700410799, -68118460800 / 10900136933,
     87487479700 / 32700410799],
    [0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072],
    [0, 127303824393 / 49829197408, -318862633887 / 49829197408,
     701980252875 / 199316789632],
    [0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844],
    [0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423]])
DOPRI5 = Tableau("dopri5", 5, _DP_A, _DP_B, np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1]),
                 e=_DP_B - _DP_BHAT, P=_DP_P, fsal=True)

TABLEAUX = {t.name: t for t in (RKMK4, LIE_EULER, DOPRI5)}
METHODS = tuple(TABLEAUX)


def reorthonormalize(g: np.ndarray) -> np.ndarray:
    """One Newton–Schulz step towards the polar factor of the rotation block (in place)."""
    R = g[:3, :3]
    g[:3, :3] = R @ (1.5 * np.eye(3) - 0.5 * (R.T @ R))
    return g


def _axes(group):
    """The index array of a selection subgroup's axes in the 6-twist (a
    :class:`~vm_dynamics.core.groups.VehicleGroup`), or None for another group."""
    axes = getattr(group, "axes", None)
    if axes is None or not len(axes):
        return None
    idx = _AXES.get(axes)
    if idx is None:
        idx = _AXES[axes] = np.asarray(axes, dtype=np.intp)
    return idx


_AXES: dict = {}


def group_exp(group, Theta) -> np.ndarray:
    """``group.exp(Θ)``; for a subgroup of SE(3) by the compiled SE(3) exponential of the
    embedded twist (the same closed form as :func:`vm_dynamics.core.lie.se3_exp`, without its
    per-call Python; a non-finite or huge Θ takes ``group.exp``, which names it)."""
    idx = _axes(group)
    if idx is None:
        return group.exp(Theta)
    X = np.zeros(6)
    X[idx] = Theta
    if not within(X, MAX_MAGNITUDE):
        return group.exp(Theta)
    out = np.empty((4, 4))
    se3_exp(X, out)
    return out


def group_dexp_inv_body(group, Theta, V) -> np.ndarray:
    """``dexp⁻¹_{−Θ} V`` (:meth:`VehicleGroup.dexp_inv_body` applied to V); for a subgroup of
    SE(3) matrix-free by the compiled kernel on the embedded vectors (𝔥 is a subalgebra: the
    result stays in it, exactly as the restricted matrix's product)."""
    idx = _axes(group)
    if idx is None:
        apply = getattr(group, "dexp_inv_body_apply", None)     # a product group's own
        return group.dexp_inv_body(Theta) @ V if apply is None else apply(Theta, V)
    X = np.zeros(6)
    W = np.zeros(6)
    X[idx] = Theta
    W[idx] = V
    if not (within(X, MAX_MAGNITUDE) and within(W, MAX_MAGNITUDE)):
        return group.dexp_inv_body(Theta) @ V
    out = np.empty(6)
    dexp_inv_apply(-X, W, out)
    return out[idx]


def _stage_pose(group, g, Theta):
    return g if not np.any(Theta) else g @ group_exp(group, Theta)


def _dexpinv_body(group, Theta, V):
    """``Θ̇ = dexp⁻¹_{−Θ} 𝒱`` (body velocity)."""
    return V if not np.any(Theta) else group_dexp_inv_body(group, Theta, V)


def rkmk_step(rhs: Callable, group, tab: Tableau, t: float, g: np.ndarray, y: np.ndarray,
              h: float, first=None):
    """One RKMK step of size ``h`` from ``(t, g, y)``.

    ``first`` may hold ``(𝒱, ẏ, aux)`` already evaluated at ``(t, g, y)`` (FSAL or a sample).
    Returns ``(Θ, y_new, K, L, evals, first, last)``: the algebra increment
    (``g_new = g exp(Θ)``), the new vector state, the transformed stage slopes ``K`` (s×b) and
    ``L`` (s×m), the number of rhs evaluations made, and the evaluations at the first stage
    (reusable after a rejected step) and at the last stage (FSAL).
    """
    s, b, m = tab.stages, group.dim, y.size
    K = np.empty((s, b))
    L = np.empty((s, m))
    evals = 0
    last = None
    for i in range(s):
        if i == 0:
            Theta = np.zeros(b)
            yi = y
            if first is None:
                first = rhs(t, g, y)
                evals += 1
            V, yd, aux = first
        else:
            ai = tab.a[i, :i]
            Theta = h * (ai @ K[:i])
            yi = y + h * (ai @ L[:i])
            V, yd, aux = rhs(t + tab.c[i] * h, _stage_pose(group, g, Theta), yi)
            evals += 1
        K[i] = _dexpinv_body(group, Theta, V)
        L[i] = yd
        last = (V, yd, aux)
    Theta = h * (tab.b @ K)
    y_new = y + h * (tab.b @ L)
    return Theta, y_new, K, L, evals, first, last


def dense_eval(group, tab: Tableau, g, y, h, K, L, theta: float):
    """Continuous extension at ``t_k + θh`` (θ ∈ [0, 1]): ``(g_k exp(Θ(θ)), y(θ))``."""
    w = tab.P @ (theta ** np.arange(1, tab.P.shape[1] + 1))
    Theta = h * (w @ K)
    gi = _stage_pose(group, g, Theta)
    if gi is g:
        gi = g.copy()
    return gi, y + h * (w @ L)


@dataclass
class IntegrationStats:
    steps: int = 0
    rejected: int = 0
    evals: int = 0


def _pose_scale(g0, g1, atol, rtol, group):
    """Tolerance scale of the algebra increment: translations scale with ‖p‖, rotations
    with 1 rad."""
    s6 = np.empty(6)
    s6[:3] = max(np.linalg.norm(g0[:3, 3]), np.linalg.norm(g1[:3, 3]))
    s6[3:] = 1.0
    return atol + rtol * group.project(s6)


def integrate(rhs: Callable, group, method: str, t_grid: np.ndarray, g0: np.ndarray,
              y0: np.ndarray, on_sample: Callable, substeps: int = 1, rtol: float = 1e-9,
              atol: float = 1e-12, stats: IntegrationStats | None = None) -> IntegrationStats:
    """Integrate over the increasing sample times ``t_grid`` and report every sample.

    ``on_sample(k, t, g, y, aux)`` is called for k = 0, 1, …; ``aux`` is the rhs's ``aux`` at that
    exact state when it was evaluated there anyway (fixed-step methods: the first stage of the
    next step), else ``None``.  If it returns ``True`` integration stops.

    Fixed-step methods take ``substeps`` equal steps per sample interval.  ``dopri5`` chooses its
    steps from ``rtol``/``atol`` (error per step in the RMS norm of Hairer–Nørsett–Wanner II.4,
    scale ``atol + rtol·max(|x_k|, |x_{k+1}|)`` per component, with the pose increment scaled
    as in :func:`_pose_scale`) and samples the grid by dense output.
    """
    tab = TABLEAUX[method]
    stats = stats if stats is not None else IntegrationStats()
    g = np.array(g0, dtype=float)
    y = np.array(y0, dtype=float)
    N = len(t_grid) - 1
    if not tab.adaptive:
        for k in range(N + 1):
            t = float(t_grid[k])
            first = rhs(t, g, y)
            stats.evals += 1
            if on_sample(k, t, g, y, first[2]) or k == N:
                break
            h = (float(t_grid[k + 1]) - t) / substeps
            for j in range(substeps):
                if j:
                    first = None
                Theta, y, _, _, ev, _, _ = rkmk_step(rhs, group, tab, t + j * h, g, y, h, first)
                stats.evals += ev
                stats.steps += 1
                g = reorthonormalize(_stage_pose(group, g, Theta).copy())
        return stats

    return _integrate_adaptive(rhs, group, tab, t_grid, g, y, on_sample, rtol, atol, stats)


def _integrate_adaptive(rhs, group, tab, t_grid, g, y, on_sample, rtol, atol, stats):
    """The adaptive branch of :func:`integrate`: error-controlled steps with the embedded pair
    of ``tab``, the samples by its dense output."""
    N = len(t_grid) - 1
    if on_sample(0, float(t_grid[0]), g, y, None) or N == 0:
        return stats
    t = float(t_grid[0])
    t_end = float(t_grid[-1])
    h = float(t_grid[1] - t_grid[0])
    k_next = 1
    first = None
    safety, fac_min, fac_max = 0.9, 0.2, 10.0
    expo = -1.0 / 5.0                    # error estimate O(h⁵): local error of the 4th-order pair
    rejected_last = False
    while k_next <= N:
        h = min(h, t_end - t)
        if h <= 16 * np.finfo(float).eps * max(1.0, abs(t)):
            raise RuntimeError(f"dopri5: step size underflow at t={t:.9g} "
                               f"(rtol={rtol}, atol={atol})")
        Theta, y_new, K, L, ev, first, last = rkmk_step(rhs, group, tab, t, g, y, h, first)
        stats.evals += ev
        g_new = _stage_pose(group, g, Theta)
        err_y = h * (tab.e @ L)
        err_T = h * (tab.e @ K)
        sc_y = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
        sc_T = _pose_scale(g, g_new, atol, rtol, group)
        m = err_y.size + err_T.size
        err = np.sqrt((np.sum((err_y / sc_y) ** 2) + np.sum((err_T / sc_T) ** 2)) / max(m, 1))
        if not np.isfinite(err):
            err = np.inf
        if err > 1.0:
            stats.rejected += 1
            h *= max(fac_min, safety * err ** expo) if np.isfinite(err) else fac_min
            rejected_last = True              # the start point is unchanged: `first` is reused
            continue
        t_new = t + h if t + h < t_end else t_end
        stats.steps += 1
        stop = False
        while (k_next <= N and float(t_grid[k_next])
               <= t_new + 4 * np.finfo(float).eps * max(1.0, abs(t_new))):
            tk = float(t_grid[k_next])
            if k_next == N or tk >= t_new:
                gs, ys = g_new.copy(), y_new.copy()
            else:
                gs, ys = dense_eval(group, tab, g, y, h, K, L, (tk - t) / h)
            if on_sample(k_next, tk, gs, ys, None):
                stop = True
                break
            k_next += 1
        if stop:
            break
        t, g, y = t_new, reorthonormalize(g_new.copy()), y_new
        first = last                      # FSAL: stage 7 was evaluated at (t_new, g_new, y_new)
        fac = fac_max if err == 0.0 else min(fac_max, safety * err ** expo)
        if rejected_last:
            fac = min(fac, 1.0)
        rejected_last = False
        h *= max(fac_min, fac)
    return stats

