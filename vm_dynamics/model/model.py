"""The vehicle-manipulator model: constants computed once from a URDF, and the public API.

``Model`` holds only what is constant (paper 000 §4.0 precomputation): the joint twists ξ_i in
the vehicle frame at home (17), the home poses ḡ_i⁰, the body inertias 𝔐_i in the vehicle frame
at home (55), the tree structure, the frames and gravity.  Algorithms live in :mod:`vm_dynamics.dynamics.lp`
(the closed-form reference) and take the model as their first argument; the methods below
validate their inputs and delegate.

State conventions (used by every method):

* ``g`` — 4×4 pose of the vehicle frame (the URDF root link) in the inertial frame. For the SE2
  and SO3 bases it is the embedded pose ``ḡ₀ ι(h)``.
* ``V`` — the vehicle's body (left-trivialised) velocity, a b-vector: ``ι₀ V`` is the twist
  ``[v; ω]`` of the vehicle frame expressed in that frame.
* ``q``, ``qd`` — joint positions and velocities in the order of :attr:`Model.joint_names`.
* ``base_wrench`` — the b-vector of the wrench ``[f; n]`` applied to the vehicle, in the vehicle
  frame, about its origin (paired with V).
* ``frame_wrenches`` — ``{frame: [f; n]}``, a wrench applied at a frame's origin and expressed
  in that frame's axes (e.g. a contact at the end effector).
"""
from __future__ import annotations

import numpy as np

from ..core import lie
from ..core.groups import get_group
from ..core.validation import MAX_COORDINATE, MAX_MAGNITUDE, as_pose, as_vector, overflow_error
from ..dynamics import lp
from .attach import added_inertia_model, attached_body_model
from .coupling import JointCoupling
from .urdf import DEFAULT_XACRO, KinematicTree, parse_urdf

__all__ = ["Model", "load_model", "JointCoupling"]

#: The default backend of the public dynamics, tested by identity on their hot path.
_AUTO = "auto"


