"""FastModel: the O(n) recursions (ABA, RNEA, CRBA) on a model's tree, numba or numpy kernels."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core import lie
from ...core.validation import (
    MAX_COORDINATE,
    MAX_MAGNITUDE,
    as_pose,
    as_real_array,
    as_real_vector,
    as_vector,
    check_range,
    overflow_error,
)
from . import numpy_kernels as _npk
from .backend import bind_compiled, compile_notice, numba_kernels
from .calls import public_calls, warm_up
from .records import ForwardInputs, ModelConstants

__all__ = ["FastModel", "LPBlocks"]

_PARALLEL_MIN_WORK = 256   # with parallel=True, smaller batches (in joint-states) stay serial

_STATUS = {1: "g: not a rigid transform (rotation block not orthonormal with det +1, or last "
              "row not [0, 0, 0, 1]) or contains NaN/Inf",
           2: "non-finite result",
           3: "q: the mass matrix is not positive definite at this configuration (non-positive "
              "articulated inertia pivot)",
           4: "an input is out of range"}


class LPBlocks(NamedTuple):
    """Blocks of the LP mass matrix (64): M₀ (65), M₀𝔪 (66), M_𝔪 (67), 𝒜 (69), M̂ (75)."""

    M0: np.ndarray
    M0m: np.ndarray
    Mm: np.ndarray
    A: np.ndarray
    Mhat: np.ndarray


class FastModel:
    """Constant arrays of a :class:`~vm_dynamics.Model` laid out for the recursive kernels.

    Body 0 is the vehicle, body ``j + 1`` the body moved by joint ``j``:

    * ``parent[j]`` — body index of joint j's parent body (``< j + 1``);
    * ``jtype[j]`` — 0 revolute/continuous, 1 prismatic;
    * ``xi[j]`` — ξ_j, the joint twist in the vehicle frame at home (17);
    * ``inert[k] = (m, h, I_o)`` — 𝔐_k (55) as mass, first moment ``h = m c`` and rotational
      inertia about the vehicle origin (vehicle axes at home); row 0 is the vehicle's rigid 𝔐₀
      (URDF masses, on which gravity acts);
    * ``root_extra`` — the vehicle's added inertia M_A (6×6 symmetric PSD, vehicle frame, e.g.
      hydrodynamic added mass from :meth:`~vm_dynamics.Model.with_added_vehicle_inertia`; zeros
      if none): kinetic energy ``½Vᵀ(𝔐₀ + M_A)V + …``, so M_A adds to the root's inertia in ABA,
      RNEA and CRBA, but gravity does not act on it;
    * ``axes`` — the rows of ``[v; ω]`` spanned by ι₀; ``grav`` — gravity (inertial frame);
    * ``frames[name] = (body, Ad(ḡ_frame)⁻ᵀ)`` — maps a wrench in frame axes to the body-fixed
      vehicle-at-home frame.
    """

    def __init__(self, model, backend: str = "auto"):
        if backend not in ("auto", "numba", "numpy"):
            raise ValueError(f"backend={backend!r}: choose 'auto', 'numba' or 'numpy'")
        self.model = model
        self.n, self.b = int(model.n), int(model.b)
        # the recursions run on the whole tree (n_tree joints); with mimic joints the model's
        # coordinates are q (n) and q_full = G q + c (model.coupling)
        cp = getattr(model, "coupling", None)
        self.coupled = cp is not None and not cp.trivial
        tree_types = list(cp.joint_types) if cp is not None else list(model.joint_types)
        self.n_tree = n = len(model.xi)
        self.G = None if not self.coupled else np.ascontiguousarray(cp.G, dtype=float)
        self.c = None if not self.coupled else np.ascontiguousarray(cp.c, dtype=float)
        self.parent = np.ascontiguousarray(np.asarray(model.parent_joint, dtype=np.int64) + 1)
        self.jtype = np.array([1 if t == "prismatic" else 0 for t in tree_types],
                              dtype=np.int64)
        self.xi = np.ascontiguousarray(model.xi, dtype=np.float64)
        added = getattr(model, "added_vehicle_inertia", None)
        self.root_extra = np.zeros((6, 6)) if added is None else \
            np.ascontiguousarray(0.5 * (added + added.T), dtype=np.float64)
        self.inert = np.empty((n + 1, 13))
        rigid0 = model.vehicle_inertia if added is None else model.vehicle_inertia - added
        for k, M in enumerate([rigid0, *model.body_inertia_home]):
            self.inert[k, 0] = M[0, 0]
            self.inert[k, 1:4] = lie.unskew(M[3:, :3])
            self.inert[k, 4:13] = (0.5 * (M[3:, 3:] + M[3:, 3:].T)).reshape(9)
        self.axes = np.asarray(model.group.axes, dtype=np.int64)
        self.grav = np.ascontiguousarray(model.gravity, dtype=np.float64)
        self.frames = {name: (int(model.frame_body[name]),
                              np.ascontiguousarray(lie.Ad_inv(model.frame_home[name]).T))
                       for name in model.frame_names}
        self.frame_home = {name: np.ascontiguousarray(model.frame_home[name], dtype=float)
                           for name in model.frame_names}
        self._no_fw = (np.zeros(0, dtype=np.int64), np.zeros((0, 6)))
        self._zero_b = np.zeros(self.b)
        nb = numba_kernels() if backend != "numpy" else None
        if backend == "numba" and nb is None:
            raise ValueError("backend='numba': numba is not installed")
        self._nb = nb
        self._kc = ModelConstants(self.parent, self.jtype, self.xi, self.inert, self.root_extra,
                                  self.axes, self.grav, *(
            (self.G, np.ascontiguousarray(cp.independent, dtype=np.int64)) if self.coupled
            else (np.zeros((0, 0)), np.zeros(0, dtype=np.int64))))
        self._P = None          # the model packed for kernels.packed (numba, no mimic joints)
        #: What the instance's forward/inverse dynamics closures run, for a caller that runs
        #: the same common call inline (:func:`.calls.public_calls`); None without them.
        self.common_call = None
        if nb is not None:
            self._warm_up()

    def _warm_up(self):
        """Call each numba kernel once at a neutral state, so that compiling (first run on a
        machine) or loading them from the disk cache happens here, announced, and not inside
        a timed loop; then bind the compiled entry points (:func:`bind_compiled`)."""
        n, b = self.n_tree, self.b
        z, zb = np.zeros(n), np.zeros(b)
        nb, C = self._nb, self._kc
        fd_args = (C, np.eye(4), zb, z, z, z, zb, *self._no_fw, np.empty(b + n))
        id_args = (C, np.eye(4), zb, z, z, zb, z, *self._no_fw, np.empty(b + n))
        mm_args = (C, z, np.empty((b + n, b + n)))
        ff_args = (C, np.eye(4), zb, z, z, z, zb, *self._no_fw, np.empty(b + n))
        # the entry points that test the inputs' range (kernels.checked); with mimic joints
        # the kernels run on the tree's coordinates, and _validate tests the model's
        kk = nb.checked if not self.coupled else nb
        with compile_notice(kk.forward_dynamics, kk.inverse_dynamics, kk.mass_matrix,
                            kk.free_floating_inverse_dynamics, kk.frame_pose):
            self._fd = bind_compiled(kk.forward_dynamics, fd_args)
            self._id = bind_compiled(kk.inverse_dynamics, id_args)
            self._ffid = bind_compiled(kk.free_floating_inverse_dynamics, ff_args)
            if self.frames:
                self._fp = bind_compiled(kk.frame_pose, (C, z, 0, np.eye(4), np.empty((4, 4))))
            self._mm = bind_compiled(kk.mass_matrix, mm_args)
            if not self.coupled:
                self._warm_up_packed()

    def _warm_up_packed(self):
        """Pack the model for :mod:`.kernels.packed`, compile (or load) the entry points its
        single calls use (:func:`.calls.warm_up`) and bind them (:meth:`_bind_calls`)."""
        self._P = self._nb.packed.pack_constants(self._kc)
        warm_up(self._nb.packed, self._P, self.n, self.b)
        self._bind_calls()

    def _bind_calls(self):
        """Give this instance its own ``forward_dynamics`` and ``inverse_dynamics``: closures
        over the packed model that try the common call first, checked in compiled code, and
        hand anything else (an error to name, a list, frame wrenches) to the class's
        methods, the full validation (:func:`.calls.public_calls`, which also gives
        :attr:`common_call`)."""
        self.forward_dynamics, self.inverse_dynamics, self.common_call = public_calls(
            self._nb.packed, self._P, self.b, self.n, FastModel.forward_dynamics.__get__(self),
            FastModel.inverse_dynamics.__get__(self))

    @property
    def packed_constants(self):
        """The model as one flat array for :mod:`.kernels.packed` (None with mimic joints or
        without numba)."""
        return self._P

    @property
    def backend(self) -> str:
        return "numba" if self._nb is not None else "numpy"

    # ------------------------------------------------------------------ input handling
    # One validation with the reference path (core.validation).  The common call (float64
    # C-contiguous arrays, no frame wrenches, numba, no mimic joints) is checked in compiled
    # code (kernels.packed, .calls: kind, shape and range in the entry point);
    # any other call, or one failing there, takes the full path: kind and shape here, range in
    # kernels.checked, then core.validation for the message (the numpy/mimic paths: all here).
    def _vec(self, x, n, name):
        return as_real_vector(x, n, name)

    def _pose(self, g):
        return as_real_array(g, (4, 4), "g")

    @property
    def _checks_range(self) -> bool:
        """True if the kernels called test the inputs' range (the numba entry points of
        :mod:`.kernels.checked` without mimic joints); else :meth:`_validate` does, first."""
        return self._nb is not None and not self.coupled

    @staticmethod
    def _validate(inputs, where=""):
        """The reference path's range checks on ``inputs`` (name -> array), in its order:
        ``ValueError`` naming the first input out of range, prefixed by ``where``."""
        for name, x in inputs.items():
            if x is None or name == "frame_wrenches":     # frame wrenches: checked on entry
                continue
            if name == "g":
                as_pose(x, where + "g")
            else:
                check_range(x, where + name, MAX_COORDINATE if name == "q" else MAX_MAGNITUDE)

    def _frame_arrays(self, frame_wrenches, batch=None):
        """(body indices (m,), wrenches mapped by Ad(ḡ_frame)⁻ᵀ: (m, 6) or (N, m, 6))."""
        if not frame_wrenches:
            if batch is None:
                return self._no_fw
            return self._no_fw[0], np.zeros((batch[1], 0, 6))
        if not isinstance(frame_wrenches, dict):
            raise ValueError("frame_wrenches: expected a dict {frame name: 6-vector wrench}")
        bodies, ws = [], []
        for name, w in frame_wrenches.items():
            try:
                body, T = self.frames[name]
            except (KeyError, TypeError):
                raise ValueError(f"frame_wrenches: unknown frame {name!r}; frames are "
                                 f"{', '.join(self.frames)}") from None
            if batch is None:
                ws.append(T @ as_vector(w, 6, f"frame_wrenches[{name!r}]", limit=MAX_MAGNITUDE))
            else:
                shape, N = batch
                w = as_real_array(w, None, f"frame_wrenches[{name!r}]")
                check_range(w, f"frame_wrenches[{name!r}]", MAX_MAGNITUDE)
                if w.shape[-1:] != (6,):
                    raise ValueError(f"frame_wrenches[{name!r}]: expected trailing dimension 6, "
                                     f"got shape {w.shape}")
                try:
                    w = np.broadcast_to(w, shape + (6,)).reshape(N, 6)
                except ValueError:
                    raise ValueError(f"frame_wrenches[{name!r}]: shape {w.shape} does not "
                                     f"broadcast to the batch shape {shape}") from None
                ws.append(w @ T.T)
            bodies.append(body)
        fw = np.ascontiguousarray(np.stack(ws, axis=-2))
        return np.array(bodies, dtype=np.int64), fw

    def _raise(self, status, inputs, where=""):
        """The ``ValueError`` of a kernel's non-zero status: the reference path's error if an
        input is out of range (core.validation), else the status's, naming the input."""
        self._validate(inputs, where)
        if status == 2:          # inputs in range whose result overflowed: name the largest
            raise overflow_error(inputs, where)
        raise ValueError(where + _STATUS.get(int(status), f"status {status}"))

    @property
    def kernel_constants(self) -> ModelConstants:
        """The model as the compiled kernels take it, mimic coupling included
        (:class:`~vm_dynamics.dynamics.fast.kernels.constants.ModelConstants`)."""
        return self._kc

    # ------------------------------------------------------------------ mimic coupling
    def _tree(self, q, qd=None, qdd=None):
        """Tree coordinates of the model's: ``G q + c``, ``G q̇``, ``G q̈`` (mimic joints)."""
        out = [np.ascontiguousarray(self.G @ q + self.c)]
        for x in (qd, qdd):
            if x is not None:
                out.append(np.ascontiguousarray(self.G @ x))
        return out

    def _tree_id(self, g, V, qf, qdf, Vdot, qddf, fb, fw):
        """Recursive Newton–Euler on the tree: ``[base wrench; τ_tree]``."""
        if self._nb is not None:
            out = np.empty(self.b + self.n_tree)
            st = self._id(self._kc, g, V, qf, qdf, Vdot, qddf, fb, fw, out)
        else:
            out, st = _npk.inverse_dynamics(self, g[None], V[None], qf[None], qdf[None],
                                            Vdot[None], qddf[None], fb, fw[None])
            out, st = out[0], st[0]
        return out, st

    def _tree_mass_matrix(self, qf):
        """``(M, status)``: the tree's mass matrix at the tree's coordinates ``qf`` (the
        model's ``q`` where no joint is a mimic), compiled or numpy; status 2 if not finite."""
        if self._nb is not None:
            M = np.empty((self.b + self.n_tree,) * 2)
            st = self._mm(self._kc, qf, M)
        else:
            M = _npk.mass_matrix(self, qf)
            st = 0 if np.all(np.isfinite(M)) else 2
        return M, st

    def _reduce(self, M):
        """``Tᵀ M T`` with ``T = diag(I_b, G)`` (the mass matrix (64) in the coordinates q)."""
        b = self.b
        out = np.empty((b + self.n, b + self.n))
        out[:b, :b] = M[:b, :b]
        out[:b, b:] = M[:b, b:] @ self.G
        out[b:, :b] = out[:b, b:].T
        out[b:, b:] = self.G.T @ M[b:, b:] @ self.G
        return out

    def _coupled_fd(self, g, V, q, qd, tau, bw, fb, fw):
        """Forward dynamics with mimic joints: ``Tᵀ(M T a + h) = [f₀; τ]`` solved for a (the
        coupled joints are not degrees of freedom; their effort is carried by the master)."""
        b = self.b
        qf, qdf = self._tree(q, qd)
        zb, zt = np.zeros(b), np.zeros(self.n_tree)
        h, st = self._tree_id(g, V, qf, qdf, zb, zt, fb, fw)
        if st:
            return None, st
        M, st = self._tree_mass_matrix(qf)
        if st:
            return None, st
        with np.errstate(all="ignore"):      # an overflow is status 2
            rhs = np.concatenate([bw - h[:b], tau - self.G.T @ h[b:]])
            try:
                a = np.linalg.solve(self._reduce(M), rhs)
            except np.linalg.LinAlgError:
                return None, 3
        return a, (0 if np.all(np.isfinite(a)) else 2)

    # ------------------------------------------------------------------ forward dynamics
    def forward_dynamics(self, g, V, q, qd, tau, base_wrench=None, frame_wrenches=None):
        """``(V̇, q̈)`` by the articulated-body algorithm; see the module docstring.  With mimic
        joints: the composite-rigid-body mass matrix reduced by the coupling and RNEA."""
        n, b = self.n, self.b
        if self.coupled:
            g = self._pose(g)
            V, q = self._vec(V, b, "V"), self._vec(q, n, "q")
            qd, tau = self._vec(qd, n, "qd"), self._vec(tau, n, "tau")
            bw = self._zero_b if base_wrench is None else self._vec(base_wrench, b, "base_wrench")
            self._validate(dict(g=g, V=V, q=q, qd=qd, tau=tau, base_wrench=bw))
            fb, fw = self._frame_arrays(frame_wrenches)
            out, st = self._coupled_fd(g, V, q, qd, tau, bw, fb, fw)
            if st:
                self._raise(st, dict(g=g, V=V, q=q, qd=qd, tau=tau, base_wrench=bw,
                                     frame_wrenches=fw))
            return out[:b], out[b:]
        # (_pose and _vec written out: the hot path of a call costs ~5 µs of Python)
        g = as_real_array(g, (4, 4), "g")
        V, q = as_real_vector(V, b, "V"), as_real_vector(q, n, "q")
        qd, tau = as_real_vector(qd, n, "qd"), as_real_vector(tau, n, "tau")
        bw = self._zero_b if base_wrench is None else as_real_vector(base_wrench, b, "base_wrench")
        fb, fw = self._no_fw if not frame_wrenches else self._frame_arrays(frame_wrenches)
        if self._nb is not None:        # kernels.checked: the inputs' range, compiled
            out = np.empty(b + n)
            st = self._fd(self._kc, g, V, q, qd, tau, bw, fb, fw, out)
        else:
            self._validate(dict(g=g, V=V, q=q, qd=qd, tau=tau, base_wrench=bw))
            out, st = _npk.forward_dynamics(self, g[None], V[None], q[None], qd[None],
                                            tau[None], bw[None], fb, fw[None])
            out, st = out[0], st[0]
        if st:
            self._raise(st, dict(g=g, V=V, q=q, qd=qd, tau=tau, base_wrench=bw,
                                 frame_wrenches=fw))
        return out[:b], out[b:]

    def forward_dynamics_batch(self, g, V, q, qd, tau, base_wrench=None, frame_wrenches=None,
                               parallel=False):
        """Forward dynamics over leading batch dimensions (broadcast between the arguments):
        ``g (..., 4, 4)``, ``V (..., b)``, ``q, qd, tau (..., n)``, ``base_wrench (..., b)``,
        ``frame_wrenches {frame: (..., 6)}`` → ``V̇ (..., b)``, ``q̈ (..., n)``.

        One compiled loop over the states, sharing one workspace (with mimic joints: a
        Python loop over :meth:`forward_dynamics`).  ``parallel=True`` (numba
        backend) splits large batches over numba's threads; on a machine whose cores are busy
        with other work that is slower than the default single thread (threads wait for each
        other), so measure before turning it on (``bench/run.py`` section 4)."""
        n, b = self.n, self.b
        if self.coupled:
            shape = np.broadcast_shapes(np.shape(g)[:-2], np.shape(V)[:-1], np.shape(q)[:-1],
                                        np.shape(qd)[:-1], np.shape(tau)[:-1])
            gb = np.broadcast_to(g, shape + (4, 4))
            Vb, qb = np.broadcast_to(V, shape + (b,)), np.broadcast_to(q, shape + (n,))
            qdb, tb = np.broadcast_to(qd, shape + (n,)), np.broadcast_to(tau, shape + (n,))
            bwb = None if base_wrench is None else np.broadcast_to(base_wrench, shape + (b,))
            Vd, qdd = np.empty(shape + (b,)), np.empty(shape + (n,))
            for idx in np.ndindex(*shape):
                Vd[idx], qdd[idx] = self.forward_dynamics(
                    gb[idx], Vb[idx], qb[idx], qdb[idx], tb[idx],
                    None if bwb is None else bwb[idx],
                    {k: np.broadcast_to(w, shape + (6,))[idx]
                     for k, w in (frame_wrenches or {}).items()} or None)
            return Vd, qdd
        args = {"g": (g, (4, 4)), "V": (V, (b,)), "q": (q, (n,)), "qd": (qd, (n,)),
                "tau": (tau, (n,))}
        if base_wrench is not None:
            args["base_wrench"] = (base_wrench, (b,))
        arrs = {}
        for name, (x, tail) in args.items():
            a = as_real_array(x, None, name)
            if a.shape[a.ndim - len(tail):] != tail or a.ndim < len(tail):
                raise ValueError(f"{name}: expected trailing shape {tail}, got {a.shape}")
            arrs[name] = (a, tail)
        try:
            shape = np.broadcast_shapes(*[a.shape[:a.ndim - len(t)] for a, t in arrs.values()])
        except ValueError:
            raise ValueError("batch shapes do not broadcast: " + ", ".join(
                f"{k} {a.shape}" for k, (a, _) in arrs.items())) from None
        N = int(np.prod(shape, dtype=np.int64))
        flat = {}
        for name, (a, tail) in arrs.items():
            full = shape + tail
            if a.shape == full and a.flags.c_contiguous and a.flags.writeable:
                flat[name] = a.reshape((N,) + tail)
            else:
                flat[name] = np.array(np.broadcast_to(a, full), order="C").reshape((N,) + tail)
        if base_wrench is None:
            flat["base_wrench"] = np.zeros((N, b))
        fb, fw = self._frame_arrays(frame_wrenches, batch=(shape, N))
        out = np.empty((N, b + n))
        st = np.zeros(N, dtype=np.int64)
        X = ForwardInputs(*[flat[k] for k in ("g", "V", "q", "qd", "tau", "base_wrench")], fb, fw)
        if self._nb is not None:
            ok = self._nb.checked.states_in_range(X, st)
        else:
            ok = _npk.states_in_range(X, st)
        if not ok:
            pass
        elif self._nb is not None:
            if not parallel or N * (n + 1) < _PARALLEL_MIN_WORK:  # thread start-up would dominate
                self._nb.forward_dynamics_range(self._kc, X, out, st, 0, N)
            else:
                self._nb.forward_dynamics_batch(self._kc, X, out, st,
                                                min(N, 4 * self._nb.num_threads()))
        else:
            out, st = _npk.forward_dynamics(self, flat["g"], flat["V"], flat["q"], flat["qd"],
                                            flat["tau"], flat["base_wrench"], fb, fw)
        if st.any():
            i = int(np.flatnonzero(st)[0])
            idx = np.unravel_index(i, shape) if shape else ()
            self._raise(st[i], {k: v[i] for k, v in flat.items()} | {"frame_wrenches": fw[i]},
                        where=f"state {tuple(int(x) for x in idx)}: ")
        return out[:, :b].reshape(shape + (b,)), out[:, b:].reshape(shape + (n,))

    # ------------------------------------------------------------------ inverse dynamics, M
    def inverse_dynamics(self, g, V, q, qd, Vdot, qdd, frame_wrenches=None):
        """``(base_wrench, τ)`` producing ``(V̇, q̈)`` by the recursive Newton–Euler algorithm
        (mimic joints: on the tree at ``G q + c``, efforts ``τ = Gᵀ τ_tree``)."""
        n, b = self.n, self.b
        g = as_real_array(g, (4, 4), "g")
        V, q, qd = as_real_vector(V, b, "V"), as_real_vector(q, n, "q"), as_real_vector(qd, n, "qd")
        Vdot, qdd = as_real_vector(Vdot, b, "Vdot"), as_real_vector(qdd, n, "qdd")
        if not self._checks_range:
            self._validate(dict(g=g, V=V, q=q, qd=qd, Vdot=Vdot, qdd=qdd))
        fb, fw = self._frame_arrays(frame_wrenches)
        if self.coupled:
            qf, qdf, qddf = self._tree(q, qd, qdd)
            out, st = self._tree_id(g, V, qf, qdf, Vdot, qddf, fb, fw)
            if st:
                self._raise(st, dict(g=g, V=V, q=q, qd=qd, Vdot=Vdot, qdd=qdd,
                                     frame_wrenches=fw))
            return out[:b], self.G.T @ out[b:]
        if self._nb is not None:
            out = np.empty(b + n)
            st = self._id(self._kc, g, V, q, qd, Vdot, qdd, fb, fw, out)
        else:
            out, st = _npk.inverse_dynamics(self, g[None], V[None], q[None], qd[None],
                                            Vdot[None], qdd[None], fb, fw[None])
            out, st = out[0], st[0]
        if st:
            self._raise(st, dict(g=g, V=V, q=q, qd=qd, Vdot=Vdot, qdd=qdd, frame_wrenches=fw))
        return out[:b], out[b:]

    def free_floating_inverse_dynamics(self, g, V, q, qd, qdd, base_wrench=None,
                                       frame_wrenches=None):
        """``(V̇, τ)``: the joint efforts that produce ``q̈`` while the vehicle moves freely
        under the known ``base_wrench`` (and the frame wrenches, gravity), and the vehicle's
        resulting acceleration — the arm equation (LP-2) of the coupled system (docs/corrections.md,
        "Inverse dynamics"), as used by free-floating computed-torque control: one RNEA pass, the
        b×b locked inertia M₀ and a second backward pass (:func:`.kernels.rnea.free_floating_solve`)."""
        n, b = self.n, self.b
        g = self._pose(g)
        V, q, qd = self._vec(V, b, "V"), self._vec(q, n, "q"), self._vec(qd, n, "qd")
        qdd = self._vec(qdd, n, "qdd")
        bw = self._zero_b if base_wrench is None else self._vec(base_wrench, b, "base_wrench")
        if not self._checks_range:
            self._validate(dict(g=g, V=V, q=q, qd=qd, qdd=qdd, base_wrench=bw))
        fb, fw = self._frame_arrays(frame_wrenches)
        if self._nb is not None and self.coupled:
            qf, qdf, qddf = self._tree(q, qd, qdd)
            out = np.empty(b + self.n_tree)
            st = self._ffid(self._kc, g, V, qf, qdf, qddf, bw, fb, fw, out)
            if st:
                self._raise(st, dict(g=g, V=V, q=q, qd=qd, qdd=qdd, base_wrench=bw))
            return out[:b], self.G.T @ out[b:]
        if self._nb is not None:
            out = np.empty(b + n)
            st = self._ffid(self._kc, g, V, q, qd, qdd, bw, fb, fw, out)
            if st:
                self._raise(st, dict(g=g, V=V, q=q, qd=qd, qdd=qdd, base_wrench=bw))
            return out[:b], out[b:]
        Vdot = np.zeros(b)
        if b:
            r0, _ = self.inverse_dynamics(g, V, q, qd, Vdot, qdd, frame_wrenches)
            Vdot = np.linalg.solve(self.mass_matrix(q)[:b, :b], bw - r0)
        return Vdot, self.inverse_dynamics(g, V, q, qd, Vdot, qdd, frame_wrenches)[1]

    def arm_only(self) -> "FastModel":
        """The same tree with a massless vehicle (𝔐₀ = 0, no added inertia): its inverse
        dynamics' base row is the wrench the vehicle must apply to the arm to give it the
        motion ``(V, V̇, q, q̇, q̈)`` (gravity on the arm included), so minus that row is the
        wrench the arm exerts on the vehicle (:func:`vm_dynamics.sim.interaction.arm_interaction`)."""
        import copy
        if getattr(self, "_arm", None) is not None:
            return self._arm
        arm = copy.copy(self)
        arm.inert = self.inert.copy()
        arm.inert[0] = 0.0
        arm.root_extra = np.zeros((6, 6))
        arm._kc = self._kc._replace(inert=arm.inert, rootx=arm.root_extra)
        if self._P is not None:
            arm._P = self._nb.packed.pack_constants(arm._kc)
            arm._bind_calls()
        arm._arm = self._arm = arm
        return arm

    def frame_pose(self, q, frame: str) -> np.ndarray:
        """Pose of a frame in the vehicle frame (4×4): ``G_k ḡ_frame`` (13)–(16)."""
        try:
            body, _ = self.frames[frame]
        except (KeyError, TypeError):
            raise ValueError(f"frame: unknown frame {frame!r}; frames are "
                             f"{', '.join(self.frames)}") from None
        q = self._vec(q, self.n, "q")
        if not self._checks_range:
            self._validate({"q": q})
        if self.coupled:
            q = self._tree(q)[0]
        home = self.frame_home[frame]
        if self._nb is not None:
            out = np.empty((4, 4))
            st = self._fp(self._kc, q, body, home, out)
            if st:
                self._raise(st, {"q": q})
            return out
        Rw, Pw, _, _ = _npk.kinematics(self, q[None])
        out = np.eye(4)
        out[:3, :3] = Rw[0, body] @ home[:3, :3]
        out[:3, 3] = Rw[0, body] @ home[:3, 3] + Pw[0, body]
        if not np.all(np.isfinite(out)):
            self._raise(2, {"q": q})
        return out

    def mass_matrix(self, q) -> np.ndarray:
        """``M = [[M₀, M₀𝔪], [M₀𝔪ᵀ, M_𝔪]]`` (64) by the composite-rigid-body algorithm."""
        q = self._vec(q, self.n, "q")
        if not self._checks_range:
            self._validate({"q": q})
        M, st = self._tree_mass_matrix(self._tree(q)[0] if self.coupled else q)
        if self.coupled and not st:
            with np.errstate(all="ignore"):
                M = self._reduce(M)
            st = 0 if np.all(np.isfinite(M)) else 2
        if st:
            self._raise(st, {"q": q})
        return M

    def lp_blocks(self, q) -> LPBlocks:
        """M₀ (65), M₀𝔪 (66), M_𝔪 (67), 𝒜 = M₀⁻¹M₀𝔪 (69), M̂ = M_𝔪 − 𝒜ᵀM₀𝒜 (75)."""
        M = self.mass_matrix(q)
        b = self.b
        M0, M0m, Mm = M[:b, :b], M[:b, b:], M[b:, b:]
        A = np.linalg.solve(M0, M0m) if b else np.zeros((0, self.n))
        Mhat = Mm - M0m.T @ A
        return LPBlocks(M0, M0m, Mm, A, 0.5 * (Mhat + Mhat.T))
