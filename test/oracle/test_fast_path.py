"""vm_dynamics.dynamics.fast (recursive ABA / RNEA / CRBA / RKMK4) vs. the LP reference and Pinocchio.

Both backends are tested: ``numba`` (skipped if numba is missing) and the pure-numpy fallback.
The first numba call on a machine compiles the kernels (cached on disk afterwards, ``cache=True``),
so nothing here is timed; speed is measured by ``bench/run.py``.

Oracles: ``lp.forward_dynamics`` / ``Model`` (closed-form LP path, itself verified against
Pinocchio), Pinocchio's ``aba``/``rnea``/``crba`` built from the same URDF (test/oracles.py),
``lie.dexp_inv`` and ``scipy.linalg.expm`` for the compiled Lie-group helpers, ``vm.simulate``
(LP path) for the integrator, conservation of momentum, and the 4th-order convergence of RKMK4.
"""
from __future__ import annotations

import copy
import os
import subprocess
import sys
import types

import numpy as np
import pytest
from conftest import WRENCH_FRAMES, gravity_for, make_oracle, our_model

import vm_dynamics as vm
from vm_dynamics.core import lie
from vm_dynamics.dynamics import (
    fast,
    lp,  # noqa: E402
)

RTOL = 1e-10

CASES = [
    ("ur5", "SE3"),
    ("b1_z1", "SE3"),
    ("random_tree", "SE3"),     # prismatic joints, rotated inertias, wrench on the vehicle
    ("random_tree", "SE2"),
    ("ur5", "SE2"),
    ("ur5", "SO3"),
    ("random_tree", "SO3"),
    ("panda", "fixed"),
    ("ur5", "fixed"),
]
BACKENDS = [pytest.param("numba", marks=pytest.mark.skipif(not fast.numba_available(),
                                                             reason="numba not installed")),
            "numpy"]


def close(ours, ref, what, scale=None, rtol=RTOL):
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} != {ref.shape}"
    scale = np.linalg.norm(ref) if scale is None else scale
    err = np.max(np.abs(ours - ref), initial=0.0)
    assert err <= rtol * max(scale, 1e-300), \
        f"{what}: max abs err {err:.3e} > {rtol:g} * {scale:.3e}"


@pytest.fixture(params=[pytest.param((r, b, s), id=f"{r}-{b}-s{s}") for r, b in CASES
                        for s in (0, 1)])
def case(request):
    robot, base, seed = request.param
    grav = gravity_for(seed + 1)            # tilted gravity
    model = our_model(robot, base, grav)
    orc = make_oracle(robot, base, grav, joint_names=list(model.joint_names))
    rng = np.random.default_rng(4242 + 31 * seed + 977 * CASES.index((robot, base)))
    g, V, q, qd = orc.random_state(rng)
    return types.SimpleNamespace(
        robot=robot, base=base, model=model, orc=orc, rng=rng, g=g, V=V, q=q, qd=qd,
        n=model.n, b=model.b,
        tau=5.0 * rng.normal(size=model.n), bw=20.0 * rng.normal(size=model.b),
        Vdot=rng.normal(size=model.b), qdd=rng.normal(size=model.n),
        fw={f: 10.0 * rng.normal(size=6) for f in WRENCH_FRAMES[robot]})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("inputs", ["tau", "tau+base", "tau+base+frames"])