class Model:
    """A vehicle-manipulator system: a vehicle moving in a subgroup of SE(3) carrying a tree of
    revolute/prismatic joints.  Build it with :func:`load_model`."""

    added_vehicle_inertia = None   # set by with_added_vehicle_inertia

    def __init__(self, tree: KinematicTree, base="SE3", gravity=(0.0, 0.0, -9.81)):
        self.group = get_group(base)
        self.name = tree.name
        self.gravity = as_vector(gravity, 3, "gravity")
        bodies = tree.bodies
        self.n_full = n = len(bodies) - 1          # moving joints of the tree (bodies 1..n_full)
        self.b = self.group.dim
        self.vehicle_link = bodies[0].name
        full_names = [bd.joint for bd in bodies[1:]]
        independent = [j for j, bd in enumerate(bodies[1:]) if bd.mimic is None]
        self.n = len(independent)                  # degrees of freedom: the length of q
        self.joint_names = [full_names[j] for j in independent]
        self.link_names = [bd.name for bd in bodies]
        self.joint_types = [bodies[j + 1].joint_type for j in independent]
        self.joint_limits = [dict(bodies[j + 1].limits) for j in independent]
        self.parent_joint = np.array([bd.parent - 1 for bd in bodies[1:]], dtype=int)
        self.root_joints = np.flatnonzero(self.parent_joint < 0)

        # ḡ_i⁰ (home poses), ξ_i (17) and 𝔐_i (55)
        home = np.empty((n + 1, 4, 4))
        home[0] = np.eye(4)
        self.xi = np.empty((n, 6))
        for j, bd in enumerate(bodies[1:]):
            home[j + 1] = home[bd.parent] @ bd.home
            local = (np.concatenate([np.zeros(3), bd.axis]) if bd.joint_type != "prismatic"
                     else np.concatenate([bd.axis, np.zeros(3)]))
            self.xi[j] = lie.Ad(home[j + 1]) @ local
        self.home = home
        self.vehicle_inertia = bodies[0].inertia.copy()           # 𝔐₀ = ⁰𝓜₀
        self.body_inertia_home = np.empty((n, 6, 6))
        for j, bd in enumerate(bodies[1:]):
            Ai = lie.Ad_inv(home[j + 1])
            self.body_inertia_home[j] = Ai.T @ bd.inertia @ Ai     # 𝔐_j (55)
        self.mass = np.array([bd.inertia[0, 0] for bd in bodies])
        self.com_home = np.zeros((n + 1, 3))                     # CoMs in the vehicle frame at home
        for k, bd in enumerate(bodies):
            if self.mass[k] > 0:
                c = lie.unskew(bd.inertia[3:, :3]) / self.mass[k]
                self.com_home[k] = home[k, :3, :3] @ c + home[k, :3, 3]
            else:
                self.com_home[k] = home[k, :3, 3]
        # tree masks
        anc = np.zeros((n, n), dtype=bool)
        for j in range(n):
            k = j
            while k >= 0:
                anc[j, k] = True
                k = self.parent_joint[k]
        self.anc_mask = anc
        self.strict_anc_mask = anc & ~np.eye(n, dtype=bool)
        self.desc_index = [np.flatnonzero(anc[:, i]) for i in range(n)]

        # frames: every URDF link, with its pose in the vehicle frame at home
        self.frame_names = list(tree.frames)
        self.frame_body = {name: fr.body for name, fr in tree.frames.items()}
        self.frame_home = {name: home[fr.body] @ fr.placement for name, fr in tree.frames.items()}

        # mimic joints: q_full = G q + c
        col = {full_names[j]: k for k, j in enumerate(independent)}
        G = np.zeros((n, self.n))
        c = np.zeros(n)
        mimic = {}
        for j, bd in enumerate(bodies[1:]):
            if bd.mimic is None:
                G[j, col[bd.joint]] = 1.0
            else:
                master, mult, off = bd.mimic
                G[j, col[master]] = mult
                c[j] = off
                mimic[bd.joint] = (master, float(mult), float(off))
        self.coupling = JointCoupling(
            joint_names=tuple(full_names), joint_types=tuple(bd.joint_type for bd in bodies[1:]),
            parent_joint=self.parent_joint, xi=self.xi, G=G, c=c,
            independent=np.array(independent, dtype=int), mimic=mimic)
        self._check_nondegenerate()

    # ------------------------------------------------------------------ validation helpers
    def _check_nondegenerate(self):
        """Reject singular or near-singular mass matrices, naming the joints and the fix.

        Checked at the neutral configuration and at a second, pseudo-random configuration
        within the joint limits (a structural singularity, such as two coaxial joints joined by
        a massless link, holds everywhere): every coordinate moves mass, the locked inertia M₀
        (65) of a free vehicle is regular, and the reduced inertia M̂ (75) (M_𝔪 for a fixed
        base) has a Jacobi-scaled smallest eigenvalue ``λ_min(D^-½ M̂ D^-½) > SINGULAR_TOL``
        with ``D = diag M̂`` (unit-free, so revolute and prismatic joints compare fairly).
        """
        q0 = self.neutral_configuration()
        rng = np.random.default_rng(12345)
        q1 = q0.copy()
        for j, lim in enumerate(self.joint_limits):
            lo, hi = lim.get("lower", -np.pi), lim.get("upper", np.pi)
            if np.isfinite(lo) and np.isfinite(hi) and lo <= hi:
                q1[j] = rng.uniform(lo, hi)
        for q in (q0, q1):
            self._check_regular_at(q)

    SINGULAR_TOL = 1e-10

    def _check_regular_at(self, q):
        kin = lp.kinematics(self, q)
        it = lp.inertia_terms(self, kin, derivatives=False)
        for j in range(self.n):
            if it.Mm[j, j] <= 1e-12 * max(1.0, np.trace(it.M0_6)):
                raise ValueError(
                    f"joint '{self.joint_names[j]}': moves no mass (the bodies it carries have no "
                    f"inertia along its axis), so the mass matrix would be singular; give the "
                    f"links it carries mass and inertia, or lock it "
                    f"(load_model(..., locked_joints={{'{self.joint_names[j]}': 0.0}}))")
        Mhat = it.Mm
        if self.b:
            ax = self.group.axes
            M0 = it.M0_6[np.ix_(ax, ax)]
            ev = np.linalg.eigvalsh(0.5 * (M0 + M0.T))
            if ev[0] <= 1e-12 * max(1.0, abs(ev[-1])):
                raise ValueError(f"base={self.group.name}: the locked inertia of the whole robot "
                                 f"is singular (eigenvalues {ev}); a free vehicle needs mass and "
                                 f"rotational inertia in every direction it can move")
            if self.n:
                M0m = it.M0m_6[list(ax), :]
                Mhat = it.Mm - M0m.T @ np.linalg.solve(M0, M0m)
        if not self.n:
            return
        d = np.sqrt(np.clip(np.diag(Mhat), 1e-300, None))
        scaled = 0.5 * (Mhat + Mhat.T) / np.outer(d, d)
        try:    # λ_min > tol iff scaled − tol·I has a Cholesky factor (a fraction of eigh's cost)
            np.linalg.cholesky(scaled - self.SINGULAR_TOL * np.eye(len(d)))
            return
        except np.linalg.LinAlgError:
            pass
        ev, vec = np.linalg.eigh(scaled)
        if ev[0] > self.SINGULAR_TOL:   # Cholesky's rounding at the boundary
            return
        v = vec[:, 0] / d
        v = v / np.abs(v).max()
        involved = [k for k in np.argsort(-np.abs(v)) if abs(v[k]) >= 0.05]
        names = [self.joint_names[k] for k in involved]
        motion = " ".join(f"{'+' if v[k] >= 0 else '−'} {abs(v[k]):.3g}·{self.joint_names[k]}"
                          for k in involved)
        motion = motion[2:] if motion.startswith("+ ") else "−" + motion[2:]
        lock = f"load_model(..., locked_joints={{'{names[-1]}': 0.0}})"
        if len(involved) == 1:
            if self.b:
                raise ValueError(
                    f"joint '{names[0]}': its motion can be reproduced by moving the vehicle "
                    f"alone, so the reduced inertia M̂ is singular (scaled eigenvalue "
                    f"{ev[0]:.3g}); give the vehicle (root link) its own mass and inertia, or "
                    f"lock the joint ({lock})")
            raise ValueError(f"joint '{names[0]}': moves (almost) no mass, so the mass matrix is "
                             f"singular (scaled eigenvalue {ev[0]:.3g}); give the links it carries "
                             f"mass and inertia, or lock it ({lock})")
        why = self._coaxial_reason(kin, involved, it)
        where = "" if not self.b else " (or only what the vehicle can reproduce)"
        raise ValueError(
            f"joints {', '.join(repr(n) for n in names)}: {why or 'the combined motion'} "
            f"[{motion}] moves no mass{where}, so the mass matrix is "
            f"{'singular' if ev[0] <= 1e-14 else 'nearly singular'} (scaled eigenvalue "
            f"{ev[0]:.3g}, tolerance {self.SINGULAR_TOL:g}); fix: give the links between them "
            f"mass and inertia, lock one of them ({lock}), or declare one a <mimic> of the other")

    def _coaxial_reason(self, kin, involved, it):
        """'joints a and b are coaxial and the link between them (l) has no mass' when the
        null motion is two joints, one the parent of the other, on the same line."""
        if len(involved) != 2:
            return ""
        a, b = (int(self.coupling.independent[k]) for k in involved)
        if a > b:
            a, b = b, a
        if self.parent_joint[b] != a:
            return ""
        Sa, Sb = kin.S[a], kin.S[b]
        scale = max(np.linalg.norm(Sa), np.linalg.norm(Sb), 1.0)
        if min(np.linalg.norm(Sa - Sb), np.linalg.norm(Sa + Sb)) > 1e-9 * scale:
            return ""
        link = self.link_names[a + 1]
        m = self.mass[a + 1]
        what = "has no mass" if m == 0.0 else f"has no inertia about their axis (mass {m:g} kg)"
        return (f"they are coaxial and the link between them ('{link}') {what}; "
                f"the motion")

    # velocities, efforts, twists beyond MAX_MAGNITUDE and coordinates beyond MAX_COORDINATE
    # are rejected: up to them kinematics and energies stay finite for any physical inertia
    def _q(self, q, name="q"):
        return as_vector(q, self.n, name,
                         limit=MAX_COORDINATE if name == "q" else MAX_MAGNITUDE)

    def _V(self, V, name="V"):
        return as_vector(V, self.b, name, limit=MAX_MAGNITUDE)

    def _frame(self, frame):
        """``frame`` if it names a frame of the model, else a ``ValueError`` naming it."""
        if not isinstance(frame, str):
            raise ValueError(f"frame: expected a frame name (str), got {type(frame).__name__} "
                             f"{frame!r:.80}")
        if frame not in self.frame_body:
            raise ValueError(f"frame: unknown frame {frame!r}; frames are "
                             f"{', '.join(self.frame_names)}")
        return frame

    @staticmethod
    def _finite(value, inputs: dict):
        """``value`` if all its entries are finite, else the overflow error naming the largest
        of ``inputs`` (every input in range, the result overflowed a float: never a silent
        Inf or NaN)."""
        parts = value if isinstance(value, tuple) else (value,)
        if all(np.all(np.isfinite(p)) for p in parts):
            return value
        raise overflow_error(inputs)

    def checked_frame_wrenches(self, frame_wrenches):
        """``frame_wrenches`` ``{frame name: 6-vector [f; n]}`` checked against the model's frames
        (None passes through); a ``ValueError`` names an unknown frame or a bad wrench."""
        if frame_wrenches is None:
            return None
        if not isinstance(frame_wrenches, dict):
            raise ValueError("frame_wrenches: expected a dict {frame name: 6-vector wrench}")
        out = {}
        for name, w in frame_wrenches.items():
            if name not in self.frame_body:
                raise ValueError(f"frame_wrenches: unknown frame {name!r}; frames are "
                                 f"{', '.join(self.frame_names)}")
            out[name] = as_vector(w, 6, f"frame_wrenches[{name!r}]", limit=MAX_MAGNITUDE)
        return out

    # ------------------------------------------------------------------ public API
    @property
    def base_dim(self) -> int:
        """b: 6 (SE3), 3 (SE2: vx, vy, ωz), 3 (SO3: ω), 0 (fixed)."""
        return self.b

    @property
    def nq(self) -> int:
        """Number of joints n (the length of q)."""
        return self.n

    @property
    def base_type(self) -> str:
        return self.group.name

    @property
    def total_mass(self) -> float:
        return float(self.mass.sum())

    def lp_terms(self, q, derivatives=True) -> lp.LPTerms:
        """All LP quantities at q (see :class:`vm_dynamics.dynamics.lp.LPTerms`)."""
        q = self._q(q)
        with np.errstate(all="ignore"):
            return lp.lp_terms(self, q, derivatives)

    def _fast(self, backend: str):
        """The O(n) recursions for ``backend`` (None: the LP reference; see
        :func:`vm_dynamics.dynamics.fast.resolve_backend`), remembered per backend name."""
        cache = self.__dict__.get("_fast_cache")
        if cache is None or cache[0] != id(self):       # new, or a copy.copy of a model
            cache = self._fast_cache = (id(self), {})
        try:
            fm = cache[1].get(backend)
        except TypeError:                                # unhashable: named below
            fm = None
        if fm is not None and fm.grav is self.gravity:   # the common call: one look-up
            return fm
        if not isinstance(backend, str):
            raise ValueError(f"backend: expected 'auto', 'numba', 'numpy' or 'lp', got "
                             f"{backend!r:.80}")
        from ..dynamics import fast
        choice = fast.resolve_backend(backend)
        if choice == "lp":
            return None
        fm = cache[1][backend] = fast.fast_model(self, choice)
        if backend == "auto" and fm.common_call is not None:
            self._fast_auto = (self, self.gravity, *fm.common_call)
        return fm

    #: ``(self, gravity, fdc, idc, P, zb, b, b + n, np.empty, full_fd, full_id)``: the default
    #: backend's common call (``FastModel.common_call``, :func:`vm_dynamics.dynamics.fast.calls.public_calls`)
    #: once :meth:`_fast` built it.  The public forward and inverse dynamics test it inline —
    #: the default backend (by identity with ``_AUTO``: any other object takes :meth:`_fast`),
    #: this model (not a copy.copy of it, whose dict holds the original's tuple), the same
    #: gravity array — and run that call in their own frame: a public call costs about two
    #: µs, and each Python call in it (:meth:`_fast`, a FastModel closure) a tenth or more.
    _fast_auto = None

    @property
    def fast(self):
        """The unchecked fast path for inner loops
        (:class:`~vm_dynamics.model.unchecked.UncheckedDynamics`): ``forward_dynamics(g, V, q,
        qd, tau, out)`` and ``inverse_dynamics(g, V, q, qd, Vdot, qdd, out)`` writing into a
        preallocated ``out``, with no argument checks (the caller guarantees the arrays'
        dtype, shape and range; see that module).  Built once per model and gravity."""
        cached = self.__dict__.get("_unchecked")
        if cached is None or cached[0] != id(self) or cached[1].grav is not self.gravity:
            from .unchecked import UncheckedDynamics
            cached = self._unchecked = (id(self), UncheckedDynamics(self))
        return cached[1]

    def _blocks(self, q, backend):
        fm = self._fast(backend)
        if fm is None:
            q = self._q(q)
            with np.errstate(all="ignore"):
                t = lp.lp_terms(self, q, derivatives=False)
            out = t.M0, t.M0m, t.Mm, t.A, t.Mhat
            return self._finite(out, {"q": q})
        return fm.lp_blocks(self._q(q))

    def mass_matrix(self, q, backend: str = "auto") -> np.ndarray:
        """``M = [[M₀, M₀𝔪], [M₀𝔪ᵀ, M_𝔪]]`` (64) in the coordinates (V, q̇), (b+n)×(b+n).

        ``backend``: ``"auto"`` (the composite-rigid-body algorithm, numba or numpy),
        ``"numba"``, ``"numpy"``, or ``"lp"`` (the closed-form LP reference (64)–(67))."""
        fm = self._fast(backend)
        if fm is not None:
            return fm.mass_matrix(self._q(q))
        q = self._q(q)
        with np.errstate(all="ignore"):
            t = lp.lp_terms(self, q, derivatives=False)
        return self._finite(np.block([[t.M0, t.M0m], [t.M0m.T, t.Mm]]), {"q": q})

    def locked_inertia(self, q, backend: str = "auto") -> np.ndarray:
        """Locked inertia M₀ (65), b×b."""
        return self._blocks(q, backend)[0]

    def connection(self, q, backend: str = "auto") -> np.ndarray:
        """Mechanical connection 𝒜 = M₀⁻¹M₀𝔪 (69), b×n; the locked velocity is Ω = V + 𝒜q̇ (73)."""
        return self._blocks(q, backend)[3]

    def reduced_inertia(self, q, backend: str = "auto") -> np.ndarray:
        """Reduced (block-diagonalised) arm inertia M̂ = M𝔪 − 𝒜ᵀM₀𝒜 (75), n×n."""
        return self._blocks(q, backend)[4]

    def locked_velocity(self, V, q, qd, backend: str = "auto") -> np.ndarray:
        """Ω = V + 𝒜 q̇ (73)."""
        return self._V(V) + self._blocks(q, backend)[3] @ self._q(qd, "qd")

    def locked_momentum(self, V, q, qd, backend: str = "auto") -> np.ndarray:
        """P = M₀V + M₀𝔪q̇ (77): the total momentum as a body wrench at the vehicle frame."""
        M0, M0m = self._blocks(q, backend)[:2]
        return M0 @ self._V(V) + M0m @ self._q(qd, "qd")

    def curvature(self, q) -> np.ndarray:
        """Curvature of the mechanical connection B[i, j] ∈ R^b, shape (n, n, b)
        (docs/corrections.md, "Curvature form of N̂")."""
        q = self._q(q)
        with np.errstate(all="ignore"):
            return self._finite(lp.curvature(self, lp.lp_terms(self, q)), {"q": q})

    def forward_dynamics(self, g, V, q, qd, tau, base_wrench=None, frame_wrenches=None,
                         backend: str = _AUTO):
        """``(V̇, q̈)`` of the Lagrange–Poincaré equations (LP-1)–(LP-3).

        ``backend="auto"`` (default): the O(n) articulated-body algorithm of
        :mod:`vm_dynamics.dynamics.fast` (numba, or numpy without it), which solves the same equations;
        ``"lp"``: the closed-form reference :func:`lp.forward_dynamics` (paper 000 with the
        corrections of docs/corrections.md, "LP equations").  Both agree to ~1e-12 (test_fast_path.py)."""
        hot = self._fast_auto
        if hot is not None and hot[0] is self and hot[1] is self.gravity and backend is _AUTO:
            _, _, fdc, _, P, zb, b, nout, empty, full, _ = hot     # FastModel's closure, inline
            if not frame_wrenches:
                out = empty(nout)
                try:
                    st = fdc(P, g, V, q, qd, tau, zb if base_wrench is None else base_wrench,
                             out)
                except (TypeError, ValueError):
                    st = -1
                if not st:
                    return out[:b], out[b:]
            return full(g, V, q, qd, tau, base_wrench, frame_wrenches)
        fm = self._fast(backend)
        if fm is not None:
            return fm.forward_dynamics(g, V, q, qd, tau, base_wrench, frame_wrenches)
        g = as_pose(g)
        V, q, qd, tau = self._V(V), self._q(q), self._q(qd, "qd"), self._q(tau, "tau")
        bw = None if base_wrench is None else self._V(base_wrench, "base_wrench")
        fw = self.checked_frame_wrenches(frame_wrenches)
        with np.errstate(all="ignore"):     # an overflow is the ValueError below
            Vdot, qdd, _ = lp.forward_dynamics(self, g, V, q, qd, tau, bw, fw)
        self._finite((Vdot, qdd), dict(g=g, V=V, q=q, qd=qd, tau=tau, base_wrench=bw,
                                       **{f"frame_wrenches[{k!r}]": w for k, w in (fw or {}).items()}))
        return Vdot, qdd

    def inverse_dynamics(self, g, V, q, qd, Vdot, qdd, frame_wrenches=None,
                         backend: str = _AUTO):
        """``(base_wrench, tau)`` that produce ``(V̇, q̈)``; exact inverse of forward_dynamics.
        ``backend`` as in :meth:`forward_dynamics` (default: the recursive Newton–Euler
        algorithm; ``"lp"``: the closed-form reference, docs/corrections.md, "Inverse dynamics")."""
        hot = self._fast_auto
        if hot is not None and hot[0] is self and hot[1] is self.gravity and backend is _AUTO:
            _, _, _, idc, P, _, b, nout, empty, _, full = hot      # FastModel's closure, inline
            if not frame_wrenches:
                out = empty(nout)
                try:
                    st = idc(P, g, V, q, qd, Vdot, qdd, out)
                except (TypeError, ValueError):
                    st = -1
                if not st:
                    return out[:b], out[b:]
            return full(g, V, q, qd, Vdot, qdd, frame_wrenches)
        fm = self._fast(backend)
        if fm is not None:
            return fm.inverse_dynamics(g, V, q, qd, Vdot, qdd, frame_wrenches)
        g = as_pose(g)
        args = (self._V(V), self._q(q), self._q(qd, "qd"), self._V(Vdot, "Vdot"),
                self._q(qdd, "qdd"))
        fw = self.checked_frame_wrenches(frame_wrenches)
        with np.errstate(all="ignore"):     # an overflow is the ValueError below
            out = lp.inverse_dynamics(self, g, *args, frame_wrenches=fw)
        return self._finite(out, dict(zip(("g", "V", "q", "qd", "Vdot", "qdd"), (g, *args)),
                                      **{f"frame_wrenches[{k!r}]": w
                                         for k, w in (fw or {}).items()}))

    def momentum(self, g, V, q, qd) -> np.ndarray:
        """Total spatial momentum ``[linear; angular]`` in the inertial frame, about its origin."""
        g = as_pose(g)
        q = self._q(q)
        V, qd = self._V(V), self._q(qd, "qd")
        with np.errstate(all="ignore"):
            h = lp.spatial_momentum(self, lp.lp_terms(self, q, derivatives=False), g, V, qd)
        return self._finite(h, dict(g=g, V=V, q=q, qd=qd))

    def kinetic_energy(self, V, q, qd, backend: str = "auto") -> float:
        """½ [V; q̇]ᵀ M [V; q̇] with the mass matrix (64)."""
        V, qd = self._V(V), self._q(qd, "qd")
        z = np.concatenate([V, qd])
        with np.errstate(over="ignore", invalid="ignore"):
            e = float(0.5 * z @ self.mass_matrix(q, backend) @ z)
        return self._finite(e, dict(V=V, q=q, qd=qd))

    def potential_energy(self, g, q) -> float:
        """Gravitational potential ``−Σ m_k aᵀ p_k`` (zero at the inertial origin; exactly
        zero without gravity, without computing the positions: energy checks of orbital runs
        evaluate it at every sample)."""
        q = self._q(q)
        g = as_pose(g)
        if not self.gravity.any():
            return 0.0
        with np.errstate(all="ignore"):
            u = lp.potential_energy(self, lp.kinematics(self, q), g)
        return self._finite(u, dict(g=g, q=q))

    def energy(self, g, V, q, qd) -> float:
        """Kinetic plus gravitational potential energy."""
        e = self.potential_energy(g, q) + self.kinetic_energy(V, q, qd)
        return self._finite(e, dict(g=g, V=V, q=q, qd=qd))

    def frame_pose(self, q, frame: str, g=None, backend: str = "auto") -> np.ndarray:
        """Pose of a frame (any URDF link) in the vehicle frame, or in the inertial frame if
        ``g``: ``G_k ḡ_frame`` by the product of exponentials (13)–(16).  ``backend`` as in
        :meth:`forward_dynamics` (``"lp"``: the reference kinematics of lp.py)."""
        self._frame(frame)
        fm = self._fast(backend)
        if fm is not None:
            ge = fm.frame_pose(q, frame)
        else:
            q = self._q(q)
            with np.errstate(all="ignore"):
                ge = self._finite(lp.frame_pose_vehicle(self, lp.kinematics(self, q), frame),
                                  {"q": q})
        return ge if g is None else as_pose(g) @ ge

    def frame_jacobian(self, q, frame: str) -> np.ndarray:
        """Body Jacobian of a frame, 6×(b+n): ``[J_{𝔢,0}, J_{𝔢,𝔪}]`` (92)–(93), corrected."""
        self._frame(frame)
        q = self._q(q)
        with np.errstate(all="ignore"):
            J0, Jm = lp.frame_jacobian(self, lp.kinematics(self, q), frame)
        return self._finite(np.hstack([J0, Jm]), {"q": q})

    @property
    def full_joint_names(self) -> list:
        """All moving joints of the tree (mimic joints included), the order of
        :meth:`full_joint_positions` (= ``joint_names`` when there are no mimic joints)."""
        return list(self.coupling.joint_names)

    def full_joint_positions(self, q) -> np.ndarray:
        """Positions of all joints ``G q + c`` (mimic joints included), e.g. for a JointState
        that robot_state_publisher draws; order of :attr:`full_joint_names`."""
        return self.coupling.full_positions(self._q(q))

    def full_joint_velocities(self, qd) -> np.ndarray:
        """Velocities of all joints ``G q̇``; order of :attr:`full_joint_names`."""
        return self.coupling.full_velocities(self._q(qd, "qd"))

    def neutral_configuration(self) -> np.ndarray:
        """q = 0 clipped into the joint limits."""
        q = np.zeros(self.n)
        for j, lim in enumerate(self.joint_limits):
            lo, hi = lim.get("lower", -np.inf), lim.get("upper", np.inf)
            if lo <= hi:
                q[j] = min(max(0.0, lo), hi)
        return q

    def with_added_vehicle_inertia(self, M_added) -> "Model":
        """A copy whose vehicle inertia 𝔐₀ includes a constant 6×6 ``M_added`` (e.g. hydrodynamic
        added mass, body frame, ``[linear; angular]``).  Gravity still acts on the URDF masses only."""
        return added_inertia_model(self, M_added)

    def with_attached_body(self, frame: str, inertia, pose=None) -> "Model":
        """A copy with a rigid body (6×6 spatial ``inertia`` about its frame B's origin, in B's
        axes; B at ``pose`` in ``frame``) welded to ``frame``'s link (a grasped payload)."""
        self._frame(frame)
        return attached_body_model(self, frame, inertia, pose)

    def __repr__(self):
        return (f"Model({self.name!r}, base={self.group.name}, b={self.b}, n={self.n}, "
                f"mass={self.total_mass:.6g} kg)")


