"""Lagrange–Poincaré (LP) dynamics of a vehicle-manipulator, closed form (paper 000, Sec. III).

This is the paper-faithful *reference* path: every quantity is assembled from the matrices of
paper 000 — the 𝔄𝔡 products (60), the 𝔏 factorisation (57)–(63), the inertia blocks (65)–(67),
their closed-form derivatives (114)–(122), the connection (69), the reduced inertia (75), Ĉ (99)
and N̂ (100) — with the corrections of docs/corrections.md applied:

* (LP-1) ``Ṗ = ad*_𝒱 P + F_η`` with ``F_η = f₀ + J_{𝔢,0}ᵀ f_𝔢 − f_u`` (printed (96) flips the force sign);
* (LP-2) ``M̂ q̈ + Ĉ q̇ + N̂ + ∂u/∂q = F_𝔪 − 𝒜ᵀ F_η``;
* (LP-3) ``𝒱 = M₀⁻¹ P − 𝒜 q̇`` (printed (98) has 𝒜ᵀ, a dimension error);
* (100) N̂: second and third terms with flipped signs, ``∂𝒜/∂q_j q̇`` paired with P;
* (118) first term ``∂𝔏_{𝔪0}ᵀ D 𝔏_𝔪 Ξ_𝔪``; (122) ``∂𝒜 = M₀⁻¹(∂M₀𝔪 − ∂M₀ 𝒜)``;
* (92)/(93) end-effector Jacobian factor order ``Ad⁻¹_{ḡ_𝔢} Ad⁻¹_{g_n⁰}``.

**Trees.** The paper treats one serial chain. For a tree, 𝔄𝔡_j^k is the product along the path
from body k to body j and is zero when k is not an ancestor of j. Writing
``X_j := 𝔄𝔡_j^1 = Ad⁻¹_{E_path(j)}`` (E_k = exp(ξ̂_k q_k)), the blocks are
``𝔏_{𝔪0}[j] = X_j`` and ``𝔏_𝔪[j, k] = 𝔄𝔡_j^{k+1} = X_j X_k⁻¹`` (k an ancestor of j or j itself,
identity on the diagonal), and (116) becomes ``∂𝔄𝔡_j^{k+1}/∂q_i = −X_j ad_{S_i} X_k⁻¹`` for i on
the path strictly below k, where ``S_i = Ad_{E_path(parent(i))} ξ_i = 𝔄𝔡_i^1⁻¹ ξ_i``
(paper (61): ``Ad_{e^{ξ̂_i q_i}} ξ_i = ξ_i``) is joint i's current twist in the vehicle frame.

**Mimic joints.** The tree has ``n_full`` moving joints; a URDF mimic joint is not a degree of
freedom but follows ``q_full = G q + c`` (:class:`~vm_dynamics.model.JointCoupling`). The
reduced Lagrangian ``L(𝒱, q, q̇) = L_full(𝒱, Gq + c, Gq̇)`` is again of the form of paper 000
(54) with the blocks ``M₀𝔪 = M₀𝔪,full G`` and ``M_𝔪 = Gᵀ M_𝔪,full G`` (66)–(67), and since the map
is affine with constant G the derivatives (117)–(120) follow by the chain rule
``∂/∂q_i = Σ_k G_ki ∂/∂q_full,k``; gravity ``∂u/∂q = Gᵀ ∂u/∂q_full`` and end-effector Jacobians
``J_{𝔢,𝔪} = J_{𝔢,𝔪,full} G``.  Everything downstream (𝒜, M̂, Ĉ, N̂, (LP-1)–(LP-3)) is unchanged.
Kinematics are computed on the full tree; everything else on the coordinates q.

All functions are pure: they take a :class:`~vm_dynamics.model.Model` and arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import lie

__all__ = ["Kinematics", "InertiaTerms", "LPTerms", "kinematics", "inertia_terms", "lp_terms",
           "forward_dynamics", "inverse_dynamics", "frame_jacobian", "gravity_forces",
           "potential_energy", "spatial_momentum", "curvature", "FreeFloatingTerms",
           "free_floating_terms", "jacobian_dot_z", "com_positions", "coriolis_terms"]


@dataclass
class Kinematics:
    """Configuration-dependent kinematics at q (full-tree joint index j = 0..n_full-1 is body j+1)."""

    q: np.ndarray   # (n,) the model's coordinates
    E: np.ndarray   # (n,4,4)  exp(ξ̂_j q_j)  (11)
    G: np.ndarray   # (n,4,4)  product of E along the path root→j:  g_j⁰ = G_j ḡ_j⁰  (16)
    X: np.ndarray   # (n,6,6)  𝔄𝔡_j^1 = Ad⁻¹(G_j)                                   (60)
    S: np.ndarray   # (n,6)    current joint twists in the vehicle frame (columns of ⁰J, (29))
    qf: np.ndarray | None = None   # (n_full,) all joint positions G q + c (= q without mimics)


@dataclass
class InertiaTerms:
    """Inertia blocks (65)–(67) on the full 6-dimensional vehicle algebra and their derivatives."""

    M0_6: np.ndarray      # (6,6)   𝔐₀ + 𝔏_{𝔪0}ᵀ D 𝔏_{𝔪0}
    M0m_6: np.ndarray     # (6,n)   𝔏_{𝔪0}ᵀ D 𝔏_𝔪 Ξ_𝔪
    Mm: np.ndarray        # (n,n)   Ξ_𝔪ᵀ 𝔏_𝔪ᵀ D 𝔏_𝔪 Ξ_𝔪
    dM0_6: np.ndarray | None = None   # (n,6,6)  (117)
    dM0m_6: np.ndarray | None = None  # (n,6,n)  (118, corrected)
    dMm: np.ndarray | None = None     # (n,n,n)  (120): dMm[i] = ∂M_𝔪/∂q_i


@dataclass
class LPTerms:
    """Everything the LP equations need at one state; restricted to the vehicle subgroup 𝔥."""

    kin: Kinematics
    M0: np.ndarray        # (b,b)  locked inertia (65)
    M0m: np.ndarray       # (b,n)  coupling (66)
    Mm: np.ndarray        # (n,n)  arm inertia (67)
    A: np.ndarray         # (b,n)  mechanical connection 𝒜 = M₀⁻¹M₀𝔪 (69)
    Mhat: np.ndarray      # (n,n)  reduced inertia M̂ = M_𝔪 − 𝒜ᵀM₀𝒜 (75)
    dM0: np.ndarray | None = None     # (n,b,b)
    dM0m: np.ndarray | None = None    # (n,b,n)
    dA: np.ndarray | None = None      # (n,b,n)  (122, corrected)
    dMhat: np.ndarray | None = None   # (n,n,n)  (119), (121)


def kinematics(model, q: np.ndarray) -> Kinematics:
    """Forward kinematics by the product of exponentials (13)–(17), (29), on the full tree at
    ``q_full = G q + c`` (the arrays E, G, X, S are indexed by the ``n_full`` tree joints)."""
    n = model.n_full
    cp = model.coupling
    qf = q if cp.trivial else cp.full_positions(q)
    E = np.empty((n, 4, 4))
    G = np.empty((n, 4, 4))
    X = np.empty((n, 6, 6))
    S = np.empty((n, 6))
    for j in range(n):
        E[j] = lie.se3_exp(model.xi[j] * qf[j])
        p = model.parent_joint[j]
        Gp = G[p] if p >= 0 else np.eye(4)
        G[j] = Gp @ E[j]
        X[j] = lie.Ad_inv(G[j])
        S[j] = lie.Ad(Gp) @ model.xi[j]
    return Kinematics(q=q, E=E, G=G, X=X, S=S, qf=qf)


def _arm_jacobians(model, kin: Kinematics) -> np.ndarray:
    """𝒥_𝔪 = 𝔏_𝔪 Ξ_𝔪 as (n, 6, n): block row j, column k = 𝔄𝔡_j^{k+1} ξ_k = X_j S_k."""
    # X_j S_k for ancestors-or-self k of j; zero elsewhere.
    return np.einsum("jab,kb->jak", kin.X, kin.S) * model.anc_mask[:, None, :]


def inertia_terms(model, kin: Kinematics, derivatives: bool = True) -> InertiaTerms:
    """Inertia blocks (65)–(67) and, optionally, their closed-form derivatives (114)–(120).

    Computed on the full tree, then reduced to the coordinates q by the mimic coupling
    (module docstring): the returned arrays have the model's ``n`` columns / derivatives."""
    n = model.n_full
    X, D = kin.X, model.body_inertia_home           # D = diag(𝔐_1..𝔐_n), stored as (n,6,6)
    Jm = _arm_jacobians(model, kin)                  # 𝔏_𝔪 Ξ_𝔪
    XtD = np.transpose(X, (0, 2, 1)) @ D             # 𝔏_{𝔪0}ᵀ D, blockwise
    M0_6 = model.vehicle_inertia + np.sum(XtD @ X, axis=0)
    M0m_6 = np.sum(XtD @ Jm, axis=0)
    DJ = D @ Jm
    # Σ_j Jm_jᵀ D_j Jm_j as one (n, 6n) @ (6n, n) product: O(n²) memory (a batched
    # product summed afterwards holds n×n×n numbers, 8 GB at 1 000 joints)
    Mm = Jm.reshape(6 * n, n).T @ DJ.reshape(6 * n, n)
    cp = model.coupling
    if not cp.trivial:
        Gc = cp.G
        M0m_6, Mm = M0m_6 @ Gc, Gc.T @ Mm @ Gc                  # (66), (67) with q̇_full = Gq̇
    terms = InertiaTerms(M0_6=M0_6, M0m_6=M0m_6, Mm=0.5 * (Mm + Mm.T))
    if not derivatives:
        return terms
    dM0_6 = np.zeros((n, 6, 6))
    dM0m_6 = np.zeros((n, 6, n))
    dMm = np.zeros((n, n, n))
    for i in range(n):
        desc = model.desc_index[i]                   # bodies j with i ∈ anc*(j)
        adS = lie.ad(kin.S[i])
        dX = -X[desc] @ adS                          # ∂𝔄𝔡_j^1/∂q_i      (116)
        S_anc = kin.S.T * model.strict_anc_mask[i]   # columns S_k, k strictly above i
        dJ = dX @ S_anc                              # ∂(𝔏_𝔪Ξ_𝔪)_j/∂q_i  (115)–(116)
        Dd = D[desc]
        Xd, Jd = X[desc], Jm[desc]
        dXt = np.transpose(dX, (0, 2, 1))
        t = np.sum(dXt @ Dd @ Xd, axis=0)
        dM0_6[i] = t + t.T                                                       # (117)
        dM0m_6[i] = np.sum(dXt @ Dd @ Jd + np.transpose(Xd, (0, 2, 1)) @ Dd @ dJ, axis=0)  # (118)
        t = np.sum(np.transpose(dJ, (0, 2, 1)) @ Dd @ Jd, axis=0)
        dMm[i] = t + t.T                                                         # (120)
    if not cp.trivial:                                  # chain rule ∂/∂q_i = Σ_k G_ki ∂/∂q_full,k
        dM0_6 = np.einsum("ki,kab->iab", Gc, dM0_6)
        dM0m_6 = np.einsum("ki,kab->iab", Gc, dM0m_6) @ Gc
        dMm = Gc.T @ np.einsum("ki,kab->iab", Gc, dMm) @ Gc
    terms.dM0_6, terms.dM0m_6, terms.dMm = dM0_6, dM0m_6, dMm
    return terms


