#!/usr/bin/env python
"""Where the microseconds go: each public path split into its parts, next to its peer.

    .venv/bin/python bench/breakdown.py            # ~2 min (after the kernels are compiled)
    .venv/bin/python bench/breakdown.py --repeats 15 --markdown

For each target of issue 27 on the floating UR5 of example-robot-data (``--robot b1_z1``: the
B1-Z1 tree; gravity, dt 1 ms) this times, in the same process and in interleaved repeats (A, B, C, A, B, C, …):

* **call floors** — a numba no-op called through its dispatcher and through its bound entry
  point (one argument, and the argument lists of the FD kernel and of the engine step: what
  unboxing the arguments costs), Pinocchio's cheapest call (``computeTotalMass``), ``pin.aba``
  on an empty model (call plus argument conversion, no work), ``mj_step`` on an empty model;
* **forward / inverse dynamics** — the public ``model.forward_dynamics`` /
  ``inverse_dynamics``; the argument validation it runs (kind and shape of five arrays); the
  compiled entry point it calls with the arguments ready (arguments as Python objects, their
  kind checked in compiled code: ``dynamics.fast.calls``; the dispatcher's call, as before,
  for comparison); the same kernel looped inside compiled code (no Python at all, the
  workspace allocated per call as the API does); the unchecked fast path ``model.fast``, timed
  in its ``out`` form (the result written into a preallocated array, which it returns;
  ``pin.rnea`` likewise returns storage it owns, ``data.tau``), while the public call returns
  fresh arrays; ``pin.aba`` / ``pin.rnea``.  What the public call costs beyond validation and
  the compiled call is the dispatch (finding the compiled model, allocating the output,
  slicing it);
* **integration** — ``Simulator.step(inputs=held)`` and ``Simulator.step(tau=…)``, the
  compiled step kernel through its entry point, the same kernel looped in compiled code, four
  forward-dynamics kernels (what an RK4 step must evaluate), ``vm.simulate`` open loop per step
  and the compiled rollout alone per step, vs ``mj_step`` (RK4);
* **computed torque at every stage** — ``vm.simulate`` with ``computed_torque``'s inputs per
  step, the compiled rollout with the law alone, the rollout without the law (the difference is
  the law), vs ``mj_step``;
* **the law, one stage** — the compiled law (``control.laws.computed_torque_into``) looped in
  compiled code on the plant's kinematics (what the engine does when the controller's model
  equals the plant's), on its own kinematics, and its parts: the joint reference and command,
  the free-floating inverse dynamics passes (RNEA at V̇ = 0, the b×b solve, the second backward
  pass), the kinematics.

Times are CPU time of this process (``time.process_time``) per call: the machine is shared,
and time spent waiting for a processor is not counted.  Each figure is the median over the
repeats of that repeat's mean per call, with the spread (min–max over the repeats).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import robots  # noqa: E402

import vm_dynamics as vm  # noqa: E402


# ------------------------------------------------------------------------------ timing
def _mean_cpu(f, number, per):
    t0 = time.process_time()
    for _ in range(number):
        f()
    return (time.process_time() - t0) / number / per


def interleaved(fns: dict, repeats: int, budget: float = 0.05) -> dict:
    """``{name: (median, min, max)}`` seconds per call (``fns[name] = (callable, per)``: the
    callable does ``per`` calls), over ``repeats`` interleaved repeats of ~``budget`` s each."""
    numbers = {}
    for name, (f, per) in fns.items():
        f()
        t = _mean_cpu(f, 3, 1)
        numbers[name] = max(1, int(budget / max(t, 1e-7)))
    runs = {name: [] for name in fns}
    for _ in range(repeats):
        for name, (f, per) in fns.items():
            runs[name].append(_mean_cpu(f, numbers[name], per))
    return {k: (statistics.median(v), min(v), max(v)) for k, v in runs.items()}


def compiled_loop(kernel):
    """A compiled function calling ``kernel(*args)`` ``K`` times: the kernel's time with no
    Python in between (per call: the loop's time / K)."""
    from numba import njit

    @njit
    def loop(K, *args):
        for _ in range(K):
            kernel(*args)
        return 0
    return loop


def noop_like(args):
    """A compiled no-op with ``len(args)`` parameters, bound to its entry point for the types
    of ``args``: what unboxing those arguments costs a call."""
    from numba import njit

    from vm_dynamics.dynamics.fast import bind_compiled
    names = ", ".join(f"a{i}" for i in range(len(args)))
    scope: dict = {}
    exec(f"def noop({names}):\n    return 0\n", scope)       # noqa: S102 - fixed text
    return bind_compiled(njit(scope["noop"]), args)


# ------------------------------------------------------------------------------ fixtures
class Fixture:
    """A floating robot (gravity; the UR5 unless ``robot``) in vm_dynamics, Pinocchio and
    MuJoCo, one random state."""

    def __init__(self, dt=1e-3, robot="ur5"):
        import mujoco
        xml = robots.robot_xml(robot)
        self.xml, self.dt = xml, dt
        m = self.model = vm.load_model(xml, base="SE3", gravity=(0.0, 0.0, -9.81))
        self.pin, self.pdata, self.iq, self.iv = robots.pinocchio_model(xml, m.joint_names)
        self.pin.gravity.linear = np.array([0.0, 0.0, -9.81])
        rng = np.random.default_rng(7)
        self.g = vm.lie.se3_exp(np.r_[rng.normal(size=3), rng.uniform(-2, 2, 3)])
        self.V, self.q, self.qd = rng.normal(size=6), 0.5 * rng.normal(size=m.n), \
            rng.normal(size=m.n)
        self.tau = 0.1 * rng.normal(size=m.n)
        self.Vdot, self.qdd = m.forward_dynamics(self.g, self.V, self.q, self.qd, self.tau)
        self.pq, self.pv, self.pu = robots.pin_state(self.pin, self.iq, self.iv, self.g, self.V,
                                                     self.q, self.qd, self.tau)
        self.pa = np.zeros(self.pin.nv)
        self.pa[:6], self.pa[self.iv] = self.Vdot, self.qdd
        self.mj = mujoco.MjModel.from_xml_string(robots.mjcf_from_urdf(xml, m.gravity, dt))
        self.md = mujoco.MjData(self.mj)
        sm = robots.StateMap(self.mj, m.joint_names)
        self.md.qpos[:], self.md.qvel[:] = sm.to_mj(self.g, self.V, self.q, self.qd)
        mujoco.mj_forward(self.mj, self.md)


def floors(fx, repeats):
    """Call floors of numba, Pinocchio and MuJoCo."""
    import mujoco
    import pinocchio as pin
    from numba import njit

    from vm_dynamics.dynamics.fast import bind_compiled

    @njit
    def noop1(a):
        return 0
    one = bind_compiled(noop1, (fx.g,))
    empty = pin.Model()
    edata = empty.createData()
    z = np.zeros(0)
    mje = mujoco.MjModel.from_xml_string("<mujoco/>")
    mde = mujoco.MjData(mje)
    return interleaved({
        "numba no-op, 1 array, dispatcher": (lambda: noop1(fx.g), 1),
        "numba no-op, 1 array, bound entry point": (lambda: one(fx.g), 1),
        "pin.computeTotalMass(model) (Pinocchio's cheapest call)":
            (lambda: pin.computeTotalMass(fx.pin), 1),
        "pin.aba on an empty model (call + argument conversion)":
            (lambda: pin.aba(empty, edata, z, z, z), 1),
        "mj_step on an empty model (call + empty step)": (lambda: mujoco.mj_step(mje, mde), 1),
    }, repeats)


def kernel_parts(fx, C):
    """Compiled loops over the parts of the kernels (``(callable, per)`` for :func:`interleaved`):
    ``kin`` the kinematics, ``mom`` the composite inertia and momentum terms, ``aba`` the
    articulated-body algorithm on a preallocated workspace (kinematics included), ``rnea`` the
    recursive Newton–Euler algorithm on a preallocated workspace (kinematics fused in),
    ``rnea_passes`` the same as the kinematics, forward and backward passes one after the
    other (``rnea_forward`` / ``rnea_backward``, on the 6×6 inertias)."""
    from numba import njit

    from vm_dynamics.dynamics.fast.kernels import aba, kinematics, momentum, rnea
    m, g, q, qd, tau, V = fx.model, fx.g, fx.q, fx.qd, fx.tau, fx.V
    ws = kinematics.workspace(m.n)
    zb, fb, fw = np.zeros(m.b), np.zeros(0, dtype=np.int64), np.zeros((0, 6))
    out = np.empty(m.b + m.n)

    @njit
    def kin(C, q, ws):
        kinematics.kinematics(C, q, ws)

    @njit
    def aba_prealloc(C, g, V, q, qd, tau, bw, fb, fw, out, ws):
        gloc = np.empty(3)
        kinematics.gravity_local(g, C.grav, gloc)
        kinematics.kinematics(C, q, ws)
        return aba.aba_dynamics(C, gloc, V, qd, tau, bw, fb, fw, out, ws)

    @njit
    def rnea_pre(C, g, V, q, qd, Vdot, qdd, fb, fw, out, ws):
        return rnea.rnea(C, g, V, q, qd, Vdot, qdd, fb, fw, out, ws)

    @njit
    def rnea_passes(C, g, V, q, qd, Vdot, qdd, out, ws):
        kinematics.kinematics(C, q, ws)
        rnea.rnea_forward(C, g, V, qd, Vdot, qdd, ws)
        rnea.rnea_backward(C, out, ws)

    @njit
    def mom(C, qd, ws, Ic0, hm):
        momentum.momentum_terms(C, qd, ws, Ic0, hm)

    args = {"kin": (kin, (C, q, ws)),
            "aba": (aba_prealloc, (C, g, V, q, qd, tau, zb, fb, fw, out, ws)),
            "rnea": (rnea_pre, (C, g, V, q, qd, fx.Vdot, fx.qdd, fb, fw, out, ws)),
            "rnea_passes": (rnea_passes, (C, g, V, q, qd, fx.Vdot, fx.qdd, out, ws)),
            "mom": (mom, (C, qd, ws, np.empty((6, 6)), np.empty(6)))}
    res = {}
    K = 200
    for key, (kernel, kargs) in args.items():
        loop = compiled_loop(kernel)
        loop(1, *kargs)
        res[key] = (lambda loop=loop, kargs=kargs: loop(K, *kargs), K)
    kinematics.workspace(m.n)
    kin(C, q, ws)       # momentum_terms reads the body inertias
    return res


def dynamics_rows(fx, repeats):
    """Forward and inverse dynamics: the public call split into its parts, vs Pinocchio."""
    import pinocchio as pin

    from vm_dynamics.dynamics.fast import bind_compiled, calls, fast_model
    from vm_dynamics.dynamics.fast import kernels as K
    m, g, V, q, qd, tau, Vdot, qdd = (fx.model, fx.g, fx.V, fx.q, fx.qd, fx.tau, fx.Vdot,
                                      fx.qdd)
    fm = fast_model(m)
    C, P = fm.kernel_constants, fm.packed_constants
    zb, fb, fw = np.zeros(m.b), np.zeros(0, dtype=np.int64), np.zeros((0, 6))
    out = np.empty(m.b + m.n)
    fd_args = (C, g, V, q, qd, tau, zb, fb, fw, out)
    id_args = (C, g, V, q, qd, Vdot, qdd, fb, fw, out)
    pfd_args = (P, g, V, q, qd, tau, None, out)
    pid_args = (P, g, V, q, qd, Vdot, qdd, out)
    fd_record = bind_compiled(K.checked.forward_dynamics, fd_args)
    id_record = bind_compiled(K.checked.inverse_dynamics, id_args)
    fd_entry = bind_compiled(K.packed.forward_dynamics_checked, pfd_args)
    id_entry = bind_compiled(K.packed.inverse_dynamics_checked, pid_args)
    fd_fast = bind_compiled(K.packed.forward_dynamics, pfd_args)
    id_fast = bind_compiled(K.packed.inverse_dynamics, pid_args)
    # the entry points the API calls, arguments as objects (None where the arrays' header
    # cannot be read: the API then calls the dispatcher rows)
    ofd_args = (P, g, V, q, qd, tau, zb, out)
    objs = calls.object_entries(K.packed)
    fd_obj, id_obj, fd_into, id_into = objs if objs is not None else (
        K.packed.forward_dynamics_checked, K.packed.inverse_dynamics_checked,
        bind_compiled(K.packed.forward_dynamics, ofd_args), id_fast)
    fd_loop = compiled_loop(K.forward_dynamics)
    pfd_loop = compiled_loop(K.packed.forward_dynamics)
    pid_loop = compiled_loop(K.packed.inverse_dynamics)
    fd_loop(1, *fd_args)
    pfd_loop(1, *pfd_args)
    pid_loop(1, *pid_args)
    parts = kernel_parts(fx, C)
    noop_fd, noop_id = noop_like(pfd_args), noop_like(pid_args)
    fast = m.fast
    fo = fast.output()
    loops = 200
    b, nout = m.b, m.b + m.n
    fd = interleaved({
        "model.forward_dynamics (public, validated)":
            (lambda: m.forward_dynamics(g, V, q, qd, tau), 1),
        "  FastModel.forward_dynamics (its closure: dynamics.fast.forward_dynamics's call)":
            (lambda: fm.forward_dynamics(g, V, q, qd, tau), 1),
        "  output allocation np.empty(b + n)": (lambda: np.empty(nout), 1),
        "  the two result views out[:b], out[b:]": (lambda: (out[:b], out[b:]), 1),
        "  compiled call as the API makes it: arguments as objects (kind, shapes, range, ABA "
        "compiled)": (lambda: fd_obj(*ofd_args), 1),
        "  (before: the compiled call through the dispatcher, type checks in C)":
            (lambda: K.packed.forward_dynamics_checked(*pfd_args), 1),
        "    the same through its bound entry point (no dispatcher)":
            (lambda: fd_entry(*pfd_args), 1),
        "      argument unboxing (no-op, same 8 arguments)": (lambda: noop_fd(*pfd_args), 1),
        "      kernel alone (looped in compiled code, one workspace allocation)":
            (lambda: pfd_loop(loops, *pfd_args), loops),
        "        ABA on a preallocated workspace (no allocation)": parts["aba"],
        "          kinematics (body poses, joint twists, inertias in the vehicle frame)":
            parts["kin"],
        "  (before: the record entry point, model record C + 9 arrays)":
            (lambda: fd_record(*fd_args), 1),
        "model.fast.forward_dynamics (unchecked: into a preallocated out, returned)":
            (lambda: fast.forward_dynamics(g, V, q, qd, tau, fo), 1),
        "  its compiled entry point (arguments as objects, no range checks), arguments ready":
            (lambda: fd_into(*ofd_args), 1),
        "  (before: the dispatcher's bound entry point, no checks)":
            (lambda: fd_fast(*pfd_args), 1),
        "pin.aba": (lambda: pin.aba(fx.pin, fx.pdata, fx.pq, fx.pv, fx.pu), 1),
    }, repeats)
    med = {k: v[0] for k, v in fd.items()}
    pub = med["model.forward_dynamics (public, validated)"]
    obj = med["  compiled call as the API makes it: arguments as objects (kind, shapes, range, "
              "ABA compiled)"]
    disp = med["  (before: the compiled call through the dispatcher, type checks in C)"]
    entry = med["    the same through its bound entry point (no dispatcher)"]
    kern = med["      kernel alone (looped in compiled code, one workspace allocation)"]
    pre = med["        ABA on a preallocated workspace (no allocation)"]
    kin = med["          kinematics (body poses, joint twists, inertias in the vehicle frame)"]
    fd.update({k: (v, v, v) for k, v in {
        "  Python around the compiled call (output, method call, slicing): public − objects call":
            pub - obj,
        **python_parts(med, "model.forward_dynamics (public, validated)",
                       "  FastModel.forward_dynamics (its closure: dynamics.fast.forward_dynamics's call)",
                       obj),
        "    dispatcher's type check: dispatcher − entry point": disp - entry,
        "        workspace allocation and shape/range checks (kernel alone − preallocated)":
            kern - pre,
        "          the three ABA passes (preallocated − kinematics)": pre - kin,
        "  Python around its entry point (the instance's closure)":
            med["model.fast.forward_dynamics (unchecked: into a preallocated out, returned)"]
            - med["  its compiled entry point (arguments as objects, no range checks), arguments "
                  "ready"],
    }.items()})
    ido = fast.output()
    idd = interleaved({
        "model.inverse_dynamics (public, validated)":
            (lambda: m.inverse_dynamics(g, V, q, qd, Vdot, qdd), 1),
        "  FastModel.inverse_dynamics (its closure: dynamics.fast.inverse_dynamics's call)":
            (lambda: fm.inverse_dynamics(g, V, q, qd, Vdot, qdd), 1),
        "  output allocation np.empty(b + n)": (lambda: np.empty(nout), 1),
        "  the two result views out[:b], out[b:]": (lambda: (out[:b], out[b:]), 1),
        "  compiled call as the API makes it: arguments as objects (kind, shapes, range, RNEA "
        "compiled)": (lambda: id_obj(*pid_args), 1),
        "  (before: the compiled call through the dispatcher, type checks in C)":
            (lambda: K.packed.inverse_dynamics_checked(*pid_args), 1),
        "    the same through its bound entry point": (lambda: id_entry(*pid_args), 1),
        "      argument unboxing (no-op, same 8 arguments)": (lambda: noop_id(*pid_args), 1),
        "      kernel alone (looped in compiled code, one workspace allocation)":
            (lambda: pid_loop(loops, *pid_args), loops),
        "        RNEA on a preallocated workspace (kinematics fused into its forward pass)":
            parts["rnea"],
        "        for scale: kinematics with the 6×6 inertias (as ABA needs; RNEA does not run it)":
            parts["kin"],
        "        for scale: RNEA as separate passes after that kinematics (the control law's)":
            parts["rnea_passes"],
        "  (before: the record entry point, model record C + 9 arrays)":
            (lambda: id_record(*id_args), 1),
        "model.fast.inverse_dynamics (unchecked: into a preallocated out, returned)":
            (lambda: fast.inverse_dynamics(g, V, q, qd, Vdot, qdd, ido), 1),
        "  its compiled entry point (arguments as objects, no range checks), arguments ready":
            (lambda: id_into(*pid_args), 1),
        "  (before: the dispatcher's bound entry point, no checks)":
            (lambda: id_fast(*pid_args), 1),
        "pin.rnea": (lambda: pin.rnea(fx.pin, fx.pdata, fx.pq, fx.pv, fx.pa), 1),
    }, repeats)
    med = {k: v[0] for k, v in idd.items()}
    idd.update({k: (v, v, v) for k, v in python_parts(
        med, "model.inverse_dynamics (public, validated)",
        "  FastModel.inverse_dynamics (its closure: dynamics.fast.inverse_dynamics's call)",
        med["  compiled call as the API makes it: arguments as objects (kind, shapes, range, "
            "RNEA compiled)"]).items()})
    return fd, idd, fd_loop, fd_args, parts


def python_parts(med, public, fastmodel, call):
    """The public call's Python split (derived rows): the ``Model`` method, which runs the
    common call inline (look-up of the model's packed calls, allocation, compiled call, views),
    and the same for ``FastModel``'s closure; ``call`` the compiled call they make."""
    alloc = med["  output allocation np.empty(b + n)"] + med["  the two result views out[:b], out[b:]"]
    return {
        "    Model method's own Python (frame, look-up of the packed calls, try, status test): "
        "public − compiled call − allocation − views": med[public] - call - alloc,
        "    FastModel closure's own Python (frame, try, status test): FastModel − compiled "
        "call − allocation − views": med[fastmodel] - call - alloc,
    }


BEGIN = "      stage_begin: a stage's state (views, exp, kinematics, momentum terms, V), one"
ADVANCE = ("      stage_advance: a stage's rates (wrenches, ABA passes, ṁ, power, dexp⁻¹) and the "
           "next stage's state, one")


def step_rows(fx, repeats, fd_loop, fd_args, parts):
    """Simulator.step, vm.simulate and computed torque, split; vs mj_step (RK4)."""
    import mujoco

    from vm_dynamics.control import get_controller
    from vm_dynamics.control.references import reference_from_config
    from vm_dynamics.sim import kernels as ek
    m, g, V, q, qd, tau, dt = fx.model, fx.g, fx.V, fx.q, fx.qd, fx.tau, fx.dt
    sim = vm.Simulator(m, dt).reset(g, V, q, qd)
    sim_b = vm.Simulator(m, dt).reset(g, V, q, qd)     # one simulator per stepping row: each
    sim_c = vm.Simulator(m, dt).reset(g, V, q, qd)     # advances ~10 s of simulated time
    held = sim.held_inputs(tau)
    ev = sim.stages
    x, y = sim.engine_state(), sim.spare_state()
    step_args = (ev.C, ev.F, ev.tab, sim.spec, x, sim.kernel_inputs(held), sim.prescribed_rows(),
                 y, ev.buf)
    step_loop = compiled_loop(ek.engine_step)
    step_loop(1, *step_args)
    from vm_dynamics.sim.buffer import buffer_views
    pr, ki = sim.prescribed_rows(), sim.kernel_inputs(held)
    stage_parts = {}
    for key, kernel, kargs in (
            ("views", buffer_views, (ev.buf, m.b, m.n)),
            ("begin", ek.stage_begin, (ev.C, sim.spec, ev.tab, 1, x, pr, ev.buf)),
            ("advance", ek.stage_advance, (ev.C, ev.F, sim.spec, ev.tab, 1, x, pr, ki, y,
                                           ev.buf))):
        loop = compiled_loop(kernel)
        loop(1, *kargs)
        stage_parts[key] = (lambda loop=loop, kargs=kargs: loop(200, *kargs), 200)
    noop = noop_like(step_args)
    steps = 100
    X = ev.state_arrays(steps)
    P = sim.prescribed_rows()
    PR = type(P)(*(a[None] for a in P))
    roll_args = (ev.C, ev.F, ev.tab, sim.spec, x, sim.kernel_inputs(held), PR, X, ev.buf)

    ctrl = get_controller("computed_torque", {"mode": "free_floating", "kp": 25, "kd": 10})
    ctrl.reset(m, vm.State(0.0, g, V, q, qd))
    ref = reference_from_config({"joint": {"type": "waypoints", "times": [0.0, 5.0],
                                           "positions": [list(q), list(q + 0.5)]}})
    tau_fn, bw_fn = ctrl.inputs(ref)
    from vm_dynamics.control.inputs import compiled_law_of
    law = compiled_law_of(tau_fn, bw_fn)
    sim_law = vm.Simulator(m, dt).reset(g, V, q, qd)
    sim_law.prepare_law(law)

    def law_rollout():
        sim_law.reset(g, V, q, qd)
        sim_law.run_law(steps, law)

    def held_rollout():
        sim_law.reset(g, V, q, qd)
        sim_law.run(steps, inputs=held)

    def simulate(n_steps, **kw):
        return lambda: vm.simulate(m, g, V, q, qd, n_steps * dt, dt, **kw)

    n_sim, n_ct = 2000, 500
    vm.simulate(m, g, V, q, qd, 0.05, dt, tau=tau_fn, base_wrench=bw_fn)
    loops = 50
    t = interleaved({
        "Simulator.step(inputs=held)": (lambda: sim.step(inputs=held), 1),
        "  compiled call (engine_step entry point, records ready)":
            (lambda: sim.stages.k_step(*step_args), 1),
        "    entry point's argument unboxing (no-op, same 9 records)": (lambda: noop(*step_args), 1),
        "    kernel alone (looped in compiled code)":
            (lambda: step_loop(loops, *step_args), loops),
        "      4 forward-dynamics kernels (ABA, looped in compiled code), for scale":
            (lambda: fd_loop(4 * loops, *fd_args), loops),
        "      kinematics, one evaluation (the step makes 5)": parts["kin"],
        "      composite inertia and momentum terms, one evaluation (the step makes 5)":
            parts["mom"],
        "      ABA on a preallocated workspace, one (the step makes 4 ABA passes)": parts["aba"],
        "      buffer_views: the kernels' views of the work buffer (each compiled call)":
            stage_parts["views"],
        BEGIN: stage_parts["begin"],
        ADVANCE: stage_parts["advance"],
        "Simulator.step(tau=tau) (validates tau every step)": (lambda: sim_b.step(tau=tau), 1),
        "Simulator.step(inputs=held) after np.abs(tau).max() (numpy work between steps)":
            (lambda: (np.abs(tau).max(), sim_c.step(inputs=held)), 1),
        "  np.abs(tau).max() alone": (lambda: np.abs(tau).max(), 1),
        "Simulator(model, dt).reset(...) (the set-up of every vm.simulate call)":
            (lambda: vm.Simulator(m, dt).reset(g, V, q, qd), 1),
        f"vm.simulate open loop ({n_sim} steps), per step": (simulate(n_sim), n_sim),
        f"  Simulator.run({steps}) (reset + compiled rollout), per step": (held_rollout, steps),
        f"  compiled rollout alone ({steps} steps), per step":
            (lambda: sim.stages.k_rollout(*roll_args), steps),
        f"vm.simulate + computed torque per stage ({n_ct} steps), per step":
            (simulate(n_ct, tau=tau_fn, base_wrench=bw_fn), n_ct),
        f"  Simulator.run_law({steps}) (reset + compiled rollout with the law), per step":
            (law_rollout, steps),
        "mujoco.mj_step (RK4)": (lambda: mujoco.mj_step(fx.mj, fx.md), 1),
    }, repeats)
    med = {k: v[0] for k, v in t.items()}
    kin = med["      kinematics, one evaluation (the step makes 5)"]
    mom = med["      composite inertia and momentum terms, one evaluation (the step makes 5)"]
    passes = med["      ABA on a preallocated workspace, one (the step makes 4 ABA passes)"] - kin
    kernel = med["    kernel alone (looped in compiled code)"]
    derived = {
        "      = 5 kinematics + 5 momentum terms + 4 × the three ABA passes":
            5 * kin + 5 * mom + 4 * passes,
        "      stage_advance − stage_begin: a stage's rates (wrenches, ABA, ṁ, power, dexp⁻¹)":
            med[ADVANCE] - med[BEGIN],
        "        of which beyond the three ABA passes (wrenches, ṁ, power, dexp⁻¹, slopes)":
            med[ADVANCE] - med[BEGIN] - passes,
        "      stage_begin beyond kinematics + momentum terms (views, RK sums, exp, V solve)":
            med[BEGIN] - kin - mom,
        "      rest: exp and dexp⁻¹ maps, applied wrenches, power, RK combination (remainder)":
            kernel - 5 * kin - 5 * mom - 4 * passes,
        "  Python around the compiled call (step − compiled call)":
            med["Simulator.step(inputs=held)"]
            - med["  compiled call (engine_step entry point, records ready)"],
    }
    t.update({k: (v, v, v) for k, v in derived.items()})
    return t


def law_rows(fx, repeats):
    """The compiled computed-torque law of one stage, and its parts, looped in compiled code."""
    from numba import njit

    from vm_dynamics.control import get_controller
    from vm_dynamics.control import laws as L
    from vm_dynamics.control.inputs import compiled_law_of
    from vm_dynamics.control.references import reference_from_config
    from vm_dynamics.dynamics.fast import fast_model
    from vm_dynamics.dynamics.fast.kernels import kinematics as KK
    from vm_dynamics.dynamics.fast.kernels import rnea as R
    m, g, V, q, qd = fx.model, fx.g, fx.V, fx.q, fx.qd
    ctrl = get_controller("computed_torque", {"mode": "free_floating", "kp": 25, "kd": 10})
    ctrl.reset(m, vm.State(0.0, g, V, q, qd))
    ref = reference_from_config({"joint": {"type": "waypoints", "times": [0.0, 5.0],
                                           "positions": [list(q), list(q + 0.5)]}})
    lp = compiled_law_of(*ctrl.inputs(ref)).law
    P = fast_model(m).kernel_constants
    F = vm.Simulator(m, fx.dt).stages.F
    plant = KK.workspace(m.n)
    KK.kinematics(P, q, plant)
    lw = L.law_work(lp, P)
    tau, bw, out, zb = np.empty(m.n), np.empty(m.b), np.empty(m.b + m.n), np.zeros(m.b)

    @njit
    def shared(K, lp, F, g, V, q, qd, tau, bw, lw, plant):
        for _ in range(K):
            L.computed_torque_into(lp, F, 1.0, g, V, q, qd, tau, bw, lw, plant)

    @njit
    def own(K, lp, F, g, V, q, qd, tau, bw):
        for _ in range(K):
            L.computed_torque(lp, F, 1.0, g, V, q, qd, tau, bw)

    @njit
    def command(K, lp, q, qd, lw):
        for _ in range(K):
            L.joint_reference(lp.li[1], lp.times, lp.coef, lp.first, lp.last, lp.osc, 1.0,
                              lw.q_d, lw.qd_d, lw.qdd_cmd)

    @njit
    def ffid(K, C, g, V, qd, qdd, zb, out, ws):
        Ic = np.empty((6, 6))
        for _ in range(K):
            R.rnea_forward(C, g, V, qd, zb, qdd, ws)
            R.composite_inertia(ws.IA, Ic)
            R.free_floating_solve(C, zb, Ic, out, ws)

    @njit
    def kin(K, C, q, ws):
        for _ in range(K):
            KK.kinematics(C, q, ws)

    K = 200
    calls = {
        "law on the plant's kinematics (computed_torque_into, as in the engine)":
            (shared, (lp, F, g, V, q, qd, tau, bw, lw, plant)),
        "law on its own kinematics, its work allocated per call (computed_torque)":
            (own, (lp, F, g, V, q, qd, tau, bw)),
        "  joint reference (quintic piece)": (command, (lp, q, qd, lw)),
        "  free-floating ID passes: RNEA at V̇ = 0, b×b solve, second backward pass":
            (ffid, (P, g, V, qd, fx.qdd, zb, out, plant)),
        "  kinematics (what sharing the plant's saves)": (kin, (P, q, plant)),
    }
    fns = {}
    for name, (loop, args) in calls.items():
        loop(1, *args)
        fns[name] = (lambda loop=loop, args=args: loop(K, *args), K)
    return interleaved(fns, repeats)


def fmt(rows, peer=None):
    """Markdown rows: µs median (min–max), and the ratio to ``peer`` for top-level rows."""
    lines = ["| what | µs median | min–max | / peer |", "|---|---:|---:|---:|"]
    ref = rows[peer][0] if peer else None
    for k, (med, lo, hi) in rows.items():
        ratio = f"{med / ref:.2f}" if ref and not k.startswith(" ") else ""
        lines.append(f"| {k.replace('  ', '&nbsp;&nbsp;')} | {med * 1e6:.2f} | "
                     f"{lo * 1e6:.2f}–{hi * 1e6:.2f} | {ratio} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--markdown", action="store_true", help="(tables are markdown anyway)")
    ap.add_argument("--dynamics-only", action="store_true",
                    help="call floors and forward/inverse dynamics only (no integration rows)")
    ap.add_argument("--robot", default="ur5", help="ur5 (default) or b1_z1 (bench/robots.py)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    fx = Fixture(robot=args.robot)
    fl = floors(fx, args.repeats)
    fd, idd, fd_loop, fd_args, parts = dynamics_rows(fx, args.repeats)
    st = None if args.dynamics_only else step_rows(fx, args.repeats, fd_loop, fd_args, parts)
    lr = None if args.dynamics_only else law_rows(fx, args.repeats)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; CPU time per call, "
          f"median of {args.repeats} interleaved repeats (min–max)\n")
    print("#### Call floors\n")
    print(fmt(fl))
    print(f"\n#### Forward dynamics, floating {args.robot} (ratio to pin.aba)\n")
    print(fmt(fd, "pin.aba"))
    print(f"\n#### Inverse dynamics, floating {args.robot} (ratio to pin.rnea)\n")
    print(fmt(idd, "pin.rnea"))
    if st is not None:
        print(f"\n#### Integration, floating {args.robot}, gravity, dt 1 ms (ratio to mj_step RK4)\n")
        print(fmt(st, "mujoco.mj_step (RK4)"))
        print("\n#### Computed torque, one stage, floating UR5 (compiled loops)\n")
        print(fmt(lr))
    print(f"\n(bench time {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