def test_forward_dynamics_vs_lp_and_pinocchio(case, backend, inputs):
    c = case
    bw = c.bw if "base" in inputs else None
    fw = c.fw if "frames" in inputs else None
    Vd, qdd = fast.forward_dynamics(c.model, c.g, c.V, c.q, c.qd, c.tau, bw, fw, backend=backend)
    Vd_lp, qdd_lp, _ = lp.forward_dynamics(c.model, c.g, c.V, c.q, c.qd, c.tau, bw, fw)
    Vd_p, qdd_p = c.orc.aba(c.g, c.V, c.q, c.qd, c.tau, bw, fw)
    for name, ref in (("lp", np.r_[Vd_lp, qdd_lp]), ("pinocchio", np.r_[Vd_p, qdd_p])):
        close(np.r_[Vd, qdd], ref, f"FD[{backend}] vs {name} ({c.robot}, {c.base}, {inputs})")
    assert Vd.shape == (c.b,) and qdd.shape == (c.n,)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inverse_dynamics_vs_pinocchio(case, backend):
    c = case
    bw, tau = fast.inverse_dynamics(c.model, c.g, c.V, c.q, c.qd, c.Vdot, c.qdd, c.fw,
                                    backend=backend)
    bw_p, tau_p = c.orc.rnea(c.g, c.V, c.q, c.qd, c.Vdot, c.qdd, c.fw)
    close(np.r_[bw, tau], np.r_[bw_p, tau_p], f"RNEA[{backend}] ({c.robot}, {c.base})")
    # and FD(ID(a)) = a through the fast path
    Vd, qdd = fast.forward_dynamics(c.model, c.g, c.V, c.q, c.qd, tau, bw, c.fw, backend=backend)
    close(np.r_[Vd, qdd], np.r_[c.Vdot, c.qdd], "FD(ID(a))", rtol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mass_matrix_and_lp_blocks(case, backend):
    c = case
    M = fast.mass_matrix(c.model, c.q, backend=backend)
    close(M, c.orc.mass_matrix(c.q), f"CRBA[{backend}] vs pinocchio ({c.robot}, {c.base})")
    blk = fast.lp_blocks(c.model, c.q, backend=backend)
    t = lp.lp_terms(c.model, c.q, derivatives=False)
    for name in ("M0", "M0m", "Mm", "A", "Mhat"):
        close(getattr(blk, name), getattr(t, name), f"lp_blocks.{name}[{backend}]",
              scale=np.linalg.norm(getattr(t, name)) + np.linalg.norm(M) * (name != "A"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_equals_loop(backend):
    model = our_model("random_tree", "SE3", gravity_for(2))
    orc = make_oracle("random_tree", "SE3", gravity_for(2), joint_names=list(model.joint_names))
    rng = np.random.default_rng(9)
    shape = (2, 3)
    states = [orc.random_state(rng) for _ in range(6)]
    g, V, q, qd = (np.stack([s[k] for s in states]).reshape(shape + states[0][k].shape)
                   for k in range(4))
    tau = rng.normal(size=model.n)                          # broadcast to every state
    bw = rng.normal(size=shape + (6,))
    fw = {"tool_link": rng.normal(size=shape + (6,)), "vehicle": rng.normal(size=6)}
    Vd, qdd = fast.forward_dynamics_batch(model, g, V, q, qd, tau, bw, fw, backend=backend)
    assert Vd.shape == shape + (6,) and qdd.shape == shape + (model.n,)
    for i in np.ndindex(*shape):
        fwi = {"tool_link": fw["tool_link"][i], "vehicle": fw["vehicle"]}
        one = fast.forward_dynamics(model, g[i], V[i], q[i], qd[i], tau, bw[i], fwi,
                                    backend=backend)
        close(np.r_[Vd[i], qdd[i]], np.r_[one], f"batch[{i}] vs single", rtol=1e-13)
    # large batch on the parallel path (numba), fixed base; also numba == numpy
    m2 = our_model("ur5", "fixed", gravity_for(0))
    N = 300
    q = rng.uniform(-3, 3, size=(N, m2.n))
    qd = rng.normal(size=(N, m2.n))
    tau = rng.normal(size=(N, m2.n))
    g = np.broadcast_to(np.eye(4), (N, 4, 4))
    Vd, qdd = fast.forward_dynamics_batch(m2, g, np.zeros((N, 0)), q, qd, tau, backend=backend,
                                          parallel=True)
    ref = fast.forward_dynamics_batch(m2, g, np.zeros((N, 0)), q, qd, tau, backend="numpy")[1]
    for i in (0, 137, N - 1):
        close(qdd[i], fast.forward_dynamics(m2, np.eye(4), [], q[i], qd[i], tau[i],
                                            backend=backend)[1], f"batch[{i}] fixed base",
              rtol=1e-13)
    close(qdd, ref, "batch numba vs numpy", rtol=1e-11)


def test_lie_helpers_match_lie_module():
    if not fast.numba_available():
        pytest.skip("numba not installed")
    from scipy.linalg import expm

    from vm_dynamics.dynamics.fast import kernels as nb
    rng = np.random.default_rng(3)
    for th in (0.0, 1e-9, 1e-4, 0.05, 0.0999, 0.1001, 0.7, 2.5, np.pi - 1e-7):
        for _ in range(4):
            ax = rng.normal(size=3)
            X = np.r_[3.0 * rng.normal(size=3), th * ax / np.linalg.norm(ax)]
            W = rng.normal(size=6)
            out, G = np.empty(6), np.empty((4, 4))
            nb.dexp_inv_apply(X, W, out)
            nb.se3_exp(X, G)
            ref = lie.dexp_inv(X) @ W
            close(out, ref, f"dexp_inv(θ={th})", rtol=1e-13)
            # expm as the oracle: lie.se3_exp's closed-form coefficients lose ~1e-12 near θ = 1e-4
            close(G, expm(lie.hat(X)), f"se3_exp(θ={th})", scale=1.0 + np.linalg.norm(X),
                  rtol=1e-14)


def _added_inertia_models():
    """(id, model with an added vehicle inertia M_A, its rigid twin): the uvms scenario
    (hydrodynamic added mass) and a random tree with a random SPD M_A (not of rigid-body form)."""
    from urdf_factory import random_tree_urdf

    from vm_dynamics.config.scenario import load_scenario
    uvms = load_scenario("uvms").model
    rigid_uvms = copy.copy(uvms)                 # same URDF masses, no M_A
    rigid_uvms.vehicle_inertia = uvms.vehicle_inertia - uvms.added_vehicle_inertia
    rigid_uvms.added_vehicle_inertia = None
    A = np.random.default_rng(17).normal(size=(6, 6))
    M_A = A @ A.T + 0.3 * np.eye(6)
    tree = vm.load_model(random_tree_urdf(seed=3), base="SE3", gravity=gravity_for(2))
    return [("uvms", uvms, rigid_uvms), ("random_tree", tree.with_added_vehicle_inertia(M_A), tree)]


ADDED = _added_inertia_models()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("which", [a[0] for a in ADDED])
def test_added_vehicle_inertia_vs_lp(which, backend):
    """Vehicle with an added (hydrodynamic) inertia M_A: FD, ID, M and the LP blocks agree with
    the LP reference (M_A in M₀, gravity on the URDF masses only) with gravity, a base wrench and
    frame wrenches; and the static load (V = 0, V̇ = 0) does not see M_A at all."""
    _, m, rigid = next(a for a in ADDED if a[0] == which)
    assert m.added_vehicle_inertia is not None and np.linalg.norm(m.gravity) > 0
    fm = fast.fast_model(m, backend)
    close(fm.root_extra, m.added_vehicle_inertia, "root_extra", rtol=0.0)
    rng = np.random.default_rng(23)
    frames = list(m.frame_names)
    for trial in range(3):
        g = lie.se3_exp(rng.normal(size=6))
        V, q, qd = rng.normal(size=m.b), rng.normal(size=m.n), rng.normal(size=m.n)
        tau, bw = 5.0 * rng.normal(size=m.n), 20.0 * rng.normal(size=m.b)
        fw = {frames[-1]: 10.0 * rng.normal(size=6), frames[1]: 10.0 * rng.normal(size=6)}
        for bw_, fw_ in ((None, None), (bw, None), (bw, fw)):
            ours = np.r_[fast.forward_dynamics(m, g, V, q, qd, tau, bw_, fw_, backend=backend)]
            ref = np.r_[m.forward_dynamics(g, V, q, qd, tau, base_wrench=bw_, frame_wrenches=fw_)]
            close(ours, ref, f"FD[{backend}] {which} (bw={bw_ is not None}, "
                             f"fw={fw_ is not None}, trial {trial})")
        Vd, qdd = rng.normal(size=m.b), rng.normal(size=m.n)
        ours = np.r_[fast.inverse_dynamics(m, g, V, q, qd, Vd, qdd, fw, backend=backend)]
        ref = np.r_[m.inverse_dynamics(g, V, q, qd, Vd, qdd, frame_wrenches=fw)]
        close(ours, ref, f"ID[{backend}] {which} (trial {trial})")
        M = fast.mass_matrix(m, q, backend=backend)
        close(M, m.mass_matrix(q), f"CRBA[{backend}] {which}")
        blk = fast.lp_blocks(m, q, backend=backend)
        t = lp.lp_terms(m, q, derivatives=False)
        for name in ("M0", "M0m", "Mm", "A", "Mhat"):
            close(getattr(blk, name), getattr(t, name), f"lp_blocks.{name}[{backend}] {which}",
                  scale=np.linalg.norm(getattr(t, name)) + np.linalg.norm(M) * (name != "A"))
        zb, zn = np.zeros(m.b), np.zeros(m.n)     # gravity + frame wrenches only: M_A inert
        close(np.r_[fast.inverse_dynamics(m, g, zb, q, zn, zb, zn, fw, backend=backend)],
              np.r_[fast.inverse_dynamics(rigid, g, zb, q, zn, zb, zn, fw, backend=backend)],
              f"static load with/without M_A [{backend}] {which}")


def test_bad_inputs_raise_value_error():
    model = our_model("ur5", "SE3", gravity_for(0))
    g, V, q, qd, tau = np.eye(4), np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
    for backend in [b.values[0] if hasattr(b, "values") else b for b in BACKENDS]:
        if backend == "numba" and not fast.numba_available():
            continue
        fd = lambda *a, **k: fast.forward_dynamics(model, *a, backend=backend, **k)  # noqa: E731
        with pytest.raises(ValueError, match="q: expected shape"):
            fd(g, V, np.zeros(5), qd, tau)
        with pytest.raises(ValueError, match="qd: contains NaN"):
            fd(g, V, q, np.r_[np.nan, qd[1:]], tau)
        with pytest.raises(ValueError, match="g: not a rigid transform"):
            fd(2.0 * np.eye(4), V, q, qd, tau)
        with pytest.raises(ValueError, match="unknown frame 'nope'"):
            fd(g, V, q, qd, tau, frame_wrenches={"nope": np.zeros(6)})
        with pytest.raises(ValueError, match=r"state \(1,\): .*tau: contains NaN"):
            bad = np.zeros((2, 6))
            bad[1, 3] = np.inf
            fast.forward_dynamics_batch(model, g, V, q, qd, bad, backend=backend)
        with pytest.raises(ValueError, match="q: expected real numbers"):   # as backend="lp"
            fd(g, V, ["a"] * 6, qd, tau)
    with pytest.raises(ValueError, match="backend="):
        fast.forward_dynamics(model, g, V, q, qd, tau, backend="cuda")


def test_numba_is_optional():
    """``import vm_dynamics`` never imports numba; without numba the fast path falls back to
    numpy and gives the same numbers."""
    code = r"""
import sys
import vm_dynamics
assert "numba" not in sys.modules, "import vm_dynamics imported numba"
import vm_dynamics.dynamics.fast
assert "numba" not in sys.modules, "import vm_dynamics.dynamics.fast imported numba"
sys.modules["numba"] = None                      # make 'import numba' fail from here on
import numpy as np
from vm_dynamics.dynamics import fast
m = vm_dynamics.load_model(sys.argv[1], base="SE3")
assert not fast.numba_available() and fast.fast_model(m).backend == "numpy"
rng = np.random.default_rng(0)
q, qd, tau, V = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
a = np.r_[fast.forward_dynamics(m, np.eye(4), V, q, qd, tau)]
b = np.r_[m.forward_dynamics(np.eye(4), V, q, qd, tau)]
assert np.abs(a - b).max() <= 1e-10 * np.linalg.norm(b), (a, b)
print("ok")
"""
    from conftest import robot_path
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code, robot_path("ur5")], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]


@pytest.mark.parametrize("backend", BACKENDS)
def test_frame_pose_vs_lp_reference(case, backend):
    """Frame poses by the recursive kinematics == the LP reference kinematics (lp.py)."""
    model = case.model
    rng = np.random.default_rng(21)
    q = rng.normal(size=model.n)
    for frame in model.frame_names:
        ref = model.frame_pose(q, frame, backend="lp")
        close(model.frame_pose(q, frame, backend=backend), ref, f"frame {frame}",
              scale=1.0 + np.abs(ref).max(), rtol=1e-13)
    with pytest.raises(ValueError, match="unknown frame 'nope'"):
        model.frame_pose(q, "nope", backend=backend)