def lp_terms(model, q: np.ndarray, derivatives: bool = True) -> LPTerms:
    """Locked inertia, connection, reduced inertia (65)–(75) and their derivatives (117)–(122)."""
    kin = kinematics(model, q)
    it = inertia_terms(model, kin, derivatives)
    ax = model.group.axes
    M0 = it.M0_6[np.ix_(ax, ax)]
    M0m = it.M0m_6[list(ax), :]
    Mm = it.Mm
    if model.b:
        A = np.linalg.solve(M0, M0m)
        Mhat = Mm - M0m.T @ A
    else:
        A = np.zeros((0, model.n))
        Mhat = Mm.copy()
    terms = LPTerms(kin=kin, M0=M0, M0m=M0m, Mm=Mm, A=A, Mhat=0.5 * (Mhat + Mhat.T))
    if derivatives:
        dM0 = it.dM0_6[:, ax][:, :, ax]
        dM0m = it.dM0m_6[:, ax, :]
        if model.b:
            dA = np.linalg.solve(M0[None], dM0m - dM0 @ A)                     # (122)
            dAtM0A = np.transpose(dA, (0, 2, 1)) @ (M0 @ A)
            dMhat = it.dMm - (dAtM0A + np.transpose(dAtM0A, (0, 2, 1))
                              + A.T @ dM0 @ A)                                  # (119), (121)
        else:
            dA = np.zeros((model.n, 0, model.n))
            dMhat = it.dMm.copy()
        terms.dM0, terms.dM0m, terms.dA, terms.dMhat = dM0, dM0m, dA, dMhat
    return terms


