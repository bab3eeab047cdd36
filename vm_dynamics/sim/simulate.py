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
from .integrators import METHODS, TABLEAUX, IntegrationStats, integrate
from .samples import SampleBuffer, SampleInputs

__all__ = ["simulate", "Trajectory", "State", "FORMULATIONS", "MAX_STEPS", "BLOCK_STEPS"]

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
    return _Constant(a)


class _Constant:
    """An input held for the whole run: ``(t, state) -> value``."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __call__(self, t, state):
        return self.value


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
#: Held inputs or a compiled law: compiled steps per engine call.  Ctrl-C, the progress bar and
#: the callbacks act between calls; each call also pays its Python set-up and re-warms the
#: processor caches the compiled step runs from, so fewer, longer calls cost less per step.
BLOCK_STEPS = 500


def simulate(model, g0, V0, q0, qd0, t_final, dt, tau=None, base_wrench=None, method="rkmk4",
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
        every stage; ``traj.base_wrench`` includes their vehicle wrench.  A ``UniformGravity``
        is the model's gravity (:func:`vm_dynamics.forces.fold_gravity`, whose model gives
        the run's energies).
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
    run = _validated(model, g0, V0, q0, qd0, t_final, dt, tau, method, prescribed,
                     frame_wrenches, callback, formulation, dynamics, substeps, record_every,
                     on_sample, max_steps)
    setup_start = time.perf_counter()
    # the engine's set-up loads (or compiles) the kernels in numba/llvmlite, whose C code calls
    # back into Python: a KeyboardInterrupt raised inside such a callback is swallowed or
    # leaves the interpreter to die by SIGINT at exit.  A Ctrl-C there is recorded instead and
    # ends the run once the set-up is over, before the first step (no samples, interrupted).
    with deferred_interrupts() as setup_interrupted:
        sim = Simulator(model, float(dt) / substeps, method, formulation=formulation,
                        backend=run.backend, environment=environment, forces=forces,
                        prescribed=prescribed, rtol=rtol, atol=atol,
                        forward_dynamics=run.user_fd)
        sim.reset(g0, V0, q0, qd0)
        inputs = _Inputs(model, tau, base_wrench, frame_wrenches)
        law = _compiled_law(tau, base_wrench, frame_wrenches, sim)
        if law is not None:
            sim.prepare_law(law)        # part of the set-up, not of the timed integration
    held = sim.held_inputs(*inputs.constants()) if inputs.held else None
    N = len(run.t_grid) - 1
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=N, desc=f"simulate[{method}]", unit="sample")
    buf = SampleBuffer(N, run.record_every, model.b, model.n,
                       SampleInputs(sim, inputs, prescribed is not None, inputs.frame_fns,
                                    inputs.bw_fn is not None),
                       callback, on_sample, bar, track_work=not run.adaptive,
                       per_sample=bool(sim.forces))
    stats = IntegrationStats()
    interrupted = stopped = False
    start = time.perf_counter()          # after the engine's set-up (kernel loading)
    try:
        if setup_interrupted:
            raise KeyboardInterrupt     # Ctrl-C during the set-up: no step taken
        with np.errstate(all="ignore"):
            if run.adaptive:
                stopped = _run_adaptive(sim, buf, run, inputs, held, stats, rtol, atol)
            else:
                stopped = _run_fixed(sim, buf, run, inputs, held, prescribed is not None, law)
    except KeyboardInterrupt:
        interrupted = True
    except SimulationError as exc:          # keep what was computed: the samples before
        buf.flush()
        exc.trajectory = Trajectory(**buf.arrays(prescribed is not None), method=method,
                                    formulation=sim.formulation, steps=sim.steps,
                                    evaluations=sim.evaluations,
                                    wall_time=time.perf_counter() - start, stopped=True,
                                    meta=dict(dt=float(dt), diverged=True, backend=sim.backend))
        raise
    finally:
        if bar is not None:
            bar.close()
        buf.flush()                     # the last sample's inputs were not yet evaluated
    wall = time.perf_counter() - start
    if not run.adaptive:
        stats.steps, stats.evals = sim.steps, sim.evaluations
    return Trajectory(**buf.arrays(prescribed is not None),
                      method=method, formulation=sim.formulation, steps=stats.steps,
                      evaluations=stats.evals, rejected_steps=stats.rejected, wall_time=wall,
                      interrupted=interrupted, stopped=stopped,
                      meta=dict(dt=float(dt), t_final=float(run.t_grid[-1]), rtol=rtol, atol=atol,
                                substeps=substeps, record_every=run.record_every,
                                prescribed=prescribed is not None, backend=sim.backend,
                                setup_time=start - setup_start,
                                compiled_law=law.kind if law is not None else None))


@dataclass(frozen=True)
class _Run:
    """A validated run: the sample times, the method and the backend, the user's forward
    dynamics (or None), whether the method is adaptive (it then runs over the whole grid on the
    engine's stages), the substeps and the recording step."""

    t_grid: np.ndarray
    method: str
    backend: str
    user_fd: object
    adaptive: bool
    substeps: int
    record_every: int


# complexity: one check per documented argument, each naming it
def _validated(model, g0, V0, q0, qd0, t_final, dt, tau, method, prescribed,  # noqa: C901
               frame_wrenches, callback, formulation, dynamics, substeps, record_every,
               on_sample, max_steps) -> _Run:
    """Check every argument (a ``ValueError`` naming the culprit) before anything runs."""
    n, b = model.n, model.b
    as_pose(g0, "g0")
    as_vector(V0, b, "V0", limit=MAX_MAGNITUDE)
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
    return _Run(t_grid, method, backend, user_fd, TABLEAUX[method].adaptive, int(substeps),
                int(record_every))


class _Inputs:
    """The inputs of a run as the engine's per-stage callable ``(t, state) -> (tau,
    base_wrench, frame_wrenches)``; ``held`` if every one is an array (held for the run)."""

    def __init__(self, model, tau, base_wrench, frame_wrenches):
        self.tau_fn = _input_fn(tau, model.n, "tau")
        self.bw_fn = _input_fn(base_wrench, model.b, "base_wrench")
        self.frame_fns = _frame_inputs(model, frame_wrenches)
        fns = [self.tau_fn, self.bw_fn] + [fn for _, fn in self.frame_fns or []]
        self.held = all(f is None or isinstance(f, _Constant) for f in fns)

    def __call__(self, t, state):
        return (self.tau_fn(t, state) if self.tau_fn is not None else None,
                self.bw_fn(t, state) if self.bw_fn is not None else None,
                {name: fn(t, state) for name, fn in self.frame_fns} if self.frame_fns
                else None)

    def constants(self) -> tuple:
        """The held arrays as :meth:`Simulator.held_inputs` takes them."""
        return (*(None if f is None else f.value for f in (self.tau_fn, self.bw_fn)), None,
                {name: fn.value for name, fn in self.frame_fns} if self.frame_fns else None)


def _run_fixed(sim, buf, run, stage_inputs, held, per_sample, law=None):
    """Fixed-step methods: held inputs → compiled multi-step runs; a controller's compiled law
    → compiled multi-step runs evaluating it at every stage; other callables → per stage (the
    inputs recorded at a sample are those of the next step's first stage, evaluated there).
    Returns True if the callback stopped the run early."""
    t_grid, N = run.t_grid, len(run.t_grid) - 1
    t, g, V, q, qd = sim.arrays()
    staged = held is None
    if buf.record(0, float(t_grid[0]), g, V, q, qd, defer=staged, work=_work(sim)):
        if staged:
            buf.inputs_of(0, None)
        return True
    uniform = np.allclose(np.diff(t_grid), t_grid[1] - t_grid[0], rtol=0, atol=1e-12)
    blocks = uniform and run.substeps == 1
    if law is not None and blocks:
        return _run_blocks(sim, buf, t_grid, law=law)
    if not staged and blocks and not per_sample:
        return _run_blocks(sim, buf, t_grid, held=held)
    for k in range(N):
        first = sim.advance_to(float(t_grid[k + 1]), run.substeps,
                               stage_inputs=stage_inputs if staged else None,
                               inputs=None if staged else held)
        if staged:
            buf.inputs_of(k, (first.tau, first.base_wrench))
        t, g, V, q, qd = sim.arrays()
        last = k + 1 == N
        if buf.record(k + 1, float(t_grid[k + 1]), g, V, q, qd, defer=staged and not last,
                      work=_work(sim)):
            if staged and not last:
                buf.inputs_of(k + 1, None)
            return not last
    return False


def _work(sim):
    return sim.work, sim.abs_work


def _run_blocks(sim, buf, t_grid, held=None, law=None):
    """Compiled runs of up to :data:`BLOCK_STEPS` steps with the ``held`` inputs or the compiled
    ``law``, recorded block by block; True if the callback stopped the run early."""
    N = len(t_grid) - 1
    k = 0
    while k < N:
        steps = min(BLOCK_STEPS, N - k)
        try:
            if law is not None:
                _, G, VV, Q, QD = sim.run_law(steps, law, t_grid[k:k + steps])
            else:
                _, G, VV, Q, QD = sim.run(steps, inputs=held)
        except SimulationError as exc:
            _, G, VV, Q, QD = exc.partial
            if law is not None:
                buf.record_block(k, t_grid, (G, VV, Q, QD), sim.run_work,
                                 law=(sim.run_efforts, sim.run_base_wrenches))
            else:
                for i in range(len(G)):
                    buf.record(k + 1 + i, float(t_grid[k + 1 + i]), G[i], VV[i], Q[i], QD[i],
                               work=sim.run_work[i])
            raise
        stop_k = buf.record_block(k, t_grid, (G, VV, Q, QD), sim.run_work, held=held,
                                  law=(sim.run_efforts, sim.run_base_wrenches)
                                  if law is not None else None)
        if stop_k is not None:       # a callback may stop the run at any sample
            return stop_k < N
        k += steps
    return False


def _compiled_law(tau, base_wrench, frame_wrenches, sim):
    """The compiled law of a controller's inputs (:class:`vm_dynamics.control.inputs.
    ControllerInputs`: ``tau`` and ``base_wrench`` both its channels, no frame wrenches) if the
    engine can run it; None otherwise (the Python stage path)."""
    if frame_wrenches is not None:
        return None
    from ..control.inputs import compiled_law_of
    law = compiled_law_of(tau, base_wrench)
    return law if law is not None and sim.supports_law(law) else None


class _AdaptiveSamples:
    """``on_sample`` of :func:`integrate` for the adaptive run: the engine takes the dense
    output's state, the buffer records it."""

    def __init__(self, sim, buf, N):
        self.sim, self.buf, self.N = sim, buf, N
        self.stopped = False

    def __call__(self, k, t, g, y, aux):
        self.sim.set_vector_state(t, g, y)
        _, g_, V, q, qd = self.sim.arrays()
        if self.buf.record(k, t, g_, V, q, qd):
            self.stopped = k < self.N
            return True
        return False


def _run_adaptive(sim, buf, run, stage_inputs, held, stats, rtol, atol):
    """An adaptive method over the whole grid (dense output) on the engine's stages."""
    rhs = sim.rhs(inputs=held) if held is not None else sim.rhs(stage_inputs)
    samples = _AdaptiveSamples(sim, buf, len(run.t_grid) - 1)
    integrate(rhs, sim.model.group, run.method, run.t_grid, sim.arrays()[1], sim.vector_state(),
              samples, rtol=rtol, atol=atol, stats=stats)
    return samples.stopped
