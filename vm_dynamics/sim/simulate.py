"""Time simulation of a vehicle-manipulator system: :func:`simulate` and :class:`Trajectory`.

``simulate`` drives the one simulation engine, :class:`vm_dynamics.sim.engine.Simulator` (RKMK
integration on the group of the corrected Lagrange–Poincaré equations (LP-1)–(LP-4) of paper 000,
docs/corrections.md, "LP equations"; see that module for the formulations and the backends), samples it on the grid
``t = k·dt`` and records a :class:`Trajectory`.

Inputs given as arrays are held for the whole run, and the engine loops over the steps in
compiled code (:meth:`~vm_dynamics.sim.engine.Simulator.run`).  Inputs given as callables
``(t, state) -> array`` are evaluated at every Runge–Kutta stage (a continuous-time controller),
by the engine's per-stage driver.  ``dopri5`` integrates the whole grid adaptively with dense
output over the same stage evaluations.

**Prescribed joint motion.**  With ``prescribed(t) -> (q, q̇, q̈)`` the joints follow that motion
exactly; only ``(g, m)`` is integrated (the base equation needs only ``M₀``, ``𝒜`` and ``F_η`` at
``q(t)``).  The joint efforts that realise the motion are recorded: by (LP-2) ``q̈`` is affine in
``τ`` with slope ``M̂⁻¹``, so ``τ = M̂ (q̈_prescribed − q̈(τ = 0))``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.signals import deferred_interrupts
from ..core.validation import MAX_COORDINATE, MAX_MAGNITUDE, as_pose, as_positive, as_vector
from .engine import FORMULATIONS, SimulationError, Simulator, State
from .integrators import METHODS, IntegrationStats, integrate

__all__ = ["simulate", "Trajectory", "State", "FORMULATIONS", "MAX_STEPS"]

#: Most output samples (``t_final / dt``) one :func:`simulate` call takes unless its
#: ``max_steps`` says otherwise: a guard against a mistyped ``dt`` or ``t_final``, checked before
#: anything is allocated (2·10⁶ samples are 2 000 s at 1 ms; ``vm-sim`` has the same limit).
MAX_STEPS = 2_000_000


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


@dataclass
class Trajectory:
    """Samples of a simulation on the grid ``t = k·dt`` (the last sample at ``t_final``).

    ``tau`` and ``base_wrench`` are the joint efforts and the vehicle wrench applied at the samples
    (for prescribed motion: the efforts that realise it).  ``steps`` counts integrator steps,
    ``evaluations`` right-hand-side evaluations, ``rejected_steps`` rejected adaptive steps.
    ``interrupted`` is True if a KeyboardInterrupt cut the run short, ``stopped`` if the callback
    asked to stop; the arrays then hold only the samples that were completed.  ``work`` and
    ``abs_work`` are the engine's account of the work of every applied effort and wrench, and
    of ``∫|power| dt``, since ``t = 0`` (fixed-step methods without prescribed motion; else
    None).
    """

    t: np.ndarray
    g: np.ndarray
    V: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    base_wrench: np.ndarray
    method: str
    work: np.ndarray | None = None
    abs_work: np.ndarray | None = None
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

    def __repr__(self) -> str:
        span = f"t = {self.t[0]:g}..{self.t[-1]:g} s" if len(self.t) else "empty"
        flags = "".join(f", {k}" for k in ("interrupted", "stopped") if getattr(self, k))
        return (f"Trajectory({len(self.t)} samples, {span}, b={self.V.shape[1]}, "
                f"n={self.q.shape[1]}, method={self.method!r}, steps={self.steps}{flags})")

    def __getitem__(self, index) -> "Trajectory":
        """Sub-trajectory of the samples selected by a slice or an index array
        (``traj[::10]``); the run statistics are kept."""
        if isinstance(index, (int, np.integer)):
            raise TypeError("Trajectory[...] selects samples by slice or index array; "
                            "use traj.state(k) for one sample")
        arrays = {k: getattr(self, k)[index] for k in
                  ("t", "g", "V", "q", "qd", "tau", "base_wrench")}
        arrays.update({k: None if getattr(self, k) is None else getattr(self, k)[index]
                       for k in ("work", "abs_work")})
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
    """An array (validated once) or a callable ``(t, state) -> array`` (validated by the
    engine at every call)."""
    if value is None:
        return None
    if callable(value):
        # what it returns is checked as an array input is (None would be "no input" to the
        # engine: zero efforts); the engine's own checks then pass it unchanged
        def checked(t, state):
            out = value(t, state)
            if out is None:
                raise ValueError(f"{name}: the callable returned None; expected {size} numbers "
                                 f"(inputs at t={t:.9g})")
            try:
                return as_vector(out, size, name, limit=MAX_MAGNITUDE)
            except ValueError as exc:
                raise ValueError(f"{exc} (inputs at t={t:.9g})") from None
        return checked
    a = as_vector(value, size, name, limit=MAX_MAGNITUDE).copy()
    a.flags.writeable = False

    def constant(t, state):
        return a
    constant.constant = a          # marks an input held for the whole run
    return constant


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


def _time_grid(t_final, dt, max_steps=MAX_STEPS) -> np.ndarray:
    """The sample times ``k·dt`` up to ``t_final`` (the last one at ``t_final``), at most
    ``max_steps`` steps (else a ``ValueError`` naming t_final, dt and the limit)."""
    t_final, dt = as_positive(t_final, "t_final"), as_positive(dt, "dt")
    steps = t_final / dt - 1e-9          # inf for a dt below t_final / 1.8e308
    if not steps <= max_steps:
        raise ValueError(f"t_final/dt: {t_final:g} s in steps of {dt:g} s is {steps:.3g} "
                         f"steps, more than max_steps={max_steps} (increase dt, shorten "
                         f"t_final, or raise max_steps)")
    N = max(1, int(np.ceil(steps)))
    t = np.arange(N + 1) * dt
    t[-1] = t_final
    return t


# ---------------------------------------------------------------------------------- simulate
_CHUNK = 100      # held inputs: compiled steps per engine call (Ctrl-C, progress, callbacks between)


# complexity: one branch per documented argument; the stepping itself is sim/engine.py
def simulate(model, g0, V0, q0, qd0, t_final, dt, tau=None, base_wrench=None, method="rkmk4",  # noqa: C901
             prescribed=None, frame_wrenches=None, rtol=1e-9, atol=1e-12, callback=None,
             progress=False, *, formulation="auto", dynamics="auto", substeps=1,
             environment=None, record_every=1, on_sample=None, max_steps=MAX_STEPS,
             forces=None) -> Trajectory:
    """Simulate the vehicle-manipulator from ``(g0, V0, q0, qd0)`` for ``t_final`` seconds.

    Parameters
    ----------
    g0, V0, q0, qd0 : initial pose (4×4), body velocity (b), joint positions and velocities (n).
        With ``prescribed`` motion ``q0``/``qd0`` may be ``None`` (taken from ``prescribed(0)``);
        if given they must agree with it.
    t_final, dt : output samples at ``t = k·dt`` (the last one at ``t_final``).
    tau, base_wrench : joint efforts (n) and vehicle wrench (b, ``[f; n]`` in the vehicle frame;
        ``traj.base_wrench`` records it plus the environment's vehicle wrench):
        an array (held for the whole run), or a callable ``(t, state) -> array`` evaluated at
        every Runge–Kutta stage, ``state`` a :class:`State`.
    frame_wrenches : ``{frame: wrench or callable}``, wrenches at frame origins in frame axes.
    method : ``"rkmk4"`` (default, fixed step ``dt/substeps``), ``"lie_euler"`` (order 1) or
        ``"dopri5"`` (adaptive Dormand–Prince 5(4) in the Lie algebra with ``rtol``/``atol``,
        sampled on the grid by dense output).
    prescribed : callable ``t -> (q, qd, qdd)``: joints follow it exactly, the vehicle follows
        the coupled dynamics; ``traj.tau`` holds the efforts that realise the motion.
    callback : ``callback(state)`` at every sample; returning ``True`` stops the run.
    progress : show a tqdm progress bar.
    formulation : ``"auto"`` | ``"spatial_momentum"`` | ``"body_momentum"`` | ``"velocity"``
        (:mod:`vm_dynamics.sim.engine`).
    dynamics : ``"auto"`` (numba if installed, else the same kernels as plain Python),
        ``"numba"`` (``"fast"`` is an alias), ``"lp"`` (the closed-form LP reference), or a
        forward-dynamics function with the signature of :meth:`Model.forward_dynamics`.
    forces : force elements (:mod:`vm_dynamics.forces`: springs, hydrodynamics, …) evaluated at
        every stage; ``traj.base_wrench`` includes their vehicle wrench.
    environment : a :class:`~vm_dynamics.model.hydrodynamics.Hydrodynamics` (damping, buoyancy of the
        vehicle and the arm links, evaluated at every stage as force elements after
        ``forces``); its added mass must be in the model already.
    record_every : keep every ``record_every``-th sample in the returned trajectory (and the
        last one); ``callback`` still sees every sample.  Memory then grows ``record_every``
        times slower with the duration (``vm-sim`` bounds it this way and streams every sample
        to its MCAP recording through ``on_sample``).  ``traj.work``/``traj.abs_work`` hold the
        engine's work account at the kept samples (fixed-step methods without prescribed
        motion), so the energy balance does not depend on the sampling.
    on_sample : ``on_sample(t, g, V, q, qd, tau, base_wrench)`` once per sample, in order, as
        soon as the sample's inputs are known (what ``traj.tau``/``traj.base_wrench`` record):
        for writers that stream every sample to disk (``vm-sim``'s MCAP recording).  The arrays
        are only valid during the call.
    max_steps : most output samples ``t_final / dt`` (default :data:`MAX_STEPS`); more is a
        ``ValueError`` before anything is allocated (memory grows with the samples kept).

    Every argument is validated first: a wrong kind, shape or value is a ``ValueError`` naming
    it (``g0``, ``V0``, ``q0``, ``qd0``, ``t_final``, ``dt``, ...), also when a callable input
    returns something that is not an array of the right size (``None`` included).

    A KeyboardInterrupt returns the samples computed so far with ``traj.interrupted = True``.
    A failed step (non-finite or overflowing state) raises
    :class:`~vm_dynamics.sim.engine.SimulationError` (a :class:`~vm_dynamics.SimulationDiverged`):
    ``"diverged at t = X s (…); reduce dt or the gains"``, with the samples computed before in
    its ``trajectory``.
    """
    n, b = model.n, model.b
    g0 = as_pose(g0, "g0")
    V0 = as_vector(V0, b, "V0", limit=MAX_MAGNITUDE)
    for nm, x in (("q0", q0), ("qd0", qd0)):        # None: taken from prescribed(0)
        if x is not None or prescribed is None:
            as_vector(x, n, nm, limit=MAX_COORDINATE if nm == "q0" else MAX_MAGNITUDE)
    if method not in METHODS:
        raise ValueError(f"method={method!r}: unknown; choose one of {', '.join(METHODS)}")
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation={formulation!r}: unknown; choose one of "
                         f"{', '.join(FORMULATIONS)}")
    if not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise ValueError(f"substeps: expected a positive integer, got {substeps!r}")
    user_fd = None
    if callable(dynamics):
        user_fd, backend = dynamics, "lp"
    elif dynamics in ("auto", "numba", "lp"):
        backend = dynamics
    elif dynamics == "fast":
        backend = "auto"
    else:
        raise ValueError(f"dynamics={dynamics!r}: expected 'auto', 'numba', 'fast', 'lp' or a "
                         f"callable like Model.forward_dynamics")
    if isinstance(record_every, bool) or not isinstance(record_every, (int, np.integer)) \
            or record_every < 1:
        raise ValueError(f"record_every: expected a positive integer, got {record_every!r}")
    record_every = int(record_every)
    if on_sample is not None and not callable(on_sample):
        raise ValueError("on_sample: expected a callable (t, g, V, q, qd, tau, base_wrench)")
    if callback is not None and not callable(callback):
        raise ValueError("callback: expected a callable state -> bool")
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) \
            or max_steps < 1:
        raise ValueError(f"max_steps: expected a positive integer, got {max_steps!r}")
    t_grid = _time_grid(t_final, dt, int(max_steps))
    if prescribed is not None and tau is not None:
        raise ValueError("tau: cannot be given together with prescribed joint motion "
                         "(the efforts are computed and returned in traj.tau)")
    setup_start = time.perf_counter()
    # the engine's set-up loads (or compiles) the kernels in numba/llvmlite, whose C code calls
    # back into Python: a KeyboardInterrupt raised inside such a callback is swallowed or
    # leaves the interpreter to die by SIGINT at exit.  A Ctrl-C there is recorded instead and
    # ends the run once the set-up is over, before the first step (no samples, interrupted).
    with deferred_interrupts() as setup_interrupted:
        sim = Simulator(model, float(dt) / substeps, "rkmk4" if method == "dopri5" else method,
                        formulation=formulation, backend=backend, environment=environment,
                        forces=forces,
                        prescribed=prescribed, rtol=rtol, atol=atol, forward_dynamics=user_fd)
        sim.reset(g0, V0, q0, qd0)
        tau_fn = _input_fn(tau, n, "tau")
        bw_fn = _input_fn(base_wrench, b, "base_wrench")
        fw_fns = _frame_inputs(model, frame_wrenches)
        held = all(f is None or getattr(f, "constant", None) is not None
                   for f in [tau_fn, bw_fn] + [fn for _, fn in fw_fns or []])

        def stage_inputs(t, state):
            return (tau_fn(t, state) if tau_fn is not None else None,
                    bw_fn(t, state) if bw_fn is not None else None,
                    {name: fn(t, state) for name, fn in fw_fns} if fw_fns else None)

        law = _stage_law(tau, base_wrench, frame_wrenches, sim)
        if law is not None:
            sim.prepare_law(law)        # part of the set-up, not of the timed integration
    held_inputs = None
    if held:
        held_inputs = sim.held_inputs(*(None if f is None else f.constant for f in (tau_fn, bw_fn)),
                                      None, {name: fn.constant for name, fn in fw_fns}
                                      if fw_fns else None)
    N = len(t_grid) - 1
    r = record_every
    kept = N // r + 1 + (1 if N % r else 0)     # samples 0, r, 2r, ... and N
    S = kept + 1                                # + one scratch row for the samples not kept
    rec = dict(t=np.empty(S), g=np.empty((S, 4, 4)), V=np.empty((S, b)),
               q=np.empty((S, n)), qd=np.empty((S, n)), tau=np.empty((S, n)),
               base_wrench=np.empty((S, b)), work=np.full((S, 2), np.nan))

    def slot(k):
        """Row of sample k: its own if it is kept, else the scratch row."""
        if k % r == 0:
            return k // r
        return kept - 1 if k == N else kept
    count = [0]
    last = [-1]                 # the last sample recorded
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=N, desc=f"simulate[{method}]", unit="sample")

    def set_inputs(k, t, g, V, q, qd, inputs=None):
        """The inputs applied at sample k: from the engine's first stage there (``inputs``, the
        (tau, base_wrench)) or evaluated at the sample."""
        k = slot(k)
        if inputs is not None:
            tau_k, bw_k = inputs
        else:
            inputs = sim._call_inputs(stage_inputs, t, State(t, _ro(g), _ro(V), _ro(q), _ro(qd)))
            tau_k, bw_k = inputs.tau, inputs.base_wrench
        rec["tau"][k] = tau_k
        rec["base_wrench"][k] = bw_k
        if sim.forces and b:     # the applied vehicle wrench includes the force elements'
            from ..forces import vehicle_wrench
            rec["base_wrench"][k] += vehicle_wrench(model, sim.forces, g, V, q)
        if prescribed is not None:          # at the sample's own state (not the engine's)
            st = State(t, _ro(g), _ro(V), _ro(q), _ro(qd))
            fws = {name: fn(t, st) for name, fn in fw_fns} if fw_fns else None
            rec["tau"][k] = sim.prescribed_effort(           # (adds the environment itself)
                fws, np.array(bw_k, dtype=float) if bw_fn is not None else None, state=st)
        if on_sample is not None:
            on_sample(t, g, V, q, qd, _ro(rec["tau"][k]), _ro(rec["base_wrench"][k]))

    def record(k, t, g, V, q, qd, defer=False, work=None):
        """Store sample k (its inputs now, or later by set_inputs if ``defer``; ``work`` the
        engine's ``[work, abs_work]`` there, default its current account); returns True if the
        callback asks to stop."""
        if pending[0] is not None and pending[0] != k:   # before its row can be reused
            inputs_of(pending[0], None)
        j = slot(k)
        rec["t"][j] = t
        rec["g"][j] = g
        rec["V"][j] = V
        rec["q"][j] = q
        rec["qd"][j] = qd
        if method != "dopri5":          # dense-output samples lie between the engine's steps
            rec["work"][j] = (sim.work, sim.abs_work) if work is None else work
        if defer:
            pending[0] = k
        else:
            set_inputs(k, t, g, V, q, qd)
        count[0] = j + 1 if j < kept else count[0]
        last[0] = k
        if bar is not None and k:
            bar.update(1)
        if callback is not None:
            rows = [rec[a][j] for a in ("g", "V", "q", "qd")]
            if j == kept:                       # the scratch row is overwritten next sample
                rows = [a.copy() for a in rows]
            return bool(callback(State(t, *(_ro(a) for a in rows))))
        return False

    pending = [None]

    def record_block(k0, G, VV, Q, QD, WW, law_inputs=None):
        """Samples ``k0 + 1 .. k0 + m`` of a compiled run with held inputs, or with a compiled
        law (``law_inputs = (efforts, base wrenches)``, row i: the inputs at sample ``k0 + i``,
        where step i started; the last sample's wait for the next block); the sample at which
        the callback asked to stop, or None.  Without a per-sample consumer (callback,
        on_sample, environment) they are stored as whole slices, not one Python call per
        sample."""
        m = len(G)
        if m == 0:
            return None
        law_run = law_inputs is not None
        if law_run:
            efforts, wrenches = law_inputs
            if pending[0] == k0:
                inputs_of(k0, (efforts[0], wrenches[0]))
        if callback is not None or on_sample is not None or sim.forces:
            for i in range(m):
                k = k0 + 1 + i
                if record(k, float(t_grid[k]), G[i], VV[i], Q[i], QD[i], work=WW[i],
                          defer=law_run):
                    if law_run:
                        inputs_of(k, (efforts[i + 1], wrenches[i + 1]) if i + 1 < m else None)
                    return k
                if law_run and i + 1 < m:
                    inputs_of(k, (efforts[i + 1], wrenches[i + 1]))
            return None
        rows_of = np.fromiter((slot(k) for k in range(k0 + 1, k0 + m + 1)), np.int64, m)
        sel = np.flatnonzero(rows_of < kept)
        if rows_of[-1] == kept:                 # the newest sample also goes to the scratch row
            sel = np.append(sel, m - 1)
        js = rows_of[sel]
        rec["t"][js] = t_grid[k0 + 1 + sel]
        for key, a in (("g", G), ("V", VV), ("q", Q), ("qd", QD), ("work", WW)):
            rec[key][js] = a[sel]
        if law_run:                 # sample k0 + 1 + i: the efforts of step i + 1
            nxt = sel[sel < m - 1]
            rec["tau"][rows_of[nxt]] = efforts[nxt + 1]
            rec["base_wrench"][rows_of[nxt]] = wrenches[nxt + 1]
            pending[0] = k0 + m     # its efforts start the next block (or are evaluated)
        else:
            rec["tau"][js] = held_inputs.tau
            rec["base_wrench"][js] = held_inputs.base_wrench
        stored = js[js < kept]
        if stored.size:
            count[0] = int(stored[-1]) + 1
        last[0] = k0 + m
        if bar is not None:
            bar.update(m)
        return None

    def inputs_of(k, inputs):
        pending[0] = None
        j = slot(k)
        set_inputs(k, rec["t"][j], rec["g"][j], rec["V"][j], rec["q"][j], rec["qd"][j], inputs)

    def rows():
        """The kept rows, and the last sample if it was not kept (a run cut short)."""
        K = count[0]
        idx = list(range(K))
        if last[0] >= 0 and slot(last[0]) == kept:
            idx.append(kept)
        arrays = {key: v[idx] for key, v in rec.items()}
        work = arrays.pop("work")
        # the engine's account covers applied efforts and wrenches, not the efforts that
        # realise prescribed motion; dense-output samples lie between its steps
        good = method != "dopri5" and prescribed is None and len(idx) \
            and np.all(np.isfinite(work))
        return dict(arrays, work=work[:, 0].copy() if good else None,
                    abs_work=work[:, 1].copy() if good else None)

    stats = IntegrationStats()
    interrupted = stopped = False
    start = time.perf_counter()          # after the engine's set-up (kernel loading)
    try:
        if setup_interrupted:
            raise KeyboardInterrupt     # Ctrl-C during the set-up: no step taken
        with np.errstate(all="ignore"):
            if method == "dopri5":
                stopped = _run_dopri5(sim, t_grid, stage_inputs, held_inputs, record, stats,
                                      rtol, atol)
            else:
                stopped = _run_fixed(sim, t_grid, substeps, stage_inputs, held_inputs, record,
                                     inputs_of, prescribed is not None, record_block, law)
    except KeyboardInterrupt:
        interrupted = True
    except SimulationError as exc:          # keep what was computed: the samples before
        if pending[0] is not None:
            inputs_of(pending[0], None)
        exc.trajectory = Trajectory(**rows(),
                                    method=method, formulation=sim.formulation,
                                    steps=sim.steps, evaluations=sim.evaluations,
                                    wall_time=time.perf_counter() - start, stopped=True,
                                    meta=dict(dt=float(dt), diverged=True,
                                              backend=sim.backend))
        raise
    finally:
        if bar is not None:
            bar.close()
        if pending[0] is not None:           # the last sample's inputs were not yet evaluated
            inputs_of(pending[0], None)
    wall = time.perf_counter() - start
    if method != "dopri5":
        stats.steps, stats.evals = sim.steps, sim.evaluations
    return Trajectory(**rows(),
                      method=method, formulation=sim.formulation, steps=stats.steps,
                      evaluations=stats.evals, rejected_steps=stats.rejected, wall_time=wall,
                      interrupted=interrupted, stopped=stopped,
                      meta=dict(dt=float(dt), t_final=float(t_grid[-1]), rtol=rtol, atol=atol,
                                substeps=substeps, record_every=r, prescribed=prescribed is not None,
                                backend=sim.backend, setup_time=start - setup_start,
                                compiled_law=law.kind if law is not None else None))


def _run_fixed(sim, t_grid, substeps, stage_inputs, held_inputs, record, inputs_of,
               per_sample, record_block, law=None):
    """Fixed-step methods: held inputs → compiled multi-step runs; a controller's compiled law
    → compiled multi-step runs evaluating it at every stage; other callables → per stage (the
    inputs recorded at a sample are those of the next step's first stage, evaluated there)."""
    N = len(t_grid) - 1
    t, g, V, q, qd = sim.arrays()
    staged = held_inputs is None
    if record(0, float(t_grid[0]), g, V, q, qd, defer=staged):
        if staged:
            inputs_of(0, None)
        return True
    uniform = np.allclose(np.diff(t_grid), t_grid[1] - t_grid[0], rtol=0, atol=1e-12)
    k = 0
    while k < N and law is not None and uniform and substeps == 1:
        steps = min(_CHUNK, N - k)
        try:
            times, G, VV, Q, QD = sim.run_law(steps, law, t_grid[k:k + steps])
        except SimulationError as exc:
            times, G, VV, Q, QD = exc.partial
            record_block(k, G, VV, Q, QD, sim.run_work, (sim.run_efforts,
                                                         sim.run_base_wrenches))
            raise
        stop_k = record_block(k, G, VV, Q, QD, sim.run_work, (sim.run_efforts,
                                                              sim.run_base_wrenches))
        if stop_k is not None:
            return stop_k < N
        k += steps
    while k < N:
        if not staged and uniform and substeps == 1 and not per_sample:
            steps = min(_CHUNK, N - k)
            try:
                times, G, VV, Q, QD = sim.run(steps, inputs=held_inputs)
            except SimulationError as exc:
                times, G, VV, Q, QD = exc.partial
                for i in range(len(times)):
                    record(k + 1 + i, float(t_grid[k + 1 + i]), G[i], VV[i], Q[i], QD[i],
                           work=sim.run_work[i])
                raise
            stop_k = record_block(k, G, VV, Q, QD, sim.run_work)
            if stop_k is not None:       # a callback may stop the run at any sample
                return stop_k < N
            k += steps
            continue
        sim.dt = (float(t_grid[k + 1]) - float(t_grid[k])) / substeps
        for j in range(substeps):
            if staged:
                sim.step(stage_inputs=stage_inputs)
                if j == 0:
                    inputs_of(k, (sim.last_stage_inputs.tau,
                                  sim.last_stage_inputs.base_wrench))
            else:
                sim.step(inputs=held_inputs)
        sim._t = float(t_grid[k + 1])
        k += 1
        t, g, V, q, qd = sim.arrays()
        if record(k, float(t_grid[k]), g, V, q, qd, defer=staged and k < N):
            if staged and k < N:
                inputs_of(k, None)
            return k < N
    return False


def _stage_law(tau, base_wrench, frame_wrenches, sim):
    """The compiled law of a controller's ``inputs()`` (their ``stage_law``) if the engine can
    run it: ``tau`` and ``base_wrench`` both carry it, no frame wrenches.  None otherwise (the
    Python stage path)."""
    factory = getattr(tau, "stage_law", None) if callable(tau) else None
    if factory is None or frame_wrenches is not None \
            or getattr(base_wrench, "stage_law", None) is not factory:
        return None
    law = factory()
    return law if sim.supports_law(law) else None


def _run_dopri5(sim, t_grid, stage_inputs, held_inputs, record, stats, rtol, atol):
    """Adaptive Dormand–Prince over the whole grid (dense output) on the engine's stages."""
    rhs = (sim._rhs(lambda t, s: held_inputs, True) if held_inputs is not None
           else sim._rhs(stage_inputs, False))
    stopped = [False]

    def on_sample(k, t, g, y, aux):
        sim.set_vector_state(t, g, y)
        _, g_, V, q, qd = sim.arrays()
        if record(k, t, g_, V, q, qd):
            stopped[0] = k < len(t_grid) - 1
            return True
        return False
    integrate(rhs, sim.model.group, "dopri5", t_grid, sim._g, sim.vector_state(), on_sample,
              rtol=rtol, atol=atol, stats=stats)
    return stopped[0]