def frame_jacobian(model, kin: Kinematics, frame: str) -> tuple[np.ndarray, np.ndarray]:
    """Body Jacobian of a frame, split as ``(J_{𝔢,0} (6×b), J_{𝔢,𝔪} (6×n))``.

    Paper 000 (92)–(93) with the corrected factor order:
    ``J_𝔢 = Ad⁻¹_{ḡ_𝔢} Ad⁻¹_{g_n⁰} [ι₀, ξ₁, Ad_{E₁}ξ₂, …]`` = ``Ad⁻¹(g_𝔢⁰) [ι₀, S_k (k ∈ path)]``.
    """
    g_e = frame_pose_vehicle(model, kin, frame)
    Ai = lie.Ad_inv(g_e)
    body = model.frame_body[frame]
    J0 = Ai @ model.group.iota
    Jm = np.zeros((6, model.n_full))
    if body > 0:
        mask = model.anc_mask[body - 1]
        Jm[:, mask] = Ai @ kin.S[mask].T
    if not model.coupling.trivial:
        Jm = Jm @ model.coupling.G                      # J_{𝔢,𝔪} = J_{𝔢,𝔪,full} G
    return J0, Jm


def frame_pose_vehicle(model, kin: Kinematics, frame: str) -> np.ndarray:
    """Pose of a frame in the vehicle frame: ``g_𝔢⁰ = G_body ḡ_body⁰ ḡ_𝔢`` (19)."""
    body = model.frame_body[frame]
    home = model.frame_home[frame]
    return home if body == 0 else kin.G[body - 1] @ home


