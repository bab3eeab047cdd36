"""The reference orbit and the LVLH frame (vm_dynamics.forces.orbit) against oracles
independent of its code.

* The closed-form Keplerian reference orbit == the two-body equation integrated by scipy's
  DOP853 (rtol 1e-13), elliptical and inclined, over one orbit.
* The LVLH frame's body twist == T⁻¹Ṫ by finite differences of its pose.
* Relative motion: a deputy whose initial state is given relative to the LVLH frame, integrated
  by our engine (point masses: gradient off) and expressed in LVLH by the reference orbit ==
  chief and deputy point masses propagated independently by DOP853 and transformed to LVLH
  here, to ≤ 1e-9 of the separation over one orbit (circular and elliptical chief).
* Pitch libration of a rigid bus about the LVLH equilibrium (gravity gradient on) at the
  linearised frequency n √(3 (I_along − I_radial) / I_normal).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from test_orbit import BLOCK, _dop853, _lvlh

import vm_dynamics as vm
from vm_dynamics.core import lie
from vm_dynamics.dynamics import fast
from vm_dynamics.forces import MU_EARTH, TwoBody
from vm_dynamics.forces.orbit import ReferenceOrbit

needs_numba = pytest.mark.skipif(not fast.numba_available(), reason="numba not installed")

R_ORBIT = 6378137.0 + 500e3


def _periapsis_state(a, e, inc):
    """Inertial state at periapsis of an orbit with Ω = ω = 0 (periapsis on +x), written
    directly: r = a(1−e) x̂, |v| = √(μ (1+e) / (a (1−e))) along (0, cos i, sin i)."""
    rp = a * (1 - e)
    vp = math.sqrt(MU_EARTH * (1 + e) / rp)
    return np.r_[rp, 0.0, 0.0, 0.0, vp * math.cos(inc), vp * math.sin(inc)]


ORBITS = {"circular": (R_ORBIT, 0.0, 0.0), "elliptical": (7.2e6, 0.05, math.radians(51.6))}


@pytest.mark.parametrize("which", sorted(ORBITS))
def test_reference_orbit_equals_the_integrated_two_body_orbit(which):
    a, e, inc = ORBITS[which]
    orbit = ReferenceOrbit(MU_EARTH, a, e, inc)
    t = np.linspace(0.0, orbit.period, 61)
    truth = _dop853(_periapsis_state(a, e, inc), t)
    ours = np.array([np.r_[orbit.state(tk)] for tk in t])
    assert np.abs(ours[:, :3] - truth[:, :3]).max() <= 1e-10 * a
    assert np.abs(ours[:, 3:] - truth[:, 3:]).max() <= 1e-10 * math.sqrt(MU_EARTH / a)
    # period and closure
    assert abs(orbit.period - 2 * math.pi * math.sqrt(a ** 3 / MU_EARTH)) <= 1e-12 * orbit.period
    assert np.abs(np.r_[orbit.state(orbit.period)] - ours[0]).max() <= 1e-6


def test_lvlh_frame_twist_is_the_derivative_of_its_pose():
    """V_T == vee(T⁻¹ dT/dt) (central differences, h = 0.01 s) on an elliptical inclined orbit
    with every angle set; x radial, z along r × v, y = z × x."""
    orbit = ReferenceOrbit(MU_EARTH, 7.2e6, 0.1, 0.9, 0.4, 1.1, 2.0)
    for t in (0.0, 1234.5, 4000.0):
        T, VT = orbit.frame(t)
        h = 0.01
        dT = (orbit.pose(t + h) - orbit.pose(t - h)) / (2 * h)
        X = lie.se3_inv(T) @ dT
        fd = np.r_[X[:3, 3], X[2, 1], X[0, 2], X[1, 0]]
        assert np.abs(fd - VT).max() <= 1e-6 * np.abs(VT).max()
        r, v = orbit.state(t)
        assert np.allclose(T[:3, 0], r / np.linalg.norm(r), atol=1e-15)
        assert np.allclose(T[:3, 2], np.cross(r, v) / np.linalg.norm(np.cross(r, v)), atol=1e-15)
        assert np.abs(T[:3, :3].T @ T[:3, :3] - np.eye(3)).max() <= 1e-15
        # to_lvlh and from_lvlh are inverse maps
        rng = np.random.default_rng(int(t))
        g = T @ lie.se3_exp(rng.normal(size=6))
        V = rng.normal(size=6)
        gr, Vr = orbit.to_lvlh(t, g, V)
        g2, V2 = orbit.from_lvlh(t, gr, Vr)
        assert np.abs(g2 - g).max() <= 1e-8 and np.abs(V2 - V).max() <= 1e-10


def test_orbit_parameters_and_errors():
    o = ReferenceOrbit.from_config({"altitude": 500e3}, MU_EARTH)
    assert o == ReferenceOrbit(MU_EARTH, R_ORBIT)
    assert ReferenceOrbit.from_config({"radius": R_ORBIT, "inclination_deg": 90.0}, MU_EARTH) \
        == ReferenceOrbit(MU_EARTH, R_ORBIT, 0.0, math.pi / 2)
    for section, msg in (({}, r"orbit: give exactly one of radius, altitude"),
                         ({"radius": 7e6, "altitude": 5e5}, r"got radius, altitude"),
                         ({"radius": -1.0}, r"orbit\.radius: expected a finite number"),
                         ({"semi_major_axis": 7e6, "eccentricity": 1.0}, r"orbit\.eccentricity"),
                         ({"radius": 7e6, "eccentricity": 0.1}, r"orbit\.eccentricity: an ellip"),
                         ({"radius": 7e6, "inclination_deg": "x"}, r"orbit\.inclination_deg"),
                         ({"radius": 7e6, "period": 1.0}, r"orbit: unknown keys period")):
        with pytest.raises(ValueError, match=msg):
            ReferenceOrbit.from_config(section, MU_EARTH)


def _run_block(g0, V0, T, dt, gradient, model=None, every=10.0):
    model = model or vm.load_model(BLOCK, base="SE3", gravity=(0.0, 0.0, 0.0))
    return vm.simulate(model, g0, V0, np.zeros(0), np.zeros(0), T, dt,
                       forces=[TwoBody(gradient=gradient)],
                       record_every=max(1, int(round(every / dt))))


@needs_numba
@pytest.mark.parametrize("which", sorted(ORBITS))
def test_relative_motion_in_lvlh_equals_two_independent_point_masses(which):
    """The deputy starts 300 m radial, −800 m along-track, 200 m normal of the chief, moving at
    (0.05, 0.2, −0.1) m/s relative to the LVLH frame (given to from_lvlh); our block (point
    masses), RKMK4 at dt = 0.5 s, over one orbit, expressed in LVLH by the reference orbit ==
    the DOP853 chief and deputy transformed to LVLH by the test's own formulas, to 1e-9 of the
    largest separation."""
    a, e, inc = ORBITS[which]
    orbit = ReferenceOrbit(MU_EARTH, a, e, inc)
    rho0, rhod0 = np.array([300.0, -800.0, 200.0]), np.array([0.05, 0.2, -0.1])
    g0, V0 = orbit.from_lvlh(0.0, lie.make_pose(np.eye(3), rho0), np.r_[rhod0, 0.0, 0.0, 0.0])
    traj = _run_block(g0, V0, orbit.period, 0.5, gradient=False)
    g_rel, V_rel = orbit.trajectory_to_lvlh(traj.t, traj.g, traj.V)
    # the oracle: chief and deputy inertial states written independently
    chief0 = _periapsis_state(a, e, inc)
    r, v = chief0[:3], chief0[3:]
    C = np.column_stack([r / np.linalg.norm(r), np.zeros(3), np.cross(r, v)
                         / np.linalg.norm(np.cross(r, v))])
    C[:, 1] = np.cross(C[:, 2], C[:, 0])
    w = np.array([0.0, 0.0, np.linalg.norm(np.cross(r, v)) / (r @ r)])
    deputy0 = np.r_[r + C @ rho0, v + C @ (rhod0 + np.cross(w, rho0))]
    assert np.abs(np.r_[traj.g[0][:3, 3], traj.g[0][:3, :3] @ traj.V[0, :3]] - deputy0).max() \
        <= 1e-9 * np.abs(deputy0).max()
    rel = _lvlh(_dop853(chief0, traj.t), _dop853(deputy0, traj.t))
    scale = np.abs(rel[:, :3]).max()
    assert scale > 1e3                                     # it did move relative to the chief
    err = np.abs(g_rel[:, :3, 3] - rel[:, :3]).max() / scale
    assert err <= 1e-9, err
    # the relative velocity in vehicle axes, rotated to LVLH, == the oracle's
    vrel = np.einsum("kij,kj->ki", g_rel[:, :3, :3], V_rel[:, :3])
    assert np.abs(vrel - rel[:, 3:]).max() <= 1e-9 * np.abs(rel[:, 3:]).max() * 10


@needs_numba
def test_pitch_libration_frequency_about_the_lvlh_equilibrium():
    """A rigid bus (principal inertias 100 radial, 400 along-track, 450 normal kg m²) starts
    pitched 0.01 rad about the orbit normal, at rest in the LVLH frame, gravity gradient on;
    about z, r̂ in body axes = (cos θ, −sin θ, 0) gives τ_z = 3n² (r̂ × I r̂)_z =
    −3n² (I_yy − I_xx) sin θ cos θ, so the linearised pitch frequency is
    ω = n √(3 (I_yy − I_xx)/I_zz) = √2 n (the amplitude's correction is −θ₀²/4 ≈ 2.5e-5).
    The pitch relative to the LVLH frame formed from the bus's own position and velocity,
    fitted by a sinusoid over ≈ 2.1 libration periods, has that frequency to 1e-4 (measured −1.9e-5)."""
    from scipy.optimize import curve_fit
    Ixx, Iyy, Izz = 100.0, 400.0, 450.0
    urdf = (f'<robot name="bus"><link name="bus"><inertial><origin xyz="0 0 0"/>'
            f'<mass value="500.0"/><inertia ixx="{Ixx}" iyy="{Iyy}" izz="{Izz}" ixy="0" ixz="0" '
            f'iyz="0"/></inertial></link></robot>')
    model = vm.load_model(urdf, base="SE3", gravity=(0.0, 0.0, 0.0))
    orbit = ReferenceOrbit(MU_EARTH, R_ORBIT)
    n = orbit.n
    theta0 = 0.01
    g0, V0 = orbit.from_lvlh(0.0, lie.make_pose(lie.so3_exp([0.0, 0.0, theta0]), np.zeros(3)),
                             np.zeros(6))
    expected = n * math.sqrt(3 * (Iyy - Ixx) / Izz)
    T = 2.1 * 2 * math.pi / expected
    traj = _run_block(g0, V0, T, 1.0, gradient=True, model=model, every=5.0)
    theta = np.empty(len(traj.t))
    for k, gk in enumerate(traj.g):
        r, v = gk[:3, 3], gk[:3, :3] @ traj.V[k, :3]
        x = r / np.linalg.norm(r)
        z = np.cross(r, v) / np.linalg.norm(np.cross(r, v))
        Rrel = np.column_stack([x, np.cross(z, x), z]).T @ gk[:3, :3]
        theta[k] = math.atan2(Rrel[1, 0], Rrel[0, 0])
    assert abs(theta[0] - theta0) <= 1e-12

    def f(t, w, A, B, c):
        return A * np.cos(w * t) + B * np.sin(w * t) + c
    (w, A, B, c), _ = curve_fit(f, traj.t, theta, p0=(expected * 1.01, theta0, 0.0, 0.0))
    assert abs(math.hypot(A, B) - theta0) <= 0.02 * theta0
    assert abs(w / expected - 1.0) <= 1e-4, (w, expected, w / expected - 1.0)


# ----------------------------------------------------------------------------- scenario, outputs
def test_scenario_orbit_section_sets_the_initial_state_relative_to_lvlh():
    """orbit_spacecraft_arm gives its initial base pose and twist relative to the LVLH frame of
    the 500 km orbit (at its origin, at rest in it): inertially that is the circular orbit's
    state (r, 0, 0), (0, √(μ/r), 0) turning at n about z, written here from μ and r only.
    An offset in LVLH moves the inertial start by C·offset; errors name the key."""
    from vm_dynamics.config.scenario import load_scenario
    scn = load_scenario("orbit_spacecraft_arm")
    assert scn.orbit == ReferenceOrbit(MU_EARTH, R_ORBIT) and scn.world_frame == "lvlh"
    n = math.sqrt(MU_EARTH / R_ORBIT ** 3)
    assert np.abs(scn.g0 - lie.make_pose(np.eye(3), [R_ORBIT, 0, 0])).max() == 0.0
    assert np.abs(scn.V0 - [0, n * R_ORBIT, 0, 0, 0, n]).max() <= 1e-12 * n * R_ORBIT
    off = load_scenario("orbit_spacecraft_arm", {"initial.base_position": [10.0, -20.0, 5.0],
                                                 "orbit.inclination_deg": 90.0})
    # polar orbit: along-track is +z, the orbit normal (r × v) is −y
    assert np.abs(off.g0[:3, 3] - [R_ORBIT + 10.0, -5.0, -20.0]).max() <= 1e-9
    inertial = load_scenario("orbit_spacecraft_arm", {"orbit.initial_frame": "inertial"})
    assert np.abs(inertial.g0 - np.eye(4)).max() == 0.0
    for over, msg in (({"orbit.altitude": -1.0}, r"orbit\.altitude"),
                      ({"orbit.initial_frame": "ecef"}, r"orbit\.initial_frame: unknown 'ecef'"),
                      ({"world_frame": "ecef"}, r"world_frame: unknown 'ecef'"),
                      ({"orbit.radius": 7e6}, r"orbit: give exactly one of radius, altitude"),
                      ({"two_body.mu": 0.0}, r"orbit: a reference orbit needs a central body")):
        with pytest.raises(ValueError, match=msg):
            load_scenario("orbit_spacecraft_arm", over)
    with pytest.raises(ValueError, match=r"world_frame: lvlh needs a reference orbit"):
        load_scenario("spacecraft_arm", {"world_frame": "lvlh"})


def _read_mcap(path):
    from mcap import reader as mcap_reader
    from mcap_ros2 import decoder as mcap_ros2_decoder
    msgs = {}
    with open(path, "rb") as f:
        reader = mcap_reader.make_reader(f, decoder_factories=[mcap_ros2_decoder.DecoderFactory()])
        for _, channel, _, decoded in reader.iter_decoded_messages():
            msgs.setdefault(channel.topic, []).append(decoded)
    return msgs


def _pose(p, o):
    return lie.make_pose(lie.quaternion_to_matrix([o.x, o.y, o.z, o.w]), [p.x, p.y, p.z])


@needs_numba
def test_vm_sim_outputs_in_the_lvlh_frame(tmp_path):
    """vm-sim orbit_spacecraft_arm for 2 s, once with world_frame lvlh and once inertial: the
    inertial recording has an 'lvlh' frame in TF (odom -> lvlh at the reference orbit's state);
    the lvlh recording's /odom (frame 'lvlh', also the TF root) == the inertial /odom mapped by
    the inverse of that TF transform, pose to 1e-9 m, and its twist == V − Ad_{g_rel⁻¹} V_T
    formed here from the TF's finite differences; vm-view's reader shows the lvlh recording in
    frame lvlh; both write relative_motion.png."""
    from vm_dynamics.app.run import run_scenario
    from vm_dynamics.config.scenario import load_scenario
    msgs = {}
    for frame in ("lvlh", "inertial"):
        scn = load_scenario("orbit_spacecraft_arm", {"duration": 2.0, "world_frame": frame})
        summary = run_scenario(scn, out_dir=tmp_path / frame, progress=False, record_rate=10.0,
                               log=lambda *a: None)
        assert summary["finished"] and "relative_motion.png" in summary["files"]
        msgs[frame] = _read_mcap(tmp_path / frame / "trajectory.mcap")
    rel, ine = msgs["lvlh"]["/odom"], msgs["inertial"]["/odom"]
    assert len(rel) == len(ine) == 21
    assert {o.header.frame_id for o in rel} == {"lvlh"}
    assert {o.header.frame_id for o in ine} == {"odom"}
    tf_rel = {(x.header.frame_id, x.child_frame_id) for m in msgs["lvlh"]["/tf"]
              for x in m.transforms}
    assert ("lvlh", "base_link") in tf_rel and not any(c == "lvlh" for _, c in tf_rel)
    from vm_dynamics.viewer.scene import playback_from_mcap  # what vm-view shows
    pb = playback_from_mcap(tmp_path / "lvlh" / "trajectory.mcap")
    assert pb.fixed_frame == "lvlh" and np.abs(pb.poses[0, 0] - np.eye(4)).max() <= 1e-9
    lv = [x for m in msgs["inertial"]["/tf"] for x in m.transforms if x.child_frame_id == "lvlh"]
    assert [x.header.frame_id for x in lv] == ["odom"] * 21
    T = [_pose(x.transform.translation, x.transform.rotation) for x in lv]
    orbit = scn.orbit
    for k in range(21):
        t = ine[k].header.stamp.sec + 1e-9 * ine[k].header.stamp.nanosec
        assert np.abs(T[k][:3, 3] - orbit.state(t)[0]).max() <= 1e-6
        g = _pose(ine[k].pose.pose.position, ine[k].pose.pose.orientation)
        g_rel = _pose(rel[k].pose.pose.position, rel[k].pose.pose.orientation)
        assert np.abs(lie.se3_inv(T[k]) @ g - g_rel).max() <= 1e-9
    assert np.abs(_pose(rel[0].pose.pose.position, rel[0].pose.pose.orientation)
                  - np.eye(4)).max() <= 1e-9                 # it starts at the LVLH origin
    # twists: the LVLH frame's body twist from the TF samples (0.1 s apart, central
    # differences), then V_rel = V − Ad_{g_rel⁻¹} V_T in the base frame
    def tw(o):
        a, b = o.twist.twist.linear, o.twist.twist.angular
        return np.r_[a.x, a.y, a.z, b.x, b.y, b.z]
    for k in (5, 15):
        X = lie.se3_inv(T[k]) @ (T[k + 1] - T[k - 1]) / 0.2
        VT = np.r_[X[:3, 3], X[2, 1], X[0, 2], X[1, 0]]
        g_rel = _pose(rel[k].pose.pose.position, rel[k].pose.pose.orientation)
        expected = tw(ine[k]) - lie.Ad_inv(g_rel) @ VT
        assert np.abs(tw(rel[k]) - expected).max() <= 1e-4, (tw(rel[k]), expected)
        assert np.abs(tw(rel[k])[:3]).max() < 1e-3 < np.abs(tw(ine[k])[:3]).max()


# ----------------------------------------------------------------------------- station keeping
def test_lvlh_pose_reference_is_consistent_with_its_derivatives():
    """A pose moving in LVLH (two waypoints, minimum jerk) on an elliptical orbit, mapped to an
    inertial reference (g_d, V_d, V̇_d): V_d == vee(g_d⁻¹ ġ_d) and V̇_d == dV_d/dt by central
    differences; the frame's V̇_T == dV_T/dt likewise."""
    from vm_dynamics.control.references import PoseWaypoints
    orbit = ReferenceOrbit(MU_EARTH, 7.2e6, 0.1, 0.9, 0.4, 1.1, 2.0)
    moving = PoseWaypoints([0.0, 20.0], [np.eye(4), lie.se3_exp([3.0, -2.0, 1.0, 0.3, -0.2,
                                                                 0.5])])
    ref = orbit.pose_reference(moving)
    h = 1e-3
    for t in (3.0, 10.0, 17.0):
        g, V, Vd = ref(t)
        X = lie.se3_inv(g) @ (ref(t + h)[0] - ref(t - h)[0]) / (2 * h)
        assert np.abs(np.r_[X[:3, 3], X[2, 1], X[0, 2], X[1, 0]] - V).max() \
            <= 1e-6 * np.abs(V).max()
        fd = (ref(t + h)[1] - ref(t - h)[1]) / (2 * h)
        assert np.abs(fd - Vd).max() <= 1e-5 * np.abs(Vd).max() and np.abs(Vd).max() > 1e-3
        fdT = (orbit.frame(t + h)[1] - orbit.frame(t - h)[1]) / (2 * h)
        VdT = orbit.frame_acceleration(t)
        assert np.abs(fdT - VdT).max() <= 1e-6 * np.abs(VdT).max()
    held = orbit.pose_reference(np.eye(4))(5.0)
    assert np.abs(held[0] - orbit.pose(5.0)).max() == 0.0
    with pytest.raises(ValueError, match=r"orbit reference: a pose held in LVLH must be 4x4"):
        orbit.pose_reference(np.eye(3))


@needs_numba
def test_station_keeping_holds_the_lvlh_pose_while_the_arm_moves(tmp_path):
    """orbit_station_keeping for 2 s: the arm follows its waypoints (joint 1 moves 0.05 rad),
    the actuated bus stays at the LVLH origin aligned with LVLH (recorded /odom in the LVLH
    frame) to 1e-7 m and 1e-9 rad, with a non-zero bus wrench against the arm's reaction; with
    orbit.reference_frame inertial the same controller holds the initial inertial pose instead,
    which leaves the LVLH frame (the orbit moves on at 7.6 km/s)."""
    from vm_dynamics.app.run import run_scenario
    from vm_dynamics.config.scenario import load_scenario
    out = {}
    for frame in ("lvlh", "inertial"):
        scn = load_scenario("orbit_station_keeping", {"duration": 2.0,
                                                       "orbit.reference_frame": frame})
        summary = run_scenario(scn, out_dir=tmp_path / frame, progress=False, record_rate=10.0,
                               plots=False, log=lambda *a: None)
        assert summary["finished"] and not summary["diverged"]
        out[frame] = _read_mcap(tmp_path / frame / "trajectory.mcap")
    odom = out["lvlh"]["/odom"]
    g = np.array([_pose(o.pose.pose.position, o.pose.pose.orientation) for o in odom])
    q = np.array([js.position for js in out["lvlh"]["/joint_states"]])
    assert np.abs(q[-1] - q[0]).max() > 0.04
    assert np.abs(g[:, :3, 3]).max() <= 1e-7
    assert max(np.linalg.norm(lie.so3_log(gk[:3, :3])) for gk in g) <= 1e-9
    drift = np.abs(np.array([o.pose.pose.position.y for o in out["inertial"]["/odom"]])).max()
    assert drift > 1e3, drift            # ≈ 7.6 km/s × 2 s behind the LVLH origin


# ----------------------------------------------------------------------------- the nodes
def _msg_pose(pose):
    return _pose(pose.position, pose.orientation)


@needs_numba
def test_dynamics_node_core_in_orbit_publishes_in_the_lvlh_frame():
    """The dynamics node's core with the orbit_spacecraft_arm parameter file (two_body, orbit,
    world_frame lvlh): it starts on the orbit (inertial state == vm-sim's scenario), steps
    with two-body gravity (the energy balance with the orbital potential holds: not paused),
    and /odom, TF and the ee path are in frame 'lvlh', /odom == the inertial state mapped by the
    reference orbit; with world_frame inertial, /odom is in 'odom' and TF has odom -> lvlh."""
    from vm_dynamics.config.params import flatten, read_params_file
    from vm_dynamics.config.scenario import load_scenario, scenario_path
    from vm_dynamics.nodes.dynamics_core import DynamicsCore
    scn = load_scenario("orbit_spacecraft_arm")
    p = flatten(read_params_file(scenario_path("orbit_spacecraft_arm")))
    for frame in ("lvlh", "inertial"):
        dyn = DynamicsCore.from_params({**p, "world_frame": frame})
        assert np.abs(dyn.g0 - scn.g0).max() == 0.0 and np.abs(dyn.V0 - scn.V0).max() == 0.0
        assert dyn.run(100) == 100 and not dyn.paused            # 1 s
        _, g, V, q, qd = dyn.sim.arrays()
        assert np.linalg.norm(g[:3, 3] - scn.g0[:3, 3]) > 7000.0  # it flew 7.6 km
        msgs = dict(dyn.state_messages())
        odom, tf = msgs["odom"], msgs["tf"]
        pairs = [(x.header.frame_id, x.child_frame_id) for x in tf.transforms]
        g_rel, V_rel = scn.orbit.to_lvlh(dyn.t, g, V)
        if frame == "lvlh":
            assert odom.header.frame_id == "lvlh" and pairs == [("lvlh", "base_link")]
            assert np.abs(_msg_pose(odom.pose.pose) - g_rel).max() <= 1e-9
            tw = odom.twist.twist
            assert np.abs(np.r_[tw.linear.x, tw.linear.y, tw.linear.z, tw.angular.x,
                                tw.angular.y, tw.angular.z] - V_rel).max() <= 1e-9
            assert dyn.ee_path_message().header.frame_id == "lvlh"
        else:
            assert odom.header.frame_id == "odom"
            assert pairs == [("odom", "base_link"), ("odom", "lvlh")]
            T = _pose(tf.transforms[1].transform.translation, tf.transforms[1].transform.rotation)
            assert np.abs(T - scn.orbit.pose(dyn.t)).max() <= 1e-6


@needs_numba
def test_dynamics_node_core_hil_path_in_orbit():
    """The hardware-in-the-loop path of the dynamics node in orbit (joint_source prescribed:
    the same code as measured joints, the arm's motion given): the bus moves in reaction while
    the total angular momentum about the central body stays constant (the two-body potential
    is invariant under rotations about it; the motion source exerts only internal efforts) to
    1e-6 (the body momentum, integrated with prescribed joints, loses digits at orbital speed:
    7.5e-8 measured in 1 s); the vehicle pose command is in 'lvlh' and the base reaction is
    published.  (Formulation "auto" chose the velocity, which cannot take prescribed joints,
    and the state overflowed within 0.2 s; the spatial momentum diverges at 7.6 km/s too.)"""
    from vm_dynamics.config.params import flatten, read_params_file
    from vm_dynamics.config.scenario import scenario_path
    from vm_dynamics.nodes.dynamics_core import DynamicsCore
    p = flatten(read_params_file(scenario_path("orbit_spacecraft_arm")))
    p.update({"joint_source": "prescribed", "prescribed.type": "sinusoid",
              "prescribed.amplitude": [0.3] * 7, "prescribed.frequency": 0.25,
              "prescribed.phase": [0.0] * 7})
    dyn = DynamicsCore.from_params(p)
    L0 = dyn.model.momentum(*dyn.sim.arrays()[1:])[3:]
    assert dyn.run(100) == 100 and not dyn.paused          # 1 s: a quarter period
    _, g, V, q, qd = dyn.sim.arrays()
    assert np.abs(q - dyn.q0).max() > 0.29
    L = dyn.model.momentum(g, V, q, qd)[3:]
    assert dyn.sim.formulation == "body_momentum"
    assert np.linalg.norm(L - L0) <= 1e-6 * np.linalg.norm(L0)     # 7.5e-8 measured
    msgs = dict(dyn.state_messages())
    assert msgs["vehicle_pose_command"].header.frame_id == "lvlh"
    w = msgs["base_reaction_wrench"].wrench
    assert np.abs([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z]).max() \
        > 1e-3
    g_rel = _msg_pose(msgs["vehicle_pose_command"].pose)
    assert 1e-6 < np.abs(g_rel[:3, 3]).max() < 1.0         # the bus reacts, near the LVLH origin