def load_model(source, base="SE3", gravity=(0.0, 0.0, -9.81), locked_joints=None,
               vehicle=None, xacro=DEFAULT_XACRO) -> Model:
    """Build a :class:`Model` from a URDF path, a URDF XML string, or a ``.xacro`` path.

    The URDF's root link is the vehicle; ``base`` names its displacement subgroup (``"SE3"``,
    ``"SE2"``, ``"SO3"`` or ``"fixed"``); ``gravity`` is the gravitational acceleration in the
    inertial frame.

    * ``<mimic>`` joints are supported as a linear coupling ``q_full = G q + c``
      (:class:`JointCoupling`, ``model.coupling``): they are not coordinates of q.
    * ``locked_joints={name: value}`` freezes joints at values (rad or m), like Pinocchio's
      ``buildReducedModel``: they become fixed joints and their links frames.
    * ``vehicle={"mass", "com", "inertia", "mount", "name"}`` mounts the URDF (an arm) on a
      new root body, as if a vehicle link and a fixed joint at the pose ``mount`` had been
      spliced into the XML (:mod:`vm_dynamics.model.mounting`).
    * ``xacro`` — how a ``.xacro`` file is expanded: ``"safe"`` (default: arithmetic-only
      expressions), ``"full"`` (every xacro feature, for a trusted file: xacro files are code)
      or ``"off"`` (plain URDF only); always within a time and size budget, see
      :mod:`vm_dynamics.model.xacro_expansion`.

    Raises ``ValueError`` naming the link or joint for unsupported or physically impossible
    models, including singular or nearly singular mass matrices (with the fix).
    """
    group = get_group(base)
    if locked_joints is not None and not isinstance(locked_joints, dict):
        raise ValueError(f"locked_joints: expected a dict {{joint name: value}}, got "
                         f"{type(locked_joints).__name__}")
    tree = parse_urdf(source, locked_joints=locked_joints, xacro=xacro)
    if vehicle is not None:
        from .mounting import mount_on_vehicle
        tree = mount_on_vehicle(tree, vehicle)
    return Model(tree, base=group, gravity=gravity)