def com_positions(model, kin: Kinematics) -> np.ndarray:
    """Centres of mass of bodies 0..n in the vehicle frame, (n+1, 3)."""
    p = np.empty((model.n_full + 1, 3))
    p[0] = model.com_home[0]
    p[1:] = np.einsum("jab,jb->ja", kin.G[:, :3, :3], model.com_home[1:]) + kin.G[:, :3, 3]
    return p


def gravity_forces(model, kin: Kinematics, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(f_u, ∂u/∂q)``: gradients of the gravitational potential (113), (130)–(133).

    With ``a`` the gravitational acceleration, body k's weight in vehicle axes is
    ``f_k = m_k Rᵀ a`` acting at its CoM ``p_k``; its wrench about the vehicle origin is
    ``W_k = [f_k; p_k × f_k]``.  Then ``f_u = −ι₀ᵀ Σ_k W_k``
    (docs/corrections.md, "Gravity as a symmetry-breaking potential", closed form) and
    ``∂u/∂q_i = −S_iᵀ Σ_{k below i} W_k``.
    """
    f = model.mass[:, None] * (g[:3, :3].T @ model.gravity)[None, :]
    p = com_positions(model, kin)
    W = np.concatenate([f, np.cross(p, f)], axis=1)              # (n+1, 6)
    # subtree sums, children before parents (parent index < child index)
    Wsub = W[1:].copy()
    for j in range(model.n_full - 1, -1, -1):
        pj = model.parent_joint[j]
        if pj >= 0:
            Wsub[pj] += Wsub[j]
    total = W[0] + (Wsub[model.root_joints].sum(axis=0) if model.n_full else 0.0)
    f_u = -model.group.project(total)
    du_dq = -np.einsum("ja,ja->j", kin.S, Wsub)
    if not model.coupling.trivial:
        du_dq = model.coupling.reduce_forces(du_dq)     # ∂u/∂q = Gᵀ ∂u/∂q_full
    return f_u, du_dq


def potential_energy(model, kin: Kinematics, g: np.ndarray) -> float:
    """``U = −Σ_k m_k aᵀ p_k^I`` (130), with ``a`` the gravitational acceleration."""
    p = com_positions(model, kin)
    pI = p @ g[:3, :3].T + g[:3, 3]
    return float(-np.sum(model.mass * (pI @ model.gravity)))


def external_forces(model, kin, frame_wrenches):
    """Generalised forces ``(J_{𝔢,0}ᵀ f_𝔢, J_{𝔢,𝔪}ᵀ f_𝔢)`` summed over frames (90)–(91)."""
    f0 = np.zeros(model.b)
    fm = np.zeros(model.n)
    for name, w in (frame_wrenches or {}).items():
        J0, Jm = frame_jacobian(model, kin, name)
        f0 += J0.T @ w
        fm += Jm.T @ w
    return f0, fm


def coriolis_terms(model, t: LPTerms, V, qd, P):
    """``Ĉ_𝔪 q̇`` (99) and the corrected ``N̂_𝔪`` (100) (docs/corrections.md, "LP equations")."""
    dMhat_qd = np.einsum("ijk,i->jk", t.dMhat, qd)                   # Σ_i ∂_iM̂ q̇_i
    Cqd = dMhat_qd @ qd - 0.5 * np.einsum("j,ijk,k->i", qd, t.dMhat, qd)
    Adot = np.einsum("ibn,i->bn", t.dA, qd)                          # Σ_i ∂_i𝒜 q̇_i
    if model.b:
        adV = model.group.ad(V)
        M0inv_P = np.linalg.solve(t.M0, P)
        N = (t.A.T @ (adV.T @ P)
             + Adot.T @ P
             - np.einsum("b,jbn,n->j", P, t.dA, qd)
             - 0.5 * np.einsum("b,jbc,c->j", M0inv_P, t.dM0, M0inv_P))  # ½Pᵀ∂(M₀⁻¹)P
    else:
        N = np.zeros(model.n)
    return Cqd, N, Adot


#: reciprocal condition number (of the Jacobi-scaled matrix) below which a solve is refused
RCOND_MIN = 1e-13


def solve_inertia(M: np.ndarray, rhs: np.ndarray, model=None, q=None) -> np.ndarray:
    """Solve ``M x = rhs`` for a symmetric positive-definite inertia (M̂ of (LP-2)), refusing a
    numerically singular one with a ``ValueError`` naming the joints, never returning garbage.

    Jacobi scaling ``D^-½ M D^-½`` (unit-free), Cholesky, and LAPACK's reciprocal condition
    estimate (``dpocon``); below :data:`RCOND_MIN` the solve is refused.
    """
    from scipy.linalg import lapack
    diag = np.diag(M)
    d = np.sqrt(np.clip(diag, 0.0, None))
    # a coordinate whose own inertia is ~1e-13 of the largest (whatever the units) moves nothing
    bad = np.flatnonzero(~(diag > RCOND_MIN * np.max(diag, initial=0.0)) | ~np.isfinite(d))
    ok = not bad.size
    if ok:
        Ms = M / np.outer(d, d)
        c, info = lapack.dpotrf(Ms, lower=1)
        ok = info == 0
        if ok:
            anorm = float(np.abs(Ms).sum(axis=0).max())             # 1-norm
            rcond, info = lapack.dpocon(c, anorm, uplo="L")
            ok = info == 0 and rcond >= RCOND_MIN
    if not ok:
        names = getattr(model, "joint_names", None)
        if names is not None and not bad.size:
            ev, vec = np.linalg.eigh(0.5 * (M + M.T) / np.outer(d, d))
            v = vec[:, 0] / np.abs(vec[:, 0]).max()
            bad = [k for k in np.argsort(-np.abs(v)) if abs(v[k]) >= 0.05]
        who = (", ".join(repr(names[k]) for k in bad) if names is not None and len(bad)
               else "some joints")
        at = "" if q is None else f" at q = {np.array2string(np.asarray(q), precision=4)}"
        raise ValueError(f"the reduced inertia M̂ is numerically singular{at} (joints {who} "
                         f"move no mass in this configuration); the accelerations are undefined. "
                         f"Keep the joints away from this configuration (limits), give the links "
                         f"mass and inertia, or lock one of the joints")
    x = lapack.dpotrs(c, rhs / d, lower=1)[0]
    return x / d


def forward_dynamics(model, g, V, q, qd, tau, base_wrench=None, frame_wrenches=None,
                     terms: LPTerms | None = None):
    """Solve the corrected LP equations for ``(𝒱̇, q̈)``; also returns ``Ṗ``.

    Steps of docs/corrections.md, "Forward dynamics": P (77); forces F_η, F_𝔪 (94)–(95) with gravity as the symmetry-
    breaking potential; ``Ṗ = ad*_𝒱 P + F_η`` (LP-1); ``M̂ q̈ = F_𝔪 − 𝒜ᵀF_η − Ĉq̇ − N̂ − ∂u/∂q``
    (LP-2); and the base acceleration from the time derivative of (LP-3),
    ``𝒱̇ = M₀⁻¹(Ṗ − Ṁ₀ M₀⁻¹ P) − 𝒜̇ q̇ − 𝒜 q̈``.
    """
    t = terms if terms is not None else lp_terms(model, q)
    P = t.M0 @ V + t.M0m @ qd                                          # (77)
    f_u, du_dq = gravity_forces(model, t.kin, g)
    fe0, fem = external_forces(model, t.kin, frame_wrenches)
    f0 = np.zeros(model.b) if base_wrench is None else base_wrench
    F_eta = f0 + fe0 - f_u                                             # (94)
    F_m = tau + fem                                                    # (95)
    Cqd, N, Adot = coriolis_terms(model, t, V, qd, P)
    rhs = F_m - t.A.T @ F_eta - Cqd - N - du_dq
    qdd = solve_inertia(t.Mhat, rhs, model, q) if model.n else np.zeros(0)   # (LP-2)
    if model.b:
        Pdot = model.group.ad(V).T @ P + F_eta                         # (LP-1)
        M0dot = np.einsum("ibc,i->bc", t.dM0, qd)
        Omega = np.linalg.solve(t.M0, P)                               # locked velocity (73)
        Vdot = np.linalg.solve(t.M0, Pdot - M0dot @ Omega) - Adot @ qd - t.A @ qdd
    else:
        Pdot = np.zeros(0)
        Vdot = np.zeros(0)
    return Vdot, qdd, Pdot


def inverse_dynamics(model, g, V, q, qd, Vdot, qdd, frame_wrenches=None,
                     terms: LPTerms | None = None):
    """Exact inverse dynamics ``(f₀, f_𝔪)`` from the LP equations (docs/corrections.md, "Inverse dynamics")."""
    t = terms if terms is not None else lp_terms(model, q)
    P = t.M0 @ V + t.M0m @ qd
    f_u, du_dq = gravity_forces(model, t.kin, g)
    fe0, fem = external_forces(model, t.kin, frame_wrenches)
    if model.b:
        M0dot = np.einsum("ibc,i->bc", t.dM0, qd)
        M0mdot = np.einsum("ibn,i->bn", t.dM0m, qd)
        Pdot = t.M0 @ Vdot + t.M0m @ qdd + M0dot @ V + M0mdot @ qd
        F_eta = Pdot - model.group.ad(V).T @ P                          # (LP-1)
    else:
        F_eta = np.zeros(0)
    f0 = F_eta - fe0 + f_u
    Cqd, N, _ = coriolis_terms(model, t, V, qd, P)
    fm = t.Mhat @ qdd + Cqd + N + du_dq + t.A.T @ F_eta - fem          # (LP-2)
    return f0, fm


def spatial_momentum(model, t: LPTerms, g, V, qd) -> np.ndarray:
    """Total spatial momentum ``[linear; angular]`` in the inertial frame about its origin.

    The full 6-dimensional locked momentum in vehicle axes is ``M₀⁶ ι₀𝒱 + M₀𝔪⁶ q̇`` (for an SE(3)
    base this is ι₀P); it is mapped to the inertial frame by ``Ad*_{g⁻¹} = Ad_gᵀ⁻¹``
    (docs/corrections.md, "Conserved quantities").
    """
    it = inertia_terms(model, t.kin, derivatives=False)
    h = it.M0_6 @ model.group.embed(V) + it.M0m_6 @ qd
    return lie.Ad_inv(g).T @ h


def curvature(model, t: LPTerms) -> np.ndarray:
    """Curvature of the mechanical connection, ``B[i, j] = ∂_i𝒜_j − ∂_j𝒜_i − [𝒜_i, 𝒜_j]`` (b-vectors).

    Not defined in paper 000; docs/corrections.md, "Curvature form of N̂" gives it and the equivalent form of N̂.
    """
    n, b = model.n, model.b
    B = np.zeros((n, n, b))
    for i in range(n):
        for j in range(n):
            B[i, j] = (t.dA[i][:, j] - t.dA[j][:, i]
                       - model.group.ad(t.A[:, i]) @ t.A[:, j])
    return B


# ---------------------------------------------------------------------------- control-side terms
@dataclass
class FreeFloatingTerms:
    """The free-floating arm dynamics at one state: ``τ = M̂ q̈ + bias`` and ``𝒱̇ = c_V − 𝒜 q̈``."""

    Mhat: np.ndarray    # (n, n) reduced inertia (75)
    bias: np.ndarray    # (n,)  Ĉq̇ + N̂ + ∂u/∂q + 𝒜ᵀF_η − J_{𝔢,𝔪}ᵀf_𝔢
    A: np.ndarray       # (b, n) mechanical connection (69)
    cV: np.ndarray      # (b,)  M₀⁻¹(Ṗ − Ṁ₀M₀⁻¹P) − 𝒜̇q̇, Ṗ from (LP-1)
    terms: LPTerms


def free_floating_terms(model, g, V, q, qd, base_wrench=None, frame_wrenches=None,
                        terms: LPTerms | None = None) -> FreeFloatingTerms:
    """Arm dynamics with the vehicle free (its applied wrench is ``base_wrench``, known).

    (LP-2): ``τ = M̂q̈ + Ĉq̇ + N̂ + ∂u/∂q + 𝒜ᵀF_η − J_{𝔢,𝔪}ᵀf_𝔢``, ``F_η = f₀ + J_{𝔢,0}ᵀf_𝔢 − f_u``;
    (LP-1) ``Ṗ = ad_𝒱ᵀP + F_η`` and the derivative of (LP-3) give ``𝒱̇ = c_V − 𝒜q̈``.
    """
    t = terms if terms is not None else lp_terms(model, q)
    P = t.M0 @ V + t.M0m @ qd                                           # (77)
    f_u, du_dq = gravity_forces(model, t.kin, g)                     # (113), (133)
    fe0, fem = external_forces(model, t.kin, model.checked_frame_wrenches(frame_wrenches))
    f0 = np.zeros(model.b) if base_wrench is None else base_wrench
    F_eta = f0 + fe0 - f_u                                              # (94)
    Cqd, N, Adot = coriolis_terms(model, t, V, qd, P)              # (99), (100) corrected
    bias = Cqd + N + du_dq + t.A.T @ F_eta - fem
    if model.b:
        Pdot = model.group.ad(V).T @ P + F_eta                          # (LP-1)
        M0dot = np.einsum("ibc,i->bc", t.dM0, qd)
        cV = np.linalg.solve(t.M0, Pdot - M0dot @ np.linalg.solve(t.M0, P)) - Adot @ qd
    else:
        cV = np.zeros(0)
    return FreeFloatingTerms(Mhat=t.Mhat, bias=bias, A=t.A, cV=cV, terms=t)


def jacobian_dot_z(model, kin: Kinematics, frame: str, V, qd) -> np.ndarray:
    """``J̇_𝔢 [𝒱; q̇]`` for the frame's body Jacobian ``[J_{𝔢,0}, J_{𝔢,𝔪}]`` (92)–(93).

    With ``V_rel = J_{𝔢,𝔪}q̇`` (body twist of the frame relative to the vehicle) and
    ``U_k = Σ_{j strictly above k} S_j q̇_j``: ``d/dt Ad⁻¹(g_𝔢⁰) = −ad_{V_rel} Ad⁻¹(g_𝔢⁰)`` and
    ``Ṡ_k = ad_{U_k} S_k``, so ``J̇z = −ad_{V_rel} J_{𝔢,0}𝒱 + Ad⁻¹(g_𝔢⁰) Σ_k ad_{U_k}S_k q̇_k``.
    """
    J0, Jm = frame_jacobian(model, kin, frame)
    V_rel = Jm @ qd
    out = -lie.ad(V_rel) @ (J0 @ V)
    body = model.frame_body[frame]
    if body > 0:
        S = kin.S
        U = model.strict_anc_mask.astype(float) @ (S * qd[:, None])
        path = model.anc_mask[body - 1]
        Sdot = np.hstack([np.cross(U[:, 3:], S[:, :3]) + np.cross(U[:, :3], S[:, 3:]),
                          np.cross(U[:, 3:], S[:, 3:])])               # ad_{U_k} S_k
        Ai = lie.Ad_inv(frame_pose_vehicle(model, kin, frame))
        out += Ai @ (Sdot[path].T @ qd[path])
    return out
